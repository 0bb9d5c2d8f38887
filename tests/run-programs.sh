#!/usr/bin/env bash
# Integration: every program of tests/programs, built several ways, runs natively and under
# libdacce.so; the probes' outputs must match line for line (sorted, for threads).  A native
# "outside" (the stack went through a library) must read "partial" under the runtime.
# Each program also runs with a re-encoding every millisecond (DACCE_EPOCH_STRESS), so that
# epochs are installed while its frames are live: its contexts must not change.  The -O2 build
# also runs so with the runtime's heap checked (DACCE_HEAP_CHECK: a use of memory the runtime
# freed faults on the spot instead of reading what reused it), and the -O2, -O3 and non-PIE
# builds with functions run from copies (DACCE_RELOCATE, runtime/relocated.h) as well.
# A program foo.c may come with foo.lib.c (or foo.cpp with foo.lib.cpp, built with $CXX), built
# with the same flags as $out/libfoo-VARIANT.so, which the program finds next to itself and
# dlopens; or, with a line "// link: lib" at its top, is linked against (loaded at start, found
# next to it through its rpath).  The library's own "// flags: ..." line names flags of its own.
# Usage: run-programs.sh BUILD_DIR LIBDACCE [PROGRAM...] (default: every program; or name
# some in DACCE_PROGRAMS, separated by spaces; tests/programs/pending/ only runs when named,
# as pending/NAME)
set -u
build=$1
lib=$2
shift 2
src=tests/programs
out=$build/programs
mkdir -p "$out"

variants=(
	"O0:-O0"
	"O2:-O2"
	"O3:-O3"
	"O2-nopie:-O2 -fno-pie -no-pie"
	"O2-noplt:-O2 -fno-plt"
	"O2-fp:-O2 -fno-omit-frame-pointer"
	"O1-nofp:-O1 -fomit-frame-pointer"
	"O2-cet:-O2 -fcf-protection=full"
)
programs=("$@")
# shellcheck disable=SC2206
[ ${#programs[@]} -eq 0 ] && programs=(${DACCE_PROGRAMS:-})
if [ ${#programs[@]} -eq 0 ]; then
	for f in "$src"/*.c "$src"/*.cpp; do
		case $f in *.lib.c | *.lib.cpp) continue ;; esac
		programs+=("$(basename "${f%.*}")")
	done
fi

# Builds $prog's variant $name as $bin, after its library if it has one.  A program may name
# flags of its own (compiler options, libraries) on a line "// flags: ..." at its top, and ask
# for its library to be linked in (a DT_NEEDED one) rather than dlopened with "// link: lib".
build_variant() {
	local own lib_own lib_src lib_cc link=()
	own=$(sed -n '1,5s|^// flags: ||p' "$file")
	if [ -f "$src/$prog.lib.c" ]; then
		lib_src=$src/$prog.lib.c lib_cc=${CC:-gcc}
	elif [ -f "$src/$prog.lib.cpp" ]; then
		lib_src=$src/$prog.lib.cpp lib_cc=${CXX:-g++}
	fi
	if [ -n "${lib_src:-}" ]; then
		lib_own=$(sed -n '1,5s|^// flags: ||p' "$lib_src")
		# shellcheck disable=SC2086
		$lib_cc -g -D_GNU_SOURCE $flags -fPIC -shared -I"$src" "$lib_src" $lib_own \
			-o "$(dirname "$bin")/lib$(basename "$prog")-$name.so" || return
		if sed -n '1,5p' "$file" | grep -qx '// link: lib'; then
			# shellcheck disable=SC2016,SC2054 # $ORIGIN is for the dynamic linker; the commas belong to -Wl
			link=(-L"$(dirname "$bin")" -l"$(basename "$prog")-$name" -Wl,-rpath,'$ORIGIN')
		fi
	fi
	# shellcheck disable=SC2086
	$cc -g -D_GNU_SOURCE $flags -I"$src" "$file" $own "${link[@]}" -o "$bin" -ldl -lpthread
}

passed=0
failed=0
for prog in "${programs[@]}"; do
	if [ -f "$src/$prog.cpp" ]; then file=$src/$prog.cpp; cc=${CXX:-g++}; else file=$src/$prog.c; cc=${CC:-gcc}; fi
	for v in "${variants[@]}"; do
		name=${v%%:*}
		flags=${v#*:}
		bin=$out/$prog-$name
		mkdir -p "$(dirname "$bin")" # pending/NAME
		if ! build_variant 2>"$bin.build.log"; then
			echo "FAIL $prog-$name: does not build (see $bin.build.log)"
			failed=$((failed + 1))
			continue
		fi
		"$bin" >"$bin.native" 2>&1
		native_status=$?
		# The runtime's view: "outside" natively must be "partial" under the runtime.
		sed 's/: outside$/: partial/' "$bin.native" | sort >"$bin.native.sorted"
		modes=(dacce epochs)
		[ "$name" = O2 ] && modes+=(heapcheck)
		case $name in O2 | O3 | O2-nopie) modes+=(relocate) ;; esac
		for mode in "${modes[@]}"; do
			# One retry, reported (with the first lines that differ), so that a rare
			# failure shows in the log; two failures in a row are a failure.
			for attempt in 1 2; do
				# -k: a process hung with every signal blocked (threads waiting for the
				# runtime's lock) never sees timeout's SIGTERM.
				if [ $mode = epochs ]; then
					timeout -k 10 300 env DACCE_LOG= DACCE_EPOCH_STRESS=1 DACCE_EPOCH_INTERVAL_MS=1 LD_PRELOAD="$lib" "$bin" >"$bin.$mode" 2>&1
				elif [ $mode = relocate ]; then
					timeout -k 10 300 env DACCE_LOG= DACCE_RELOCATE=1 DACCE_EPOCH_STRESS=1 DACCE_EPOCH_INTERVAL_MS=1 LD_PRELOAD="$lib" "$bin" >"$bin.$mode" 2>&1
				elif [ $mode = heapcheck ]; then
					timeout -k 10 300 env DACCE_LOG= DACCE_HEAP_CHECK=1 DACCE_EPOCH_STRESS=1 DACCE_EPOCH_INTERVAL_MS=1 LD_PRELOAD="$lib" "$bin" >"$bin.$mode" 2>&1
				else
					timeout -k 10 300 env DACCE_LOG= LD_PRELOAD="$lib" "$bin" >"$bin.$mode" 2>&1
				fi
				status=$?
				sort "$bin.$mode" >"$bin.$mode.sorted"
				if [ $native_status -eq $status ] && diff -u "$bin.native.sorted" "$bin.$mode.sorted" >"$bin.$mode.diff"; then
					break
				fi
				[ $attempt -eq 1 ] && echo "RETRY $prog-$name ($mode): status $status, native only: $(grep -E '^-[^-]' "$bin.$mode.diff" | head -n 4 | tr '\n' ' ')under dacce only: $(grep -E '^[+][^+]' "$bin.$mode.diff" | head -n 4 | tr '\n' ' ')"
			done
			if [ $native_status -ne $status ]; then
				echo "FAIL $prog-$name ($mode): exit status $status under dacce, $native_status natively"
				failed=$((failed + 1))
			elif ! diff -u "$bin.native.sorted" "$bin.$mode.sorted" >"$bin.$mode.diff"; then
				echo "FAIL $prog-$name ($mode): contexts differ (see $bin.$mode.diff)"
				head -n 20 "$bin.$mode.diff"
				failed=$((failed + 1))
			else
				passed=$((passed + 1))
			fi
		done
	done
done
echo "programs: $passed passed, $failed failed"
[ $failed -eq 0 ]
