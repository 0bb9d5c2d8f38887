#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A program under the runtime survives gdb (runtime/trap.h): run from gdb, and attached
# to while it meets code it has not run yet.  The runtime's traps are SIGILL, which gdb
# passes on; with `handle SIGILL nostop noprint` it does so silently.  When they were
# int3s, gdb kept their SIGTRAP and the program went on inside an instruction: both
# cases below crashed.  CPython takes over 2,000 traps starting up.
# Ends with "gdb: N passed, M failed".
#
# usage: tests/gdb.sh LIBDACCE
set -u
lib=$(readlink -f "$1")
python=/usr/bin/python3
work=$(mktemp -d /tmp/dacce-gdb.XXXXXX)
target=
cleanup() {
	[ -n "$target" ] && kill "$target" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

if ! command -v gdb >/dev/null || [ ! -x "$python" ]; then
	fail "gdb or $python not found (Debian packages: gdb python3)"
	echo "gdb: $passed passed, $failed failed"
	exit 1
fi

# gdb's own environment stays clean: only the program gets the runtime.
gdb_quiet() {
	timeout 300 gdb -nx -q -batch -ex 'set pagination off' -ex 'set confirm off' \
		-ex 'handle SIGILL SIG63 nostop noprint' "$@"
}

# run_with_script NAME: builds $work/NAME.c at -O0 and runs it from gdb under the runtime, with
# $work/NAME.py as gdb's script; the output goes to $work/NAME.out.  Fails if it cannot build.
run_with_script() {
	gcc -O0 -g -o "$work/$1" "$work/$1.c" || return 1
	gdb_quiet -ex 'set startup-with-shell off' -ex "set environment LD_PRELOAD=$lib" \
		-x "$work/$1.py" "$work/$1" >"$work/$1.out" 2>&1
}

# 1. Started by gdb, with every trap of its start-up passing through gdb.
echo 'import json; print(sum(json.loads(json.dumps(list(range(1000))))))' >"$work/run.py"
gdb_quiet -ex 'set startup-with-shell off' -ex "set environment LD_PRELOAD=$lib" \
	-ex 'set environment DACCE_LOG=1' -ex run --args "$python" "$work/run.py" \
	>"$work/run.out" 2>&1
if grep -qx 499500 "$work/run.out" && grep -q 'exited normally' "$work/run.out" &&
	grep -q 'traps taken' "$work/run.out"; then
	pass "run from gdb: same output, exited normally, runtime traps passed through"
else
	fail "run from gdb: $(grep -vE '^\[|^Using host' "$work/run.out" | tail -n 3 | tr '\n' ' ')"
fi

# 1b. The same through gdb's default start, a shell that execs the program: the shell (bash)
# gets the runtime too, under the debugger.  bash defines getenv, which the runtime called at
# start: with every function decoded at start (as under a debugger) that crashed the shell.
gdb_quiet -ex "set environment LD_PRELOAD=$lib" -ex run --args "$python" "$work/run.py" \
	>"$work/shell.out" 2>&1
if grep -qx 499500 "$work/shell.out" && grep -q 'exited normally' "$work/shell.out"; then
	pass "run from gdb through its start-up shell: same output, exited normally"
else
	fail "run from gdb through its start-up shell: $(grep -vE '^\[|^Using host' "$work/shell.out" | tail -n 3 | tr '\n' ' ')"
fi

# 2. Attached to while it waits, then let go on to code it has not run yet (more traps).
cat >"$work/target.py" <<'EOF'
import os, sys, time
go = sys.argv[1]
open(go + ".ready", "w").close()
while not os.path.exists(go):
	time.sleep(0.01)
import json, decimal, fractions
print(sum(json.loads(json.dumps(list(range(1000))))), fractions.Fraction(3, 9), decimal.Decimal("1.5") * 2)
EOF
LD_PRELOAD=$lib DACCE_LOG=1 "$python" "$work/target.py" "$work/go" >"$work/attach.out" 2>&1 &
target=$!
for _ in $(seq 500); do
	[ -e "$work/go.ready" ] && break
	sleep 0.02
done
gdb_quiet -p "$target" -ex "shell touch $work/go" -ex continue >"$work/gdb.out" 2>&1
wait "$target"
status=$?
target=
if [ "$status" -eq 0 ] && grep -qx '499500 1/3 3.0' "$work/attach.out" &&
	grep -q 'exited normally' "$work/gdb.out"; then
	pass "attached by gdb while it meets new code: same output, exit status 0"
else
	fail "attached by gdb: status $status, output $(head -c 200 "$work/attach.out" | tr '\n' ' '), gdb: $(grep -vE '^\[|^Using host' "$work/gdb.out" | tail -n 2 | tr '\n' ' ')"
fi

# 3. `bt` with user/dacce-gdb.py: the frames (function and pc) of the native run, through
# trampolines and through the tail stub (viaptr's indirect tail jump to leaf gives leaf's
# frame the tail stub as its return address while the edge is pushed).
cat >"$work/bt.c" <<'EOF'
#include <stdio.h>
__attribute__((noinline)) void stop_here(int x) { __asm__ volatile("" : : "r"(x) : "memory"); }
__attribute__((noinline)) int leaf(int x) { if (x == 7) stop_here(x); return x * 3 + 1; }
__attribute__((noinline)) int viaptr(int (*f)(int), int x) { return f(x); }
__attribute__((noinline)) int mid(int x) { return viaptr(leaf, x) + 2; }
__attribute__((noinline)) int top(int x) { return mid(x) * 2; }
int main(void) { int s = 0; for (int i = 0; i < 20; i++) s += top(i); printf("%d\n", s); return 0; }
EOF
frames() { # GDB_OUTPUT: "function pc" of each frame of the backtrace
	sed -n 's/^#[0-9]* *\(0x[0-9a-f]* in \)\{0,1\}\([A-Za-z_][A-Za-z0-9_]*\) (.*/\2 \1/p' "$1" |
		sed 's/ in $//'
}
if gcc -O2 -g -o "$work/bt" "$work/bt.c"; then
	bt_script=(-ex 'set startup-with-shell off' -ex 'break main' -ex run -ex 'hbreak stop_here'
		-ex continue -ex bt)
	gdb_quiet "${bt_script[@]}" "$work/bt" >"$work/bt.native" 2>&1
	gdb_quiet -x "$(dirname "$0")/../user/dacce-gdb.py" -ex "set environment LD_PRELOAD=$lib" \
		"${bt_script[@]}" "$work/bt" >"$work/bt.dacce" 2>&1
	frames "$work/bt.native" >"$work/frames.native"
	frames "$work/bt.dacce" >"$work/frames.dacce"
	if [ "$(wc -l <"$work/frames.native")" -eq 5 ] &&
		cmp -s "$work/frames.native" "$work/frames.dacce"; then
		pass "bt through trampolines and the tail stub: the native frames ($(cut -d' ' -f1 "$work/frames.native" | tr '\n' ' '))"
	else
		fail "bt: native [$(tr '\n' ' ' <"$work/frames.native")] under the runtime [$(tr '\n' ' ' <"$work/frames.dacce")]"
	fi
else
	fail "bt: cannot build the test program"
fi

# 3b. `bt` in plain gdb, without the script: the runtime tells gdb about its code through the
# JIT interface (runtime/gdbjit.h), so the walk goes through every call's trampoline, each
# named after the call it serves, to libc's start (before: `?? ()` at the first one, and
# no further).  Run from gdb, stopped soon after start; then attached to, while it sleeps.
cat >"$work/plain.c" <<'EOF'
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) void stop_here(int x) { __asm__ volatile("" : : "r"(x) : "memory"); }
__attribute__((noinline)) int leaf(int x) { if (x == 7) stop_here(x); return x * 3 + 1; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + 2; }
__attribute__((noinline)) int top(int x) { return mid(x) * 2; }
/* Not a tail call to pause: a frame that made one returns through the tail stub, where plain
 * gdb's walk ends (the return address it stands for is in the thread's tail records). */
