// SPDX-License-Identifier: MIT
/*
 * `dacce launch [options] [--] program args...`: runs program with the
 * runtime preloaded, the BPF side attached before its first instruction,
 * and writes what it captures to the store until the program ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "commands.h"
#include "control.h"
#include "dacce.skel.h"
#include "dacce_events.h"
#include "launch_util.h"
#include "pmu.h"
#include "model.h"
#include "policy.h"
#include "store.h"
#include "validate.h"

#define DEFAULT_FREQ 997 /* prime: does not beat with periodic work */
#define FLUSH_NS (250ull * 1000 * 1000)
#define DEFAULT_STACK_BYTES (32u << 10) /* as much as `perf --call-graph dwarf` allows */

struct launch_opts {
	const char *output;
	const char *event;
	uint64_t freq, period;
	unsigned ringbuf_mb;
	uint32_t stack_bytes; /* user stack copied per sample (--validate); 0: none */
	bool quiet, verbose, detach_on_interrupt, validate, count;
	const char *runtime;
	const char *epochs; /* "controller", "runtime" or "off" */
	char **argv;
};

static volatile sig_atomic_t interrupted, forward_signal;

static void on_signal(int sig, siginfo_t *info, void *uc)
{
	(void)uc;
	interrupted = sig;
	/* A terminal's ^C reached the whole process group already; a kill aimed at us did not. */
	if (info->si_code == SI_USER || info->si_code == SI_QUEUE || sig == SIGTERM)
		forward_signal = sig;
}

static void launch_usage(FILE *out)
{
	fprintf(out,
		"usage: dacce launch [options] [--] program [args...]\n"
		"  -o, --output FILE     capture store to write (default dacce.db; an old one\n"
		"                        is kept as FILE.old)\n"
		"  -e, --event EVENT     sampling event, perf/libpfm4 name (default cpu-clock)\n"
		"  -F, --freq HZ         samples per second per CPU (default %d)\n"
		"  -c, --count PERIOD    sample every PERIOD events instead of -F\n"
		"  -q, --quiet           no status line, no summary\n"
		"  -v, --verbose         libbpf and runtime messages\n"
		"      --detach-on-interrupt  on ^C stop capturing and leave the program running\n"
		"                        (it then runs in a process group of its own)\n"
		"      --epochs WHO      who decides re-encoding: controller (default: this\n"
		"                        command, from its samples), runtime (its built-in\n"
		"                        policy) or off\n"
		"      --runtime PATH    libdacce.so to preload (default: next to dacce)\n"
		"      --ringbuf-mb N    size of each ring buffer, samples and the rest (default 64)\n"
		"      --validate        also copy each sample's registers and user stack, and at\n"
		"                        the end compare every decoded context with the stack\n"
		"                        unwound from the copy (see docs/validation.md)\n"
		"      --count-calls     the runtime counts calls and ccStack pushes (slower);\n"
		"                        dacce report --stats shows them per second\n"
		"      --stack-size N    bytes of stack copied above sp with --validate (default\n"
		"                        %u, at most %u; suffixes k, K: KiB)\n",
		DEFAULT_FREQ, DEFAULT_STACK_BYTES, DACCE_BPF_STACK_MAX);
}

/* "32768", "32k" or "32K": bytes, 1..DACCE_BPF_STACK_MAX. */
static int parse_size(const char *s, uint32_t *out)
{
	char digits[32];
	size_t len = strlen(s);
	uint64_t v, unit = 1;

	if (len == 0 || len >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, s, len + 1);
	if (digits[len - 1] == 'k' || digits[len - 1] == 'K') {
		digits[len - 1] = 0;
		unit = 1024;
	}
	if (dacce_parse_u64(digits, 1, DACCE_BPF_STACK_MAX, &v) || v * unit > DACCE_BPF_STACK_MAX)
		return -EINVAL;
	*out = (uint32_t)(v * unit);
	return 0;
}

