/* SPDX-License-Identifier: MIT */
/*
 * Records that bpf/dacce.bpf.c sends to the controller through the ring
 * buffer, and the maps the controller fills.  Shared by the BPF program and
 * user/: plain fixed-size structs, __u types only.
 */
#ifndef DACCE_BPF_EVENTS_H
#define DACCE_BPF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* ccStack entries copied per context: the innermost ones; deeper ones are flagged. */
#define DACCE_BPF_CC_ENTRIES 256
#define DACCE_BPF_PATH_MAX 256
#define DACCE_BPF_BUILD_ID_MAX 64
/* Dictionaries travel in chunks of this many bytes. */
#define DACCE_BPF_CHUNK 8192
/* Largest dictionary carried out (bigger ones are announced, flagged and skipped). */
#define DACCE_BPF_DICT_MAX (64u << 20)

enum dacce_event_type {
	DACCE_EV_START = 1,
	DACCE_EV_MODULE,
	DACCE_EV_NODE,
	DACCE_EV_EDGE,
	DACCE_EV_CODE_REGION,
	DACCE_EV_CODE_ENTRY,
	DACCE_EV_EPOCH,
	DACCE_EV_DICT_CHUNK,
	DACCE_EV_THREAD,
	DACCE_EV_FORK,	/* a process or thread created (with the creator's context) */
	DACCE_EV_EXIT,	/* a thread exited */
	DACCE_EV_EXEC,	/* a process replaced its image */
	DACCE_EV_SAMPLE,
	DACCE_EV_FRAGMENT, /* code split off a node's function (runtime/probes.h): a dacce_ev_node record */
};

struct dacce_ev_header {
	__u32 type;
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u64 time_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
};

/* Context flags. */
#define DACCE_CTX_VALID 0x1	    /* the TLS block was read */
#define DACCE_CTX_TRUNCATED 0x2	    /* depth > entries copied: outermost entries missing */
#define DACCE_CTX_NO_STACK 0x4	    /* the thread has no ccStack (not started, or outside) */
#define DACCE_CTX_READ_FAILED 0x8   /* a read of user memory failed (page not present) */
#define DACCE_CTX_IN_RUNTIME 0x10   /* runtime code was running on the thread */
#define DACCE_CTX_SIGRETURN 0x20    /* in libc's signal restorer after a runtime handler */

/* A thread's context as read from its TLS block (runtime/tls.h) by BPF. */
struct dacce_ev_context {
	__u64 epoch;
	__u64 id;
	__u64 reset_id;
	__u32 depth;	 /* entries on the ccStack */
	__u32 n_entries; /* the innermost ones copied below, outermost first */
	__u32 flags;	 /* DACCE_CTX_* */
	__u32 pad;
	__u64 calls;	 /* the thread's counts so far (runtime/tls.h; 0 unless DACCE_COUNT) */
	__u64 pushes;
	struct {
		__u64 id;
		__u32 edge;
		__u32 aux;
	} entries[DACCE_BPF_CC_ENTRIES];
};

struct dacce_ev_start {
	struct dacce_ev_header h;
	__s64 tls_tpoff;
	__u32 layout_version;
	__u32 pad;
	char exe[DACCE_BPF_PATH_MAX];
};

struct dacce_ev_module {
	struct dacce_ev_header h;
	__s64 graph_module; /* -1: seen by a scan, not in the graph yet */
	__u64 bias, start, end;
	__u32 build_id_len;
	__u32 pad;
	__u8 build_id[DACCE_BPF_BUILD_ID_MAX];
	char path[DACCE_BPF_PATH_MAX];
};

struct dacce_ev_node {
	struct dacce_ev_header h;
	__u32 node, module;
	__u64 offset, size;
};

struct dacce_ev_edge {
	struct dacce_ev_header h;
	__u32 edge, caller, callee, site_module;
	__u64 site_offset;
	__u8 kind, flags;
	__u8 pad[6];
};

struct dacce_ev_code_region {
	struct dacce_ev_header h;
	__u64 start, size;
};

/*
 * site_caller of generated code that stands for no call site: the tail-call
 * return stub (DACCE_CODE_TAIL_STUB, once per process) or other code a stack
 * walk may meet in a return-address slot (DACCE_CODE_NO_SITE: setjmp thunks;
 * DACCE_CODE_STAND_IN: a `ret` byte the runtime wrote into a module, which
 * the loader's functions return through to the runtime when called from
 * generated code, runtime/dl_callers.h: a walk steps over it as over a
 * `ret`, and it is no frame of the program).
 */
#define DACCE_CODE_TAIL_STUB 0xffffffffu
#define DACCE_CODE_NO_SITE 0xfffffffeu
#define DACCE_CODE_STAND_IN 0xfffffffdu
/*
 * A function's copy (runtime/relocated.h): address is its start, and
 * site_offset holds the function's node (low 32 bits) and the copy's length
 * (high 32 bits).  A sample in it is in that function, except at an
 * instruction announced as DACCE_CODE_INSIDE_OP: inside an inline call's
 * operation, where the id already (or still) counts a call the thread is not
 * in, so the context does not decode as the thread's.
 */
#define DACCE_CODE_COPY 0xfffffffcu
#define DACCE_CODE_INSIDE_OP 0xfffffffbu

