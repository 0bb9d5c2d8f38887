// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The kernel side of a capture: forwards what the runtime announces through
 * its USDT probes (runtime/probes.h), follows processes and threads through
 * sched tracepoints, and samples each followed thread's context on a perf
 * event by reading its TLS block (runtime/tls.h) at fsbase + tls_tpoff.
 * Everything goes out through one ring buffer; nothing here writes user memory.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "dacce_events.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* The runtime's TLS layout this program reads (runtime/tls.h, DACCE_TLS_LAYOUT_VERSION 4). */
#define TLS_LAYOUT_VERSION 4
struct dacce_tls_block {
	__u64 id;
	__u64 cc_top;
	__u64 cc_base;
	__u64 tc_top;
	__u64 tc_base;
	__u64 epoch;
	__u64 runtime_depth;
	__u64 reset_id;
	__u64 calls;
	__u64 pushes;
	__u64 sigreturn_sp;
	__u64 jump_sp;
};
#define CC_ENTRY_SIZE 16

/*
 * Hides a value's known range from the compiler, so that the mask after it
 * stays: older verifiers (Debian's 6.1) learn a bound only from the mask
 * on the register passed, not from a comparison made on a copy of it.
 */
#define FORGET_RANGE(v) __asm__ volatile("" : "+r"(v))
/* A ccStack deeper than this is not believed (runtime/rt.c reserves less). */
#define CC_DEPTH_SANE (1u << 28)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct dacce_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20); /* the controller may resize before load */
} events SEC(".maps");

/*
 * Samples have a ring of their own: a flood of them (stack copies for
 * validation, a high rate) can then lose only samples, never the records of
 * the call graph and its epochs, without which contexts do not decode.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20); /* the controller may resize before load */
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DACCE_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static void count(enum dacce_counter which)
{
	__u32 key = which;
	__u64 *value = bpf_map_lookup_elem(&counters, &key);

	if (value)
		*value += 1;
}

static struct dacce_proc *followed(__u32 tgid)
{
	struct dacce_proc *proc = bpf_map_lookup_elem(&procs, &tgid);

	return proc && (proc->flags & DACCE_PROC_FOLLOW) ? proc : 0;
}

static void fill_header(struct dacce_ev_header *h, enum dacce_event_type type)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->type = type;
	h->tgid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->cpu = bpf_get_smp_processor_id();
	h->time_ns = bpf_ktime_get_ns();
}

/* Reserves a record for the current process if it is followed; counts a loss when full. */
static void *reserve(__u64 size, enum dacce_event_type type)
{
	struct dacce_ev_header *h;

	if (!followed(bpf_get_current_pid_tgid() >> 32))
		return 0;
	h = bpf_ringbuf_reserve(&events, size, 0);
	if (!h) {
		count(DACCE_CNT_LOST_RECORDS);
		return 0;
	}
	fill_header(h, type);
	return h;
}

#define RESERVE(type_struct, type) ((struct type_struct *)reserve(sizeof(struct type_struct), type))

/*
 * Reads task's context block; the innermost ccStack entries, outermost of them
 * first.  sp: the thread's user sp at a sample (0 otherwise), to tell a thread
 * in libc's signal restorer after a runtime handler (runtime/tls.h).
 */
static void read_context(struct task_struct *task, __s64 tpoff, __u64 sp,
			 struct dacce_ev_context *out)
{
	struct dacce_tls_block tls;
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
	__u64 depth, n;

