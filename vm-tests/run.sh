#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run a command as root inside QEMU (-accel tcg) on Debian's stock 6.1 kernel, with a busybox
# initramfs that carries the project tree, the build directory (both at their host paths) and
# any host programs asked for with their shared libraries.  The guest's console is streamed to
# stdout; the exit status is the guest command's, or 1 on a timeout, a guest that gave no
# result, or something missing on the host.  See vm-tests/README.md.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: vm-tests/run.sh --build-dir DIR [options] -- GUEST_COMMAND [ARG...]
       vm-tests/run.sh --build-dir DIR [options] --script FILE
The guest command runs as root in the project root (same path as on the host), under bash if
it is a script file given with --script (or whatever its #! line says).
options:
  --build-dir DIR        the build directory: copied in at its host path; the kernel is cached
                         in DIR/vm/ and the last console log is kept as DIR/vm/console.log
  --kernel-version V     Debian kernel ABI, e.g. 6.1.0-56, or "latest": the newest
                         linux-image-6.1.0-N-amd64 apt-cache knows (default: the newest one
                         cached in DIR/vm/kernel/, else latest)
  --timeout SEC          limit for boot, command and power-off together (default 600)
  --bin PATH             also copy a host file or directory at its path, with the shared
                         libraries of its ELF files (repeatable; /bin/bash is always copied)
  --memory MB            guest memory (default 1024)
  --smp N                guest CPUs (default 2)
  --quiet-boot           do not stream the console, print it only on failure
  --keep-root DIR        also copy the initramfs tree to DIR, to see what the guest gets
EOF
}

die() { echo "vm: error: $*" >&2; exit 1; }
note() { echo "vm: $*" >&2; }

# The project root: the guest command runs here; copied in without .git and build trees.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

BUILD_DIR=
KVER=
TIMEOUT=600
MEMORY=1024
SMP=2
SCRIPT=
KEEP_ROOT=
STREAM=1
EXTRA=(/bin/bash)
CMD=()

while (($#)); do
	case $1 in
	--build-dir) BUILD_DIR=${2:?--build-dir needs a directory}; shift 2 ;;
	--kernel-version) KVER=${2:?--kernel-version needs a version}; shift 2 ;;
	--timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
	--bin) EXTRA+=("${2:?--bin needs a path}"); shift 2 ;;
	--memory) MEMORY=${2:?--memory needs megabytes}; shift 2 ;;
	--smp) SMP=${2:?--smp needs a count}; shift 2 ;;
	--script) SCRIPT=${2:?--script needs a file}; shift 2 ;;
	--quiet-boot) STREAM=0; shift ;;
	--keep-root) KEEP_ROOT=${2:?--keep-root needs a directory}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; CMD=("$@"); break ;;
	*) usage >&2; die "unknown argument '$1'" ;;
	esac
done