static int parse(int argc, char **argv, struct launch_opts *o)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "freq", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "runtime", required_argument, NULL, 'R' },
		{ "ringbuf-mb", required_argument, NULL, 'B' },
		{ "detach-on-interrupt", no_argument, NULL, 'D' },
		{ "epochs", required_argument, NULL, 'E' },
		{ "validate", no_argument, NULL, 'V' },
		{ "count-calls", no_argument, NULL, 'C' },
		{ "stack-size", required_argument, NULL, 'S' },
		{ 0 },
	};
	int c;

	*o = (struct launch_opts){ .output = "dacce.db", .event = "cpu-clock",
				   .freq = DEFAULT_FREQ, .ringbuf_mb = 64, .epochs = "controller" };
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:e:F:c:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'e': o->event = optarg; break;
		case 'F':
			if (dacce_parse_u64(optarg, 1, 1000000, &o->freq)) {
				dacce_err("bad frequency '%s': want 1..1000000 Hz", optarg);
				return -EINVAL;
			}
			o->period = 0;
			break;
		case 'c':
			if (dacce_parse_u64(optarg, 1, UINT64_MAX, &o->period)) {
				dacce_err("bad period '%s'", optarg);
				return -EINVAL;
			}
			break;
		case 'q': o->quiet = true; break;
		case 'v': o->verbose = true; break;
		case 'R': o->runtime = optarg; break;
		case 'B': {
			uint64_t mb;

			if (dacce_parse_u64(optarg, 1, 4096, &mb) || (mb & (mb - 1))) {
				dacce_err("bad ring buffer size '%s': want a power of two, 1..4096", optarg);
				return -EINVAL;
			}
			o->ringbuf_mb = (unsigned)mb;
			break;
		}
		case 'D': o->detach_on_interrupt = true; break;
		case 'V': o->validate = true; break;
		case 'C': o->count = true; break;
		case 'S':
			if (parse_size(optarg, &o->stack_bytes)) {
				dacce_err("bad stack size '%s': want 1..%u bytes (or 1k..64k)", optarg,
					  DACCE_BPF_STACK_MAX);
				return -EINVAL;
			}
			break;
		case 'E':
			if (strcmp(optarg, "controller") && strcmp(optarg, "runtime") &&
			    strcmp(optarg, "off")) {
				dacce_err("bad --epochs '%s': want controller, runtime or off", optarg);
				return -EINVAL;
			}
			o->epochs = optarg;
			break;
		case 'h': launch_usage(stdout); return 1;
		default: launch_usage(stderr); return -EINVAL;
		}
	}
	if (optind >= argc) {
		dacce_err("no program to launch; usage: dacce launch [options] [--] program [args...]");
		return -EINVAL;
	}
	o->argv = argv + optind;
	if (o->validate && !o->stack_bytes)
		o->stack_bytes = DEFAULT_STACK_BYTES;
	if (!o->validate)
		o->stack_bytes = 0;
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

/* ------------------------------------------------------------------ the BPF side */

struct session {
	struct dacce_bpf *skel;
	struct bpf_link *links[16];
	int n_links;
	struct ring_buffer *rb;	    /* both rings, for polling */
	struct ring_buffer *events; /* the events ring alone (on_sample_record) */
	struct dacce_sampler sampler;
	struct dacce_capture *cap;
	struct dacce_store *store;
	struct dacce_control *control; /* NULL unless the controller decides epochs */
	struct dacce_policy *policy;
	bool store_failed;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;

	if (s->policy)
		dacce_policy_record(s->policy, data, size);
	if (s->store_failed)
		return 0;
	if (dacce_capture_record(s->cap, data, size))
		s->store_failed = true; /* said on stderr; keep draining so the program is not held */
	return 0;
}

/*
 * Samples have a ring of their own, read in whatever order the rings are
 * polled; a sample must still be stored after every event written before it
 * (a fork or exec names the process image the sample belongs to).  Records
 * are in the events ring before the sample is taken, so draining it first
 * puts them in order.  Seen in the QEMU guest: a slow controller read a fork
 * child's whole life of samples before its fork event, and stored them under
 * a process with no parent, whose code it did not know.
 */