struct dacce_ev_code_entry {
	struct dacce_ev_header h;
	__u64 address;
	__u32 site_caller;
	__u32 pad;
	__u64 site_offset; /* the call site it stands for, link-time, in the program */
};

/*
 * Code entries travel out in batches: the runtime fills an array of these and
 * fires probe code_entries (array, count) once per batch, and BPF turns each
 * into a dacce_ev_code_entry record.  A probe costs the thread a trap into
 * the kernel; CPython's start-up creates about 75,000 entries.
 */
#define DACCE_CODE_ENTRY_BATCH 64
struct dacce_code_entry_note {
	__u64 address;
	__u64 site_caller;
	__u64 site_offset;
};

#define DACCE_EPOCH_DICT_MISSING 0x1 /* too big, or the runtime could not serialise it */

struct dacce_ev_epoch {
	struct dacce_ev_header h;
	__u64 epoch, max_id;
	__u32 n_nodes, n_edges;
	__u64 dict_len;
	__s64 pause_ns;
	__u32 flags;
	__u32 n_chunks; /* DACCE_EV_DICT_CHUNK records that follow */
	__u32 driver;	/* 0 start, 1 the runtime's policy, 2 the controller */
	__u32 pad;
};

struct dacce_ev_dict_chunk {
	struct dacce_ev_header h;
	__u64 epoch;
	__u32 offset, len;
	__u8 data[DACCE_BPF_CHUNK];
};

struct dacce_ev_thread {
	struct dacce_ev_header h;
	__u32 root_edge;
	__u32 pad;
};

struct dacce_ev_fork {
	struct dacce_ev_header h; /* tgid/tid: the creator */
	__u32 child_tid;
	__u32 child_tgid;	   /* == creator's tgid for a thread */
	struct dacce_ev_context ctx; /* the creator's context at the clone */
};

struct dacce_ev_exit {
	struct dacce_ev_header h;
	__u32 group_dead; /* the whole process ended */
	__u32 pad;
};

struct dacce_ev_exec {
	struct dacce_ev_header h;
	char filename[DACCE_BPF_PATH_MAX];
};

#define DACCE_SAMPLE_USER 0x1  /* the sample interrupted user mode (else a syscall/kernel) */
#define DACCE_SAMPLE_STACK 0x2 /* the record is a struct dacce_ev_sample_stack */

struct dacce_ev_sample {
	struct dacce_ev_header h;
	__u64 pc, sp;
	__u32 flags;
	__u32 pad;
	struct dacce_ev_context ctx;
};

/*
 * Stack copies for validation (`dacce launch --validate`): whole pages from
 * the one holding the user sp, so that a read never crosses into a page the
 * copy does not want.  17 pages hold 64 KiB above any sp.
 */
#define DACCE_BPF_STACK_PAGE 4096
#define DACCE_BPF_STACK_PAGES_MAX 17
#define DACCE_BPF_STACK_MAX (64u << 10) /* bytes above sp the user may ask for */

/* User registers, in DWARF's x86-64 numbering (user/unwind.h's enum dacce_unwind_reg). */
#define DACCE_BPF_NREGS 17

#define DACCE_STACK_SHORT 0x1 /* a page could not be read: the copy ends before what was asked */
#define DACCE_STACK_TAIL_TRUNCATED 0x2 /* more tail records than copied: innermost ones kept */

/*
 * Tail records copied per sample (runtime/tls.h's struct dacce_rt_tail_record,
 * 48 bytes): a frame that made a tail call has its return address replaced
 * by the runtime's return stub, and the record keeps the real one.
 */
#define DACCE_BPF_TAIL_RECORDS 64
#define DACCE_BPF_TAIL_RECORD_SIZE 48

struct dacce_ev_tail {
	__u64 frame;	 /* address of the return-address slot */
	__u64 return_to; /* the return address the slot held before */
};

/*
 * A sample with the user registers and the top of the user stack: a
 * DACCE_EV_SAMPLE record whose sample.flags has DACCE_SAMPLE_STACK, sent
 * only as long as its stack_len needs (stack[] is cut short).
 */
struct dacce_ev_sample_stack {
	struct dacce_ev_sample sample;
	__u64 regs[DACCE_BPF_NREGS];
	__u64 stack_start; /* run-time address of stack[0]: the start of sp's page */
	__u32 stack_len;   /* bytes in stack[] */
	__u32 stack_flags; /* DACCE_STACK_* */
	__u32 n_tail;	   /* records in tail[], innermost last */
	__u32 pad;
	struct dacce_ev_tail tail[DACCE_BPF_TAIL_RECORDS];
	__u8 stack[DACCE_BPF_STACK_PAGES_MAX * DACCE_BPF_STACK_PAGE];
};

/* Per-process state in the procs map (key: tgid). */
#define DACCE_PROC_FOLLOW 0x1  /* a process of this capture */
#define DACCE_PROC_RUNTIME 0x2 /* the runtime started in it: tls_tpoff is valid */

struct dacce_proc {
	__s64 tls_tpoff;
	__u32 flags;
	__u32 pad;
};

/* Counters (a per-CPU array indexed by these). */
enum dacce_counter {
	DACCE_CNT_LOST_RECORDS = 0, /* ring buffer full */
	DACCE_CNT_LOST_SAMPLES,
	DACCE_CNT_SAMPLES,
	DACCE_CNT_DICT_TOO_BIG,
	DACCE_CNT_MAX,
};

#endif
