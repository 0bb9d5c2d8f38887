// SPDX-License-Identifier: MIT
/*
 * The unwinder against stacks whose truth is known: a program built here
 * with gcc (-O2, with and without frame pointers, PIE and not, and without
 * any CFI) captures its own registers and the top of its stack at a known
 * depth (main -> a -> b -> descend^n -> c), the way the BPF sampler copies
 * them, and writes them out with its modules (/proc/self/maps, biases from
 * dl_iterate_phdr) and the return addresses each function recorded with
 * __builtin_return_address and backtrace().  Unwinding the copy must give
 * exactly those addresses and stop at the outermost frame.
 *
 * The program also captures in a thread (ends in clone3), in a signal
 * handler (crosses __restore_rt's signal frame), under a trampoline made at
 * run time (no CFI: rules given with dacce_unwinder_add_code), and in a
 * frame whose CFI loads the return address from a read-only section
 * (memory read from the module file), and under a function whose last
 * instruction is a call (its return address lies past its end).  Samples
 * made from those by hand put the pc in a PLT entry (a CFA expression), and
 * the copy is cut at every length: a short copy must stop with "stack copy
 * too short", never give a wrong frame.  Damaged module files must be
 * refused or survived.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "stack_unwind.h"

/* The capturing program; its modes are enum capture_mode, its arguments OUT MODE DEPTH. */
static const char capture_source[] =
	"/*\n"
	" * Captures its own registers and stack at a known depth; see\n"
	" * check_user_unwind.c.  Built as one file, or as two objects (-DPART_CHAIN:\n"
	" * the call chain only; -DPART_ROOT: the rest) so that the chain alone can\n"
	" * lack CFI while main and its callers keep it.\n"
	" */\n"
	"#define _GNU_SOURCE\n"
	"#include <execinfo.h>\n"
	"#include <link.h>\n"
	"#include <pthread.h>\n"
	"#include <setjmp.h>\n"
	"#include <signal.h>\n"
	"#include <stdint.h>\n"
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"#include <sys/mman.h>\n"
	"\n"
	"#define NOINLINE __attribute__((noinline, noclone))\n"
	"#define STACK_CAP 32768\n"
	"#define MAX_DEPTH 32\n"
	"\n"
	"struct capture {\n"
	"\tuint64_t regs[17]; /* DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */\n"
	"\tuint64_t stack_start, stack_len;\n"
	"\tunsigned char stack[STACK_CAP];\n"
	"};\n"
	"\n"
	"/*\n"
	" * capture_state(out, stack_end): the registers as they are once it has\n"
	" * returned (rip: its return address, rsp: above it), and the stack from\n"
	" * there up to STACK_CAP bytes or stack_end.\n"
	" */\n"
	"void capture_state(struct capture *out, uint64_t stack_end);\n"
	"#ifndef PART_CHAIN\n"
	"__asm__(\".text\\n.globl capture_state\\n.type capture_state, @function\\n\"\n"
	"\t\"capture_state:\\n\"\n"
	"\t\".cfi_startproc\\n\"\n"
	"\t\"mov %rax, 0(%rdi)\\nmov %rdx, 8(%rdi)\\nmov %rcx, 16(%rdi)\\nmov %rbx, 24(%rdi)\\n\"\n"
	"\t\"mov %rsi, 32(%rdi)\\nmov %rdi, 40(%rdi)\\nmov %rbp, 48(%rdi)\\n\"\n"
	"\t\"mov %r8, 64(%rdi)\\nmov %r9, 72(%rdi)\\nmov %r10, 80(%rdi)\\nmov %r11, 88(%rdi)\\n\"\n"
	"\t\"mov %r12, 96(%rdi)\\nmov %r13, 104(%rdi)\\n\"\n"
	"\t\"mov %r14, 112(%rdi)\\nmov %r15, 120(%rdi)\\n\"\n"
	"\t\"mov (%rsp), %rax\\nmov %rax, 128(%rdi)\\n\"\n"
	"\t\"lea 8(%rsp), %rax\\nmov %rax, 56(%rdi)\\nmov %rax, 136(%rdi)\\n\"\n"
	"\t\"mov %rsi, %rcx\\nsub %rax, %rcx\\n\"\n"
	"\t\"cmp $32768, %rcx\\njbe 1f\\nmov $32768, %rcx\\n1:\\n\"\n"
	"\t\"mov %rcx, 144(%rdi)\\nlea 152(%rdi), %rdi\\nmov %rax, %rsi\\nrep movsb\\nret\\n\"\n"
	"\t\".cfi_endproc\\n.size capture_state, .-capture_state\\n\");\n"
	"#endif\n"
	"\n"
	"#ifdef ODD\n"
	"/*\n"
	" * odd_frame's return address comes from a CFI expression that loads it from\n"
	" * a read-only section at a fixed address (-Wl,--section-start): unwinding\n"
	" * must read the module file there.\n"
	" */\n"
	"int odd_caller(void);\n"
	"void *odd_caller_ra;\n"
	"__asm__(\".section .odd_const, \\\"a\\\"\\n.quad odd_ret\\n\"\n"
	"\t\".text\\n.globl odd_caller\\n.type odd_caller, @function\\nodd_caller:\\n\"\n"
	"\t\".cfi_startproc\\nmov (%rsp), %rax\\nmov %rax, odd_caller_ra(%rip)\\n\"\n"
	"\t\"sub $8, %rsp\\n.cfi_adjust_cfa_offset 8\\ncall odd_frame\\n\"\n"
	"\t\".globl odd_ret\\nodd_ret:\\n\"\n"
	"\t\"add $8, %rsp\\n.cfi_adjust_cfa_offset -8\\nret\\n.cfi_endproc\\n\"\n"
	"\t\".type odd_frame, @function\\nodd_frame:\\n.cfi_startproc\\n\"\n"
	"\t/* DW_CFA_val_expression rip: DW_OP_const4u 0x10000000; DW_OP_deref */\n"
	"\t\".cfi_escape 0x16, 0x10, 0x06, 0x0c, 0x00, 0x00, 0x00, 0x10, 0x06\\n\"\n"
	"\t\"sub $8, %rsp\\n.cfi_adjust_cfa_offset 8\\nxor %edi, %edi\\ncall c\\n\"\n"
	"\t\"add $8, %rsp\\n.cfi_adjust_cfa_offset -8\\nret\\n.cfi_endproc\\n\");\n"
	"extern char odd_ret[];\n"
	"#endif\n"
	"\n"
	"enum mode { MODE_MAIN, MODE_THREAD, MODE_SIGNAL, MODE_TRAMP, MODE_ODD, MODE_NORETURN };\n"
	"\n"
	"extern struct capture cap;\n"
	"extern enum mode mode;\n"
	"extern int depth, n_bt;\n"
	"extern uint64_t stack_end;\n"
	"extern void *rec_c, *rec_d[MAX_DEPTH + 1], *rec_b, *rec_a, *rec_handler;\n"
	"extern void *tramp_ra, *bt[128];\n"
	"extern unsigned char *tramp;\n"
	"extern jmp_buf escape_jump;\n"
	"extern void *rec_escape, *rec_fall;\n"
	"extern volatile int sink;\n"
	"int a(int x);\n"
	"int c(int x);\n"
	"void on_signal(int sig);\n"
	"#ifndef PART_CHAIN\n"
	"/* Calls rdi with rsp 24 bytes lower, after storing its own return address at [rsi]. */\n"
	"static const unsigned char tramp_code[] = {\n"
	"\t0x48, 0x8b, 0x04, 0x24, /* mov (%rsp), %rax */\n"
	"\t0x48, 0x89, 0x06,\t/* mov %rax, (%rsi) */\n"
	"\t0x48, 0x83, 0xec, 0x18, /* sub $24, %rsp */\n"
	"\t0xff, 0xd7,\t\t/* call *%rdi */\n"
	"\t0x48, 0x83, 0xc4, 0x18, /* add $24, %rsp */\n"
	"\t0xc3,\t\t\t/* ret */\n"
	"};\n"
	"#define TRAMP_RET 13 /* offset of the instruction after the call */\n"
	"#endif\n"
	"\n"
	"#ifndef PART_ROOT\n"
	"\n"
	"NOINLINE int c(int x)\n"
	"{\n"
	"\trec_c = __builtin_return_address(0);\n"
	"\tcapture_state(&cap, stack_end);\n"
	"\tn_bt = backtrace(bt, 128);\n"
	"\tsink = x;\n"
	"\treturn x + 1;\n"
	"}\n"
	"\n"
	"NOINLINE int descend(int n)\n"
	"{\n"
	"\tint r;\n"
	"\n"
	"\trec_d[n] = __builtin_return_address(0);\n"
	"\tr = n ? descend(n - 1) : c(n);\n"
	"\tsink = r;\n"
	"\treturn r + 1;\n"
	"}\n"
	"\n"
	"/* Never returns: the call to it is the last instruction of fall(). */\n"
	"NOINLINE __attribute__((noreturn)) void escape(void)\n"
	"{\n"
	"\trec_escape = __builtin_return_address(0);\n"
	"\tsink = c(0);\n"
	"\tlongjmp(escape_jump, 1);\n"
	"}\n"
	"\n"
	"NOINLINE void fall(void)\n"
	"{\n"
	"\trec_fall = __builtin_return_address(0);\n"
	"\tescape();\n"
	"}\n"
	"\n"
	"void on_signal(int sig)\n"
	"{\n"
	"\trec_handler = __builtin_return_address(0);\n"
	"\tsink = c(sig);\n"
	"}\n"
	"\n"
	"NOINLINE int b(int x)\n"
	"{\n"
	"\tint r;\n"
	"\n"
	"\trec_b = __builtin_return_address(0);\n"
	"\tswitch (mode) {\n"
	"\tcase MODE_SIGNAL:\n"
	"\t\tr = raise(SIGUSR1);\n"
	"\t\tbreak;\n"
	"\tcase MODE_TRAMP:\n"
	"\t\tr = ((int (*)(int (*)(int), void **))(void *)tramp)(c, &tramp_ra);\n"
	"\t\tbreak;\n"
	"#ifdef ODD\n"
	"\tcase MODE_ODD:\n"
	"\t\tr = odd_caller();\n"
	"\t\tbreak;\n"
	"#endif\n"
	"\tcase MODE_NORETURN:\n"
	"\t\tif (!setjmp(escape_jump))\n"
	"\t\t\tfall();\n"
	"\t\tr = 0;\n"
	"\t\tbreak;\n"
	"\tdefault:\n"
	"\t\tr = descend(depth);\n"
	"\t}\n"
	"\tsink = r;\n"
	"\treturn r + x;\n"
	"}\n"
	"\n"
	"NOINLINE int a(int x)\n"
	"{\n"
	"\tint r;\n"
	"\n"
	"\trec_a = __builtin_return_address(0);\n"
	"\tr = b(x + 1);\n"
	"\tsink = r;\n"
	"\treturn r * 3;\n"
	"}\n"
	"#endif\n"
	"\n"
	"#ifndef PART_CHAIN\n"
	"struct capture cap;\n"
	"enum mode mode;\n"
	"int depth, n_bt;\n"
	"uint64_t stack_end;\n"
	"void *rec_c, *rec_d[MAX_DEPTH + 1], *rec_b, *rec_a, *rec_handler, *tramp_ra, *bt[128];\n"
	"unsigned char *tramp;\n"
	"jmp_buf escape_jump;\n"
	"void *rec_escape, *rec_fall;\n"
	"volatile int sink;\n"
	"static void *rec_root, *root_bt[128];\n"
	"static int n_root_bt;\n"
	"\n"
	"static void find_stack_end(void)\n"
	"{\n"
	"\tpthread_attr_t attr;\n"
	"\tvoid *addr;\n"
	"\tsize_t size;\n"
	"\n"
	"\tif (pthread_getattr_np(pthread_self(), &attr) ||\n"
	"\t    pthread_attr_getstack(&attr, &addr, &size))\n"
	"\t\tabort();\n"
	"\tstack_end = (uint64_t)(uintptr_t)addr + size;\n"
	"\tpthread_attr_destroy(&attr);\n"
	"}\n"
	"\n"
	"static void *worker(void *arg)\n"
	"{\n"
	"\trec_root = __builtin_return_address(0);\n"
	"\tn_root_bt = backtrace(root_bt, 128);\n"
	"\tfind_stack_end();\n"
	"\tsink = a(1);\n"
	"\treturn arg;\n"
	"}\n"
	"\n"
	"struct module {\n"
	"\tuint64_t start, end, bias;\n"
	"\tint have_bias;\n"
	"\tchar path[512];\n"
	"};\n"
	"static struct module mods[64];\n"
	"static int n_mods;\n"
	"\n"
	"static void read_maps(void)\n"
	"{\n"
	"\tFILE *f = fopen(\"/proc/self/maps\", \"r\");\n"
	"\tchar line[1024], path[512];\n"
	"\tunsigned long start, end;\n"
	"\n"
	"\tif (!f)\n"
	"\t\tabort();\n"
	"\twhile (fgets(line, sizeof(line), f)) {\n"
	"\t\tpath[0] = 0;\n"
	"\t\tif (sscanf(line, \"%lx-%lx %*s %*s %*s %*s %511s\", &start, &end, path) < 3 ||\n"
	"\t\t    path[0] != '/')\n"
	"\t\t\tcontinue;\n"
	"\t\tif (n_mods && strcmp(mods[n_mods - 1].path, path) == 0) {\n"
	"\t\t\tmods[n_mods - 1].end = end;\n"
	"\t\t\tcontinue;\n"
	"\t\t}\n"
	"\t\tif (n_mods == 64)\n"
	"\t\t\tabort();\n"
	"\t\tmods[n_mods].start = start;\n"
	"\t\tmods[n_mods].end = end;\n"
	"\t\tstrcpy(mods[n_mods].path, path);\n"
	"\t\tn_mods++;\n"
	"\t}\n"
	"\tfclose(f);\n"
	"}\n"
	"\n"
	"static int on_object(struct dl_phdr_info *info, size_t size, void *data)\n"
	"{\n"
	"\t(void)size;\n"
	"\t(void)data;\n"
	"\tfor (int i = 0; i < info->dlpi_phnum; i++) {\n"
	"\t\tuint64_t at = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;\n"
	"\n"
	"\t\tif (info->dlpi_phdr[i].p_type != PT_LOAD)\n"
	"\t\t\tcontinue;\n"
	"\t\tfor (int m = 0; m < n_mods; m++)\n"
	"\t\t\tif (at >= mods[m].start && at < mods[m].end) {\n"
	"\t\t\t\tmods[m].bias = info->dlpi_addr;\n"
	"\t\t\t\tmods[m].have_bias = 1;\n"
	"\t\t\t}\n"
	"\t\tbreak;\n"
	"\t}\n"
	"\treturn 0;\n"
	"}\n"
	"\n"
	"static void list(FILE *f, const char *name, void *const *v, int n)\n"
	"{\n"
	"\tfprintf(f, \"%s %d\", name, n);\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\tfprintf(f, \" %lx\", (unsigned long)(uintptr_t)v[i]);\n"
	"\tfprintf(f, \"\\n\");\n"
	"}\n"
	"\n"
	"/* The true stack above frame 0, from return addresses each function recorded. */\n"
	"static int make_truth(void **truth)\n"
	"{\n"
	"\tint n = 0, i;\n"
	"\n"
	"\ttruth[n++] = rec_c;\n"
	"\tif (mode == MODE_SIGNAL) {\n"
	"\t\t/* Only backtrace() knows the interrupted frames: */\n"
	"\t\t/* bt = [c, rec_c, rec_handler, interrupted..., rec_b, ...] */\n"
	"\t\ttruth[n++] = rec_handler;\n"
	"\t\tfor (i = 3; i < n_bt && bt[i] != rec_b; i++)\n"
	"\t\t\ttruth[n++] = bt[i];\n"
	"\t} else if (mode == MODE_NORETURN) {\n"
	"\t\ttruth[n++] = rec_escape; /* past the end of fall() */\n"
	"\t\ttruth[n++] = rec_fall;\n"
	"\t} else if (mode == MODE_TRAMP) {\n"
	"\t\ttruth[n++] = tramp_ra;\n"
	"\t} else if (mode == MODE_ODD) {\n"
	"#ifdef ODD\n"
	"\t\ttruth[n++] = odd_ret;\n"
	"\t\ttruth[n++] = odd_caller_ra;\n"
	"#endif\n"
	"\t} else {\n"
	"\t\tfor (i = 0; i <= depth; i++)\n"
	"\t\t\ttruth[n++] = rec_d[i];\n"
	"\t}\n"
	"\ttruth[n++] = rec_b;\n"
	"\ttruth[n++] = rec_a;\n"
	"\ttruth[n++] = rec_root;\n"
	"\t/* root_bt = [root, rec_root, its callers...] */\n"
	"\tif (n_root_bt < 2 || root_bt[1] != rec_root)\n"
	"\t\tabort();\n"
	"\tfor (i = 2; i < n_root_bt; i++)\n"
	"\t\ttruth[n++] = root_bt[i];\n"
	"\treturn n;\n"
	"}\n"
	"\n"
	"static void write_capture(const char *out)\n"
	"{\n"
	"\tchar path[4096];\n"
	"\tvoid *truth[256];\n"
	"\tFILE *f;\n"
	"\n"
	"\tread_maps();\n"
	"\tdl_iterate_phdr(on_object, NULL);\n"
	"\tsnprintf(path, sizeof(path), \"%s.stack\", out);\n"
	"\tf = fopen(path, \"wb\");\n"
	"\tif (!f || fwrite(cap.stack, 1, cap.stack_len, f) != cap.stack_len || fclose(f))\n"
	"\t\tabort();\n"
	"\tf = fopen(out, \"w\");\n"
	"\tif (!f)\n"
	"\t\tabort();\n"
	"\tfprintf(f, \"regs\");\n"
	"\tfor (int i = 0; i < 17; i++)\n"
	"\t\tfprintf(f, \" %lx\", (unsigned long)cap.regs[i]);\n"
	"\tfprintf(f, \"\\nstack %lx %lx\\n\", (unsigned long)cap.stack_start,\n"
	"\t\t(unsigned long)cap.stack_len);\n"
	"\tlist(f, \"truth\", truth, make_truth(truth));\n"
	"\tlist(f, \"bt\", bt, n_bt);\n"
	"\tfprintf(f, \"tramp %lx %lx %x\\n\", (unsigned long)(uintptr_t)tramp,\n"
	"\t\t(unsigned long)sizeof(tramp_code), TRAMP_RET);\n"
	"\tfprintf(f, \"entry %lx\\n\", (unsigned long)(uintptr_t)c);\n"
	"\tfor (int m = 0; m < n_mods; m++)\n"
	"\t\tif (mods[m].have_bias)\n"
	"\t\t\tfprintf(f, \"module %lx %lx %lx %s\\n\", (unsigned long)mods[m].start,\n"
	"\t\t\t\t(unsigned long)mods[m].end, (unsigned long)mods[m].bias,\n"
	"\t\t\t\tmods[m].path);\n"
	"\tif (fclose(f))\n"
	"\t\tabort();\n"
	"}\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tpthread_t thread;\n"
	"\n"
	"\tif (argc != 4)\n"
	"\t\treturn 2;\n"
	"\tmode = (enum mode)atoi(argv[2]);\n"
	"\tdepth = atoi(argv[3]);\n"
	"\tif (depth < 0 || depth > MAX_DEPTH)\n"
	"\t\treturn 2;\n"
	"\ttramp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
	"\tif (tramp == MAP_FAILED)\n"
	"\t\treturn 1;\n"
	"\tmemcpy(tramp, tramp_code, sizeof(tramp_code));\n"
	"\tif (mprotect(tramp, 4096, PROT_READ | PROT_EXEC))\n"
	"\t\treturn 1;\n"
	"\tsignal(SIGUSR1, on_signal);\n"
	"\tif (mode == MODE_THREAD) {\n"
	"\t\tif (pthread_create(&thread, NULL, worker, NULL) || pthread_join(thread, NULL))\n"
	"\t\t\treturn 1;\n"
	"\t} else {\n"
	"\t\trec_root = __builtin_return_address(0);\n"
	"\t\tn_root_bt = backtrace(root_bt, 128);\n"
	"\t\tfind_stack_end();\n"
	"\t\tsink = a(1);\n"
	"\t}\n"
	"\twrite_capture(argv[1]);\n"
	"\treturn 0;\n"
	"}\n"
	"#endif\n";

