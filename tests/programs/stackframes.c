// SPDX-License-Identifier: MIT
/*
 * Unusual frames: callers with variable-length arrays and alloca (frames
 * whose size is known only at run time, %rbp-based even without frame
 * pointers), leaf functions that keep their locals in the red zone (below
 * %rsp, no frame at all) reached by direct, indirect and sibling calls, one
 * of them through a switch, all while a timer signal arrives every 100 us
 * (its frame skips the red zone; the runtime's wrapper must too).  Every
 * value is checked after it has sat in the red zone; callees check that the
 * stack is still 16-byte aligned.  Probes from under the VLA and alloca
 * frames.
 */
#include <alloca.h>
#include <signal.h>
#include <sys/time.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static volatile long ticks;
static int bad;

static void report(const char *what, long got, long want)
{
	if (got != want) {
		printf("BAD %s: %ld, expected %ld\n", what, got, want);
		bad++;
	}
}

/* The stack pointer at a call is 16-byte aligned: a local aligned to 16 must be. */
NOINLINE static void check_alignment(const char *who)
{
	_Alignas(16) char local[16];
	uintptr_t at = (uintptr_t)local;

	__asm__ volatile("" : "+r"(at)); /* hides what the compiler knows about the alignment */
	local[0] = 0;
	if (at & 15) {
		printf("BAD %s: stack misaligned\n", who);
		bad++;
	}
}

/* Leaves: locals in the red zone across a busy loop (signals arrive meanwhile). */
NOINLINE static long redzone_leaf(long k)
{
	volatile long buf[14]; /* 112 bytes: fits in the 128-byte red zone */
	long s = 0;

	for (int i = 0; i < 14; i++)
		buf[i] = k * 31 + i;
	for (int j = 0; j < 100000; j++)
		sink = j;
	for (int i = 0; i < 14; i++) {
		if (buf[i] != k * 31 + i)
			bad++;
		s += buf[i];
	}
	return s;
}

NOINLINE static long redzone_switch(int op, long a)
{
	volatile long keep[8];
	long r;

	for (int i = 0; i < 8; i++)
		keep[i] = a ^ (i * 0x1111);
	switch (op) { /* a jump table while the red zone is live */
	case 0: r = a + 1; break;
	case 1: r = a * 3; break;
	case 2: r = a - 7; break;
	case 3: r = a << 2; break;
	case 4: r = a >> 1; break;
	case 5: r = a ^ 0x55; break;
	case 6: r = -a; break;
	case 7: r = a * a; break;
	case 8: r = a % 13; break;
	default: r = 42; break;
	}
	for (int j = 0; j < 20000; j++)
		sink = j;
	for (int i = 0; i < 8; i++)
		if (keep[i] != (a ^ (i * 0x1111)))
			bad++;
	return r;
}

static long (*volatile leaf_ptr)(long) = redzone_leaf;

NOINLINE static long leaf_by_sibling(long k)
{
	return redzone_leaf(k + 1); /* jmp at -O2 */
}

NOINLINE static long consume(const long *values, int n, const char *tag)
{
	long s = 0;

	check_alignment(tag);
	for (int i = 0; i < n; i++)
		s += values[i];
	if (n % 10 == 3)
		probe(tag);
	return s;
}

NOINLINE static long with_vla(int n)
{
	long vla[n];
	long want = 0, got;

	for (int i = 0; i < n; i++) {
		vla[i] = (long)i * n;
		want += (long)i * n;
	}
	got = consume(vla, n, "under-vla");
	report("vla sum", got, want);
	/* The VLA must be intact after the call returned through our code. */
	for (int i = 0; i < n; i++)
		if (vla[i] != (long)i * n)
			bad++;
	return got + leaf_ptr(n);
}

NOINLINE static long with_alloca(int rounds)
{
	long total = 0;

	for (int r = 0; r < rounds; r++) {
		int n = 3 + r * 5;
		long *p = alloca((size_t)n * sizeof(long)); /* the frame grows each round */
		long want = 0;

		for (int i = 0; i < n; i++) {
			p[i] = r * 100 + i;
			want += p[i];
		}
		report("alloca sum", consume(p, n, "under-alloca"), want);
		total += want + redzone_switch(r % 10, want);
	}
	return total;
}

NOINLINE static void tick_work(void)
{
	ticks++;
}

static void on_tick(int sig)
{
	(void)sig;
	tick_work();
}

int main(void)
{
	struct sigaction sa;
	struct itimerval every = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };
	long total = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &every, NULL);
	for (int k = 0; k < 40; k++) {
		long a = redzone_leaf(k), b = leaf_ptr(k), c = leaf_by_sibling(k);

		report("leaf", a, b);
		report("leaf by sibling call", c - a, 14 * 31);
		total += a + redzone_switch(k % 11, k) + with_vla(k + 1);
		total += with_alloca(k % 6 + 1);
	}
	setitimer(ITIMER_REAL, &off, NULL);
	check_alignment("main");
	probe("main");
	printf("total %ld, %d bad, ticks %s\n", total, bad, ticks > 0 ? "seen" : "none");
	return bad != 0;
}