__attribute__((noinline)) void nap(const char *ready) { fclose(fopen(ready, "w")); pause(); __asm__ volatile(""); }
int main(int argc, char **argv)
{
	int s = 0;
	for (int i = 0; i < 20; i++)
		s += top(i);
	printf("%d\n", s);
	if (argc > 1)
		nap(argv[1]);
	return 0;
}
EOF
off='(0x[0-9a-f]+|0)' # the call's offset in its function
plain_frames() { # GDB_OUTPUT: the function name of each frame of the first backtrace
	sed -n 's/^#[0-9]* *\(0x[0-9a-f]* in \)\{0,1\}\([^ (]*\) (.*/\2/p' "$1" | tr '\n' ' '
}
if gcc -O2 -g -fno-inline -o "$work/plain" "$work/plain.c"; then
	gdb_quiet -ex 'set startup-with-shell off' -ex "set environment LD_PRELOAD=$lib" \
		-ex 'break stop_here' -ex run -ex bt -ex kill "$work/plain" >"$work/plain.run" 2>&1
	got=$(plain_frames "$work/plain.run")
	if echo "$got" | grep -qE "^stop_here dacce:call@leaf\\+$off dacce:call@mid\\+$off dacce:call@top\\+$off dacce:call@main\\+$off main_with_context __libc_start_call_main "; then
		pass "bt without the script, run from gdb: every trampoline named, walked to libc's start"
	else
		fail "bt without the script, run from gdb: [$got]"
	fi
	# A frame that made a tail call that costs something (every edge stays pushed with
	# DACCE_EPOCHS=0) returns to its tail trampoline's return point, or through the tail stub
	# with DACCE_TAIL_CALLS=jump: named, and the walk ends there, cleanly (the return address
	# it stands for is in the thread's tail records). Each starts a byte into its piece: gdb
	# looks a return address up one byte back.
	if [ -x "$work/bt" ]; then
		for shape in call jump; do
			gdb_quiet -ex 'set startup-with-shell off' -ex "set environment LD_PRELOAD=$lib" \
				-ex 'set environment DACCE_EPOCHS=0' \
				-ex "set environment DACCE_TAIL_CALLS=$shape" -ex 'break stop_here' -ex run \
				-ex bt -ex kill "$work/bt" >"$work/plain.tail" 2>&1
			got=$(plain_frames "$work/plain.tail")
			want=tail_return
			[ $shape = jump ] && want=tail_call_return
			if echo "$got" | grep -qE "^stop_here dacce:call@leaf\\+$off dacce:$want $"; then
				pass "bt without the script through a tail call ($shape): ends at dacce:$want, named"
			else
				fail "bt without the script through a tail call ($shape): [$got]"
			fi
		done
	fi
	rm -f "$work/napping"
	LD_PRELOAD=$lib "$work/plain" "$work/napping" >/dev/null 2>&1 &
	target=$!
	for _ in $(seq 500); do
		[ -e "$work/napping" ] && break
		sleep 0.02
	done
	sleep 0.3 # past the runtime's next look at new code (at most 100 ms)
	gdb_quiet -p "$target" -ex 'thread 1' -ex bt >"$work/plain.attach" 2>&1
	kill "$target" 2>/dev/null
	wait "$target" 2>/dev/null
	target=
	got=$(plain_frames "$work/plain.attach")
	if echo "$got" | grep -qE "dacce:call@nap\\+$off dacce:call@main\\+$off main_with_context __libc_start_call_main "; then
		pass "bt without the script, attached: every trampoline named, walked to libc's start"
	else
		fail "bt without the script, attached: [$got]"
	fi