enum capture_mode { MODE_MAIN, MODE_THREAD, MODE_SIGNAL, MODE_TRAMP, MODE_ODD, MODE_NORETURN };

#define DEPTH		2  /* descend's recursion: 10 frames from c to _start */
#define TRAMP_SP_OFFSET 24 /* the trampoline's `sub $24, %rsp` */
#define ODD_FLAGS	"-DODD -Wl,--section-start=.odd_const=0x10000000"
#define MAX_FRAMES	256
#define MAX_MODULES	16
#define DAMAGE_ROUNDS	200

static const struct variant {
	const char *name;
	const char *flags;
	const char *chain_flags; /* non-NULL: more flags for the call chain, built apart */
	bool cfi;		 /* the chain has CFI */
	bool odd;		 /* has the frame whose CFI reads .odd_const */
} variants[] = {
	{ "pie-fp", "-fPIE -pie -fno-omit-frame-pointer", NULL, true, false },
	{ "pie-nofp", "-fPIE -pie -fomit-frame-pointer", NULL, true, false },
	{ "nopie-fp", "-fno-pie -no-pie -fno-omit-frame-pointer " ODD_FLAGS, NULL, true, true },
	{ "nopie-nofp", "-fno-pie -no-pie -fomit-frame-pointer " ODD_FLAGS, NULL, true, true },
	/* main keeps its CFI: what is above it comes from backtrace() there. */
	{ "nocfi-fp", "-fPIE -pie -fno-omit-frame-pointer",
	  "-fno-asynchronous-unwind-tables -fno-unwind-tables", false, false },
};
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

