// SPDX-License-Identifier: MIT
/*
 * An interpreter loop dispatching 50 handlers through a table (one indirect
 * site with 50 targets), handlers that call each other (directly, through the
 * table, and in tail position), a CALL opcode that re-enters the loop
 * (recursive bytecode: run -> handler -> run -> ...), the same bytecode run
 * again as threaded code (a computed goto with 50 targets), and a lexer written as a
 * state machine twice: states returning the next state to a driver loop, and
 * states that tail-call the next state through a table.  Probes from bytecode
 * (PROBE) and from handlers and states on chosen inputs.
 */
#include "probe.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

enum op {
	HALT, PUSH, POP, DUP, SWAP, OVER, ADD, SUB, MUL, DIV,
	MOD, NEG, AND, OR, XOR, SHL, SHR, INC, DEC, EQ,
	LT, GT, NOT, JMP, JZ, JNZ, CALL, RET, LOAD, STORE,
	PROBE, SQR, DUP2, ROT, MIN, MAX, ABS, SIGN, CUBE, PUSH0,
	PUSH1, ADDI, MULI, LOOP, NOP, SUM, FACT, GCD, HASH, EMIT,
	N_OPS
};

struct vm {
	const int *code;
	long stack[512];
	int sp, pc, depth, returning, halted;
	long regs[8], out;
	int probes[64];
};

typedef void (*handler_fn)(struct vm *);
static handler_fn handlers[N_OPS];

static long pop(struct vm *vm) { return vm->stack[--vm->sp]; }
static void push(struct vm *vm, long v) { vm->stack[vm->sp++] = v; }
static int arg(struct vm *vm) { return vm->code[vm->pc++]; }

NOINLINE static long run(struct vm *vm, int pc);

/* The probe of a PROBE opcode: its first three hits per tag, with the bytecode depth. */
NOINLINE static void vm_probe(struct vm *vm, int tag)
{
	char name[64];

	if (vm->probes[tag]++ >= 3)
		return;
	snprintf(name, sizeof(name), "bytecode %d depth %d hit %d", tag, vm->depth, vm->probes[tag]);
	probe(name);
}

