/* SPDX-License-Identifier: MIT */
/*
 * Unwinding a sampled user stack, for cross-validation: at a sample the BPF
 * sampler copies the thread's user registers and the top of its user stack
 * (as `perf record --call-graph dwarf` does), and this module turns that copy
 * into the physical call stack (the sampled pc, then return addresses), which
 * the controller compares with the decoded context.
 *
 * x86-64 only.  Each step follows the CFI of the module the pc is in
 * (.eh_frame, else .debug_frame, read from the module file on disk by libdw:
 * dwarf_cfi_addrframe()), evaluating its rules against the copied registers
 * and stack.  Nothing else is guessed: the frame-pointer rule is tried only
 * where CFI is missing and only when the caller asks for it
 * (DACCE_UNWIND_FP_FALLBACK), and every frame says how it was found.  Code
 * without CFI that the caller knows about (the runtime's trampolines) can be
 * given an explicit rule with dacce_unwinder_add_code().
 *
 * Memory is read from the stack copy; addresses in a read-only, file-backed
 * segment of a module are read from its file (a CFI expression may load a
 * constant); anything else cannot be read.  Writable data (.data, the GOT)
 * is never read from the file: it differs at run time.
 *
 * One unwinder per process image: modules (files opened once, their CFI
 * parsed lazily by libdw and kept) are added once and used by every
 * dacce_unwind() of that image.  Not thread-safe: one unwinder per thread.
 */
#ifndef DACCE_USER_UNWIND_H
#define DACCE_USER_UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct dacce_unwinder;

/* x86-64 registers, numbered as DWARF numbers them (the psABI's DWARF register mapping). */
enum dacce_unwind_reg {
	DACCE_REG_RAX = 0,
	DACCE_REG_RDX = 1,
	DACCE_REG_RCX = 2,
	DACCE_REG_RBX = 3,
	DACCE_REG_RSI = 4,
	DACCE_REG_RDI = 5,
	DACCE_REG_RBP = 6,
	DACCE_REG_RSP = 7,
	DACCE_REG_R8 = 8, /* r8..r15 are 8..15 */
	DACCE_REG_R15 = 15,
	DACCE_REG_RIP = 16, /* the return-address column */
	DACCE_UNWIND_NREGS = 17,
};

/* Register values; bit (1u << reg) of known says value[reg] holds one. */
struct dacce_unwind_regs {
	uint64_t value[DACCE_UNWIND_NREGS];
	uint32_t known;
};

/* A sample: the interrupted registers and a copy of the top of the stack. */
struct dacce_unwind_sample {
	struct dacce_unwind_regs regs; /* RIP and RSP must be known; give all you have */
	const void *stack;	       /* the bytes of [stack_start, stack_start + stack_len) */
	size_t stack_len;
	uint64_t stack_start; /* run-time address of stack[0], normally the sampled rsp */
};

/* dacce_unwind() flags. */
enum {
	/*
	 * Where a pc has no CFI (none covers it, or its module file is
	 * unusable), step by the frame-pointer rule: return address at
	 * [rbp + 8], caller's rbp at [rbp], caller's rsp = rbp + 16.  Wrong in
	 * a prologue or epilogue and in code built without frame pointers, so
	 * such frames are marked DACCE_FRAME_BY_FP.  Never for a pc in no module.
	 */
	DACCE_UNWIND_FP_FALLBACK = 1u << 0,
};

/* How a frame was found. */
enum dacce_frame_how {
	DACCE_FRAME_SAMPLED = 0, /* the innermost frame: the sampled registers */
	DACCE_FRAME_BY_CFI,	 /* by the CFI at the next inner frame's pc */
	DACCE_FRAME_BY_FP,	 /* by the frame-pointer fallback */
	DACCE_FRAME_BY_CODE,	 /* by a rule given with dacce_unwinder_add_code() */
};

struct dacce_unwind_frame {
	uint64_t pc; /* the sampled pc, then return addresses */
	uint64_t sp; /* rsp in this frame (in a caller: after the return) */
	uint8_t how; /* enum dacce_frame_how */
	/*
	 * 1: pc is where the frame was executing (the sampled pc, or the pc a
	 * signal interrupted, found through a signal frame); 0: pc is a return
	 * address, and the call is the instruction before it (look up pc - 1).
	 */
	uint8_t exact;
};

/* Why unwinding stopped after the last frame returned. */
enum dacce_unwind_stop {
	DACCE_UNWIND_OUTERMOST = 0,   /* the CFI says the last frame has no caller (_start,
					 a thread's clone), or rbp is 0 under the FP rule */
	DACCE_UNWIND_MAX_FRAMES,      /* the frames array is full and there are more */
	DACCE_UNWIND_STACK_TRUNCATED, /* a read ran past the end of the stack copy */
	DACCE_UNWIND_BAD_READ,	      /* a read of memory the sample does not hold */
	DACCE_UNWIND_NO_MODULE,	      /* the pc is in no module and no code range */
	DACCE_UNWIND_NO_CFI,	      /* no CFI covers the pc in its module */
	DACCE_UNWIND_MODULE_UNUSABLE, /* the pc's module file cannot be used (detail: why) */
	DACCE_UNWIND_GENERATED_CODE,  /* the pc is in code added as DACCE_CODE_STOP */
	DACCE_UNWIND_REG_UNKNOWN,     /* a rule needs a register whose value is unknown */
	DACCE_UNWIND_BAD_CFI,	      /* CFI that cannot be evaluated (corrupt or unsupported) */
	DACCE_UNWIND_BAD_FRAME,	      /* the step gave an impossible caller: return address 0,
					 or a stack pointer that did not move up */
};