else
	fail "bt without the script: cannot build the test program"
fi

# 4. `next` over a call with user/dacce-gdb.py: the first call of a site goes through its
# first-call stub and the runtime's slow path, later ones through the trampoline; each
# `next` must stop on the following line, as natively.
cat >"$work/next.c" <<'EOF'
#include <stdio.h>
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int viaptr(int (*f)(int), int x) { return f(x); }
__attribute__((noinline)) int mid(int x)
{
	int a = viaptr(leaf, x);
	int b = a + 2;
	return b;
}
int main(void)
{
	int s = 0;
	for (int i = 0; i < 20; i++)
		s += mid(i);
	printf("%d\n", s);
	return 0;
}
EOF
if gcc -O0 -g -o "$work/next" "$work/next.c"; then
	next_script=(-ex 'set startup-with-shell off' -ex 'break main' -ex run -ex 'hbreak 6'
		-ex continue -ex next -ex next -ex continue -ex next -ex next)
	gdb_quiet "${next_script[@]}" "$work/next" >"$work/next.native" 2>&1
	gdb_quiet -x "$(dirname "$0")/../user/dacce-gdb.py" -ex "set environment LD_PRELOAD=$lib" \
		"${next_script[@]}" "$work/next" >"$work/next.dacce" 2>&1
	grep -E '^[0-9]+\s' "$work/next.native" >"$work/lines.native"
	grep -E '^[0-9]+\s' "$work/next.dacce" >"$work/lines.dacce"
	if [ "$(grep -cE '^(7|8)\s' "$work/lines.native")" -eq 4 ] &&
		cmp -s "$work/lines.native" "$work/lines.dacce"; then
		pass "next over a first call and over a later one: the native lines"
	else
		fail "next: native [$(tr '\n' ' ' <"$work/lines.native")] under the runtime [$(tr '\n' ' ' <"$work/lines.dacce")]"
	fi
