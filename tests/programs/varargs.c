// SPDX-License-Identifier: MIT
/*
 * Variadic functions: a printf-like formatter whose va_list is passed down
 * two levels (and copied with va_copy, and handed to libc's vsnprintf), called
 * with more integers and doubles than fit in registers (the rest in the
 * overflow area on the stack), directly, through a pointer, and by a sibling
 * call.  %al, the count of vector registers used, must survive every
 * trampoline, or the callee's prologue skips saving the doubles.  Every
 * result is compared with snprintf of the same values; "%!" in a format
 * probes from inside the formatter.
 */
#include <stdarg.h>

#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static int bad;

struct out {
	char buf[512];
	int len;
};

NOINLINE static void put(struct out *o, const char *s)
{
	o->len += snprintf(o->buf + o->len, sizeof(o->buf) - (size_t)o->len, "%s", s);
}

/* Takes one conversion's argument from the va_list it was handed (a pointer, on x86-64). */
NOINLINE static void convert(struct out *o, char c, va_list ap, int depth)
{
	char piece[64];

	switch (c) {
	case 'd': snprintf(piece, sizeof(piece), "%d", va_arg(ap, int)); break;
	case 'l': snprintf(piece, sizeof(piece), "%ld", va_arg(ap, long)); break;
	case 'f': snprintf(piece, sizeof(piece), "%.2f", va_arg(ap, double)); break;
	case 's': snprintf(piece, sizeof(piece), "%s", va_arg(ap, const char *)); break;
	case '!': {
		char tag[32];

		snprintf(tag, sizeof(tag), "in-format depth %d", depth);
		probe(tag);
		piece[0] = 0;
		break;
	}
	default: piece[0] = c; piece[1] = 0;
	}
	put(o, piece);
}

NOINLINE static void vformat(struct out *o, const char *fmt, va_list ap, int depth)
{
	for (const char *p = fmt; *p; p++) {
		char text[2] = { *p, 0 };

		if (*p == '%' && p[1])
			convert(o, *++p, ap, depth);
		else
			put(o, text);
	}
}

/* Formats twice from one va_list: our own way, and libc's vsnprintf on a copy. */
NOINLINE static int vcheck(struct out *o, const char *fmt, const char *libc_fmt, va_list ap)
{
	char theirs[512];
	va_list copy;

	va_copy(copy, ap);
	vformat(o, fmt, ap, 2);
	vsnprintf(theirs, sizeof(theirs), libc_fmt, copy);
	va_end(copy);
	if (strcmp(o->buf, theirs) != 0) {
		printf("BAD: '%s' != '%s'\n", o->buf, theirs);
		bad++;
	}
	return o->len;
}

/* fmt for us, libc_fmt the same for snprintf (with %.2f, %ld and no %!). */
NOINLINE static int format(struct out *o, const char *fmt, const char *libc_fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, libc_fmt);
	n = vcheck(o, fmt, libc_fmt, ap);
	va_end(ap);
	return n;
}

static int (*volatile format_ptr)(struct out *, const char *, const char *, ...) = format;

/* A variadic function: the sum of its arguments, each weighted by its position. */
NOINLINE static long sum_longs(int n, ...)
{
	va_list ap;
	long s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, long) * (i + 1);
	va_end(ap);
	if (n == 9)
		probe("sum-longs");
	return s;
}

/* Nine variadic longs, three of them on the stack, by a sibling call (jmp, %al = 0) at -O2. */
__attribute__((noipa)) static long forward(long a, long b, long c, long d, long e, long f, long g, long h, long i, long spare)
{
	(void)spare; /* one more stack slot than sum_longs needs: room for the sibling call */
	return sum_longs(9, a, b, c, d, e, f, g, h, i);
}

NOINLINE static double sum_doubles(int n, ...)
{
	va_list ap;
	double s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double) * (i + 1);
	va_end(ap);
	return s;
}

static double (*volatile sum_doubles_ptr)(int, ...) = sum_doubles;

NOINLINE static int round_of(int k)
{
	struct out a = { .len = 0 }, b = { .len = 0 }, c = { .len = 0 };
	double x = k + 0.25;
	long want_longs = 0, got_longs;
	double want_doubles = 0, got_doubles;
	int n = 0;

	/* Eight ints and ten doubles: two of each kind past the registers. */
	n += format(&a, "%d %d %d %d %d %d %d %d|%f %f %f %f %f %f %f %f %f %f|%s%!",
		    "%d %d %d %d %d %d %d %d|%.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f|%s",
		    k, k + 1, k + 2, k + 3, k + 4, k + 5, k + 6, k + 7,
		    x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7, x + 8, x + 9, "end");
	n += format_ptr(&b, "%l %f %s %l%!", "%ld %.2f %s %ld", (long)k << 33, x * 3, "mid", -(long)k);
	n += format(&c, "%f%d%f%d%f%d%f%d%f%d", "%.2f%d%.2f%d%.2f%d%.2f%d%.2f%d",
		    x, 1, x, 2, x, 3, x, 4, x, 5);
	got_longs = forward(k, 2 * k, 3 * k, k + 1, 2 * k + 1, 3 * k + 1, k + 2, 2 * k + 2, 3 * k + 2, 0);
	for (int i = 0; i < 9; i++)
		want_longs += (long)(i / 3 + (i % 3 + 1) * k) * (i + 1);
	if (got_longs != want_longs) {
		printf("BAD sum_longs %ld != %ld\n", got_longs, want_longs);
		bad++;
	}
	got_doubles = sum_doubles_ptr(12, x, x, x, x, x, x, x, x, x, x, x, x + 1);
	for (int i = 0; i < 12; i++)
		want_doubles += (i == 11 ? x + 1 : x) * (i + 1);
	if (got_doubles != want_doubles) {
		printf("BAD sum_doubles %f != %f\n", got_doubles, want_doubles);
		bad++;
	}
	if (k % 25 == 0)
		printf("%s\n%s\n%s\n", a.buf, b.buf, c.buf);
	return n + sink;
}

int main(void)
{
	long total = 0;

	for (int k = 0; k < 100; k++)
		total += round_of(k);
	probe("main");
	printf("total %ld, %d bad\n", total, bad);
	return bad != 0;
}