static int on_sample_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;

	ring_buffer__consume(s->events);
	return on_record(ctx, data, size);
}

static int attach_usdt(struct session *s, struct bpf_program *prog, const char *runtime,
		       const char *probe)
{
	struct bpf_link *link = bpf_program__attach_usdt(prog, -1, runtime, "dacce", probe, NULL);

	if (!link) {
		dacce_err("cannot attach to probe dacce:%s in %s: %s", probe, runtime,
			  strerror(errno));
		return -errno;
	}
	s->links[s->n_links++] = link;
	return 0;
}

static int attach_program(struct session *s, struct bpf_program *prog, const char *what)
{
	struct bpf_link *link = bpf_program__attach(prog);

	if (!link) {
		dacce_err("cannot attach to %s: %s", what, strerror(errno));
		return -errno;
	}
	s->links[s->n_links++] = link;
	return 0;
}

static int load_bpf(struct session *s, const struct launch_opts *o)
{
	int err;

	s->skel = dacce_bpf__open();
	if (!s->skel) {
		dacce_err("cannot open the BPF programs: %s", strerror(errno));
		return -errno;
	}
	err = bpf_map__set_max_entries(s->skel->maps.events, o->ringbuf_mb << 20);
	if (!err)
		err = bpf_map__set_max_entries(s->skel->maps.samples, o->ringbuf_mb << 20);
	if (!err && o->stack_bytes) {
		s->skel->rodata->stack_bytes = o->stack_bytes;
		err = bpf_map__set_max_entries(s->skel->maps.stack_scratch,
					       (uint32_t)libbpf_num_possible_cpus());
	}
	if (!err)
		err = dacce_bpf__load(s->skel);
	if (err) {
		if ((err == -EPERM || err == -EACCES) && geteuid() == 0)
			dacce_err("cannot load BPF programs: the kernel refused them (%s); run with -v "
				  "for the verifier's log", strerror(-err));
		else if (err == -EPERM || err == -EACCES)
			dacce_err("cannot load BPF programs: permission denied (run as root, or "
				  "with CAP_BPF and CAP_PERFMON)");
		else
			dacce_err("cannot load BPF programs: %s (needs BPF ring buffers, uprobes "
				  "and BTF: Linux 5.17 or later)", strerror(-err));
		return err;
	}
	return 0;
}

static int attach_all(struct session *s, const struct launch_opts *o, const char *runtime)
{
	struct dacce_bpf *k = s->skel;
	const struct {
		struct bpf_program *prog;
		const char *probe;
	} probes[] = {
		{ k->progs.on_start, "start" },	   { k->progs.on_module, "module" },
		{ k->progs.on_node, "node" },	   { k->progs.on_edge, "edge" },
		{ k->progs.on_fragment, "fragment" },
		{ k->progs.on_code_region, "code_region" },
		{ k->progs.on_code_entries, "code_entries" },
		{ k->progs.on_epoch, "epoch" },	   { k->progs.on_thread, "thread" },
	};
	char why[256] = "";
	int err = 0;

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]) && !err; i++)
		err = attach_usdt(s, probes[i].prog, runtime, probes[i].probe);
	if (!err)
		err = attach_program(s, k->progs.on_fork, "sched_process_fork");
	if (!err)
		err = attach_program(s, k->progs.on_exit, "sched_process_exit");
	if (!err)
		err = attach_program(s, k->progs.on_exec, "sched_process_exec");
	if (err)
		return err;
	err = dacce_sampler_open(&s->sampler, o->event, o->period, o->period ? 0 : o->freq,
				 k->progs.on_sample, why, sizeof(why));
	if (err) {
		dacce_err("%s", why);
		return err;
	}
	s->events = ring_buffer__new(bpf_map__fd(k->maps.events), on_record, s, NULL);
	s->rb = ring_buffer__new(bpf_map__fd(k->maps.events), on_record, s, NULL);
	if (s->rb && ring_buffer__add(s->rb, bpf_map__fd(k->maps.samples), on_sample_record, s)) {
		ring_buffer__free(s->rb);
		s->rb = NULL;
	}
	if (!s->rb || !s->events) {
		dacce_err("cannot read the ring buffer: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static void session_close(struct session *s)
{
	ring_buffer__free(s->rb);
	ring_buffer__free(s->events);
	dacce_sampler_close(&s->sampler);
	for (int i = 0; i < s->n_links; i++)
		bpf_link__destroy(s->links[i]);
	dacce_bpf__destroy(s->skel);
	dacce_capture_free(s->cap);
	dacce_store_close(s->store);
	dacce_control_free(s->control);
	dacce_policy_free(s->policy);
}

static uint64_t counter_sum(struct session *s, enum dacce_counter which)
{
	int n = libbpf_num_possible_cpus();
	uint64_t values[n > 0 ? n : 1], sum = 0;
	uint32_t key = which;

	if (n <= 0 || bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.counters), &key, values))
		return 0;
	for (int i = 0; i < n; i++)
		sum += values[i];
	return sum;
}