else
	fail "next: cannot build the test program"
fi

# 5. `step`, `next`, `finish`, `up` and `down` with user/dacce-gdb.py, as natively: into
# first calls (the runtime's slow path) and later ones (trampolines, dispatch code of an
# indirect call, a hop through padding), through a tail call and the tail stub, into
# and over libc, out of functions into the middle of a line, and out of main.
# Built -O0 and -O2.  gdb starting the program, the runtime decodes every function at
# start (no watched entries): `break leaf` on -O2's frameless entry works.  Entry values
# of arguments (x=x@entry=) are not read through generated code: -O2's arguments are
# left out of the comparison; "Thread N hit" and frame levels too.
cat >"$work/steps.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct pair { double a; long b; };
__attribute__((noinline)) struct pair make(double a, long b) { struct pair p = { a, b }; return p; }
__attribute__((noinline)) double half(double x) { return x / 2; }
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int tail(int x) { return leaf(x + 1); }
__attribute__((noinline)) int viaptr(int (*f)(int), int x) { return f(x) + 1; }
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
__attribute__((noinline)) int work(int x)
{
	int v[4] = { x, 3, 1, 2 };
	char buf[32] = "";
	snprintf(buf, sizeof(buf), "%d", x);
	qsort(v, 4, sizeof(int), cmp);
	int a = viaptr(tail, v[0]) + (int)strlen(buf);
	struct pair p = make(half(a), a);
	return (int)p.a + (int)p.b;
}
int main(void)
{
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += work(i);
	printf("%d\n", s);
	return 0;
}
EOF
stops() { # GDB_OUTPUT WITHOUT_ARGS: what the session printed, the runs' own differences out
	sed -e 's/^Thread [0-9]* "[^"]*" hit //' -e 's/^#[0-9]*  */#  /' \
		-e '/^Note: automatically using hardware breakpoints/d' -e '/^\[/d' \
		-e '/^Using host libthread_db/d' -e 's/<main_with_context>/<main>/' "$1" |
		if [ "$2" = 1 ]; then sed -e 's/^\([#A-Za-z_ ]*[A-Za-z_0-9]\) (.*) at /\1 () at /'; else cat; fi
}
session=(-ex 'set startup-with-shell off' -ex 'set print address off' -ex 'break leaf'
	-ex 'break half' -ex run -ex bt -ex finish -ex finish -ex next -ex next -ex step -ex step
	-ex step -ex continue -ex up -ex up -ex down -ex finish -ex step -ex step -ex step
	-ex next -ex next -ex next -ex next -ex 'delete' -ex step -ex step -ex step -ex step
	-ex step -ex step -ex step -ex step -ex next -ex step -ex next -ex step -ex next
	-ex step -ex next -ex next -ex next -ex next -ex next -ex next -ex next)
