#!/usr/bin/env bash
# Real programs from Debian packages must behave identically under libdacce.so: same output,
# same exit status, with the standalone policy and with a re-encoding every millisecond
# (DACCE_EPOCH_STRESS: epochs installed while the programs' frames are live), and as under a
# debugger (DACCE_DECODE_ALL: every function decoded and patched at start, before the runtime's
# own start-up calls are done: bash's getenv, which wins over libc's, crashed it then), and with
# the runtime's heap checked while epochs come every millisecond (DACCE_HEAP_CHECK: a use of
# memory the runtime freed faults on the spot instead of reading what reused it).
# Usage: run-real.sh BUILD_DIR LIBDACCE
set -u
build=$1
lib=$2
work=$build/real
mkdir -p "$work"
simulate=$(cd "$build/tests" && pwd)/simulate
head -c 2000000 /dev/urandom | base64 >"$work/input.txt"
# C++ with its own unwinder (-static-libgcc): left alone by the runtime, so it must behave as natively.
${CXX:-g++} -O2 -static-libgcc -o "$work/own-unwinder" tests/refused/own-unwinder.cpp || exit 1
# ... stripped: its unwinder's symbols gone, it must still be recognised (it imports _dl_find_object).
${CXX:-g++} -O2 -static-libgcc -s -o "$work/own-unwinder-stripped" tests/refused/own-unwinder.cpp || exit 1
# ... and with a personality routine of its own (static libstdc++), also left alone.
${CXX:-g++} -O2 -static-libstdc++ -o "$work/own-personality" tests/refused/own-unwinder.cpp || exit 1
cd "$work" || exit 1
printf 'int f( { return 1 }\n' >syntax.c
printf 'int main(void) { int a[2]; a[3] = 1; char *p = 0; return *p; }\n' >faults.c