	out->flags = 0;
	out->depth = 0;
	out->n_entries = 0;
	if (!fsbase || bpf_probe_read_user(&tls, sizeof(tls), (void *)(fsbase + tpoff))) {
		out->flags = DACCE_CTX_READ_FAILED;
		return;
	}
	out->epoch = tls.epoch;
	out->id = tls.id;
	out->reset_id = tls.reset_id;
	out->calls = tls.calls;
	out->pushes = tls.pushes;
	out->flags = DACCE_CTX_VALID;
	if (tls.runtime_depth)
		out->flags |= DACCE_CTX_IN_RUNTIME;
	if (sp && tls.sigreturn_sp == sp)
		out->flags |= DACCE_CTX_SIGRETURN;
	/* In libc's longjmp after the runtime put the landing's context back. */
	if (sp && tls.jump_sp && sp < tls.jump_sp)
		out->flags |= DACCE_CTX_IN_RUNTIME;
	if (!tls.cc_base || tls.cc_top < tls.cc_base) {
		out->flags |= DACCE_CTX_NO_STACK;
		return;
	}
	depth = (tls.cc_top - tls.cc_base) / CC_ENTRY_SIZE;
	if (depth > CC_DEPTH_SANE) {
		out->flags = DACCE_CTX_READ_FAILED;
		return;
	}
	n = depth < DACCE_BPF_CC_ENTRIES ? depth : DACCE_BPF_CC_ENTRIES;
	out->depth = depth;
	if (depth > n)
		out->flags |= DACCE_CTX_TRUNCATED;
	if (n == 0)
		return;
	FORGET_RANGE(n);
	n &= 0x1ff; /* the verifier's bound; n <= DACCE_BPF_CC_ENTRIES already */
	if (n > DACCE_BPF_CC_ENTRIES)
		return;
	if (bpf_probe_read_user(out->entries, n * CC_ENTRY_SIZE,
				(void *)(tls.cc_top - n * CC_ENTRY_SIZE))) {
		out->flags |= DACCE_CTX_READ_FAILED;
		return;
	}
	out->n_entries = n;
}

/* ------------------------------------------------------------------ runtime probes */