static int follow(struct session *s, pid_t pid)
{
	struct dacce_proc proc = { .flags = DACCE_PROC_FOLLOW };
	uint32_t key = (uint32_t)pid;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.procs), &key, &proc, BPF_ANY)) {
		dacce_err("cannot follow process %d: %s", pid, strerror(errno));
		return -errno;
	}
	return 0;
}

/* ------------------------------------------------------------------ the program */

/* Child side: waits for the go byte, then execs with the runtime preloaded. */
static void __attribute__((noreturn))
run_child(const struct launch_opts *o, const struct session *s, const char *runtime, int go,
	  int report)
{
	const char *old = getenv("LD_PRELOAD");
	char *preload = NULL;
	char byte;
	int err;

	if (read(go, &byte, 1) != 1)
		_exit(126); /* the controller gave up before starting us */
	close(go);
	if (o->detach_on_interrupt)
		setpgid(0, 0);
	if (asprintf(&preload, "%s%s%s", runtime, old && *old ? ":" : "", old ? old : "") < 0)
		_exit(126);
	setenv("LD_PRELOAD", preload, 1);
	if (s->control)
		setenv("DACCE_CONTROL", dacce_control_path(s->control), 1);
	if (strcmp(o->epochs, "off") == 0)
		setenv("DACCE_EPOCHS", "0", 1);
	if (o->count)
		setenv("DACCE_COUNT", "1", 1);
	execvp(o->argv[0], o->argv);
	err = errno;
	if (write(report, &err, sizeof(err)) != sizeof(err))
		_exit(127);
	_exit(127);
}

static void write_meta(struct dacce_store *store, const struct launch_opts *o,
		       const struct session *s, const char *runtime)
{
	char buf[4096];
	struct utsname uts;
	size_t used = 0;

	for (char **a = o->argv; *a && used < sizeof(buf) - 1; a++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s",
					 a == o->argv ? "" : " ", *a);
	dacce_store_set_meta(store, "command", buf);
	dacce_store_set_meta(store, "event", o->event);
	dacce_store_set_meta(store, "event_encoding", s->sampler.event);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)o->period);
	dacce_store_set_meta(store, "period", o->period ? buf : "");
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(o->period ? 0 : o->freq));
	dacce_store_set_meta(store, "freq", buf);
	dacce_store_set_meta(store, "period_unit", s->sampler.is_time ? "nanoseconds" : "events");
	dacce_store_set_meta(store, "runtime", runtime);
	dacce_store_set_meta(store, "epochs", o->epochs);
	if (uname(&uts) == 0) {
		snprintf(buf, sizeof(buf), "%s %s %s", uts.sysname, uts.release, uts.machine);
		dacce_store_set_meta(store, "kernel", buf);
		dacce_store_set_meta(store, "hostname", uts.nodename);
	}
}