jobs=(
	"python3|python3 -c 'import re, json, sqlite3, threading; t = threading.Thread(target=print, args=(\"thread\",)); t.start(); t.join(); print(re.sub(r\"a+\", \"b\", \"caaat\"), json.dumps(json.loads(\"[1, 2.5, null]\")), sqlite3.connect(\":memory:\").execute(\"select 6*7\").fetchone(), float(\"nan\"))'"
	"perl|perl -MList::Util=sum -e 'my %h = map { \$_ => \$_ ** 2 } 1..50; print sum(values %h), qq(\n)'"
	"bash|bash -c 'f() { echo \$((\$1 * 2)); }; for i in 1 2 3; do f \$i; done | sort -r | tr \"\\n\" \" \"; echo'"
	"bzip2|bzip2 -c input.txt | bzip2 -dc | md5sum"
	"gzip|gzip -c input.txt | gzip -dc | md5sum"
	"xz -T2|xz -c -T2 input.txt | xz -dc -T2 | md5sum"
	"zstd -T2|zstd -q -c -T2 input.txt | zstd -q -dc | md5sum"
	"sqlite3|sqlite3 :memory: 'create table t(x); insert into t values (1),(2),(3); select sum(x), group_concat(x) from t;'"
	"tar|tar cf - input.txt | md5sum"
	"git|rm -rf repo && git init -q repo && git -C repo -c user.name=d -c user.email=d@d commit -q --allow-empty -m first && git -C repo log --format=%s"
	"make|printf 'all: a b\\n\\t@echo built\\na b:\\n\\t@echo \$@\\n' >Makefile && make -s"
	"our simulator (deep recursion, hash maps)|$simulate --programs 40 --seed 3"
	"cppcheck (C++, errors thrown as exceptions)|cppcheck -q syntax.c faults.c"
	"C++ with its own unwinder (left alone)|./own-unwinder"
	"C++ with its own unwinder, stripped (left alone)|./own-unwinder-stripped"
	"C++ with its own personality routine (left alone)|./own-personality"
	"gdb (C++, errors thrown as exceptions)|gdb -q -batch -ex 'print 6*7' -ex 'print nosuchvar' -ex 'ptype struct nosuch' -ex 'print sizeof(long)'"
	"gcc|printf 'int main(void) { return 42; }\\n' >hello.c && gcc -O2 -o hello hello.c && ./hello; echo \$?"
	# V8's builtins have no unwind information and pass arguments on the stack around their
	# jumps (left alone: runtime.md, "Code without unwind information"); node died of SIGILL.
	"node (JIT, threads, OpenSSL)|node -e 'const a = []; for (let i = 0; i < 20000; i++) a.push({k: i % 97, v: String(i)}); a.sort((x, y) => x.k - y.k || x.v.localeCompare(y.v)); console.log(a.length, a[0].v, JSON.stringify(a.slice(-2)), require(\"crypto\").createHash(\"sha256\").update(\"x\").digest(\"hex\").slice(0, 8))'"
	# Allocators that replace libc's (left alone: libraries.c), preloaded before the runtime:
	# the runtime's own work calls them.  Before, every program died under them at start.
	"python3 with jemalloc|env LD_PRELOAD=\"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2\${LD_PRELOAD:+ \$LD_PRELOAD}\" python3 -c 'import json, threading, subprocess; t = threading.Thread(target=print, args=(\"thread\",)); t.start(); t.join(); print(len(json.dumps(list(range(100000)))), subprocess.run([\"echo\", \"child\"], capture_output=True).stdout)'"
	"bash with tcmalloc|env LD_PRELOAD=\"/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4\${LD_PRELOAD:+ \$LD_PRELOAD}\" bash -c 'echo \$(echo forked) \$((6 * 7))'"
)
passed=0
failed=0
for job in "${jobs[@]}"; do
	name=${job%%|*}
	cmd=${job#*|}
	tool=${cmd%% *}
	if [ "${tool#./}" = "$tool" ] && [ "${tool#/}" = "$tool" ] && ! command -v "$tool" >/dev/null; then
		echo "FAIL $name: $tool is not installed (make deps installs it)"
		failed=$((failed + 1))
		continue
	fi
	native=$(bash -c "$cmd" 2>&1)
	native_status=$?
	for mode in default epochs debugger heapcheck; do
		case $mode in
		epochs) stress="DACCE_EPOCH_STRESS=1 DACCE_EPOCH_INTERVAL_MS=1" ;;
		debugger) stress="DACCE_DECODE_ALL=1" ;;
		heapcheck) stress="DACCE_HEAP_CHECK=1 DACCE_EPOCH_STRESS=1 DACCE_EPOCH_INTERVAL_MS=1" ;;
		*) stress= ;;
		esac
		# One retry, reported with both outputs (as tests/run-programs.sh does): a rare
		# failure shows in the log; two in a row fail.
		for attempt in 1 2; do
			env $stress LD_PRELOAD="$lib" bash -c "$cmd" >dacce.out 2>&1
			dacce_status=$?
			# The runtime's one-line notices are not the program's output.
			dacce=$(grep -v '^dacce: not instrumenting' dacce.out)
			[ "$native" = "$dacce" ] && [ $native_status -eq $dacce_status ] && break
			[ $attempt -eq 1 ] && echo "RETRY $name ($mode): status $dacce_status (native $native_status), output [$(head -c 300 dacce.out | tr '\n' ' ')]"
		done
		refused=yes
		case $name in *"(left alone)"*) grep -q '^dacce: not instrumenting' dacce.out || refused=no ;; esac
		if [ $refused = no ]; then
			echo "FAIL $name ($mode): instrumented, but the runtime must leave it alone"
			failed=$((failed + 1))
		elif [ "$native" = "$dacce" ] && [ $native_status -eq $dacce_status ]; then
			passed=$((passed + 1))
		else
			echo "FAIL $name ($mode): status $dacce_status (native $native_status)"
			printf '  native: %s\n  dacce:  %s\n' "$native" "$dacce" | head -n 8
			failed=$((failed + 1))
		fi
	done
done
echo "real: $passed passed, $failed failed"
[ $failed -eq 0 ]