SEC("usdt")
int BPF_USDT(on_start, __s64 tpoff, __u32 layout_version, const char *exe)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct dacce_proc *proc = followed(tgid);
	struct dacce_ev_start *ev;

	if (!proc)
		return 0;
	if (layout_version == TLS_LAYOUT_VERSION) {
		proc->tls_tpoff = tpoff;
		proc->flags |= DACCE_PROC_RUNTIME;
	}
	ev = RESERVE(dacce_ev_start, DACCE_EV_START);
	if (!ev)
		return 0;
	ev->tls_tpoff = tpoff;
	ev->layout_version = layout_version;
	bpf_probe_read_user_str(ev->exe, sizeof(ev->exe), exe);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_module, __s64 graph_module, const char *path, __u64 bias, __u64 start, __u64 end,
	     const void *build_id, __u64 build_id_len)
{
	struct dacce_ev_module *ev = RESERVE(dacce_ev_module, DACCE_EV_MODULE);

	if (!ev)
		return 0;
	ev->graph_module = graph_module;
	ev->bias = bias;
	ev->start = start;
	ev->end = end;
	ev->build_id_len = 0;
	if (build_id && build_id_len && build_id_len <= DACCE_BPF_BUILD_ID_MAX) {
		__u64 len = build_id_len;

		FORGET_RANGE(len);
		len &= DACCE_BPF_BUILD_ID_MAX * 2 - 1;
		if (len <= DACCE_BPF_BUILD_ID_MAX && !bpf_probe_read_user(ev->build_id, len, build_id))
			ev->build_id_len = len;
	}
	ev->path[0] = 0;
	if (path)
		bpf_probe_read_user_str(ev->path, sizeof(ev->path), path);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/* A node, or a fragment of one: the same record, told apart by its type. */
static int send_code_range(__u32 type, __u32 node, __u32 module, __u64 offset, __u64 size)
{
	struct dacce_ev_node *ev = (struct dacce_ev_node *)reserve(sizeof(*ev), type);

	if (!ev)
		return 0;
	ev->node = node;
	ev->module = module;
	ev->offset = offset;
	ev->size = size;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_node, __u32 node, __u32 module, __u64 offset, __u64 size)
{
	return send_code_range(DACCE_EV_NODE, node, module, offset, size);
}

SEC("usdt")
int BPF_USDT(on_edge, __u32 edge, __u32 caller, __u32 callee, __u8 kind, __u32 site_module,
	     __u64 site_offset, __u8 flags)
{
	struct dacce_ev_edge *ev = RESERVE(dacce_ev_edge, DACCE_EV_EDGE);

	if (!ev)
		return 0;
	ev->edge = edge;
	ev->caller = caller;
	ev->callee = callee;
	ev->kind = kind;
	ev->site_module = site_module;
	ev->site_offset = site_offset;
	ev->flags = flags;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_code_region, __u64 start, __u64 size)
{
	struct dacce_ev_code_region *ev = RESERVE(dacce_ev_code_region, DACCE_EV_CODE_REGION);

	if (!ev)
		return 0;
	ev->start = start;
	ev->size = size;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_fragment, __u32 node, __u32 module, __u64 offset, __u64 size)
{
	return send_code_range(DACCE_EV_FRAGMENT, node, module, offset, size);
}

struct entry_walk {
	__u64 batch;
	__u32 n;
};

/* One note of the runtime's batch as one record. */
static long send_code_entry(__u32 index, struct entry_walk *walk)
{
	struct dacce_code_entry_note note;
	struct dacce_ev_code_entry *ev;

	if (index >= walk->n ||
	    bpf_probe_read_user(&note, sizeof(note),
				(void *)(walk->batch + (__u64)index * sizeof(note))))
		return 1;
	ev = RESERVE(dacce_ev_code_entry, DACCE_EV_CODE_ENTRY);
	if (!ev)
		return 1; /* counted */
	ev->address = note.address;
	ev->site_caller = (__u32)note.site_caller;
	ev->pad = 0;
	ev->site_offset = note.site_offset;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_code_entries, __u64 batch, __u32 n)
{
	struct entry_walk walk = { .batch = batch, .n = n };

	if (n > DACCE_CODE_ENTRY_BATCH)
		walk.n = DACCE_CODE_ENTRY_BATCH;
	bpf_loop(walk.n, send_code_entry, &walk, 0);
	return 0;
}

struct chunk_walk {
	const __u8 *dict;
	__u64 len, epoch;
};

static long send_chunk(__u32 index, struct chunk_walk *walk)
{
	struct dacce_ev_dict_chunk *ev;
	__u64 offset = (__u64)index * DACCE_BPF_CHUNK, len;

	if (offset >= walk->len)
		return 1;
	len = walk->len - offset;
	if (len > DACCE_BPF_CHUNK)
		len = DACCE_BPF_CHUNK;
	ev = RESERVE(dacce_ev_dict_chunk, DACCE_EV_DICT_CHUNK);
	if (!ev)
		return 1; /* counted; the controller sees the dictionary incomplete */
	ev->epoch = walk->epoch;
	ev->offset = offset;
	ev->len = len;
	FORGET_RANGE(len);
	len &= DACCE_BPF_CHUNK * 2 - 1;
	if (len > DACCE_BPF_CHUNK || bpf_probe_read_user(ev->data, len, walk->dict + offset))
		ev->len = 0;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_epoch, __u64 epoch, __u64 max_id, __u32 n_nodes, __u32 n_edges, const void *dict,
	     __u64 dict_len, __s64 pause_ns, __u32 driver)
{
	struct dacce_ev_epoch *ev = RESERVE(dacce_ev_epoch, DACCE_EV_EPOCH);
	struct chunk_walk walk = { .dict = dict, .len = dict_len, .epoch = epoch };
	__u32 n_chunks;

	if (!ev)
		return 0;
	ev->epoch = epoch;
	ev->max_id = max_id;
	ev->n_nodes = n_nodes;
	ev->n_edges = n_edges;
	ev->dict_len = dict_len;
	ev->pause_ns = pause_ns;
	ev->driver = driver;
	ev->flags = 0;
	if (!dict || !dict_len || dict_len > DACCE_BPF_DICT_MAX) {
		if (dict_len > DACCE_BPF_DICT_MAX)
			count(DACCE_CNT_DICT_TOO_BIG);
		ev->flags = DACCE_EPOCH_DICT_MISSING;
		walk.len = 0;
	}
	n_chunks = (walk.len + DACCE_BPF_CHUNK - 1) / DACCE_BPF_CHUNK;
	ev->n_chunks = n_chunks;
	bpf_ringbuf_submit(ev, 0);
	if (n_chunks)
		bpf_loop(n_chunks, send_chunk, &walk, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_thread, __u32 root_edge)
{
	struct dacce_ev_thread *ev = RESERVE(dacce_ev_thread, DACCE_EV_THREAD);

	if (!ev)
		return 0;
	ev->root_edge = root_edge;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/* ------------------------------------------------------------------ processes and threads */

SEC("raw_tp/sched_process_fork")
int on_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct dacce_proc *proc = followed(tgid);
	struct dacce_ev_fork *ev;
	__u32 child_tgid;

	if (!proc)
		return 0;
	child_tgid = BPF_CORE_READ(child, tgid);
	/* A new process inherits the runtime's state, TLS offset included. */
	if (child_tgid != tgid)
		bpf_map_update_elem(&procs, &child_tgid, proc, BPF_ANY);
	ev = RESERVE(dacce_ev_fork, DACCE_EV_FORK);
	if (!ev)
		return 0;
	ev->child_tid = BPF_CORE_READ(child, pid);
	ev->child_tgid = child_tgid;
	ev->ctx.flags = 0;
	ev->ctx.depth = 0;
	ev->ctx.n_entries = 0;
	if (proc->flags & DACCE_PROC_RUNTIME)
		read_context(bpf_get_current_task_btf(), proc->tls_tpoff, 0, &ev->ctx);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/* Raw tracepoints: they need no tracefs mounted, and give the task structs themselves. */
SEC("raw_tp/sched_process_exit")
int on_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = (struct task_struct *)ctx->args[0];
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct dacce_ev_exit *ev = RESERVE(dacce_ev_exit, DACCE_EV_EXIT);
	int live;

	if (!ev)
		return 0;
	live = BPF_CORE_READ(task, signal, live.counter);
	ev->group_dead = live == 0;
	bpf_ringbuf_submit(ev, 0);
	if (live == 0)
		bpf_map_delete_elem(&procs, &tgid);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int on_exec(struct bpf_raw_tracepoint_args *ctx)
{
	struct linux_binprm *bprm = (struct linux_binprm *)ctx->args[2];
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct dacce_proc *proc = followed(tgid);
	struct dacce_ev_exec *ev;

	if (!proc)
		return 0;
	/* A new image: its runtime, if preloaded again, announces itself anew. */
	proc->flags &= ~DACCE_PROC_RUNTIME;
	ev = RESERVE(dacce_ev_exec, DACCE_EV_EXEC);
	if (!ev)
		return 0;
	bpf_probe_read_kernel_str(ev->filename, sizeof(ev->filename), BPF_CORE_READ(bprm, filename));
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/* ------------------------------------------------------------------ sampling */

/*
 * Bytes of user stack above sp each sample copies, for validation; 0: none
 * (set before load; at most DACCE_BPF_STACK_MAX).
 */
const volatile __u32 stack_bytes = 0;

/*
 * One record under construction per CPU (too big for a per-CPU map's value):
 * the controller sizes it to the number of CPUs before load.  A perf_event
 * program never runs nested on one CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dacce_ev_sample_stack);
} stack_scratch SEC(".maps");

/* The user registers in DWARF's order (rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip). */
static void copy_regs(struct pt_regs *user, __u64 *regs)
{
	regs[0] = BPF_CORE_READ(user, ax);
	regs[1] = BPF_CORE_READ(user, dx);
	regs[2] = BPF_CORE_READ(user, cx);
	regs[3] = BPF_CORE_READ(user, bx);
	regs[4] = BPF_CORE_READ(user, si);
	regs[5] = BPF_CORE_READ(user, di);
	regs[6] = BPF_CORE_READ(user, bp);
	regs[7] = BPF_CORE_READ(user, sp);
	regs[8] = BPF_CORE_READ(user, r8);
	regs[9] = BPF_CORE_READ(user, r9);
	regs[10] = BPF_CORE_READ(user, r10);
	regs[11] = BPF_CORE_READ(user, r11);
	regs[12] = BPF_CORE_READ(user, r12);
	regs[13] = BPF_CORE_READ(user, r13);
	regs[14] = BPF_CORE_READ(user, r14);
	regs[15] = BPF_CORE_READ(user, r15);
	regs[16] = BPF_CORE_READ(user, ip);
}

/* The thread's innermost tail records (frame slot, real return address). */
static void copy_tail_records(struct task_struct *task, __s64 tpoff,
			      struct dacce_ev_sample_stack *ev)
{
	struct dacce_tls_block tls;
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), depth, n;

	ev->n_tail = 0;
	if (!fsbase || bpf_probe_read_user(&tls, sizeof(tls), (void *)(fsbase + tpoff)) ||
	    !tls.tc_base || tls.tc_top <= tls.tc_base)
		return;
	depth = (tls.tc_top - tls.tc_base) / DACCE_BPF_TAIL_RECORD_SIZE;
	n = depth < DACCE_BPF_TAIL_RECORDS ? depth : DACCE_BPF_TAIL_RECORDS;
	if (depth > n)
		ev->stack_flags |= DACCE_STACK_TAIL_TRUNCATED;
	for (__u32 i = 0; i < DACCE_BPF_TAIL_RECORDS && i < n; i++) {
		__u64 rec = tls.tc_top - (n - i) * DACCE_BPF_TAIL_RECORD_SIZE;

		/* frame and return_to: the record's words at 24 and 32 (guard follows) */
		if (bpf_probe_read_user(&ev->tail[i], sizeof(ev->tail[i]), (void *)(rec + 24)))
			break;
		ev->n_tail = i + 1;
	}
}

/* A sample with registers and stack (validation); the caller counted it. */
static int sample_with_stack(struct dacce_proc *proc, struct task_struct *task,
			     struct pt_regs *user, __u32 flags)
{
	__u32 key = 0, pages, copied = 0;
	struct dacce_ev_sample_stack *ev;
	__u64 sp, page;

	key = bpf_get_smp_processor_id();
	ev = bpf_map_lookup_elem(&stack_scratch, &key);
	if (!ev) {
		count(DACCE_CNT_LOST_SAMPLES);
		return 0;
	}
	fill_header(&ev->sample.h, DACCE_EV_SAMPLE);
	copy_regs(user, ev->regs);
	sp = ev->regs[7];
	ev->sample.pc = ev->regs[16];
	ev->sample.sp = sp;
	ev->sample.flags = flags | DACCE_SAMPLE_STACK;
	ev->sample.ctx.flags = 0;
	ev->sample.ctx.depth = 0;
	ev->sample.ctx.n_entries = 0;
	if (proc->flags & DACCE_PROC_RUNTIME)
		read_context(task, proc->tls_tpoff, sp, &ev->sample.ctx);
	page = sp & ~(__u64)(DACCE_BPF_STACK_PAGE - 1);
	pages = ((sp - page) + stack_bytes + DACCE_BPF_STACK_PAGE - 1) / DACCE_BPF_STACK_PAGE;
	ev->stack_start = page;
	ev->stack_flags = 0;
	ev->n_tail = 0;
	if (proc->flags & DACCE_PROC_RUNTIME)
		copy_tail_records(task, proc->tls_tpoff, ev);
	for (__u32 i = 0; i < DACCE_BPF_STACK_PAGES_MAX && i < pages; i++) {
		if (bpf_probe_read_user(ev->stack + i * DACCE_BPF_STACK_PAGE, DACCE_BPF_STACK_PAGE,
					(void *)(page + i * DACCE_BPF_STACK_PAGE))) {
			ev->stack_flags |= DACCE_STACK_SHORT;
			break;
		}
		copied++;
	}
	ev->stack_len = copied * DACCE_BPF_STACK_PAGE;
	if (copied > DACCE_BPF_STACK_PAGES_MAX)
		return 0;
	if (bpf_ringbuf_output(&samples, ev,
			       sizeof(*ev) - sizeof(ev->stack) + copied * DACCE_BPF_STACK_PAGE, 0))
		count(DACCE_CNT_LOST_SAMPLES);
	return 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct task_struct *task;
	struct dacce_ev_sample *ev;
	struct dacce_proc *proc;
	struct pt_regs *user;

	proc = followed(tgid);
	if (!proc || !tgid)
		return 0;
	count(DACCE_CNT_SAMPLES);
	task = bpf_get_current_task_btf();
	user = (struct pt_regs *)bpf_task_pt_regs(task);
	if (stack_bytes)
		/* Kernel text is in the upper half: below it, the sample interrupted user code. */
		return sample_with_stack(proc, task, user,
					 ctx->regs.ip < 0x800000000000ull ? DACCE_SAMPLE_USER : 0);
	ev = bpf_ringbuf_reserve(&samples, sizeof(*ev), 0);
	if (!ev) {
		count(DACCE_CNT_LOST_SAMPLES);
		return 0;
	}
	fill_header(&ev->h, DACCE_EV_SAMPLE);
	ev->pc = BPF_CORE_READ(user, ip);
	ev->sp = BPF_CORE_READ(user, sp);
	/* Kernel text is in the upper half: below it, the sample interrupted user code. */
	ev->flags = ctx->regs.ip < 0x800000000000ull ? DACCE_SAMPLE_USER : 0;
	ev->ctx.flags = 0;
	ev->ctx.depth = 0;
	ev->ctx.n_entries = 0;
	if (proc->flags & DACCE_PROC_RUNTIME)
		read_context(task, proc->tls_tpoff, ev->sp, &ev->ctx);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}