NOINLINE static void op_halt(struct vm *vm) { vm->halted = 1; }
NOINLINE static void op_push(struct vm *vm) { push(vm, arg(vm)); }
NOINLINE static void op_pop(struct vm *vm) { vm->sp--; }
NOINLINE static void op_dup(struct vm *vm) { long a = pop(vm); push(vm, a); push(vm, a); }
NOINLINE static void op_swap(struct vm *vm) { long b = pop(vm), a = pop(vm); push(vm, b); push(vm, a); }
NOINLINE static void op_over(struct vm *vm) { push(vm, vm->stack[vm->sp - 2]); }
NOINLINE static void op_add(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) + b); }
NOINLINE static void op_sub(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) - b); }
NOINLINE static void op_mul(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) * b); }
NOINLINE static void op_div(struct vm *vm) { long b = pop(vm); push(vm, b ? pop(vm) / b : (pop(vm), 0)); }
NOINLINE static void op_mod(struct vm *vm) { long b = pop(vm); push(vm, b ? pop(vm) % b : (pop(vm), 0)); }
NOINLINE static void op_neg(struct vm *vm) { push(vm, -pop(vm)); }
NOINLINE static void op_and(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) & b); }
NOINLINE static void op_or(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) | b); }
NOINLINE static void op_xor(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) ^ b); }
NOINLINE static void op_shl(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) << (b & 15)); }
NOINLINE static void op_shr(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) >> (b & 15)); }
NOINLINE static void op_inc(struct vm *vm) { vm->stack[vm->sp - 1]++; }
NOINLINE static void op_dec(struct vm *vm) { vm->stack[vm->sp - 1]--; }
NOINLINE static void op_eq(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) == b); }
NOINLINE static void op_lt(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) < b); }
NOINLINE static void op_gt(struct vm *vm) { long b = pop(vm); push(vm, pop(vm) > b); }
NOINLINE static void op_not(struct vm *vm) { push(vm, !pop(vm)); }
NOINLINE static void op_jmp(struct vm *vm) { vm->pc = vm->code[vm->pc]; }
NOINLINE static void op_jz(struct vm *vm) { int to = arg(vm); if (!pop(vm)) vm->pc = to; }
NOINLINE static void op_jnz(struct vm *vm) { int to = arg(vm); if (pop(vm)) vm->pc = to; }
NOINLINE static void op_call(struct vm *vm) { int to = arg(vm); run(vm, to); }
NOINLINE static void op_ret(struct vm *vm) { vm->returning = 1; }
NOINLINE static void op_load(struct vm *vm) { push(vm, vm->regs[arg(vm) & 7]); }
NOINLINE static void op_store(struct vm *vm) { vm->regs[arg(vm) & 7] = pop(vm); }
NOINLINE static void op_probe(struct vm *vm) { vm_probe(vm, arg(vm)); }
/* Handlers built from other handlers: direct calls, a tail call, calls through the table. */
NOINLINE static void op_sqr(struct vm *vm) { op_dup(vm); op_mul(vm); }
NOINLINE static void op_dup2(struct vm *vm) { op_over(vm); op_over(vm); }
NOINLINE static void op_rot(struct vm *vm) { long c = pop(vm), b = pop(vm), a = pop(vm); push(vm, b); push(vm, c); push(vm, a); }
NOINLINE static void op_min(struct vm *vm) { op_dup2(vm); op_gt(vm); if (pop(vm)) op_swap(vm); op_pop(vm); }
NOINLINE static void op_max(struct vm *vm) { op_dup2(vm); op_lt(vm); if (pop(vm)) op_swap(vm); op_pop(vm); }
NOINLINE static void op_abs(struct vm *vm) { if (vm->stack[vm->sp - 1] < 0) handlers[NEG](vm); }
NOINLINE static void op_sign(struct vm *vm) { long a = pop(vm); push(vm, (a > 0) - (a < 0)); }
NOINLINE static void op_cube(struct vm *vm) { op_dup(vm); handlers[SQR](vm); handlers[MUL](vm); }
NOINLINE static void op_push0(struct vm *vm) { push(vm, 0); }
NOINLINE static void op_push1(struct vm *vm) { push(vm, 1); }
NOINLINE static void op_addi(struct vm *vm) { push(vm, arg(vm)); op_add(vm); }
NOINLINE static void op_muli(struct vm *vm) { push(vm, arg(vm)); handlers[MUL](vm); }
NOINLINE static void op_loop(struct vm *vm) { int r = arg(vm), to = arg(vm); if (--vm->regs[r & 7] > 0) vm->pc = to; }
NOINLINE static void op_nop(struct vm *vm) { sink++; (void)vm; }
NOINLINE static void op_sum(struct vm *vm) { int n = arg(vm); while (--n > 0) handlers[ADD](vm); }

NOINLINE static long fact(long n)
{
	if (n <= 1) {
		if (n == 1)
			probe("fact-bottom");
		return 1;
	}
	return n * fact(n - 1);
}

NOINLINE static long gcd(long a, long b) { return b ? gcd(b, a % b) : a; }

NOINLINE static void op_fact(struct vm *vm) { push(vm, fact(pop(vm) % 20)); }
NOINLINE static void op_gcd(struct vm *vm) { long b = pop(vm); push(vm, gcd(pop(vm), b)); }
NOINLINE static void op_hash(struct vm *vm) { push(vm, (pop(vm) * 2654435761L) & 0xffff); }

NOINLINE static void op_emit(struct vm *vm)
{
	long v = pop(vm);

	vm->out = vm->out * 31 + v;
	if (v == 55) /* fib(10) */
		probe("emit-55");
}

static handler_fn handlers[N_OPS] = {
	op_halt, op_push, op_pop, op_dup, op_swap, op_over, op_add, op_sub, op_mul, op_div,
	op_mod, op_neg, op_and, op_or, op_xor, op_shl, op_shr, op_inc, op_dec, op_eq,
	op_lt, op_gt, op_not, op_jmp, op_jz, op_jnz, op_call, op_ret, op_load, op_store,
	op_probe, op_sqr, op_dup2, op_rot, op_min, op_max, op_abs, op_sign, op_cube, op_push0,
	op_push1, op_addi, op_muli, op_loop, op_nop, op_sum, op_fact, op_gcd, op_hash, op_emit,
};