struct module_line {
	uint64_t start, end, bias;
	char path[PATH_MAX];
};

/* A capture read back. */
struct capture {
	struct dacce_unwind_sample sample;
	uint8_t *stack;
	uint64_t truth[MAX_FRAMES]; /* the frames above frame 0, innermost first */
	uint32_t n_truth;
	uint64_t bt[MAX_FRAMES]; /* backtrace() in c: [c, then truth when it could unwind] */
	uint32_t n_bt;
	uint64_t tramp, tramp_size, tramp_ret; /* the trampoline; tramp_ret: after its call */
	uint64_t c_entry;		       /* run-time address of c */
	struct module_line modules[MAX_MODULES];
	uint32_t n_modules;
	char program[PATH_MAX];
};

static char dir[64];

/* ------------------------------------------------------------ building and running */

static void path_in_dir(char *buf, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	ck_assert(n > 0 && n < PATH_MAX);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f, "cannot create %s", path);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static void *read_whole_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data;
	long size;

	ck_assert_msg(f, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	ck_assert(size >= 0);
	rewind(f);
	data = malloc((size_t)size + 1);
	ck_assert_ptr_nonnull(data);
	ck_assert_uint_eq(fread(data, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*len = (size_t)size;
	return data;
}

/* Runs a shell command in the inputs directory. */
static void run_in_dir(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void run_in_dir(const char *format, ...)
{
	char command[8192];
	int at = snprintf(command, sizeof(command), "cd %s && ", dir), n;
	va_list ap;

	ck_assert(at > 0 && (size_t)at < sizeof(command));
	va_start(ap, format);
	n = vsnprintf(command + at, sizeof(command) - (size_t)at, format, ap);
	va_end(ap);
	ck_assert(n >= 0 && (size_t)n < sizeof(command) - (size_t)at);
	ck_assert_msg(system(command) == 0, "failed: %s", command);
}

static void build_and_capture(const struct variant *v)
{
	if (v->chain_flags)
		run_in_dir("gcc -O2 -w -c %s %s -DPART_CHAIN -o %s-chain.o capture.c && "
			   "gcc -O2 -w -c %s -DPART_ROOT -o %s-root.o capture.c && "
			   "gcc -pthread %s -o %s %s-chain.o %s-root.o",
			   v->flags, v->chain_flags, v->name, v->flags, v->name, v->flags, v->name,
			   v->name, v->name);
	else
		run_in_dir("gcc -O2 -w -pthread %s -o %s capture.c", v->flags, v->name);
	run_in_dir("./%s %s-%d %d %d", v->name, v->name, MODE_MAIN, MODE_MAIN, DEPTH);
	if (!v->cfi)
		return;
	for (int mode = MODE_THREAD; mode <= MODE_NORETURN; mode++)
		if (mode != MODE_ODD)
			run_in_dir("./%s %s-%d %d %d", v->name, v->name, mode, mode, DEPTH);
	if (v->odd)
		run_in_dir("./%s %s-%d %d 0", v->name, v->name, MODE_ODD, MODE_ODD);
}

static void build_inputs(void)
{
	char path[PATH_MAX];

	strcpy(dir, "/tmp/check_user_unwind.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	path_in_dir(path, "capture.c");
	write_file(path, capture_source, strlen(capture_source));
	for (size_t i = 0; i < N_VARIANTS; i++)
		build_and_capture(&variants[i]);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_inputs(void)
{
	if (dir[0])
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------ reading captures */

static uint32_t read_list(char *rest, uint64_t *v)
{
	char *end;
	unsigned long n = strtoul(rest, &end, 10);

	ck_assert(n <= MAX_FRAMES);
	for (unsigned long i = 0; i < n; i++)
		v[i] = strtoull(end, &end, 16);
	return (uint32_t)n;
}

static void read_regs(char *rest, struct dacce_unwind_regs *regs)
{
	for (int i = 0; i < DACCE_UNWIND_NREGS; i++)
		regs->value[i] = strtoull(rest, &rest, 16);
	regs->known = (1u << DACCE_UNWIND_NREGS) - 1;
}

static void read_module(const char *rest, struct capture *c)
{
	struct module_line *m;

	ck_assert(c->n_modules < MAX_MODULES);
	m = &c->modules[c->n_modules++];
	ck_assert_int_eq(sscanf(rest, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %4095s", &m->start,
				&m->end, &m->bias, m->path),
			 4);
}

static void parse_line(char *line, struct capture *c)
{
	char *rest = strchr(line, ' ');
	uint64_t ret_offset;

	ck_assert_ptr_nonnull(rest);
	*rest++ = '\0';
	if (strcmp(line, "regs") == 0)
		read_regs(rest, &c->sample.regs);
	else if (strcmp(line, "stack") == 0)
		ck_assert_int_eq(sscanf(rest, "%" SCNx64 " %zx", &c->sample.stack_start,
					&c->sample.stack_len),
				 2);
	else if (strcmp(line, "truth") == 0)
		c->n_truth = read_list(rest, c->truth);
	else if (strcmp(line, "bt") == 0)
		c->n_bt = read_list(rest, c->bt);
	else if (strcmp(line, "tramp") == 0) {
		ck_assert_int_eq(sscanf(rest, "%" SCNx64 " %" SCNx64 " %" SCNx64, &c->tramp,
					&c->tramp_size, &ret_offset),
				 3);
		c->tramp_ret = c->tramp + ret_offset;
	} else if (strcmp(line, "entry") == 0)
		c->c_entry = strtoull(rest, NULL, 16);
	else if (strcmp(line, "module") == 0)
		read_module(rest, c);
}

/* Loads the capture of variant v in mode; free with free_capture(). */
static struct capture *load_capture(const struct variant *v, int mode)
{
	struct capture *c = calloc(1, sizeof(*c));
	char path[PATH_MAX], name[64], *text, *line, *save;
	size_t len;

	ck_assert_ptr_nonnull(c);
	snprintf(name, sizeof(name), "%s-%d", v->name, mode);
	path_in_dir(path, name);
	text = read_whole_file(path, &len);
	text[len] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		parse_line(line, c);
	free(text);
	strcat(name, ".stack");
	path_in_dir(path, name);
	c->stack = read_whole_file(path, &len);
	ck_assert_uint_eq(len, c->sample.stack_len);
	c->sample.stack = c->stack;
	path_in_dir(c->program, v->name);
	ck_assert_uint_gt(c->n_truth, 3);
	ck_assert_uint_eq(c->sample.stack_start, c->sample.regs.value[DACCE_REG_RSP]);
	return c;
}

static void free_capture(struct capture *c)
{
	if (!c)
		return;
	free(c->stack);
	free(c);
}

/* An unwinder with every module of the capture. */
static struct dacce_unwinder *unwinder_for(const struct capture *c)
{
	struct dacce_unwinder *u = dacce_unwinder_new();
	const char *why = "unset";

	ck_assert_ptr_nonnull(u);
	for (uint32_t i = 0; i < c->n_modules; i++) {
		const struct module_line *m = &c->modules[i];
		int err = dacce_unwinder_add_module(u, m->path, NULL, 0, m->start, m->end, m->bias,
						    &why);

		ck_assert_msg(err == 0, "%s: %d %s", m->path, err, why ? why : "");
		ck_assert_ptr_null(why);
	}
	return u;
}

/* The program's module line. */
static const struct module_line *program_module(const struct capture *c)
{
	for (uint32_t i = 0; i < c->n_modules; i++)
		if (strcmp(c->modules[i].path, c->program) == 0)
			return &c->modules[i];
	ck_abort_msg("no module line for %s", c->program);
	return NULL;
}

/* ------------------------------------------------------------ expectations */

static const char *frames_text(const struct dacce_unwind_frame *f, uint32_t n)
{
	static char text[MAX_FRAMES * 24];
	size_t at = 0;

	text[0] = '\0';
	for (uint32_t i = 0; i < n && at + 24 < sizeof(text); i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, " %" PRIx64 "/%u", f[i].pc,
				       f[i].how);
	return text;
}

static const char *truth_text(const struct capture *c)
{
	static char text[MAX_FRAMES * 24];
	size_t at = 0;

	text[0] = '\0';
	for (uint32_t i = 0; i < c->n_truth && at + 24 < sizeof(text); i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, " %" PRIx64, c->truth[i]);
	return text;
}

static void unwind_ok(struct dacce_unwinder *u, const struct dacce_unwind_sample *s, unsigned flags,
		      struct dacce_unwind_frame *frames, uint32_t max,
		      struct dacce_unwind_result *r)
{
	memset(r, 0xa5, sizeof(*r)); /* anything left unset shows */
	ck_assert_int_eq(dacce_unwind(u, s, flags, frames, max, r), 0);
	ck_assert_uint_ge(r->n_frames, 1);
	ck_assert_uint_le(r->n_frames, max);
	ck_assert_uint_eq(frames[0].pc, s->regs.value[DACCE_REG_RIP]);
	ck_assert_uint_eq(frames[0].sp, s->regs.value[DACCE_REG_RSP]);
	ck_assert_uint_eq(frames[0].how, DACCE_FRAME_SAMPLED);
	ck_assert_uint_eq(frames[0].exact, 1);
}

/* The frames are the sampled pc, then exactly the true return addresses, to the outermost. */
static void expect_truth(const struct capture *c, const char *what,
			 const struct dacce_unwind_frame *f, const struct dacce_unwind_result *r)
{
	bool same = r->n_frames == c->n_truth + 1;

	for (uint32_t i = 0; same && i < c->n_truth; i++)
		same = f[i + 1].pc == c->truth[i];
	ck_assert_msg(same, "%s: unwound%s (stop: %s, %s at %" PRIx64 ")\n  truth:%s", what,
		      frames_text(f, r->n_frames), dacce_unwind_stop_text(r->stop),
		      r->detail ? r->detail : "-", r->stop_address, truth_text(c));
	ck_assert_msg(r->stop == DACCE_UNWIND_OUTERMOST, "%s: stop %s", what,
		      dacce_unwind_stop_text(r->stop));
	for (uint32_t i = 1; i < r->n_frames; i++)
		ck_assert_msg(f[i].sp > f[i - 1].sp || f[i].exact, "%s: frame %u sp", what, i);
}

/* Frames compared field by field: their padding is not part of them. */
static void expect_same_frames(const struct dacce_unwind_frame *a,
			       const struct dacce_unwind_frame *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_msg(a[i].pc == b[i].pc && a[i].sp == b[i].sp && a[i].how == b[i].how &&
				      a[i].exact == b[i].exact,
			      "frame %u differs: %" PRIx64 " %" PRIx64 " %u %u, not %" PRIx64
			      " %" PRIx64 " %u %u",
			      i, a[i].pc, a[i].sp, a[i].how, a[i].exact, b[i].pc, b[i].sp, b[i].how,
			      b[i].exact);
	}
}

static void expect_all_by(const struct dacce_unwind_frame *f, const struct dacce_unwind_result *r,
			  uint8_t how)
{
	for (uint32_t i = 1; i < r->n_frames; i++)
		ck_assert_msg(f[i].how == how, "frame %u found by %u, not %u", i, f[i].how, how);
}

/* Unwinds capture mode of every variant with CFI (and, with need_odd, its odd frame). */
static void expect_truth_in_every_variant(int mode, bool need_odd)
{
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;

	for (size_t i = 0; i < N_VARIANTS; i++) {
		const struct variant *v = &variants[i];
		struct capture *c;
		struct dacce_unwinder *u;

		if (!v->cfi || (need_odd && !v->odd))
			continue;
		c = load_capture(v, mode);
		u = unwinder_for(c);
		unwind_ok(u, &c->sample, 0, frames, MAX_FRAMES, &r);
		expect_truth(c, v->name, frames, &r);
		expect_all_by(frames, &r, DACCE_FRAME_BY_CFI);
		/* The ground truth itself: backtrace() agrees with the recorded addresses. */
		ck_assert_uint_eq(c->n_bt, c->n_truth + 1);
		ck_assert_mem_eq(c->bt + 1, c->truth, c->n_truth * sizeof(c->truth[0]));
		/* With CFI everywhere, allowing frame pointers changes nothing. */
		unwind_ok(u, &c->sample, DACCE_UNWIND_FP_FALLBACK, frames, MAX_FRAMES, &r);
		expect_truth(c, v->name, frames, &r);
		expect_all_by(frames, &r, DACCE_FRAME_BY_CFI);
		dacce_unwinder_free(u);
		free_capture(c);
	}
}

/* ------------------------------------------------------------ tests */

START_TEST(test_stacks_match_recorded_return_addresses)
{
	expect_truth_in_every_variant(MODE_MAIN, false);
}
END_TEST

START_TEST(test_thread_stack_ends_at_its_clone)
{
	expect_truth_in_every_variant(MODE_THREAD, false);
}
END_TEST

/* Handler -> __restore_rt -> the interrupted pc (exact, not a return address) -> raise -> b. */
START_TEST(test_signal_frame_is_crossed)
{
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct capture *c;
	struct dacce_unwinder *u;

	expect_truth_in_every_variant(MODE_SIGNAL, false);
	c = load_capture(&variants[0], MODE_SIGNAL);
	u = unwinder_for(c);
	unwind_ok(u, &c->sample, 0, frames, MAX_FRAMES, &r);
	for (uint32_t i = 1; i < r.n_frames; i++)
		ck_assert_msg(frames[i].exact == (i == 3), "frame %u exact %u", i, frames[i].exact);
	dacce_unwinder_free(u);
	free_capture(c);
}
END_TEST

/*
 * fall() ends with its call to escape() (noreturn): the return address is
 * past its end, and only its CFI at the address before tells how to step.
 */
START_TEST(test_return_address_past_the_end_of_a_function)
{
	expect_truth_in_every_variant(MODE_NORETURN, false);
}
END_TEST

/* odd_frame's CFI loads its return address from .odd_const, read from the file. */
START_TEST(test_cfi_expression_reads_the_module_file)
{
	expect_truth_in_every_variant(MODE_ODD, true);
}
END_TEST

/* A sample whose pc is in generated code, with each way of stepping out of it. */
static void unwind_tramp(const struct capture *c, const struct dacce_code_step *step,
			 struct dacce_unwind_frame *frames, struct dacce_unwind_result *r)
{
	struct dacce_unwinder *u = unwinder_for(c);

	if (step)
		ck_assert_int_eq(dacce_unwinder_add_code(u, c->tramp, c->tramp_size, step), 0);
	unwind_ok(u, &c->sample, 0, frames, MAX_FRAMES, r);
	dacce_unwinder_free(u);
}

START_TEST(test_generated_code_rules)
{
	const struct dacce_code_step stop = { .rule = DACCE_CODE_STOP };
	const struct dacce_code_step at_sp = { .rule = DACCE_CODE_RETURN_AT_SP,
					       .sp_offset = TRAMP_SP_OFFSET };
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;

	for (size_t i = 0; i < N_VARIANTS; i++) {
		struct capture *c;
		struct dacce_code_step like_entry = { .rule = DACCE_CODE_LIKE_PC,
						      .sp_offset = TRAMP_SP_OFFSET };

		if (!variants[i].cfi)
			continue;
		c = load_capture(&variants[i], MODE_TRAMP);
		ck_assert_uint_eq(c->truth[0], c->tramp_ret);
		/* No rule: the trampoline's return address is in no module. */
		unwind_tramp(c, NULL, frames, &r);
		ck_assert_uint_eq(r.n_frames, 2);
		ck_assert_uint_eq(frames[1].pc, c->tramp_ret);
		ck_assert_uint_eq(r.stop, DACCE_UNWIND_NO_MODULE);
		ck_assert_uint_eq(r.stop_address, c->tramp_ret);
		unwind_tramp(c, &stop, frames, &r);
		ck_assert_uint_eq(r.n_frames, 2);
		ck_assert_uint_eq(r.stop, DACCE_UNWIND_GENERATED_CODE);
		ck_assert_uint_eq(r.stop_address, c->tramp_ret);
		unwind_tramp(c, &at_sp, frames, &r);
		expect_truth(c, "return at [rsp + 24]", frames, &r);
		ck_assert_uint_eq(frames[2].how, DACCE_FRAME_BY_CODE);
		/* At a function's entry the CFI says the same: return address at [rsp]. */
		like_entry.like_pc = c->c_entry;
		unwind_tramp(c, &like_entry, frames, &r);
		expect_truth(c, "like the entry of c", frames, &r);
		ck_assert_uint_eq(frames[2].how, DACCE_FRAME_BY_CODE);
		like_entry.like_pc = 0x1000;
		unwind_tramp(c, &like_entry, frames, &r);
		ck_assert_uint_eq(r.n_frames, 2);
		ck_assert_uint_eq(r.stop, DACCE_UNWIND_NO_MODULE);
		ck_assert_uint_eq(r.stop_address, 0x1000);
		free_capture(c);
	}
}
END_TEST

START_TEST(test_code_ranges_must_not_overlap)
{
	const struct dacce_code_step stop = { .rule = DACCE_CODE_STOP };
	const struct dacce_code_step bad = { .rule = DACCE_CODE_LIKE_PC + 1 };
	struct dacce_unwinder *u = dacce_unwinder_new();

	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0x1000, 0x100, &stop), 0);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0x3000, 0x100, &stop), 0);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0x10ff, 1, &stop), -EEXIST);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0xf00, 0x101, &stop), -EEXIST);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0x2000, 0x1001, &stop), -EEXIST);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0x1100, 0x1f00, &stop), 0);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0x5000, 0, &stop), -EINVAL);
	ck_assert_int_eq(dacce_unwinder_add_code(u, UINT64_MAX - 1, 4, &stop), -EINVAL);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0x5000, 1, &bad), -EINVAL);
	ck_assert_int_eq(dacce_unwinder_add_code(u, 0x5000, 1, NULL), -EINVAL);
	dacce_unwinder_free(u);
}
END_TEST