for opt in 0 2; do
	if ! gcc -O$opt -fno-inline -g -o "$work/steps$opt" "$work/steps.c"; then
		fail "stepping -O$opt: cannot build the test program"
		continue
	fi
	gdb_quiet "${session[@]}" "$work/steps$opt" >"$work/steps.native" 2>&1
	gdb_quiet -x "$(dirname "$0")/../user/dacce-gdb.py" -ex "set environment LD_PRELOAD=$lib" \
		"${session[@]}" "$work/steps$opt" >"$work/steps.dacce" 2>&1
	stops "$work/steps.native" $((opt > 0)) >"$work/stops.native"
	stops "$work/steps.dacce" $((opt > 0)) >"$work/stops.dacce"
	if grep -q 'Value returned is' "$work/stops.native" && grep -q '^viaptr' "$work/stops.native" &&
		cmp -s "$work/stops.native" "$work/stops.dacce"; then
		pass "step, next, finish, up, down at -O$opt: the native stops ($(wc -l <"$work/stops.native") lines)"
	else
		fail "stepping -O$opt differs from the native run: $(diff "$work/stops.native" "$work/stops.dacce" | head -n 6 | tr '\n' ' ')"
	fi
done

# 6. A context getcontext took, entered again by setcontext and swapcontext from deeper frames
# (and a longjmp to a setjmp):
# the runtime puts the landing's context back before libc's code switches the stack, and says
# so with jump_sp in the thread's block (tls.h), which a sampler compares with sp.  At the
# entry of libc's setcontext, swapcontext and longjmp, sp must be below jump_sp.  The context
# interposers tail-call libc's, which then runs where their caller's return address was, above
# their own frame: a bound taken at their frame let a sample there read the landing's context over
# the jumping frames (validate-programs saw one at -O0 in a CI run).
cat >"$work/jump.c" <<'EOF'
#include <setjmp.h>
#include <stdio.h>
#include <ucontext.h>
static ucontext_t back, left_behind;
static jmp_buf env;
static volatile int jumps;
__attribute__((noinline)) static void leave(void) { setcontext(&back); }
__attribute__((noinline)) static void deeper(int n) { if (n == 0) leave(); else deeper(n - 1); jumps += 100; }
__attribute__((noinline)) static void swap_back(void) { swapcontext(&left_behind, &back); }
__attribute__((noinline)) static void jump_back(int n) { if (n == 0) longjmp(env, 1); jump_back(n - 1); jumps += 100; }
int main(void)
{
	for (volatile int how = 0; how < 3; how++) {
		volatile int entered = 0;

		getcontext(&back);
		if (entered) {
			jumps++;
			continue;
		}
		entered = 1;
		if (how == 0)
			leave();
		else if (how == 1)
			deeper(5);
		else
			swap_back();
	}
	if (setjmp(env) == 0)
		jump_back(3);
	else
		jumps++;
	printf("%d\n", jumps);
	return 0;
}
EOF
cat >"$work/jump.py" <<'EOF'
import struct
import gdb