static void status_line(const struct session *s, uint64_t start_ns, bool final)
{
	const struct dacce_capture_stats *st = dacce_capture_stats(s->cap);

	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	fprintf(stderr, "\r\033[K[dacce] %.1f s  %llu samples  %llu edges  %llu epochs",
		(double)(dacce_now_ns() - start_ns) / 1e9, (unsigned long long)st->samples,
		(unsigned long long)st->edges, (unsigned long long)st->epochs);
}

static void summary(struct session *s, const char *output)
{
	const struct dacce_capture_stats *st = dacce_capture_stats(s->cap);
	uint64_t lost = counter_sum(s, DACCE_CNT_LOST_SAMPLES);
	uint64_t lost_records = counter_sum(s, DACCE_CNT_LOST_RECORDS);

	fprintf(stderr,
		"dacce: %llu samples (%llu lost, %llu without context), %llu threads in %llu "
		"processes, %llu edges, %llu epochs (%llu asked for); capture written to %s\n",
		(unsigned long long)st->samples, (unsigned long long)lost,
		(unsigned long long)st->samples_without_context, (unsigned long long)st->threads,
		(unsigned long long)st->processes, (unsigned long long)st->edges,
		(unsigned long long)st->epochs,
		(unsigned long long)(s->policy ? dacce_policy_requests(s->policy) : 0), output);
	if (lost_records || st->dicts_missing)
		fprintf(stderr,
			"dacce: warning: %llu records lost (ring buffer full), %llu dictionaries "
			"incomplete: contexts of those epochs will not decode; try --ringbuf-mb\n",
			(unsigned long long)lost_records, (unsigned long long)st->dicts_missing);
}

static void store_counters(struct session *s)
{
	static const struct {
		enum dacce_counter which;
		const char *name;
	} names[] = {
		{ DACCE_CNT_LOST_RECORDS, "lost_records" },
		{ DACCE_CNT_LOST_SAMPLES, "lost_samples" },
		{ DACCE_CNT_SAMPLES, "samples_taken" },
		{ DACCE_CNT_DICT_TOO_BIG, "dicts_too_big" },
	};
	char sql[256];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(sql, sizeof(sql),
			 "INSERT OR REPLACE INTO counters (name, value) VALUES ('%s', %llu)",
			 names[i].name, (unsigned long long)counter_sum(s, names[i].which));
		dacce_store_exec(s->store, sql);
	}
}

/* Validates what was captured (--validate); prints the result. */
static int validate_capture(struct session *s)
{
	struct dacce_validate_options opts = { .show_mismatches = 10 };
	struct dacce_validate_result result;
	struct dacce_model model = { 0 };
	char why[512];
	int err;

	err = dacce_model_load(s->store, &model, why, sizeof(why));
	if (!err)
		err = dacce_validate(&model, &opts, stderr, &result, why, sizeof(why));
	dacce_model_fini(&model);
	if (err) {
		dacce_err("%s", why);
		return err;
	}
	dacce_validate_print(stderr, &result);
	return 0;
}

static void on_done(void *policy, uint32_t pid, int result, uint64_t epoch)
{
	dacce_policy_done(policy, pid, result, epoch);
}

/* Polls records until the program ends (or ^C detaches); returns its wait status. */
static int capture_loop(struct session *s, const struct launch_opts *o, pid_t child,
			bool *detached)
{
	bool tty = !o->quiet && isatty(STDERR_FILENO);
	uint64_t start = dacce_now_ns(), last_flush = start, last_status = 0;
	int status = 0;

	*detached = false;
	for (;;) {
		pid_t done;

		ring_buffer__poll(s->rb, 100);
		if (s->control) {
			dacce_control_serve(s->control, on_done, s->policy);
			dacce_policy_tick(s->policy, s->control, dacce_now_ns());
		}
		if (forward_signal && !o->detach_on_interrupt) {
			kill(child, forward_signal);
			forward_signal = 0;
		}
		if (interrupted && o->detach_on_interrupt) {
			*detached = true;
			break;
		}
		done = waitpid(child, &status, WNOHANG);
		if (done == child)
			break;
		if (dacce_now_ns() - last_flush > FLUSH_NS) {
			dacce_capture_flush(s->cap);
			last_flush = dacce_now_ns();
		}
		if (tty && dacce_now_ns() - last_status > 1000000000ull) {
			status_line(s, start, false);
			last_status = dacce_now_ns();
		}
	}
	/* What the program emitted before it ended is still in the buffer. */
	while (ring_buffer__consume(s->rb) > 0)
		;
	if (tty && last_status)
		status_line(s, start, true);
	return status;
}