/* Without CFI in the program: stop there, unless frame pointers are allowed. */
START_TEST(test_frame_pointers_only_when_allowed)
{
	const struct variant *v = &variants[N_VARIANTS - 1];
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct capture *c;
	struct dacce_unwinder *u;
	uint32_t by_fp = DEPTH + 4; /* out of c, descend^(DEPTH+1), b, a: no CFI */

	ck_assert(!v->cfi);
	c = load_capture(v, MODE_MAIN);
	u = unwinder_for(c);
	unwind_ok(u, &c->sample, 0, frames, MAX_FRAMES, &r);
	ck_assert_uint_eq(r.n_frames, 1);
	ck_assert_uint_eq(r.stop, DACCE_UNWIND_NO_CFI);
	ck_assert_uint_eq(r.stop_address, c->sample.regs.value[DACCE_REG_RIP]);
	ck_assert_ptr_nonnull(r.detail);
	unwind_ok(u, &c->sample, DACCE_UNWIND_FP_FALLBACK, frames, MAX_FRAMES, &r);
	expect_truth(c, "frame pointers", frames, &r);
	for (uint32_t i = 1; i < r.n_frames; i++)
		ck_assert_uint_eq(frames[i].how,
				  i <= by_fp ? DACCE_FRAME_BY_FP : DACCE_FRAME_BY_CFI);
	dacce_unwinder_free(u);
	free_capture(c);
}
END_TEST

