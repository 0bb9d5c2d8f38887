// SPDX-License-Identifier: MIT
#include "entry.h"

#include <cpuid.h>
#include <errno.h>
#include <stddef.h>

/* Read by the assembly entry. */
uint64_t dacce_rt_xsave_size __attribute__((visibility("hidden")));
static dacce_rt_slow_fn slow_handler;

_Static_assert(offsetof(struct dacce_rt_regs, r11) == 88, "entry.S stores r11 at 88");
_Static_assert(offsetof(struct dacce_rt_regs, call_target) == 128, "entry.S reads it at -32 from the site's %rsp");
_Static_assert(offsetof(struct dacce_rt_regs, call_return) == 136, "entry.S reads it at -24 from the site's %rsp");
_Static_assert(sizeof(struct dacce_rt_regs) == 144, "entry.S reserves 144 bytes");

int dacce_rt_entry_init(void)
{
	unsigned int eax, ebx, ecx, edx;

	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return -ENOTSUP;
	/* OSXSAVE: the kernel manages extended state, so XSAVE/XRSTOR work in user space. */
	if (!(ecx & bit_OSXSAVE))
		return -ENOTSUP;
	__cpuid_count(0xd, 0, eax, ebx, ecx, edx);
	if (ebx < 576)
		return -ENOTSUP;
	/* Bytes for every component the OS enabled in XCR0. */
	dacce_rt_xsave_size = ebx;
	return 0;
}

void dacce_rt_set_slow_handler(dacce_rt_slow_fn handler)
{
	__atomic_store_n(&slow_handler, handler, __ATOMIC_RELEASE);
}

/* Called by the assembly entry. */
uintptr_t dacce_rt_slow_dispatch(uint64_t token, struct dacce_rt_regs *regs)
	__attribute__((visibility("hidden")));

uintptr_t dacce_rt_slow_dispatch(uint64_t token, struct dacce_rt_regs *regs)
{
	dacce_rt_slow_fn handler = __atomic_load_n(&slow_handler, __ATOMIC_ACQUIRE);

	if (!handler)
		__builtin_trap();
	return handler(token, regs);
}
