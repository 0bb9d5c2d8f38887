# SPDX-License-Identifier: MIT
"""gdb support for programs running under libdacce.so.

Load it with `gdb -x user/dacce-gdb.py ...` (or `source` it).  It

- passes the runtime's own signals on silently: its traps (SIGILL, runtime/trap.h) and
  the stops of its re-encodings (signal 63);
- unwinds through generated code: a frame whose pc is in a call's trampoline or dispatch
  code (its return point among them) goes on in the calling function, at the address the
  call returns to natively, with the same stack (the code was entered by a jump); a frame
  whose pc is the tail stub goes on where the thread's tail record for that frame says.
  So `next` over a call steps over it, as natively (`step` into a call steps over it too:
  gdb sees code without line information first);
- hides those frames from `bt`, which then shows the frames of an uninstrumented run.

It reads the runtime's table of return points (runtime/debug_returns.h) from the stopped
process; it never calls into it.
"""
import bisect
import struct

import gdb
from gdb.unwinder import Unwinder, register_unwinder

LAYOUT = 2
TABLE_SYMBOL = "dacce_debug_returns"
# struct dacce_debug_returns: layout, count, entries, tail_stub, tpoff, n_ranges, cap,
# cap_ranges, ranges
TABLE_FORMAT = "<IIQQqIII4xQ"
# struct dacce_tls: id, cc_top, cc_base, tc_top, tc_base (tls.h)
TLS_FORMAT = "<QQQQQ"
# struct dacce_rt_tail_record: id, cc_top, top_aux, reserved, frame, return_to
RECORD_FORMAT = "<QQIIQQ"
RECORD_SIZE = struct.calcsize(RECORD_FORMAT)


def _read(addr, size):
    return bytes(gdb.selected_inferior().read_memory(addr, size))


class _Table:
    """The runtime's table (None without the runtime), read again when it changed."""

    def __init__(self):
        self.fresh = False  # checked since the last stop
        self.header = None
        self.loaded = None

    def get(self):
        if self.fresh:
            return self.loaded
        self.fresh = True
        header = self._header()
        if header != self.header:
            self.header = header
            self.loaded = self._load(header) if header else None
        return self.loaded

    def forget(self, *_):
        self.fresh = False

    @staticmethod
    def _header():
        try:
            addr = int(gdb.parse_and_eval("(unsigned long)&" + TABLE_SYMBOL))
            fields = struct.unpack(TABLE_FORMAT, _read(addr, struct.calcsize(TABLE_FORMAT)))
        except (gdb.error, gdb.MemoryError):
            return None
        if fields[0] != LAYOUT:
            return None
        return (gdb.selected_inferior().pid,) + fields

    @staticmethod
    def _load(header):
        _, _, count, entries, tail_stub, tpoff, n_ranges, _, _, ranges = header
        try:
            returns = {}
            if count:
                for code, native in struct.iter_unpack("<QQ", _read(entries, 16 * count)):
                    returns[code] = native
            pieces = []
            if n_ranges:
                pieces = sorted(struct.iter_unpack("<QQQ", _read(ranges, 24 * n_ranges)))
        except gdb.MemoryError:
            return None
        return {"returns": returns, "tail_stub": tail_stub, "tpoff": tpoff,
                "starts": [piece[0] for piece in pieces], "pieces": pieces}


TABLE = _Table()


def _tail_return(table, pending_frame, slot):
    """The return address the tail record of the frame whose return slot is slot saved."""
    try:
        fs_base = int(pending_frame.read_register("fs_base"))
    except gdb.error:
        # Not unwound into outer frames; the thread's, as the innermost frame has it.
        fs_base = int(gdb.newest_frame().read_register("fs_base"))
    tls = fs_base + table["tpoff"]
    _, _, _, tc_top, tc_base = struct.unpack(TLS_FORMAT, _read(tls, struct.calcsize(TLS_FORMAT)))
    if not tc_base or tc_top < tc_base:
        return None
    for at in range(tc_top - RECORD_SIZE, tc_base - 1, -RECORD_SIZE):
        record = struct.unpack(RECORD_FORMAT, _read(at, RECORD_SIZE))
        if record[4] == slot:
            return record[5]
    return None


def _in_call_code(table, pc):
    """The native return address of the call whose code (on the caller's stack) holds pc."""
    i = bisect.bisect_right(table["starts"], pc) - 1
    if i >= 0 and table["pieces"][i][0] <= pc < table["pieces"][i][1]:
        return table["pieces"][i][2]
    return None


def is_generated_code(pc):
    """Whether pc is in a call's generated code or at the tail stub."""
    table = TABLE.get()
    return table is not None and (pc in table["returns"] or pc == table["tail_stub"] or
                                  _in_call_code(table, pc) is not None)


def native_return(pc, pending_frame, sp):
    """Where a return to pc ends up in the program, or None when pc is not generated code's."""
    table = TABLE.get()
    if table is None:
        return None
    if pc == table["tail_stub"]:
        pc = _tail_return(table, pending_frame, sp - 8)
        if pc is None:
            return None
        return table["returns"].get(pc, pc)
    native = table["returns"].get(pc)
    return native if native is not None else _in_call_code(table, pc)


class FrameId:
    """A frame's identity for gdb: its stack pointer and its pc."""

    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class DacceUnwinder(Unwinder):
    """A frame at a return point of generated code is its caller, with the same stack."""

    def __init__(self):
        super().__init__("dacce")

    def __call__(self, pending_frame):
        try:
            pc = pending_frame.read_register("rip")
            sp = pending_frame.read_register("rsp")
            native = native_return(int(pc), pending_frame, int(sp))
        except (gdb.error, gdb.MemoryError):
            return None
        if native is None:
            return None
        info = pending_frame.create_unwind_info(FrameId(sp, pc))
        info.add_saved_register("rip", gdb.Value(native).cast(pc.type))
        info.add_saved_register("rsp", sp)
        for reg in ("rbp", "rbx", "r12", "r13", "r14", "r15"):
            info.add_saved_register(reg, pending_frame.read_register(reg))
        return info


class DacceFrameFilter:
    """Leaves generated code's frames out of `bt`."""

    def __init__(self):
        self.name = "dacce"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames):
        for decorator in frames:
            frame = decorator.inferior_frame()
            if frame.level() > 0 and is_generated_code(frame.pc()):
                continue
            yield decorator


gdb.execute("handle SIGILL nostop noprint pass", to_string=True)
gdb.execute("handle SIG63 nostop noprint pass", to_string=True)
register_unwinder(None, DacceUnwinder(), replace=True)
DacceFrameFilter()
gdb.events.stop.connect(TABLE.forget)
gdb.events.exited.connect(TABLE.forget)
gdb.events.new_objfile.connect(TABLE.forget)
gdb.events.memory_changed.connect(TABLE.forget)