/* Every cut of the copy gives a prefix of the true stack and says it was cut. */
static void expect_cuts_are_prefixes(const struct capture *c)
{
	struct dacce_unwind_frame full[MAX_FRAMES], frames[MAX_FRAMES];
	struct dacce_unwind_result full_r, r;
	struct dacce_unwind_sample cut = c->sample;
	struct dacce_unwinder *u = unwinder_for(c);

	unwind_ok(u, &c->sample, 0, full, MAX_FRAMES, &full_r);
	expect_truth(c, "whole copy", full, &full_r);
	for (size_t len = 0; len <= c->sample.stack_len; len += len < 256 ? 1 : 8) {
		cut.stack_len = len;
		unwind_ok(u, &cut, 0, frames, MAX_FRAMES, &r);
		expect_same_frames(frames, full, r.n_frames);
		if (r.n_frames == full_r.n_frames && r.stop == DACCE_UNWIND_OUTERMOST)
			continue;
		ck_assert_msg(r.stop == DACCE_UNWIND_STACK_TRUNCATED, "len %zu: %s", len,
			      dacce_unwind_stop_text(r.stop));
		/* The read that failed ran past the end (an 8-byte read may start inside). */
		ck_assert_uint_gt(r.stop_address + 8, cut.stack_start + len);
	}
	dacce_unwinder_free(u);
}

