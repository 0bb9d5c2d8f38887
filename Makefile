# SPDX-License-Identifier: MIT
# DACCE top-level build.  Out of tree into $(BUILD); `make V=1` shows commands;
# `make SAN=1 check` builds everything with ASan+UBSan into build-san/.

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else
BUILD ?= build
SAN_FLAGS :=
endif

CC ?= gcc
CLANG ?= clang
OPT ?= -O2
CFLAGS ?= $(OPT) -g
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS += -Idecoder -Iinclude -Iruntime -Itests/support -D_GNU_SOURCE
ALL_CFLAGS = -std=gnu11 $(WARNINGS) $(CFLAGS) $(SAN_FLAGS) -MMD -MP
LDFLAGS += $(SAN_FLAGS)

CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -pthread)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)

# ---------------------------------------------------------------- core library
CORE_SRCS := $(wildcard decoder/*.c)
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
CORE_PIC_OBJS := $(CORE_SRCS:%.c=$(BUILD)/pic/%.o)
CORE_LIB := $(BUILD)/libdacce-core.a
CORE_PIC_LIB := $(BUILD)/libdacce-core-pic.a
CORE_LDLIBS := -lz

# ---------------------------------------------------------------- runtime
# libdacce.so: the preloaded runtime.  Its objects are PIC; the Check suites
# for runtime modules (tests/check_rt_*.c) link the same objects statically.
RT_SRCS := $(wildcard runtime/*.c)
RT_ASM := $(wildcard runtime/*.S)
RT_OBJS := $(RT_SRCS:%.c=$(BUILD)/pic/%.o) $(RT_ASM:%.S=$(BUILD)/pic/%.o)
RT_LIB := $(BUILD)/libdacce.so
# start.o interposes process start-up, dl_callers.o the loader's functions:
# never linked into a test program.
RT_TEST_OBJS := $(filter-out %/runtime/start.o %/runtime/dl_callers.o %/runtime/dl_callers_stubs.o,$(RT_OBJS))
RT_LDLIBS := -lZydis -ldw -lelf -lpthread -ldl

$(BUILD)/pic/%.o: %.S
	$(call msg,AS,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -fPIC -MMD -MP -c $< -o $@

$(RT_LIB): $(RT_OBJS) $(CORE_PIC_LIB) runtime/libdacce.map
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,--version-script=runtime/libdacce.map -Wl,-z,now \
		$(RT_OBJS) $(CORE_PIC_LIB) -o $@ $(RT_LDLIBS) $(CORE_LDLIBS)

# ---------------------------------------------------------------- controller and CLI
# `dacce` (user/): the controller, capture store and reports, with the BPF
# programs of bpf/ built into it as libbpf skeletons.  user/main.c holds only
# the command table, so the Check suites (tests/check_user_*.c) link the rest.
USER_SRCS := $(filter-out user/main.c,$(wildcard user/*.c))
PROTO_SRCS := $(wildcard user/*.proto)
PROTO_GEN := $(PROTO_SRCS:user/%.proto=$(BUILD)/gen/%.pb-c.c)
USER_OBJS := $(USER_SRCS:%.c=$(BUILD)/obj/%.o) $(PROTO_GEN:%.c=%.o)
DACCE_BIN := $(BUILD)/dacce
USER_LDLIBS := -lbpf -lelf -ldw -lsqlite3 -lpfm -lprotobuf-c -lz -lstdc++ -lpthread
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/gen/%.skel.h)
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
CPPFLAGS += -Iuser -Ibpf -I$(BUILD)/gen

$(BUILD)/gen/vmlinux.h:
	$(call msg,BTF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)bpftool btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(BUILD)/gen/vmlinux.h
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(BUILD)/gen -Ibpf -Iinclude \
		-idirafter /usr/include/$(shell $(CC) -dumpmachine) \
		-Wall -Werror -MMD -MP -c $< -o $@

$(BUILD)/gen/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)bpftool gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: user/%.proto
	$(call msg,PROTOC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)protoc-c --proto_path=user --c_out=$(BUILD)/gen $<

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c
	$(call msg,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) -std=gnu11 $(CFLAGS) $(SAN_FLAGS) -c $< -o $@

# Generated headers come first: user objects include them.
$(USER_OBJS) $(BUILD)/obj/user/main.o: | $(BPF_SKELS) $(PROTO_GEN)

REPORT_SAMPLE := $(BUILD)/tests/report_sample
$(REPORT_SAMPLE): $(BUILD)/obj/tests/report_sample.o $(USER_OBJS) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(USER_LDLIBS) $(CORE_LDLIBS)

# Tests of user/ include the generated headers too.
$(patsubst tests/%.c,$(BUILD)/obj/tests/%.o,$(wildcard tests/check_user_*.c)) \
$(BUILD)/obj/tests/report_sample.o: | $(BPF_SKELS) $(PROTO_GEN)

$(DACCE_BIN): $(BUILD)/obj/user/main.o $(USER_OBJS) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(USER_LDLIBS) $(CORE_LDLIBS)
	$(Q)ln -sf dacce $(BUILD)/dacce-launch

# ---------------------------------------------------------------- tests
CHECK_SRCS := $(wildcard tests/check_*.c)
CHECK_BINS := $(CHECK_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_SUPPORT_SRCS := $(wildcard tests/support/*.c)
TEST_SUPPORT_OBJS := $(TEST_SUPPORT_SRCS:%.c=$(BUILD)/obj/%.o)
SIMULATE := $(BUILD)/tests/simulate
BENCH_CORE := $(BUILD)/tests/bench_core
FUZZ_DICT := $(BUILD)/fuzz/fuzz_dict

# Simulator settings for `make check`; override SIM_ARGS to explore.
SIM_ARGS ?= --programs 1500 --seed 1
FUZZ_SECONDS ?= 60

.PHONY: all core demo bench check check-programs check-real check-validate check-e2e check-perfmap check-gdb check-cpython check-pprof vm-check e2e-programs unit \
	simulate bench-core fuzz deps clean help
.SECONDARY:
.DEFAULT_GOAL := all

all: core $(if $(RT_SRCS),$(RT_LIB)) $(if $(wildcard user/main.c),$(DACCE_BIN) $(REPORT_SAMPLE)) $(CHECK_BINS) $(SIMULATE) $(BENCH_CORE)

core: $(CORE_LIB) $(CORE_PIC_LIB)

$(BUILD)/obj/%.o: %.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

# Runtime objects allocate from the runtime's own heap (runtime/private_alloc.h), except
# those that exchange malloc'd memory with other libraries (libdw, realpath).
GLIBC_HEAP_SRCS := runtime/funcs.c runtime/funcs_store.c runtime/modules.c runtime/traits.c \
	runtime/private_alloc.c
# A throw out of a signal handler runs the wrapper's cleanup (runtime/signals.c).
$(BUILD)/pic/runtime/signals.o: ALL_CFLAGS += -fexceptions
# pthread_exit and std::system_error unwind through std::thread's wrappers (runtime/std_thread.c).
$(BUILD)/pic/runtime/std_thread.o: ALL_CFLAGS += -fexceptions
$(BUILD)/pic/%.o: %.c Makefile
	$(call msg,CC-PIC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -fPIC \
		$(if $(filter $(GLIBC_HEAP_SRCS),$<),,-include runtime/private_alloc.h) -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(CORE_PIC_LIB): $(CORE_PIC_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/check_rt_%: $(BUILD)/obj/tests/check_rt_%.o $(TEST_SUPPORT_OBJS) $(RT_TEST_OBJS) $(CORE_PIC_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(RT_LDLIBS) $(CORE_LDLIBS) $(CHECK_LIBS)

$(BUILD)/tests/check_user_%: $(BUILD)/obj/tests/check_user_%.o $(TEST_SUPPORT_OBJS) $(USER_OBJS) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(USER_LDLIBS) $(CORE_LDLIBS) $(CHECK_LIBS)

$(BUILD)/tests/check_%: $(BUILD)/obj/tests/check_%.o $(TEST_SUPPORT_OBJS) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(CORE_LDLIBS) $(CHECK_LIBS)

$(SIMULATE): $(BUILD)/obj/tests/simulate.o $(TEST_SUPPORT_OBJS) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(CORE_LDLIBS)

$(BENCH_CORE): $(BUILD)/obj/tests/bench_core.o $(TEST_SUPPORT_OBJS) $(CORE_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(CORE_LDLIBS)

# ---------------------------------------------------------------- running
# The integration programs preload libdacce.so into ordinary programs: not
# possible for a sanitizer build (its runtime must come first in the process).
ifeq ($(SAN),1)
CHECK_PROGRAMS_LIB := -
else
CHECK_PROGRAMS_LIB := $(abspath $(RT_LIB))
endif

check: $(CHECK_BINS) $(SIMULATE) $(RT_LIB) $(DACCE_BIN) $(REPORT_SAMPLE) $(if $(filter 1,$(SAN)),,e2e-programs)
	$(Q)tests/run-checks.sh $(SIMULATE) "$(SIM_ARGS)" $(BUILD) $(CHECK_PROGRAMS_LIB) $(CHECK_BINS)

# `dacce launch` end to end through the real BPF path (root), and pprof output read by go.
E2E_DIR := $(BUILD)/e2e
E2E_PROGRAMS := $(E2E_DIR)/workload $(E2E_DIR)/workload-O0 $(E2E_DIR)/static $(E2E_DIR)/shapes
$(E2E_DIR)/workload: tests/e2e/workload.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -pthread $< -o $@
$(E2E_DIR)/workload-O0: tests/e2e/workload.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O0 -g -fno-pie -no-pie -fno-omit-frame-pointer -pthread $< -o $@
$(E2E_DIR)/shapes: tests/e2e/shapes.cpp
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -O2 -g -fno-exceptions $< -o $@
$(E2E_DIR)/static: tests/e2e/workload.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -static -pthread $< -o $@

e2e-programs: $(E2E_PROGRAMS)

check-e2e: $(DACCE_BIN) $(RT_LIB) $(E2E_PROGRAMS)
	$(Q)tests/e2e.sh $(DACCE_BIN) $(RT_LIB) $(E2E_DIR)

# CPython's own tests (a subset) under the runtime: minutes, so not part of `make check`.
check-cpython: $(RT_LIB)
	$(Q)tests/run-cpython.sh $(abspath $(RT_LIB))

check-perfmap: $(RT_LIB) $(E2E_PROGRAMS)
	$(Q)tests/perfmap.sh $(RT_LIB) $(E2E_DIR)/workload-O0

check-gdb: $(RT_LIB)
	$(Q)tests/gdb.sh $(RT_LIB)

check-pprof: $(REPORT_SAMPLE)
	$(Q)tests/check-pprof.sh $(REPORT_SAMPLE)

# The end-to-end test again, inside Debian's stock 6.1 kernel under QEMU (vm-tests/README.md).
vm-check: all $(E2E_PROGRAMS)
	$(Q)vm-tests/selftest.sh $(BUILD)
	$(Q)vm-tests/run.sh --build-dir $(abspath $(BUILD)) --quiet-boot --timeout 1200 --memory 2048 --bin /usr/bin/python3 \
		--bin /usr/lib/python3.11 --bin /usr/bin/perl --bin /usr/bin/zstd --bin /usr/bin/sqlite3 \
		--bin /usr/bin/nm --bin /usr/bin/cmp --bin /usr/bin/pgrep -- \
		env E2E_NO_GO=1 E2E_SLOW=1 tests/e2e.sh $(abspath $(DACCE_BIN)) $(abspath $(RT_LIB)) $(abspath $(E2E_DIR))

# Only the runtime's integration programs, or only the real programs.
check-programs: $(RT_LIB)
	$(Q)tests/run-programs.sh $(BUILD) $(abspath $(RT_LIB))

check-real: $(RT_LIB) $(SIMULATE)
	$(Q)tests/run-real.sh $(BUILD) $(abspath $(RT_LIB))

# The integration programs (as check-programs built them) under dacce launch --validate.
check-validate: $(RT_LIB) $(DACCE_BIN)
	$(Q)tests/validate-programs.sh $(abspath $(DACCE_BIN)) $(BUILD)

# The main job: programs run under the runtime and report their exact contexts.
demo: $(RT_LIB) $(DACCE_BIN)
	$(Q)tests/demo.sh $(BUILD) $(abspath $(RT_LIB))

unit: $(CHECK_BINS)
	$(Q)set -e; for t in $(CHECK_BINS); do echo "== $$t"; $$t; done

# The simulator must find no mismatch; with --mutate it must find some.
simulate: $(SIMULATE)
	$(Q)$(SIMULATE) $(SIM_ARGS)
	$(Q)$(SIMULATE) --programs 50 --seed 7 --mutate --expect-mismatch

bench-core: $(BENCH_CORE)
	$(Q)$(BENCH_CORE)

# Real workloads natively, under the runtime, under dacce launch and under perf record, in one
# run (prints ratios, precision and plots, never fails on them; docs/benchmarks.md).
bench: $(RT_LIB) $(DACCE_BIN) bench-core
	$(Q)tests/bench-real.sh $(BUILD) $(abspath $(RT_LIB))
	$(Q)tests/bench-inline.sh $(BUILD) $(abspath $(RT_LIB))
	$(Q)tests/bench-launch.sh $(BUILD)

# libFuzzer needs clang; the corpus lives in the build tree.
$(FUZZ_DICT): tests/fuzz_dict.c $(CORE_SRCS)
	$(call msg,FUZZ-LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS) -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
		$^ -o $@ $(CORE_LDLIBS)

fuzz: $(FUZZ_DICT)
	$(Q)mkdir -p $(BUILD)/fuzz/corpus
	$(Q)$(FUZZ_DICT) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		$(BUILD)/fuzz/corpus tests/fuzz-seeds

# ---------------------------------------------------------------- set-up
DEBIAN_PACKAGES := build-essential g++ pkg-config check zlib1g-dev clang llvm \
	libzydis-dev libzycore-dev libelf-dev libdw-dev libunwind-dev \
	libbpf-dev bpftool systemtap-sdt-dev libsqlite3-dev libpfm4-dev \
	libprotobuf-c-dev protobuf-c-compiler golang-go \
	qemu-system-x86 busybox-static cpio \
	python3 perl lua5.4 nodejs bzip2 gzip xz-utils zstd sqlite3 tar time git \
	linux-perf gnuplot-nox ninja-build gdb cppcheck libpython3.11-testsuite \
	libjemalloc2 libtcmalloc-minimal4

deps:
	$(Q)if command -v apt-get >/dev/null; then \
		missing=; for p in $(DEBIAN_PACKAGES); do \
			dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
		done; \
		if [ -n "$$missing" ]; then \
			echo "installing:$$missing"; \
			SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
			$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
		fi; \
	else echo "make deps: apt-get not found; install: $(DEBIAN_PACKAGES)" >&2; exit 1; fi

clean:
	rm -rf build build-san

help:
	@echo "make [V=1] [SAN=1] all|check|unit|simulate|bench-core|fuzz|deps|clean"

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