/* The dispatch loop: one indirect call site reaching all 50 handlers. */
NOINLINE static long run(struct vm *vm, int pc)
{
	int saved = vm->pc;

	vm->depth++;
	vm->pc = pc;
	while (!vm->halted && !vm->returning) {
		int op = vm->code[vm->pc++];

		handlers[op](vm);
	}
	vm->returning = 0;
	vm->pc = saved;
	vm->depth--;
	return vm->sp ? vm->stack[vm->sp - 1] : 0;
}

/*
 * The same loop as threaded code: one computed goto (an indirect jump with 50
 * targets inside this function) and, at each label, a direct call of the
 * handler: 50 call sites reached through one jump.
 */
NOINLINE static long run_threaded(struct vm *vm, int pc)
{
#define LABEL(op) &&do_##op
	static const void *const labels[N_OPS] = {
		LABEL(HALT), LABEL(PUSH), LABEL(POP), LABEL(DUP), LABEL(SWAP), LABEL(OVER), LABEL(ADD),
		LABEL(SUB), LABEL(MUL), LABEL(DIV), LABEL(MOD), LABEL(NEG), LABEL(AND), LABEL(OR),
		LABEL(XOR), LABEL(SHL), LABEL(SHR), LABEL(INC), LABEL(DEC), LABEL(EQ), LABEL(LT),
		LABEL(GT), LABEL(NOT), LABEL(JMP), LABEL(JZ), LABEL(JNZ), LABEL(CALL), LABEL(RET),
		LABEL(LOAD), LABEL(STORE), LABEL(PROBE), LABEL(SQR), LABEL(DUP2), LABEL(ROT), LABEL(MIN),
		LABEL(MAX), LABEL(ABS), LABEL(SIGN), LABEL(CUBE), LABEL(PUSH0), LABEL(PUSH1), LABEL(ADDI),
		LABEL(MULI), LABEL(LOOP), LABEL(NOP), LABEL(SUM), LABEL(FACT), LABEL(GCD), LABEL(HASH),
		LABEL(EMIT),
	};
#undef LABEL
	int saved = vm->pc;

#define NEXT                                                   \
	do {                                                   \
		if (vm->halted || vm->returning)               \
			goto out;                              \
		goto *labels[vm->code[vm->pc++]];              \
	} while (0)
#define DO(op, handler) do_##op: handler(vm); NEXT;
	vm->depth++;
	vm->pc = pc;
	NEXT;
	DO(HALT, op_halt) DO(PUSH, op_push) DO(POP, op_pop) DO(DUP, op_dup) DO(SWAP, op_swap)
	DO(OVER, op_over) DO(ADD, op_add) DO(SUB, op_sub) DO(MUL, op_mul) DO(DIV, op_div)
	DO(MOD, op_mod) DO(NEG, op_neg) DO(AND, op_and) DO(OR, op_or) DO(XOR, op_xor)
	DO(SHL, op_shl) DO(SHR, op_shr) DO(INC, op_inc) DO(DEC, op_dec) DO(EQ, op_eq)
	DO(LT, op_lt) DO(GT, op_gt) DO(NOT, op_not) DO(JMP, op_jmp) DO(JZ, op_jz)
	DO(JNZ, op_jnz) DO(RET, op_ret) DO(LOAD, op_load) DO(STORE, op_store)
	DO(PROBE, op_probe) DO(SQR, op_sqr) DO(DUP2, op_dup2) DO(ROT, op_rot) DO(MIN, op_min)
	DO(MAX, op_max) DO(ABS, op_abs) DO(SIGN, op_sign) DO(CUBE, op_cube) DO(PUSH0, op_push0)
	DO(PUSH1, op_push1) DO(ADDI, op_addi) DO(MULI, op_muli) DO(LOOP, op_loop) DO(NOP, op_nop)
	DO(SUM, op_sum) DO(FACT, op_fact) DO(GCD, op_gcd) DO(HASH, op_hash) DO(EMIT, op_emit)
do_CALL: /* recursion into this loop, not run()'s */
	{
		int to = arg(vm);

		run_threaded(vm, to);
	}
	NEXT;
#undef DO
#undef NEXT
out:
	vm->returning = 0;
	vm->pc = saved;
	vm->depth--;
	return vm->sp ? vm->stack[vm->sp - 1] : 0;
}