START_TEST(test_short_copies_stop_and_never_lie)
{
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct capture *c = load_capture(&variants[1], MODE_MAIN);
	struct dacce_unwinder *u = unwinder_for(c);
	struct dacce_unwind_sample cut = c->sample;

	cut.stack_len = 64;
	unwind_ok(u, &cut, 0, frames, MAX_FRAMES, &r);
	ck_assert_uint_eq(r.stop, DACCE_UNWIND_STACK_TRUNCATED);
	ck_assert_str_eq(dacce_unwind_stop_text(r.stop), "stack copy too short");
	ck_assert_uint_lt(r.n_frames, c->n_truth + 1);
	dacce_unwinder_free(u);
	free_capture(c);
	for (size_t i = 0; i < N_VARIANTS; i++) {
		if (!variants[i].cfi)
			continue;
		c = load_capture(&variants[i], MODE_MAIN);
		expect_cuts_are_prefixes(c);
		free_capture(c);
		c = load_capture(&variants[i], MODE_SIGNAL);
		expect_cuts_are_prefixes(c);
		free_capture(c);
	}
}
END_TEST

START_TEST(test_pc_in_no_module)
{
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct capture *c = load_capture(&variants[0], MODE_MAIN);
	struct dacce_unwinder *u = unwinder_for(c), *empty = dacce_unwinder_new();
	struct dacce_unwind_sample s = c->sample;

	s.regs.value[DACCE_REG_RIP] = 0x1000;
	unwind_ok(u, &s, DACCE_UNWIND_FP_FALLBACK, frames, MAX_FRAMES, &r);
	ck_assert_uint_eq(r.n_frames, 1);
	ck_assert_uint_eq(r.stop, DACCE_UNWIND_NO_MODULE);
	ck_assert_uint_eq(r.stop_address, 0x1000);
	ck_assert_str_eq(dacce_unwind_stop_text(r.stop), "pc in no module");
	ck_assert_ptr_nonnull(empty);
	unwind_ok(empty, &c->sample, 0, frames, MAX_FRAMES, &r);
	ck_assert_uint_eq(r.n_frames, 1);
	ck_assert_uint_eq(r.stop, DACCE_UNWIND_NO_MODULE);
	dacce_unwinder_free(empty);
	dacce_unwinder_free(u);
	free_capture(c);
}
END_TEST

START_TEST(test_frames_array_limit)
{
	struct dacce_unwind_frame full[MAX_FRAMES], frames[MAX_FRAMES];
	struct dacce_unwind_result full_r, r;
	struct capture *c = load_capture(&variants[1], MODE_MAIN);
	struct dacce_unwinder *u = unwinder_for(c);

	unwind_ok(u, &c->sample, 0, full, MAX_FRAMES, &full_r);
	for (uint32_t max = 1; max < full_r.n_frames; max++) {
		unwind_ok(u, &c->sample, 0, frames, max, &r);
		ck_assert_uint_eq(r.n_frames, max);
		ck_assert_uint_eq(r.stop, DACCE_UNWIND_MAX_FRAMES);
		expect_same_frames(frames, full, max);
	}
	/* Exactly enough room: the outermost frame is known as such. */
	unwind_ok(u, &c->sample, 0, frames, full_r.n_frames, &r);
	ck_assert_uint_eq(r.n_frames, full_r.n_frames);
	ck_assert_uint_eq(r.stop, DACCE_UNWIND_OUTERMOST);
	dacce_unwinder_free(u);
	free_capture(c);
}
END_TEST

/* With frame pointers, c's CFA is rbp + 16: no rbp, no step. */
START_TEST(test_unknown_register_stops_the_step_needing_it)
{
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct capture *c = load_capture(&variants[0], MODE_MAIN);
	struct dacce_unwinder *u = unwinder_for(c);
	struct dacce_unwind_sample s = c->sample;

	s.regs.known = (1u << DACCE_REG_RIP) | (1u << DACCE_REG_RSP);
	unwind_ok(u, &s, 0, frames, MAX_FRAMES, &r);
	ck_assert_uint_eq(r.n_frames, 1);
	ck_assert_uint_eq(r.stop, DACCE_UNWIND_REG_UNKNOWN);
	ck_assert_str_eq(r.detail, "rbp");
	ck_assert_uint_eq(r.stop_address, s.regs.value[DACCE_REG_RIP]);
	dacce_unwinder_free(u);
	free_capture(c);
}
END_TEST