int dacce_cmd_launch(int argc, char **argv)
{
	struct session s = { 0 };
	struct launch_opts o;
	struct sigaction sa = { 0 };
	char runtime[PATH_MAX], why[512];
	int go[2] = { -1, -1 }, report[2] = { -1, -1 };
	int err, status = 0, exec_errno = 0, exit_code = 1;
	bool detached = false;
	pid_t child = -1;

	err = parse(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	if (dacce_find_runtime(o.runtime, runtime, sizeof(runtime), why, sizeof(why))) {
		dacce_err("%s", why);
		return 1;
	}
	if (dacce_check_program(o.argv[0], why, sizeof(why))) {
		dacce_err("%s", why);
		return 127;
	}
	if (!o.verbose)
		libbpf_set_print(libbpf_quiet);
	if (load_bpf(&s, &o))
		goto out;
	if (dacce_store_create(o.output, &s.store, why, sizeof(why))) {
		dacce_err("%s", why);
		goto out;
	}
	if (dacce_capture_new(s.store, &s.cap))
		goto out;
	if (strcmp(o.epochs, "controller") == 0 &&
	    (dacce_policy_new(NULL, &s.policy) || (err = dacce_control_listen(&s.control)))) {
		dacce_err("cannot open the control channel: %s", strerror(err ? -err : ENOMEM));
		goto out;
	}
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0) {
		dacce_err("cannot create pipes: %s", strerror(errno));
		goto out;
	}
	child = fork();
	if (child < 0) {
		dacce_err("cannot fork: %s", strerror(errno));
		goto out;
	}
	if (child == 0) {
		close(go[1]);
		close(report[0]);
		run_child(&o, &s, runtime, go[0], report[1]);
	}
	close(go[0]);
	close(report[1]);
	go[0] = report[1] = -1;
	/* Its image in the capture starts at its exec (DACCE_EV_EXEC), when it is the program. */
	if (follow(&s, child) || attach_all(&s, &o, runtime))
		goto out; /* closing go below ends the child before it runs anything */
	write_meta(s.store, &o, &s, runtime);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (write(go[1], "g", 1) != 1) {
		dacce_err("cannot start %s: %s", o.argv[0], strerror(errno));
		goto out;
	}
	close(go[1]);
	go[1] = -1;
	if (read(report[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
		waitpid(child, NULL, 0);
		child = -1;
		dacce_err("cannot run %s: %s", o.argv[0], strerror(exec_errno));
		exit_code = 127;
		goto out;
	}
	status = capture_loop(&s, &o, child, &detached);
	if (!detached)
		dacce_capture_root_ended(s.cap, (uint32_t)child, status, dacce_now_ns());
	dacce_capture_flush(s.cap);
	store_counters(&s);
	if (!o.quiet)
		summary(&s, o.output);
	if (detached) {
		fprintf(stderr, "dacce: detached; %s (pid %d) keeps running\n", o.argv[0], child);
		exit_code = 0;
	} else {
		exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	child = -1;
	if (o.validate && validate_capture(&s))
		exit_code = exit_code ? exit_code : 1;
out:
	if (go[1] >= 0)
		close(go[1]);
	if (report[0] >= 0)
		close(report[0]);
	if (child > 0)
		waitpid(child, NULL, 0); /* it read EOF on go and ended without running */
	session_close(&s);
	return exit_code;
}
