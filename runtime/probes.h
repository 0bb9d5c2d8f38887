/* SPDX-License-Identifier: MIT */
/*
 * USDT probes (provider "dacce"): how the runtime tells a tracer (bpf/dacce.bpf.c,
 * through `dacce launch`) what it discovers, without a channel of its own.
 * A probe is one nop until a tracer attaches; arguments are plain integers and
 * pointers the tracer reads while the thread is stopped in the probe.
 *
 * The argument lists are ABI with bpf/dacce.bpf.c: change both together.
 * Identities are replayable: modules, nodes and edges are announced in the
 * order the runtime creates them, so a tracer that adds them to its own
 * dacce_graph in that order gets the runtime's indices.
 *
 *   start        (tls_tpoff, tls_layout_version, exe_path)
 *   module       (graph_module or -1, path, bias, start, end, build_id, build_id_len)
 *                -1: a module seen by a scan but holding no node yet (for symbols)
 *   node         (node, graph_module, offset, size)       size 0: a boundary function
 *   fragment     (node, graph_module, offset, size)       code split off node's function
 *                                                         (foo.cold), instrumented as part of it
 *   edge         (edge, site_caller, callee, site_kind, site_module, site_offset, flags)
 *   code_region  (start, size)                            executable code of the runtime's
 *   code_entries (batch, n)                               n struct dacce_code_entry_note at batch
 *                                                         (bpf/dacce_events.h), each: the code of
 *                                                         the call site at site_offset (link-time)
 *                                                         begins at address; site_caller
 *                                                         DACCE_CODE_TAIL_STUB: the tail-call
 *                                                         return stub (runtime/tail.h);
 *                                                         DACCE_CODE_NO_SITE: other code of no
 *                                                         site (setjmp thunks);
 *                                                         DACCE_CODE_STAND_IN: a `ret` byte in
 *                                                         a module (dl_callers.h).  Batched
 *                                                         (runtime/entry_notes.h)
 *   epoch        (epoch, max_id, n_nodes, n_edges, dict, dict_len, pause_ns, driver)
 *                driver: 0 start, 1 the built-in policy, 2 the controller
 *                dict is the dictionary serialised (docs/dictionary-format.md),
 *                only while a tracer holds the semaphore; otherwise 0, 0
 *   thread       (root_edge)                              the calling thread starts its context
 */
#ifndef DACCE_RT_PROBES_H
#define DACCE_RT_PROBES_H

#define _SDT_HAS_SEMAPHORES 1
#define SDT_USE_VARIADIC 1
#include <sys/sdt.h>

/*
 * One semaphore per probe (sys/sdt.h wants them all once it has one): the
 * kernel counts attached uprobes in it.  The epoch probe's tells whether to
 * serialise the dictionary at all.
 */
#define DACCE_PROBE_NAMES(X) \
	X(start) X(module) X(node) X(fragment) X(edge) X(code_region) X(code_entries) X(epoch) X(thread)
#define DACCE_DECLARE_SEMAPHORE(name) extern volatile unsigned short dacce_##name##_semaphore;
DACCE_PROBE_NAMES(DACCE_DECLARE_SEMAPHORE)
#undef DACCE_DECLARE_SEMAPHORE

#define DACCE_PROBE_EPOCH_WANTED() (dacce_epoch_semaphore != 0)
#define DACCE_PROBE_CODE_ENTRIES_WANTED() (dacce_code_entries_semaphore != 0)

#define DACCE_PROBE(name, ...) STAP_PROBEV(dacce, name, ##__VA_ARGS__)

#endif