/*
 * Samples made by hand from a real one: as if c had just called the first
 * PLT entry (its return address pushed), at the entry's first instruction
 * (CFA rsp + 8) and at its last (after its push: CFA rsp + 16): the PLT's
 * CFA is a DWARF expression of rip.
 */
static GElf_Shdr find_section(const char *program, const char *wanted)
{
	int fd = open(program, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr found = { .sh_type = SHT_NULL };

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_ne(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	ck_assert_int_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		ck_assert_ptr_nonnull(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, wanted) == 0)
			found = sh;
	}
	elf_end(elf);
	close(fd);
	ck_assert_msg(found.sh_type != SHT_NULL, "no %s in %s", wanted, program);
	return found;
}

static uint64_t first_plt_entry(const char *program, uint64_t bias)
{
	return find_section(program, ".plt").sh_addr + 16 + bias; /* after PLT0 */
}

static void unwind_from_plt(const struct capture *c, struct dacce_unwinder *u, uint64_t pc,
			    unsigned pushed)
{
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct dacce_unwind_sample s = c->sample;
	size_t extra = 8 * pushed;
	uint8_t *stack = malloc(c->sample.stack_len + extra);
	uint64_t ret = c->sample.regs.value[DACCE_REG_RIP], junk = 0x5a5a5a5a5a5a5a5a;

	ck_assert_ptr_nonnull(stack);
	memcpy(stack + extra - 8, &ret, 8);
	if (pushed == 2)
		memcpy(stack, &junk, 8);
	memcpy(stack + extra, c->stack, c->sample.stack_len);
	s.stack = stack;
	s.stack_len += extra;
	s.stack_start -= extra;
	s.regs.value[DACCE_REG_RSP] = s.stack_start;
	s.regs.value[DACCE_REG_RIP] = pc;
	unwind_ok(u, &s, 0, frames, MAX_FRAMES, &r);
	ck_assert_msg(r.n_frames == c->n_truth + 2 && frames[1].pc == ret && !frames[1].exact,
		      "plt+%u:%s", (unsigned)(pc & 15), frames_text(frames, r.n_frames));
	for (uint32_t i = 0; i < c->n_truth; i++)
		ck_assert_uint_eq(frames[i + 2].pc, c->truth[i]);
	ck_assert_uint_eq(r.stop, DACCE_UNWIND_OUTERMOST);
	free(stack);
}

START_TEST(test_plt_cfa_expression)
{
	for (size_t i = 0; i < N_VARIANTS; i++) {
		struct capture *c;
		struct dacce_unwinder *u;
		uint64_t entry;

		if (!variants[i].cfi)
			continue;
		c = load_capture(&variants[i], MODE_MAIN);
		u = unwinder_for(c);
		entry = first_plt_entry(c->program, program_module(c)->bias);
		unwind_from_plt(c, u, entry, 1);      /* jmp *GOT: nothing pushed yet */
		unwind_from_plt(c, u, entry + 11, 2); /* jmp PLT0, after push $index */
		dacce_unwinder_free(u);
		free_capture(c);
	}
}
END_TEST

/* Replaces the program's module by path, with build_id; returns add_module's answer. */
static int add_program_as(const struct capture *c, struct dacce_unwinder *u, const char *path,
			  const uint8_t *id, size_t id_len, const char **why)
{
	int err = 0;

	for (uint32_t i = 0; i < c->n_modules; i++) {
		const struct module_line *m = &c->modules[i];
		bool is_program = strcmp(m->path, c->program) == 0;
		int e = dacce_unwinder_add_module(u, is_program ? path : m->path,
						  is_program ? id : NULL, is_program ? id_len : 0,
						  m->start, m->end, m->bias,
						  is_program ? why : NULL);

		if (is_program)
			err = e;
		else
			ck_assert_int_eq(e, 0);
	}
	return err;
}

static size_t program_build_id(const char *program, uint8_t *id)
{
	size_t len;
	uint8_t *data = read_whole_file(program, &len);
	/* The note: namesz 4, descsz, type 3 (NT_GNU_BUILD_ID), "GNU\0", then the id. */
	static const uint8_t head[] = { 4, 0, 0, 0 };

	for (size_t at = 0; at + 16 < len; at++) {
		uint32_t descsz, type;

		if (memcmp(data + at, head, 4) != 0 || memcmp(data + at + 12, "GNU", 4) != 0)
			continue;
		memcpy(&descsz, data + at + 4, 4);
		memcpy(&type, data + at + 8, 4);
		if (type != 3 || descsz == 0 || descsz > 64 || at + 16 + descsz > len)
			continue;
		memcpy(id, data + at + 16, descsz);
		free(data);
		return descsz;
	}
	free(data);
	ck_abort_msg("no build-id in %s", program);
	return 0;
}

/* The program's file is unusable: unwinding stops at once, with the reason; FP may go on. */
static void expect_unusable(const struct capture *c, const char *path, const uint8_t *id,
			    size_t id_len, int expected_err, const char *expected_why)
{
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct dacce_unwinder *u = dacce_unwinder_new();
	const char *why = NULL;

	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(add_program_as(c, u, path, id, id_len, &why), expected_err);
	ck_assert_str_eq(why, expected_why);
	unwind_ok(u, &c->sample, 0, frames, MAX_FRAMES, &r);
	ck_assert_uint_eq(r.n_frames, 1);
	ck_assert_uint_eq(r.stop, DACCE_UNWIND_MODULE_UNUSABLE);
	ck_assert_str_eq(r.detail, expected_why);
	ck_assert_uint_eq(r.stop_address, c->sample.regs.value[DACCE_REG_RIP]);
	/* Built with frame pointers: the fallback, when allowed, gets the stack right. */
	unwind_ok(u, &c->sample, DACCE_UNWIND_FP_FALLBACK, frames, MAX_FRAMES, &r);
	expect_truth(c, expected_why, frames, &r);
	ck_assert_uint_eq(frames[1].how, DACCE_FRAME_BY_FP);
	dacce_unwinder_free(u);
}

START_TEST(test_module_file_problems)
{
	struct capture *c = load_capture(&variants[0], MODE_MAIN);
	char missing[PATH_MAX], text[PATH_MAX];
	uint8_t id[64];
	size_t id_len = program_build_id(c->program, id);
	struct dacce_unwinder *u = dacce_unwinder_new();
	const char *why = "unset";

	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(add_program_as(c, u, c->program, id, id_len, &why), 0);
	ck_assert_ptr_null(why);
	dacce_unwinder_free(u);
	path_in_dir(missing, "no-such-file");
	path_in_dir(text, "capture.c");
	expect_unusable(c, missing, NULL, 0, -ENOENT, "no such file");
	expect_unusable(c, dir, NULL, 0, -EISDIR, "is a directory");
	expect_unusable(c, text, NULL, 0, -ENOEXEC, "not an ELF file");
	expect_unusable(c, "/dev/null", NULL, 0, -ENOEXEC, "not a regular file");
	id[0] ^= 1;
	expect_unusable(c, c->program, id, id_len, -ESTALE, "build-id mismatch");
	free_capture(c);
}
END_TEST

static uint64_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

/* Unwinds with the program's file replaced by damaged bytes: any answer but a crash. */
static void unwind_with_damaged_program(const struct capture *c, const char *path,
					const uint8_t *data, size_t len)
{
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct dacce_unwinder *u = dacce_unwinder_new();
	const char *why;

	ck_assert_ptr_nonnull(u);
	write_file(path, data, len);
	add_program_as(c, u, path, NULL, 0, &why);
	unwind_ok(u, &c->sample, 0, frames, MAX_FRAMES, &r);
	ck_assert_uint_le(r.stop, DACCE_UNWIND_BAD_FRAME);
	unwind_ok(u, &c->sample, DACCE_UNWIND_FP_FALLBACK, frames, MAX_FRAMES, &r);
	ck_assert_uint_le(r.stop, DACCE_UNWIND_BAD_FRAME);
	dacce_unwinder_free(u);
}