[[ -n $BUILD_DIR ]] || { usage >&2; die "--build-dir is required"; }
[[ -d $BUILD_DIR ]] || die "build directory '$BUILD_DIR' does not exist (run make first)"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
if [[ -n $SCRIPT ]]; then
	((${#CMD[@]} == 0)) || die "give either --script FILE or -- COMMAND, not both"
	[[ -f $SCRIPT ]] || die "guest script '$SCRIPT' not found"
else
	((${#CMD[@]} > 0)) || { usage >&2; die "no guest command given"; }
fi
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -gt 0 ]] || die "--timeout wants seconds, not '$TIMEOUT'"
for p in "${EXTRA[@]}"; do
	[[ -e $p ]] || die "--bin '$p' not found on the host"
done

need() { # need COMMAND PACKAGE
	command -v "$1" >/dev/null || die "'$1' not found: install the Debian package $2"
}
need qemu-system-x86_64 qemu-system-x86
need cpio cpio
need gzip gzip
need ldd libc-bin
BUSYBOX=/bin/busybox
[[ -x $BUSYBOX ]] || die "$BUSYBOX not found: install the Debian package busybox-static"
if LC_ALL=C ldd "$BUSYBOX" >/dev/null 2>&1; then
	die "$BUSYBOX is dynamically linked: install the Debian package busybox-static"
fi

VM_DIR=$BUILD_DIR/vm
mkdir -p "$VM_DIR"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dacce-vm.XXXXXX")
QEMU_PID=
cleanup() {
	if [[ -n $QEMU_PID ]]; then kill "$QEMU_PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- kernel
# Cached as $VM_DIR/kernel/6.1.0-N-amd64/{vmlinuz,config,package}; only apt-get touches the
# network, and only when the wanted version is not cached yet.

newest_cached() {
	local d
	d=$(find "$VM_DIR/kernel" -mindepth 1 -maxdepth 1 -name '6.1.0-*-amd64' 2>/dev/null |
		sort -V | tail -n 1) || true
	[[ -n $d && -f $d/vmlinuz ]] && basename "$d"
	return 0
}

newest_known() {
	command -v apt-cache >/dev/null || return 0
	local name policy
	# Newest first; a name apt-cache lists may have no installable version.
	while read -r name; do
		policy=$(LC_ALL=C apt-cache policy "$name" 2>/dev/null) || continue
		if [[ $policy == *"Candidate: "[0-9]* ]]; then
			echo "${name#linux-image-}"
			return 0
		fi
	done < <(apt-cache pkgnames linux-image-6.1.0- 2>/dev/null |
		grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -rV)
}

fetch_kernel() { # fetch_kernel 6.1.0-N-amd64
	local abi=$1 dir=$VM_DIR/kernel/$1 dl=$TMP/download pkg deb
	need apt-get apt
	need dpkg-deb dpkg
	mkdir -p "$dl"
	chmod 755 "$dl" # apt-get download drops to user _apt when it can
	# The stock (signed) image first; the unsigned one holds the same kernel.
	for pkg in "linux-image-$abi" "linux-image-$abi-unsigned"; do
		note "downloading $pkg"
		if (cd "$dl" && apt-get download -q "$pkg") >"$TMP/apt.log" 2>&1; then
			deb=$(ls "$dl"/*.deb)
			rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
			dpkg-deb --fsys-tarfile "$deb" |
				tar -x -C "$dir.tmp" --wildcards './boot/vmlinuz-*' './boot/config-*'
			mv "$dir.tmp"/boot/vmlinuz-* "$dir.tmp/vmlinuz"
			mv "$dir.tmp"/boot/config-* "$dir.tmp/config"
			rm -rf "$dir.tmp/boot"
			basename "$deb" .deb >"$dir.tmp/package"
			rm -rf "$dir" && mv "$dir.tmp" "$dir"
			rm -f "$deb"
			return 0
		fi
	done
	die "apt-get download linux-image-${abi}[-unsigned] failed (stale apt lists? run" \
		"apt-get update): $(grep -E '^E:' "$TMP/apt.log" | tail -n 1)"
}

if [[ $KVER == latest ]]; then
	ABI=$(newest_known)
	[[ -n $ABI ]] || die "apt-cache knows no linux-image-6.1.0-N-amd64 (run apt-get update)"
elif [[ -n $KVER ]]; then
	KVER=${KVER%-amd64}
	[[ $KVER =~ ^6\.1\.0-[0-9]+$ ]] || die "--kernel-version wants 6.1.0-N, not '$KVER'"
	ABI=$KVER-amd64
else
	ABI=$(newest_cached)
	[[ -n $ABI ]] || ABI=$(newest_known)
	[[ -n $ABI ]] ||
		die "no cached kernel, and apt-cache knows no linux-image-6.1.0-N-amd64 (run apt-get update)"
fi
[[ -f $VM_DIR/kernel/$ABI/vmlinuz ]] || fetch_kernel "$ABI"
KERNEL=$VM_DIR/kernel/$ABI/vmlinuz

# ---------------------------------------------------------------- initramfs
STAGE=$TMP/root
LIST=$TMP/paths
mkdir -p "$STAGE"/{dev,proc,sys,tmp,run,root,vm,usr/bin,usr/sbin,usr/lib,usr/lib64}
# Keep the host's merged-/usr layout so library paths from ldd resolve the same way.
for d in bin sbin lib lib32 lib64 libx32; do
	if [[ -L /$d ]]; then ln -s "$(readlink "/$d")" "$STAGE/$d"; else mkdir -p "$STAGE/$d"; fi
done

# Host paths to copy, one per line; a symlink brings its target along.
add_path() {
	local p=$1
	while [[ -L $p ]]; do
		echo "$p" >>"$LIST"
		p=$(readlink -f "$p")
	done
	echo "$p" >>"$LIST"
}
: >"$LIST"
# The project tree without .git and build trees (the build directory is added below).
find "$ROOT" \( -path "$ROOT/.git" -o -path "$ROOT/build*" -o -path "$BUILD_DIR" \) \
	-prune -o -print >>"$LIST"
# The build directory without the VM cache, objects and bulky intermediate trees.
find "$BUILD_DIR" \( -path "$BUILD_DIR/vm" -o -path "$BUILD_DIR/obj" \
	-o -path "$BUILD_DIR/pic" -o -path "$BUILD_DIR/gen" -o -path "$BUILD_DIR/bench" \
	-o -path "$BUILD_DIR/fuzz" -o -name '*.o' -o -name '*.d' -o -name '*.a' \) \
	-prune -o -print >>"$LIST"
for p in "${EXTRA[@]}"; do
	p=$(cd "$(dirname "$p")" && pwd)/$(basename "$p")
	add_path "$p"
	if [[ -d $p ]]; then find "$(readlink -f "$p")" >>"$LIST"; fi
done

# Shared libraries and the dynamic loader of every ELF file copied: one ldd for them all.
is_elf() {
	local magic=
	[[ -f $1 && ! -L $1 && -r $1 ]] || return 1
	IFS= read -r -n 4 -d '' magic <"$1" || true
	[[ $magic == $'\x7fELF' ]]
}
sort -u "$LIST" -o "$LIST"
while read -r f; do
	if is_elf "$f"; then printf '%s\0' "$f"; fi
done <"$LIST" >"$TMP/elf"
LC_ALL=C xargs -0 -r ldd <"$TMP/elf" >"$TMP/ldd" 2>/dev/null || true
while IFS= read -r line; do
	[[ $line == $'\t'* ]] || continue # "file:" headers
	line=${line#$'\t'}
	case $line in
	*"=> not found"*) note "warning: ${line%% *} not found on the host (needed by a copied file)" ;;
	*"=> /"*) lib=${line#*=> }; add_path "${lib%% (*}" ;;
	/*) add_path "${line%% (*}" ;;
	esac
done <"$TMP/ldd"
sort -u "$LIST" -o "$LIST"
sed 's|^/||' "$LIST" | tar -C / --no-recursion -cf - -T - | tar -C "$STAGE" -xf -

# busybox for everything the host did not provide: /init links its applets where nothing is.
cp "$BUSYBOX" "$STAGE/usr/bin/busybox"
[[ -e $STAGE/bin/sh ]] || ln -s busybox "$STAGE/usr/bin/sh"

# The guest command, and /init to run it.
if [[ -n $SCRIPT ]]; then
	cp "$SCRIPT" "$STAGE/vm/script"
	chmod 755 "$STAGE/vm/script"
	if [[ $(head -c 2 "$SCRIPT") == '#!' ]]; then
		echo 'exec /vm/script' >"$STAGE/vm/cmd"
	else
		echo 'exec /bin/bash /vm/script' >"$STAGE/vm/cmd"
	fi
else
	quoted=
	for a in "${CMD[@]}"; do quoted+=" '${a//\'/\'\\\'\'}'"; done
	echo "exec$quoted" >"$STAGE/vm/cmd"
fi

cat >"$STAGE/init" <<EOF
#!/usr/bin/busybox sh
# Generated by vm-tests/run.sh: mount, run /vm/cmd in the project root, report, power off.
/usr/bin/busybox --install -s
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# /tmp stays the initramfs's own (writable already): a tree copied from the host's /tmp lives there.
mkdir -p /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ln -sf /proc/self/fd /dev/fd
hostname dacce-vm
ulimit -l unlimited
echo "VM-START: \$(uname -r)"
cd '$ROOT' && /bin/sh /vm/cmd
echo "VM-RESULT: \$?"
poweroff -f
echo o >/proc/sysrq-trigger
EOF
chmod 755 "$STAGE/init"

if [[ -n $KEEP_ROOT ]]; then rm -rf "$KEEP_ROOT" && cp -a "$STAGE" "$KEEP_ROOT"; fi
INITRD=$TMP/initrd.gz
(cd "$STAGE" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$INITRD"
note "kernel $(cat "$VM_DIR/kernel/$ABI/package" 2>/dev/null || echo "$ABI")," \
	"initramfs $(($(stat -c %s "$INITRD") / 1024)) KiB"

# ---------------------------------------------------------------- boot
# The serial console (qemu's stdout) goes through a FIFO into the log, and to stdout too.
LOG=$VM_DIR/console.log
mkfifo "$TMP/console"
if ((STREAM)); then
	sed -u 's/\r$//' <"$TMP/console" | tee "$LOG" &
else
	sed -u 's/\r$//' <"$TMP/console" >"$LOG" &
fi
READER_PID=$!
start_ns=$(date +%s%N)
qemu-system-x86_64 -accel tcg -cpu max -smp "$SMP" -m "$MEMORY" -no-reboot \
	-display none -vga none -nic none -monitor none -serial stdio \
	-kernel "$KERNEL" -initrd "$INITRD" -append 'console=ttyS0 panic=-1 quiet' \
	</dev/null >"$TMP/console" 2>"$TMP/qemu.err" &
QEMU_PID=$!
timed_out=0
deadline=$((SECONDS + TIMEOUT))
while kill -0 "$QEMU_PID" 2>/dev/null; do
	if ((SECONDS >= deadline)); then
		timed_out=1
		kill "$QEMU_PID" 2>/dev/null || true
		sleep 2
		kill -9 "$QEMU_PID" 2>/dev/null || true
		break
	fi
	sleep 0.2
done
rc=0
wait "$QEMU_PID" || rc=$?
QEMU_PID=
wait "$READER_PID" || true
ms=$((($(date +%s%N) - start_ns) / 1000000))
secs=$((ms / 1000)).$((ms % 1000 / 100))
# The console's last line (the kernel's "reboot: Power down") may lack its newline.
if ((STREAM)) && [[ -n $(tail -c 1 "$LOG") ]]; then echo; fi
if [[ -s $TMP/qemu.err ]]; then sed 's/^/vm: qemu: /' "$TMP/qemu.err" >&2; fi

fail() {
	((STREAM)) || cat "$LOG"
	echo "vm: fail: $*; console log: $LOG" >&2
	exit 1
}
result=$(grep -ao 'VM-RESULT: [0-9]*' "$LOG" | tail -n 1 | cut -d' ' -f2) || true
if ((timed_out)); then
	fail "timed out after $TIMEOUT s: the guest hung"
elif [[ -z $result ]]; then
	((rc == 0)) || fail "qemu exited $rc"
	fail "the guest gave no result after $secs s (kernel panic, or init died)"
elif ((result != 0)); then
	fail "guest command exited $result after $secs s"
fi
note "pass: guest command exited 0 (boot, run and power-off took $secs s)"
