#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make vm-check` until the end-to-end test is plugged in: builds the BPF feature probe
# (probe.bpf.c + probe.c) into BUILD/vm/selftest/ and runs guest-selftest.sh in the VM.
# usage: vm-tests/selftest.sh BUILD_DIR [run.sh options...]
set -euo pipefail

die() { echo "vm-selftest: error: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || die "usage: vm-tests/selftest.sh BUILD_DIR [run.sh options...]"
BUILD=$1
shift
[[ -d $BUILD ]] || die "build directory '$BUILD' does not exist (run make first)"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$(cd "$BUILD" && pwd)/vm/selftest
VMLINUX_BTF=${VMLINUX_BTF:-/sys/kernel/btf/vmlinux}
CC=${CC:-gcc}
CLANG=${CLANG:-clang}

need() { # need COMMAND PACKAGE
	command -v "$1" >/dev/null || die "'$1' not found: install the Debian package $2"
}
need "$CLANG" clang
need "$CC" gcc
need bpftool bpftool
need sqlite3 sqlite3
[[ -f /usr/include/bpf/libbpf.h ]] || die "<bpf/libbpf.h> not found: install the Debian package libbpf-dev"
[[ -f /usr/include/x86_64-linux-gnu/sys/sdt.h || -f /usr/include/sys/sdt.h ]] ||
	die "<sys/sdt.h> not found: install the Debian package systemtap-sdt-dev"
[[ -r $VMLINUX_BTF ]] || die "$VMLINUX_BTF not readable (set VMLINUX_BTF to a kernel's BTF)"

# Rebuilt when a source is newer than the binary.
mkdir -p "$OUT"
if [[ ! -x $OUT/probe || -n $(find "$HERE"/probe.bpf.c "$HERE"/probe.c "$HERE"/probe.h \
	"$0" -newer "$OUT/probe") ]]; then
	echo "vm-selftest: building $OUT/probe" >&2
	bpftool btf dump file "$VMLINUX_BTF" format c >"$OUT/vmlinux.h"
	"$CLANG" -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$OUT" -I"$HERE" \
		-I/usr/include/x86_64-linux-gnu -Wall -Werror -c "$HERE/probe.bpf.c" -o "$OUT/probe.bpf.o"
	bpftool gen skeleton "$OUT/probe.bpf.o" name probe_bpf >"$OUT/probe.skel.h"
	"$CC" -std=gnu11 -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -Wshadow \
		-Wstrict-prototypes -Wmissing-prototypes -I"$OUT" -I"$HERE" "$HERE/probe.c" \
		-o "$OUT/probe" -lbpf -lelf -lz
fi

exec "$HERE/run.sh" --build-dir "$BUILD" --bin "$OUT/probe" --bin "$(command -v sqlite3)" \
	--bin "$(command -v bpftool)" "$@" -- bash vm-tests/guest-selftest.sh "$OUT/probe"