START_TEST(test_damaged_files_never_crash)
{
	struct capture *c = load_capture(&variants[1], MODE_MAIN);
	char path[PATH_MAX];
	size_t len;
	uint8_t *good = read_whole_file(c->program, &len), *bad = malloc(len);
	GElf_Shdr hdr = find_section(c->program, ".eh_frame_hdr");
	GElf_Shdr eh = find_section(c->program, ".eh_frame");
	uint64_t seed = 1, cfi_start = hdr.sh_offset,
		 cfi_size = eh.sh_offset + eh.sh_size - cfi_start;

	ck_assert_ptr_nonnull(bad);
	path_in_dir(path, "damaged");
	/* Truncated: ELF header only, headers but no .eh_frame, half. */
	unwind_with_damaged_program(c, path, good, 64);
	unwind_with_damaged_program(c, path, good, 4096);
	unwind_with_damaged_program(c, path, good, len / 2);
	/* Scribbled: a few bytes anywhere, or in .eh_frame_hdr and .eh_frame. */
	ck_assert(eh.sh_offset > hdr.sh_offset && eh.sh_offset + eh.sh_size <= len);
	for (int round = 0; round < DAMAGE_ROUNDS; round++) {
		size_t from = round % 2 ? 0 : cfi_start, span = round % 2 ? len : cfi_size;

		memcpy(bad, good, len);
		for (int k = 0; k < 1 + round % 16; k++)
			bad[(from + next_random(&seed) % span) % len] = (uint8_t)next_random(&seed);
		unwind_with_damaged_program(c, path, bad, len);
	}
	free(bad);
	free(good);
	free_capture(c);
}
END_TEST

START_TEST(test_bad_arguments_are_refused)
{
	struct dacce_unwind_frame frames[4];
	struct dacce_unwind_result r;
	struct dacce_unwinder *u = dacce_unwinder_new();
	struct dacce_unwind_sample s = { .regs.known = (1u << DACCE_REG_RIP) };
	const char *why = "unset";
	uint8_t id[1] = { 0 };

	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(dacce_unwind(u, &s, 0, frames, 4, &r), -EINVAL); /* no rsp */
	s.regs.known |= 1u << DACCE_REG_RSP;
	ck_assert_int_eq(dacce_unwind(NULL, &s, 0, frames, 4, &r), -EINVAL);
	ck_assert_int_eq(dacce_unwind(u, NULL, 0, frames, 4, &r), -EINVAL);
	ck_assert_int_eq(dacce_unwind(u, &s, 0, NULL, 4, &r), -EINVAL);
	ck_assert_int_eq(dacce_unwind(u, &s, 0, frames, 0, &r), -EINVAL);
	ck_assert_int_eq(dacce_unwind(u, &s, 0, frames, 4, NULL), -EINVAL);
	s.stack_len = 8; /* and no stack */
	ck_assert_int_eq(dacce_unwind(u, &s, 0, frames, 4, &r), -EINVAL);
	ck_assert_int_eq(dacce_unwinder_add_module(u, "/bin/sh", NULL, 0, 2, 2, 0, &why), -EINVAL);
	ck_assert_str_eq(why, "bad arguments");
	ck_assert_int_eq(dacce_unwinder_add_module(u, NULL, NULL, 0, 1, 2, 0, NULL), -EINVAL);
	ck_assert_int_eq(dacce_unwinder_add_module(u, "", NULL, 0, 1, 2, 0, NULL), -EINVAL);
	ck_assert_int_eq(dacce_unwinder_add_module(u, "/bin/sh", NULL, 1, 1, 2, 0, NULL), -EINVAL);
	ck_assert_int_eq(dacce_unwinder_add_module(u, "/bin/sh", id, 65, 1, 2, 0, NULL), -EINVAL);
	ck_assert_int_eq(dacce_unwinder_add_module(NULL, "/bin/sh", NULL, 0, 1, 2, 0, NULL),
			 -EINVAL);
	/* Overlaps are refused before the file is looked at. */
	ck_assert_int_eq(dacce_unwinder_add_module(u, "/no/such", NULL, 0, 0x1000, 0x2000, 0, &why),
			 -ENOENT);
	ck_assert_int_eq(dacce_unwinder_add_module(u, "/bin/sh", NULL, 0, 0x1fff, 0x3000, 0, &why),
			 -EEXIST);
	ck_assert_int_eq(dacce_unwinder_add_module(u, "/bin/sh", NULL, 0, 0x800, 0x1001, 0, &why),
			 -EEXIST);
	ck_assert_int_eq(dacce_unwinder_add_module(u, "/bin/sh", NULL, 0, 0, 0x3000, 0, &why),
			 -EEXIST);
	ck_assert_int_eq(dacce_unwinder_add_module(u, "/no/such", NULL, 0, 0x2000, 0x3000, 0, NULL),
			 -ENOENT);
	dacce_unwinder_free(u);
	dacce_unwinder_free(NULL);
	for (int stop = DACCE_UNWIND_OUTERMOST; stop <= DACCE_UNWIND_BAD_FRAME; stop++)
		ck_assert_str_ne(dacce_unwind_stop_text(stop), "unknown stop");
	ck_assert_str_eq(dacce_unwind_stop_text(-1), "unknown stop");
}
END_TEST

/* The same process is unwound thousands of times: files and CFI are kept. */
START_TEST(test_speed_of_repeated_unwinds)
{
	enum { ROUNDS = 1000 };
	struct dacce_unwind_frame frames[MAX_FRAMES];
	struct dacce_unwind_result r;
	struct capture *c = load_capture(&variants[1], MODE_MAIN);
	struct dacce_unwinder *u;
	struct timespec t0, t1;
	double ns, first_ns;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	u = unwinder_for(c);
	unwind_ok(u, &c->sample, 0, frames, MAX_FRAMES, &r); /* the files' first use */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	first_ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < ROUNDS; i++)
		ck_assert_int_eq(dacce_unwind(u, &c->sample, 0, frames, MAX_FRAMES, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	expect_truth(c, "speed", frames, &r);
	ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("unwind: %u modules added and a first unwind in %.2f ms; then %d unwinds of %u "
	       "frames in %.1f ms (%.2f us each)\n",
	       c->n_modules, first_ns / 1e6, ROUNDS, r.n_frames, ns / 1e6, ns / 1e3 / ROUNDS);
	ck_assert_msg(ns < 2e9, "1000 unwinds took %.0f ms", ns / 1e6);
	dacce_unwinder_free(u);
	free_capture(c);
}
END_TEST

static Suite *unwind_suite(void)
{
	Suite *s = suite_create("unwind");
	TCase *tc = tcase_create("core");

	/* Built and run once in the parent, removed even when a test crashes. */
	tcase_add_unchecked_fixture(tc, build_inputs, remove_inputs);
	tcase_add_test(tc, test_stacks_match_recorded_return_addresses);
	tcase_add_test(tc, test_thread_stack_ends_at_its_clone);
	tcase_add_test(tc, test_signal_frame_is_crossed);
	tcase_add_test(tc, test_return_address_past_the_end_of_a_function);
	tcase_add_test(tc, test_cfi_expression_reads_the_module_file);
	tcase_add_test(tc, test_generated_code_rules);
	tcase_add_test(tc, test_code_ranges_must_not_overlap);
	tcase_add_test(tc, test_frame_pointers_only_when_allowed);
	tcase_add_test(tc, test_short_copies_stop_and_never_lie);
	tcase_add_test(tc, test_pc_in_no_module);
	tcase_add_test(tc, test_frames_array_limit);
	tcase_add_test(tc, test_unknown_register_stops_the_step_needing_it);
	tcase_add_test(tc, test_plt_cfa_expression);
	tcase_add_test(tc, test_module_file_problems);
	tcase_add_test(tc, test_damaged_files_never_crash);
	tcase_add_test(tc, test_bad_arguments_are_refused);
	tcase_add_test(tc, test_speed_of_repeated_unwinds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(unwind_suite());
}