class EntryOfLibc(gdb.Breakpoint):
    """At libc's own entry (not the runtime's interposer): sp against the block's jump_sp."""
    def stop(self):
        frame = gdb.newest_frame()
        pc = int(frame.pc())
        if "libc.so" not in (gdb.solib_name(pc) or ""):
            return False
        inferior = gdb.selected_inferior()
        table = int(gdb.parse_and_eval("(unsigned long)&dacce_debug_returns"))
        tpoff = struct.unpack("<q", bytes(inferior.read_memory(table + 24, 8)))[0]
        block = int(frame.read_register("fs_base")) + tpoff
        jump_sp = struct.unpack("<Q", bytes(inferior.read_memory(block + 88, 8)))[0]
        sp = int(frame.read_register("rsp"))
        where = "below" if sp < jump_sp else "above"
        print("JUMP %s %s sp=%#x jump_sp=%#x" % (self.location, where, sp, jump_sp))
        return False

gdb.execute("set breakpoint pending on")
EntryOfLibc("setcontext")
EntryOfLibc("swapcontext")
EntryOfLibc("longjmp")
gdb.execute("run")
EOF
if run_with_script jump; then
	below=$(grep -c '^JUMP .* below ' "$work/jump.out")
	above=$(grep -c '^JUMP .* above ' "$work/jump.out")
	if grep -qx 4 "$work/jump.out" && [ "$below" -eq 4 ] && [ "$above" -eq 0 ]; then
		pass "libc's setcontext, swapcontext and longjmp run below jump_sp when they jump to a mark ($below entries)"
	else
		fail "jump_sp: $below entries below it, $above above ($(grep -E '^JUMP|^[0-9]+$|rror' "$work/jump.out" | head -n 4 | tr '\n' ' '))"
	fi
else
	fail "jump_sp: cannot build the test program"
fi

# 7. The code a setjmp returns through (a thunk in its return-address slot while libc's setjmp
# runs) is told to tracers as code of no call site from the trap byte before it: a stack
# walker looks a return address up one byte back, and found that byte in the code allocated
# just before the thunk, taking the thunk for a return into that code's call site
# (validate-programs, jmpsignals.c at -O0, now and then).  gdb stops at each code_entries
# probe (it sets the probe's semaphore, as a tracer does) and reads the notes.
cat >"$work/setjmp.c" <<'EOF'
#include <setjmp.h>
#include <stdio.h>
static jmp_buf env;
static volatile int n;
__attribute__((noinline)) static void back(void) { longjmp(env, 1); }
__attribute__((noinline)) static void once(void) { if (setjmp(env) == 0) back(); n++; }
int main(void) { for (int i = 0; i < 3; i++) once(); printf("%d\n", n); return 0; }
EOF
cat >"$work/setjmp.py" <<'EOF'
import struct
import gdb

NO_SITE = 0xfffffffe  # bpf/dacce_events.h
TRAP_BYTE = 0xd6  # runtime/trap.h

class Notes(gdb.Breakpoint):
    def stop(self):
        batch = int(gdb.parse_and_eval("$_probe_arg0"))
        n = int(gdb.parse_and_eval("$_probe_arg1"))
        inferior = gdb.selected_inferior()
        for i in range(n):
            address, caller, _ = struct.unpack("<QQQ", bytes(inferior.read_memory(batch + 24 * i, 24)))
            if caller == NO_SITE:
                first = bytes(inferior.read_memory(address, 1))[0]
                print("NOSITE %s %#x" % ("trap" if first == TRAP_BYTE else "code", address))
        return False

gdb.execute("set breakpoint pending on")
Notes("-probe-stap dacce:code_entries")
gdb.execute("run")
EOF
if run_with_script setjmp; then
	at_trap=$(grep -c '^NOSITE trap ' "$work/setjmp.out")
	at_code=$(grep -c '^NOSITE code ' "$work/setjmp.out")
	if grep -qx 3 "$work/setjmp.out" && [ "$at_trap" -ge 1 ] && [ "$at_code" -eq 0 ]; then
		pass "setjmp thunks told to tracers from the byte before them ($at_trap)"
	else
		fail "setjmp thunks: $at_trap told from the byte before them, $at_code from their code ($(grep -E '^NOSITE|^[0-9]+$|rror' "$work/setjmp.out" | head -n 3 | tr '\n' ' '))"
	fi
else
	fail "setjmp thunks: cannot build the test program"