/* A tiny assembler: labels are patched once known. */
static int code[1024], here;

static void emit(int op) { code[here++] = op; }
static void emit1(int op, int a) { emit(op); emit(a); }

static int assemble(void)
{
	int fib, rec, loop, start, patch;

	/* fib(n): n < 2 ? n : fib(n - 1) + fib(n - 2); PROBE 1 at the bottoms. */
	fib = here;
	emit(DUP); emit1(PUSH, 2); emit(LT); emit1(JZ, 0); patch = here - 1;
	emit1(PROBE, 1); emit(RET);
	rec = here;
	code[patch] = rec;
	emit(DUP); emit(DEC); emit1(CALL, fib); emit(SWAP); emit1(PUSH, 2); emit(SUB);
	emit1(CALL, fib); emit(ADD); emit(RET);

	/* main: every opcode at least once, fib(10), then a loop of 300 rounds. */
	start = here;
	emit1(PUSH, 10); emit1(CALL, fib); emit(DUP); emit(EMIT); emit1(PROBE, 2);
	emit1(PUSH, 7); emit(SQR); emit(CUBE); emit1(PUSH, 3); emit(DIV); emit1(PUSH, 1000); emit(MOD);
	emit(NEG); emit(ABS); emit(SIGN); emit1(PUSH, 12); emit1(PUSH, 10); emit(AND); emit1(PUSH, 5);
	emit(OR); emit1(PUSH, 3); emit(XOR); emit1(PUSH, 2); emit(SHL); emit1(PUSH, 1); emit(SHR);
	emit(INC); emit(DEC); emit(PUSH0); emit(EQ); emit(NOT); emit(PUSH1); emit(GT);
	emit1(PUSH, 9); emit1(PUSH, 4); emit(MIN); emit1(PUSH, 6); emit(MAX); emit1(PUSH, 8); emit(ROT);
	emit(DUP2); emit(POP); emit(POP); emit(OVER); emit1(ADDI, 5); emit1(MULI, 3); emit(NOP);
	emit1(PUSH, 7); emit(FACT); emit1(PUSH, 84); emit1(PUSH, 36); emit(GCD); emit(HASH);
	emit1(SUM, 8); emit(EMIT); emit1(JMP, here + 3); emit(HALT); /* jumps over the HALT */
	emit1(PUSH, 300); emit1(STORE, 1);
	loop = here;
	emit1(LOAD, 1); emit1(PUSH, 7); emit(MOD); emit1(JNZ, 0); patch = here - 1;
	emit1(LOAD, 1); emit1(PUSH, 12); emit(MOD); emit1(CALL, fib); emit(EMIT); emit1(PROBE, 3);
	code[patch] = here;
	emit1(LOAD, 1); emit(HASH); emit(EMIT);
	emit1(LOOP, 1); emit(loop);
	emit1(PROBE, 4); emit(HALT);
	return start;
}

/*
 * The lexer as a state machine: a state function consumes the character at p
 * and returns the state for the next one, to a driver loop.
 */
enum state { S_SPACE, S_WORD, S_NUMBER, S_PUNCT, S_STRING, S_ESCAPE, N_STATES };

struct lexer {
	int words, numbers, puncts, strings;
	const char *text;
};

/* The state a token starting with c puts the lexer in once c is consumed. */
static enum state start_of(int c)
{
	if (c == ' ') return S_SPACE;
	if (c >= '0' && c <= '9') return S_NUMBER;
	if (c == '"') return S_STRING;
	if ((c >= 'a' && c <= 'z') || c == '_') return S_WORD;
	return S_PUNCT;
}

static int is_word(int c) { return (c >= 'a' && c <= 'z') || c == '_' || (c >= '0' && c <= '9'); }

NOINLINE static void lex_probe(struct lexer *lx, const char *what, const char *p)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "%s at %d", what, (int)(p - lx->text));
	probe(tag);
}

