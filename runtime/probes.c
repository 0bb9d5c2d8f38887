// SPDX-License-Identifier: MIT
/* The USDT semaphores (runtime/probes.h): in .probes, where tracers look for them. */
#include "probes.h"

#define DACCE_DEFINE_SEMAPHORE(name) \
	__attribute__((section(".probes"))) volatile unsigned short dacce_##name##_semaphore;
DACCE_PROBE_NAMES(DACCE_DEFINE_SEMAPHORE)