fi

# 8. A signal that arrives while a thread is on a site's first-call stub (gdb stops it there
# with a hardware breakpoint and delivers the signal): dacce_backtrace in the handler shows
# the frames backtrace() shows natively with the signal delivered at the site itself, the
# signal trampoline and the interrupted function at the site included.  The runtime finds
# the site from the stub's own bytes (runtime/rt.c, stub_site_at); before, the handler's
# frames left out the trampoline and the interrupted function.
cat >"$work/sigstub.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static int (*frames_of)(void **, int);

static void on_usr1(int sig)
{
	void *frames[64];
	int n = frames_of(frames, 64); /* one call site for both runs: the same return address */

	(void)sig;
	printf("COUNT %d\n", n);
	for (int i = 0; i < n; i++) {
		Dl_info info;

		if (!dladdr(frames[i], &info))
			printf("FRAME ?\n");
		else if (info.dli_sname)
			printf("FRAME %s+%#lx\n", info.dli_sname,
			       (unsigned long)((char *)frames[i] - (char *)info.dli_saddr));
		else
			printf("FRAME %s+%#lx\n", basename((char *)info.dli_fname),
			       (unsigned long)((char *)frames[i] - (char *)info.dli_fbase));
		if (info.dli_sname && strcmp(info.dli_sname, "main") == 0)
			break; /* dacce_backtrace ends at main */
	}
}

__attribute__((noinline)) int callee(int x) { return x + 1; }

__attribute__((noinline)) int caller(int x)
{
	int y = x * 2;
	return callee(y) * 2;
}

int (*volatile hook)(int) = callee;

/* `call *%rax`, 2 bytes: the instructions before it give their bytes to a jump to a landing. */
__attribute__((noinline)) int viahook(int x) { return hook(x * 2) * 2; }

/* Where gdb looks at the code: both functions were entered, so decoded, by then. */
__attribute__((noinline)) void ready(void) { __asm__ volatile("" ::: "memory"); }

int main(void)
{
	signal(SIGUSR1, on_usr1);
	frames_of = (int (*)(void **, int))dlsym(RTLD_DEFAULT, "dacce_backtrace");
	if (!frames_of)
		frames_of = backtrace;
	if (caller(0) + viahook(0) != 4)
		return 1;
	ready();
	printf("%d\n", caller(1));
	printf("%d\n", viahook(3));
	return 0;
}
EOF
cat >"$work/sigstub.py" <<'EOF'
import gdb
FUNCTION = "caller"
INTO_TRAMPOLINE = False  # under the runtime: past the stub, on the trampoline's entry
gdb.execute("set breakpoint pending on")
gdb.execute("break ready")
gdb.execute("run")
# The call in FUNCTION: natively a call; under the runtime (the function was decoded on its
# first entry) a jmp to the site's first-call stub (or its dispatch code).
frame = gdb.selected_frame()
start = int(gdb.parse_and_eval("(long)&" + FUNCTION))
stop_at = None
for insn in frame.architecture().disassemble(start, count=16):
    words = insn["asm"].split()
    if words[0] == "call":
        stop_at = insn["addr"]
        break
    if words[0] == "jmp" and len(words) > 1 and words[1].startswith("0x"):
        stop_at = int(words[1], 16)
        if INTO_TRAMPOLINE:  # the stub's own jmp, pointed at the trampoline by the first call
            stop_at = int(frame.architecture().disassemble(stop_at, count=2)[1]["asm"].split()[1], 16)
        break
print("STOP %s" % (hex(stop_at) if stop_at else "none"))
if stop_at:
    gdb.execute("delete")
    gdb.execute("thbreak *%d" % stop_at)  # generated code takes no int3 from gdb
    gdb.execute("continue")
    print("AT %#x" % gdb.selected_frame().pc())
    gdb.execute("signal SIGUSR1")