struct dacce_unwind_result {
	uint32_t n_frames;
	uint8_t stop; /* enum dacce_unwind_stop */
	/*
	 * The address the stop is about: the pc that could not be stepped
	 * from, or the address that could not be read; 0 for OUTERMOST and
	 * MAX_FRAMES.
	 */
	uint64_t stop_address;
	/*
	 * More about the stop, or NULL: the module file's problem for
	 * MODULE_UNUSABLE ("build-id mismatch"), the missing register's name
	 * for REG_UNKNOWN ("rbp"), libdw's message for NO_CFI ("no matching
	 * address range"), what was wrong for BAD_CFI and BAD_FRAME.  Static
	 * text.
	 */
	const char *detail;
};

/* How to step out of a range of generated code (dacce_unwinder_add_code()). */
enum dacce_code_rule {
	/* Frames there cannot be verified: unwinding stops (DACCE_UNWIND_GENERATED_CODE). */
	DACCE_CODE_STOP = 0,
	/*
	 * The return address is at [rsp + sp_offset]; the caller's rsp is
	 * rsp + sp_offset + 8 and every other register is unchanged (code that
	 * only moved rsp down by sp_offset since it was called).
	 */
	DACCE_CODE_RETURN_AT_SP,
	/*
	 * The frame is the one at like_pc with sp_offset more bytes pushed: it
	 * is unwound by the CFI at like_pc (looked up as is, never minus one)
	 * with rsp + sp_offset as its rsp.  For a trampoline entered by a jump
	 * from a call site: like_pc is the site, sp_offset what the trampoline
	 * has pushed.  A like_pc in no added module stops the step with
	 * DACCE_UNWIND_NO_MODULE at like_pc.
	 */
	DACCE_CODE_LIKE_PC,
};

struct dacce_code_step {
	uint8_t rule;	   /* enum dacce_code_rule */
	int32_t sp_offset; /* RETURN_AT_SP and LIKE_PC, in bytes */
	uint64_t like_pc;  /* LIKE_PC: a run-time address in an added module */
};

/* Returns a new unwinder, or NULL when out of memory. */
struct dacce_unwinder *dacce_unwinder_new(void);

/* Frees the unwinder, its modules and their files; NULL-safe. */
void dacce_unwinder_free(struct dacce_unwinder *u);

/*
 * Adds a module mapped at run-time [start, end) with load bias `bias`
 * (run-time minus link-time address; 0 for a non-PIE executable), whose file
 * is at path.  A module mapped in several pieces may be added once for the
 * whole range or once per piece; its file is opened once.  When build_id is
 * given (build_id_len > 0), the file must carry that GNU build-id.
 *
 * Returns 0 or a negative errno with a one-line reason in *why (static
 * text; why may be NULL, set to NULL on success): -EINVAL "bad arguments";
 * -EEXIST "overlaps a module added before" (nothing is added); -ENOMEM; or
 * an error of the file: -ENOENT "no such file", -EACCES "permission
 * denied", -EISDIR "is a directory", -ENOEXEC "not an ELF file", "not a
 * regular file" or "not an x86-64 executable or shared library", -EBADMSG
 * "corrupt ELF file", -ESTALE "build-id mismatch" or "no build-id in file".
 * After a file error the range is kept all the same: pcs in it then stop
 * with DACCE_UNWIND_MODULE_UNUSABLE (the same reason in detail) rather than
 * pretend to be in no module.
 */
int dacce_unwinder_add_module(struct dacce_unwinder *u, const char *path, const uint8_t *build_id,
			      size_t build_id_len, uint64_t start, uint64_t end, uint64_t bias,
			      const char **why);

/*
 * Adds generated code at run-time [start, start + size) without CFI, and how
 * to step out of a frame whose pc is in it.  Code ranges come before
 * modules (a range may lie inside one).  Returns 0, -EINVAL (size 0, an
 * unknown rule, a range that wraps), -EEXIST (overlaps a code range added
 * before), or -ENOMEM.
 */
int dacce_unwinder_add_code(struct dacce_unwinder *u, uint64_t start, uint64_t size,
			    const struct dacce_code_step *step);

/*
 * Unwinds a sample into frames[0 .. max_frames), innermost first.  flags:
 * DACCE_UNWIND_*.  Returns 0 with *result filled whenever unwinding ran, even
 * when it stopped early (result->stop says why; frames up to
 * result->n_frames are valid and at least the sampled pc is there), or
 * -EINVAL (RIP or RSP unknown, max_frames 0, a NULL pointer, no stack bytes
 * for a stack_len).
 */
int dacce_unwind(struct dacce_unwinder *u, const struct dacce_unwind_sample *sample, unsigned flags,
		 struct dacce_unwind_frame *frames, uint32_t max_frames,
		 struct dacce_unwind_result *result);

/* A short lowercase text for enum dacce_unwind_stop ("stack copy too short"), never NULL. */
const char *dacce_unwind_stop_text(int stop);

#endif
