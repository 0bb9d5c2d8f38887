/* SPDX-License-Identifier: MIT */
/*
 * The control channel between a controller (`dacce launch`) and the runtime
 * in each process it follows: a SOCK_SEQPACKET Unix socket whose path the
 * controller puts in DACCE_CONTROL.  The runtime's policy thread connects
 * when it starts (fork children connect anew) and, while connected, leaves
 * the decision of when to re-encode to the controller.  docs/control.md.
 *
 * Messages are these fixed structs, host byte order, one per packet.
 */
#ifndef DACCE_CONTROL_H
#define DACCE_CONTROL_H

#include <stdint.h>

#define DACCE_CONTROL_MAGIC 0x4c54434543434144ull /* "DACCECTL" */
#define DACCE_CONTROL_VERSION 1u
#define DACCE_CONTROL_MAX_HINTS 4096u

enum dacce_control_type {
	DACCE_CONTROL_HELLO = 1, /* runtime -> controller, once connected */
	DACCE_CONTROL_EPOCH,	 /* controller -> runtime: re-encode now, with these hints */
	DACCE_CONTROL_DONE,	 /* runtime -> controller: what came of the request */
};

struct dacce_control_header {
	uint64_t magic;
	uint32_t version;
	uint32_t type;
};

struct dacce_control_hello {
	struct dacce_control_header h;
	uint32_t pid;
	uint32_t tls_layout_version;
};

/* Sampled frequency of an edge: how many samples had it on their path. */
struct dacce_control_hint {
	uint32_t edge;
	uint32_t samples;
};

struct dacce_control_epoch {
	struct dacce_control_header h;
	uint32_t n_hints; /* at most DACCE_CONTROL_MAX_HINTS */
	uint32_t reserved;
	struct dacce_control_hint hints[]; /* n_hints of them */
};

struct dacce_control_done {
	struct dacce_control_header h;
	int32_t result;	  /* 0: installed; -EAGAIN: put off (a thread could not stop) */
	uint32_t reserved;
	uint64_t epoch;	  /* the epoch in force afterwards */
};

#endif