EOF
# signalled NAME: runs sigstub with gdb's script $work/NAME.py (which stops the thread and
# signals it) natively and under the runtime; sets at_native and at_dacce (where it stopped),
# count (what dacce_backtrace returned), and the frames' names, native and under the runtime.
signalled() {
	gdb_quiet -ex 'set startup-with-shell off' -x "$work/$1.py" "$work/sigstub" \
		>"$work/$1.native" 2>&1
	gdb_quiet -ex 'set startup-with-shell off' -ex "set environment LD_PRELOAD=$lib" \
		-x "$work/$1.py" "$work/sigstub" >"$work/$1.out" 2>&1
	at_native=$(sed -n 's/^AT \(0x[0-9a-f]*\)$/\1/p' "$work/$1.native")
	at_dacce=$(sed -n 's/^AT \(0x[0-9a-f]*\)$/\1/p' "$work/$1.out")
	count=$(sed -n 's/^COUNT \(-\{0,1\}[0-9]*\)$/\1/p' "$work/$1.out")
	frames_native=$(sed -n 's/^FRAME //p' "$work/$1.native" | tr '\n' ' ')
	frames_dacce=$(sed -n 's/^FRAME //p' "$work/$1.out" | tr '\n' ' ')
	# Stopped in generated code under the runtime, at the site natively.
	[ -n "$at_native" ] && [ -n "$at_dacce" ] && [ "$at_native" != "$at_dacce" ]
}
if gcc -O1 -g -rdynamic -o "$work/sigstub" "$work/sigstub.c" -ldl; then
	if signalled sigstub && [[ "$frames_native" == *" caller+"* ]] &&
		grep -qx 6 "$work/sigstub.out" && [ "$frames_native" = "$frames_dacce" ]; then
		pass "a signal on a first-call stub: the handler's frames are the native ones ($frames_native)"
	else
		fail "signal on a first-call stub (at $at_dacce, natively $at_native): native [$frames_native] under the runtime [$frames_dacce]"
	fi
else
	fail "signal on a first-call stub: cannot build the test program"
fi

# 8b. The same on the entry of the site's trampoline (the stub's jump leads there since the
# site's first call): nothing of the call done yet either, so the native frames.
sed -e 's/^INTO_TRAMPOLINE = False /INTO_TRAMPOLINE = True /' "$work/sigstub.py" >"$work/sigtramp.py"
if [ ! -x "$work/sigstub" ]; then
	fail "signal on a trampoline's entry: no test program"
elif signalled sigtramp && [[ "$frames_native" == *" caller+"* ]] &&
	grep -qx 6 "$work/sigtramp.out" && [ "$frames_native" = "$frames_dacce" ]; then
	pass "a signal on a trampoline's entry: the handler's frames are the native ones"
else
	fail "signal on a trampoline's entry (at $at_dacce, natively $at_native): native [$frames_native] under the runtime [$frames_dacce]"
fi

# 9. The same signal on a borrowed site's landing (viahook's 2-byte `call *%rax`: the
# instruction before it gave its bytes to a jump there, and the dispatch code runs it first):
# natively the thread would be on that instruction, a place the runtime does not map back,
# so dacce_backtrace in the handler must answer -1 (or give the native frames), never the
# frames below the handler with the signal trampoline and the interrupted function left out,
# as the runtime before did.
sed -e 's/^FUNCTION = "caller"$/FUNCTION = "viahook"/' "$work/sigstub.py" >"$work/sigland.py"
if [ ! -x "$work/sigstub" ]; then
	fail "signal on a borrowed site's landing: no test program"
elif signalled sigland && [[ "$frames_native" == *" viahook+"* ]] &&
	grep -qx 14 "$work/sigland.out" &&
	{ [ "$count" = -1 ] || [ "$frames_native" = "$frames_dacce" ]; }; then
	pass "a signal on a borrowed site's landing: no answer or the native frames (count $count)"
else
	fail "signal on a borrowed site's landing (at $at_dacce, count ${count:-none}): native [$frames_native] under the runtime [$frames_dacce]"
fi

echo "gdb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