NOINLINE static enum state st_space(struct lexer *lx, const char *p) { (void)lx; return start_of(*p); }
NOINLINE static enum state st_word(struct lexer *lx, const char *p)
{
	if (is_word(*p))
		return S_WORD;
	lx->words++;
	return start_of(*p);
}
NOINLINE static enum state st_number(struct lexer *lx, const char *p)
{
	if (*p >= '0' && *p <= '9')
		return S_NUMBER;
	lx->numbers++;
	return start_of(*p);
}
NOINLINE static enum state st_punct(struct lexer *lx, const char *p)
{
	if (p[-1] == '@')
		lex_probe(lx, "loop-after-at-sign", p);
	lx->puncts++;
	return start_of(*p);
}
NOINLINE static enum state st_string(struct lexer *lx, const char *p)
{
	if (*p == '\\')
		return S_ESCAPE;
	if (*p == '"') {
		lx->strings++;
		return S_SPACE;
	}
	return S_STRING;
}
NOINLINE static enum state st_escape(struct lexer *lx, const char *p)
{
	if (*p == 'n')
		lex_probe(lx, "loop-escape", p);
	return S_STRING;
}

static enum state (*const states[N_STATES])(struct lexer *, const char *) = {
	st_space, st_word, st_number, st_punct, st_string, st_escape,
};

static int lex_result(const struct lexer *lx)
{
	return lx->words * 1000 + lx->numbers * 100 + lx->puncts * 10 + lx->strings;
}

NOINLINE static int lex_loop(struct lexer *lx)
{
	enum state s = S_SPACE;

	for (const char *p = lx->text; *p; p++)
		s = states[s](lx, p);
	return lex_result(lx);
}

/*
 * The same machine in continuation style: each state tail-calls the next
 * through a table (jmp *table(,%rax,8) when optimised; a recursion as deep as
 * the text at -O0).
 */
typedef int (*tail_state)(struct lexer *, const char *);
static tail_state tail_states[N_STATES];

NOINLINE static int tail_end(struct lexer *lx, const char *p)
{
	lex_probe(lx, "tail-end", p);
	return lex_result(lx);
}

#define TAIL_NEXT(s) (p[1] ? tail_states[s](lx, p + 1) : tail_end(lx, p + 1))

NOINLINE static int ts_space(struct lexer *lx, const char *p) { return TAIL_NEXT(start_of(*p)); }
NOINLINE static int ts_word(struct lexer *lx, const char *p)
{
	if (is_word(*p))
		return TAIL_NEXT(S_WORD);
	lx->words++;
	return TAIL_NEXT(start_of(*p));
}
NOINLINE static int ts_number(struct lexer *lx, const char *p)
{
	if (*p >= '0' && *p <= '9')
		return TAIL_NEXT(S_NUMBER);
	lx->numbers++;
	return TAIL_NEXT(start_of(*p));
}
NOINLINE static int ts_punct(struct lexer *lx, const char *p)
{
	if (p[-1] == '@')
		lex_probe(lx, "tail-after-at-sign", p);
	lx->puncts++;
	return TAIL_NEXT(start_of(*p));
}
NOINLINE static int ts_string(struct lexer *lx, const char *p)
{
	if (*p == '\\')
		return TAIL_NEXT(S_ESCAPE);
	if (*p == '"') {
		lx->strings++;
		return TAIL_NEXT(S_SPACE);
	}
	return TAIL_NEXT(S_STRING);
}
NOINLINE static int ts_escape(struct lexer *lx, const char *p)
{
	if (*p == 'n')
		lex_probe(lx, "tail-escape", p);
	return TAIL_NEXT(S_STRING);
}

static tail_state tail_states[N_STATES] = { ts_space, ts_word, ts_number, ts_punct, ts_string, ts_escape };

int main(void)
{
	struct vm vm = { .code = code }, threaded = { .code = code };
	static const char text[] =
		"let x1 = 42 + y @ \"a \\\"quoted\\n\" string; call f(7, 8) @ end_3 \"\" 99 @";
	struct lexer a = { .text = text }, b = { .text = text };
	int start = assemble(), lexed, tailed;
	long top, threaded_top;

	top = run(&vm, start);
	threaded_top = run_threaded(&threaded, start);
	lexed = lex_loop(&a);
	tailed = tail_states[S_SPACE](&b, text);
	probe("main");
	printf("vm out %ld top %ld sp %d; threaded out %ld top %ld sp %d; lexer %d, tail lexer %d\n",
	       vm.out, top, vm.sp, threaded.out, threaded_top, threaded.sp, lexed, tailed);
	return 0;
}
