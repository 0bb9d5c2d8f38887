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
- hides those frames from `bt`, which then shows the frames of an uninstrumented run;
- makes `step`, `next` and `finish` stop where they stop natively, and `up` and `down` pass
  over generated code's frames (see "Stepping" below).

It reads the runtime's table of return points (runtime/debug_returns.h) from the stopped
process; it never calls into it.  It defines the hooks `hook-stop`, `hook-step`,
`hook-next`, `hook-finish`, `hook-up` and `hook-down`, replacing any of the user's.
"""
import bisect
import re
import struct

import gdb
from gdb.unwinder import Unwinder, register_unwinder

LAYOUT = 3
TABLE_SYMBOL = "dacce_debug_returns"
# struct dacce_debug_returns: layout, count, entries, tail_stub, tpoff, n_ranges, cap,
# cap_ranges, ranges
TABLE_FORMAT = "<IIQQqIII4xQ"
# struct dacce_tls: id, cc_top, cc_base, tc_top, tc_base (tls.h)
TLS_FORMAT = "<QQQQQ"
# struct dacce_rt_tail_record: id, cc_top, top_aux, reserved, frame, return_to, guard
RECORD_FORMAT = "<QQIIQQQ"
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


def _piece(table, pc):
    """(start, end, native) of the generated code that holds pc, or None.  native is the
    return address of the call whose code it is (it runs on the caller's stack), or 0 for
    code whose caller is not at one address: the tail stub and the code of tail jumps."""
    i = bisect.bisect_right(table["starts"], pc) - 1
    if i >= 0 and table["pieces"][i][0] <= pc < table["pieces"][i][1]:
        return table["pieces"][i]
    return None


def _in_call_code(table, pc):
    """The native return address of the call whose code (on the caller's stack) holds pc."""
    piece = _piece(table, pc)
    return piece[2] if piece is not None and piece[2] else None


def is_generated_code(pc):
    """Whether pc is in generated code: a call's or a tail jump's, or the tail stub."""
    table = TABLE.get()
    return table is not None and (pc in table["returns"] or pc == table["tail_stub"] or
                                  _piece(table, pc) is not None)


def native_return(pc, pending_frame, sp):
    """Where a return to pc ends up in the program, or None when pc is not generated code's."""
    table = TABLE.get()
    if table is None:
        return None
    # The tail stub, or a leaf tail jump's return point (native 0): the frame's record says.
    if pc == table["tail_stub"] or table["returns"].get(pc, -1) == 0:
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


# ------------------------------------------------------------------------ stepping
#
# A function called through generated code returns into it: to a trampoline's return
# point, which runs the call's "after" operation and jumps to the native return address,
# or to the tail stub.  gdb meets code there with no symbol and no line, so
#
# - a `next` or `step` out of the function stopped at the return point, `?? ()`;
# - `finish` put its breakpoint there, and gdb cannot write into the code cache (its
#   executable view is a shared mapping, which ptrace does not force);
# - `step` into a call stepped over it: gdb takes the call's code for a function without
#   line information, which `step` steps over.
#
# The code cache is declared read-only (`mem`), so gdb puts breakpoints there in debug
# registers.  `step` runs with `step-mode on`, so it stops in the call's code instead of
# stepping over it.  When a `step`, `next` or `finish` then stops in generated code, the
# stop hook takes the thread on, silently, to where the command stops natively, and prints
# the stop as gdb would have; gdb's own report of the stop in generated code is dropped
# because the hook resumed the thread (gdb prints only the last stop).

RUNTIME_LIBRARY = "libdacce"
TRAP_BYTE = 0xD6  # runtime/trap.h: an entry the runtime has not decoded yet
MOST_STEPS = 400  # single steps through generated code before giving up


class _Stepping:
    """The stepping command in flight, and what the hooks set up for it."""

    command = None  # "step", "next" or "finish", from its pre-hook to the stop
    frame = None  # the frame it started in
    line = None  # and the line: (file, line)
    function = None  # and the function (a symbol, or None)
    values = 0  # values in the history when it started
    step_mode = None  # the user's `step-mode`, while `step` runs with it on
    busy = False  # the hooks are running commands of their own
    hit = []  # breakpoints of the user's the last of those commands stopped at
    statements = {}  # file name: addresses where its statements start
    views = set()  # the code cache's executable views marked read-only


def _pc():
    return int(gdb.selected_frame().pc())


def _quietly(command):
    """Runs command without printing its stop (the stop hook prints the last one); the
    breakpoints of the user's that it stopped at, in _Stepping.hit."""
    _Stepping.hit = []
    gdb.execute("set suppress-cli-notifications on", to_string=True)
    try:
        gdb.execute(command, to_string=True)
    finally:
        gdb.execute("set suppress-cli-notifications off", to_string=True)


def _note_hit(event):
    if _Stepping.busy and isinstance(event, gdb.BreakpointEvent):
        _Stepping.hit = [bp for bp in event.breakpoints if bp.number > 0 and bp.visible]


def _history_count():
    text = gdb.execute("show values", to_string=True)
    numbers = re.findall(r"^\$(\d+) = ", text, re.MULTILINE)
    return int(numbers[-1]) if numbers else 0


def _in_runtime(pc):
    name = gdb.solib_name(pc)
    return name is not None and RUNTIME_LIBRARY in name


def _is_return_point(pc):
    table = TABLE.get()
    return table is not None and (pc in table["returns"] or pc == table["tail_stub"])


def _mark_code_readonly():
    """Declares the code cache read-only, so gdb's breakpoints there use debug registers."""
    try:
        with open("/proc/%d/maps" % gdb.selected_inferior().pid) as maps:
            lines = maps.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or fields[1] != "r-xs":
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        if (low, high) not in _Stepping.views and _readonly_region(low, high):
            _Stepping.views.add((low, high))


def _forget_views(*_):
    """The process is gone: its views' regions go (the user's stay)."""
    for low, high in _Stepping.views:
        _forget_region(low, high)
    _Stepping.views.clear()


def _run_to(pc):
    """Lets the selected thread run to pc; whether it got there (not stopped elsewhere)."""
    thread = gdb.selected_thread()
    stop = gdb.Breakpoint("*%#x" % pc, internal=True, temporary=True)
    stop.thread = thread.num
    try:
        _quietly("continue")
    finally:
        if stop.is_valid():
            stop.delete()
    return gdb.selected_thread() == thread and _pc() == pc


def _leave_generated_code():
    """Single-steps the selected thread out of generated code; whether it got out."""
    for _ in range(MOST_STEPS):
        if not is_generated_code(_pc()):
            return True
        _quietly("stepi")
    return False


def _enter_call():
    """From a call's code (stub, dispatch, trampoline), on to the first instruction the
    call runs outside it: the callee's entry.  A first call passes through the runtime's
    slow path, which ends at dacce_rt_slow_exit."""
    for _ in range(MOST_STEPS):
        pc = _pc()
        if _in_runtime(pc):
            try:
                out = int(gdb.parse_and_eval("(unsigned long)&dacce_rt_slow_exit"))
            except gdb.error:
                return False
            if pc != out and not _run_to(out):
                return False
            _quietly("stepi")
        elif is_generated_code(pc) and not _is_return_point(pc):
            _quietly("stepi")
        else:
            return True
    return False


def _symbol_at(pc):
    """The name of the symbol pc is in, and whether pc is its first byte (or None, False)."""
    text = gdb.execute("info symbol %#x" % pc, to_string=True)
    if text.startswith("No symbol"):
        return None, False
    name = text.split(" in section")[0]
    return name.split(" + ")[0], " + " not in name


def _function_entry(pc):
    """Whether pc is the first instruction of a function."""
    return _symbol_at(pc)[1]


def _after_prologue(pc):
    """Where gdb stops on stepping into the function that starts at pc: where `break` on
    the function puts its breakpoint (past the prologue)."""
    block = gdb.block_for_pc(pc)
    while block is not None and block.function is None:
        block = block.superblock
    if block is None or block.function.symtab is None:
        return pc
    try:
        probe = gdb.Breakpoint("%s:%s" % (block.function.symtab.filename, block.function.name),
                               internal=True)
    except gdb.error:
        return pc
    try:
        places = [place.address for place in probe.locations]
    finally:
        probe.delete()
    return next((place for place in places if block.start <= place < block.end), pc)


def _readonly_region(low, high):
    """Declares [low, high) read-only for gdb's breakpoints; whether it is now."""
    try:
        gdb.execute("mem %#x %#x ro" % (low, high), to_string=True)
        return True
    except gdb.error:
        return False  # overlaps a region already declared


def _forget_region(low, high):
    regions = gdb.execute("info mem", to_string=True)
    found = re.search(r"^(\d+)\s+y\s+%#018x\s+%#018x\s+ro" % (low, high), regions, re.MULTILINE)
    if found:
        gdb.execute("delete mem %s" % found.group(1), to_string=True)


def _on_breakpoint(bp):
    """A breakpoint on the entry of a function not decoded yet goes in a debug register.

    Its first byte is the runtime's trap, which gdb would save and write back whenever it
    removes its breakpoint, after the runtime put the function's own byte there."""
    if not gdb.selected_thread() or TABLE.get() is None:
        return
    try:
        for place in bp.locations:
            at = place.address
            if place.enabled and at and _function_entry(at) and \
                    bytes(gdb.selected_inferior().read_memory(at, 1))[0] == TRAP_BYTE:
                _readonly_region(at, at + 1)
    except (gdb.error, gdb.MemoryError, AttributeError):
        pass


def _past_entry_trap(pc):
    """At the entry of a function the runtime has not decoded yet (its first byte is the
    trap): lets the runtime decode it and put the byte back, and stops there again.

    gdb single-steps the trap, and the signal arrives: it then puts a breakpoint on the
    pc to regain control after the handler, saving the byte it sees there (the trap).
    The handler writes the function's byte over that breakpoint, and gdb, removing it,
    would write the trap back.  Declared read-only, the byte gets a breakpoint in a debug
    register instead, which writes nothing."""
    declared = _readonly_region(pc, pc + 1)
    try:
        _quietly("stepi")
    finally:
        if declared:
            _forget_region(pc, pc + 1)


def _step_into(pc):
    """At a callee's entry: on past its prologue; whether it has line information."""
    if gdb.find_pc_line(pc).symtab is None:
        return False
    if bytes(gdb.selected_inferior().read_memory(pc, 1))[0] == TRAP_BYTE:
        _past_entry_trap(pc)
    target = _after_prologue(pc)
    if _pc() < target:
        _run_to(target)
    return True


def _statement_starts_at(pc):
    """Whether a line-table entry marked as a statement starts at pc: gdb stops stepping
    on one.  gdb 13's Python does not show the mark; `maint info line-table` does (read
    once per file and stop)."""
    sal = gdb.find_pc_line(pc)
    if sal.symtab is None or sal.pc != pc:
        return False
    name = sal.symtab.filename
    if name not in _Stepping.statements:
        text = gdb.execute("maint info line-table %s" % name, to_string=True)
        _Stepping.statements[name] = {
            int(address, 16)
            for address in re.findall(r"^\d+\s+\d+\s+(0x[0-9a-f]+)\s+Y\b", text, re.MULTILINE)}
    return pc in _Stepping.statements[name]


def _after_return():
    """What gdb does, having stepped back out of a function to the pc.  In the middle of a
    line-table entry it steps on through the entry's line ("again": as the command does
    from there).  At the start of one marked as a statement it stops, unless the line is
    the one the step started on ("again").  At the start of one that is not a statement it
    forgets the line and stops at the start of the next statement, whatever its line
    ("statement")."""
    pc = _pc()
    sal = gdb.find_pc_line(pc)
    if sal.symtab is None:
        return "stop"
    if sal.pc != pc:
        return "again"
    if not _statement_starts_at(pc):
        return "statement"
    return "again" if (sal.symtab.fullname(), sal.line) == _Stepping.line else "stop"


def _step_to_statement(command):
    """Steps by instructions (over calls for `next`) to the start of a statement, or until
    the thread leaves the function: into a call, or back out of it."""
    frame = gdb.selected_frame()
    for _ in range(MOST_STEPS):
        _quietly("nexti" if command == "next" else "stepi")
        if _Stepping.hit:
            return
        pc = _pc()
        if command == "next" and is_generated_code(pc) and not _is_return_point(pc):
            native = _in_call_code(TABLE.get(), pc)  # over the call, as `next` goes
            if native is None or not _run_to(native):
                return
            pc = _pc()
        elif is_generated_code(pc) or _in_runtime(pc):
            return
        if not _same_frame(frame) or _statement_starts_at(pc):
            return


def _print_stop(whole_location):
    """Prints the stop as gdb does: the location when the frame changed, else the line."""
    text = gdb.execute("frame", to_string=True)
    if _Stepping.hit:
        bp = _Stepping.hit[0]
        gdb.write("\n%s %d, " % ("Temporary breakpoint" if bp.temporary else "Breakpoint",
                                 bp.number))
        whole_location = True
    if whole_location:
        gdb.write(re.sub(r"^#\d+\s+", "", text))
    else:
        gdb.write(text.split("\n", 1)[1] if "\n" in text else text)


def _same_frame(frame):
    try:
        return frame is not None and frame.is_valid() and gdb.selected_frame() == frame
    except gdb.error:
        return False


def _leave_runtime():
    """From the runtime's code back to the program's, as a return there goes: main's
    caller is libdacce's (it calls main for __libc_start_main); natively it is libc's."""
    for _ in range(8):
        if not _in_runtime(_pc()):
            return True
        _quietly("finish")
    return not _in_runtime(_pc())


def _settle_step(command):
    """After a `step` or `next` stopped in generated code: on to where it stops natively."""
    stepped_from = _Stepping.frame  # where the last range stepped through was
    for _ in range(MOST_STEPS):
        if _Stepping.hit:
            break
        pc = _pc()
        returned = None
        if _is_return_point(pc):
            returned = _leave_generated_code()
        elif _in_runtime(pc) and _symbol_at(pc)[0] != "dacce_rt_slow_entry":
            returned = _leave_runtime()
        if returned is not None:  # back out of a call, in the caller
            action = _after_return() if returned else "stop"
            if action == "stop":
                break
            stepped_from = gdb.selected_frame()
            if action == "again":
                _quietly(command)
            else:
                _step_to_statement(command)
            continue
        if is_generated_code(pc) or _in_runtime(pc):  # into a call
            if command != "step" or not _enter_call():
                break
            continue
        name, entry = _symbol_at(pc)
        if command == "step" and name is not None and name.endswith("@plt"):
            # A call through the PLT (a first call goes on there from the runtime, the
            # slot of a lazily bound one leads back into it): gdb steps through PLT code.
            _quietly("step")
            continue
        if command == "step" and entry:
            if _step_into(pc):
                break
            _quietly("finish")  # no line information: `step` steps over such a function
            continue
        break
    # gdb prints the location unless the step ended in the frame its last range was in,
    # in the function the command started in.
    _print_stop(not (_same_frame(stepped_from) and
                     gdb.selected_frame().function() == _Stepping.function))


def _settle_finish():
    """After `finish` stopped at a return point: on to the native return address."""
    if not _leave_generated_code():
        return
    _print_stop(True)
    if _history_count() > _Stepping.values:
        value = gdb.history(0)
        gdb.write("Value returned is $%d = %s\n" % (_history_count(), value.format_string()))


def _before(command):
    if _Stepping.busy or not gdb.selected_thread() or TABLE.get() is None:
        return
    _mark_code_readonly()
    frame = gdb.selected_frame()
    if command in ("up", "down"):
        # Select the generated code's frame first: the command then moves past it.
        near = frame.older() if command == "up" else frame.newer()
        if near is not None and is_generated_code(int(near.pc())):
            near.select()
        return
    _Stepping.command = command
    _Stepping.frame = frame
    _Stepping.function = frame.function()
    sal = frame.find_sal()
    _Stepping.line = (sal.symtab.fullname(), sal.line) if sal.symtab is not None else None
    _Stepping.values = _history_count()
    if command == "step" and _Stepping.step_mode is None:
        _Stepping.step_mode = gdb.parameter("step-mode")
        gdb.execute("set step-mode on", to_string=True)


def _restore_step_mode():
    if _Stepping.step_mode is not None:
        gdb.execute("set step-mode %s" % ("on" if _Stepping.step_mode else "off"), to_string=True)
        _Stepping.step_mode = None


def _on_stop():
    if _Stepping.busy:
        return
    _Stepping.statements = {}
    _Stepping.hit = []
    command, _Stepping.command = _Stepping.command, None
    try:
        _settle(command)
    finally:
        _restore_step_mode()  # `step` ran with it on, and so did the steps that settled it


def _settle(command):
    if command is None or not gdb.selected_thread():
        return
    TABLE.forget()
    pc = _pc()
    if command == "finish" and not _is_return_point(pc):
        return
    if command != "finish" and not (is_generated_code(pc) or _in_runtime(pc) or
                                    (command == "step" and _function_entry(pc) and
                                     gdb.find_pc_line(pc).symtab is None)):
        return  # stopped where it stops natively
    _Stepping.busy = True
    try:
        if command == "finish":
            _settle_finish()
        else:
            _settle_step(command)
    except (gdb.error, gdb.MemoryError) as err:
        gdb.write("dacce-gdb: %s\n" % err)
    finally:
        _Stepping.busy = False


class _HookCommand(gdb.Command):
    """Internal: run by the hooks this file defines."""

    def __init__(self, name, action):
        super().__init__(name, gdb.COMMAND_NONE)
        self.action = action

    def invoke(self, argument, from_tty):
        self.action(argument)


_HookCommand("dacce-before", _before)
_HookCommand("dacce-stopped", lambda _: _on_stop())
for _command in ("step", "next", "finish", "up", "down"):
    gdb.execute("define hook-%s\ndacce-before %s\nend" % (_command, _command), to_string=True)
gdb.execute("define hook-stop\ndacce-stopped\nend", to_string=True)
# Regions of our own only: memory outside them stays accessible.
gdb.execute("set mem inaccessible-by-default off", to_string=True)

gdb.execute("handle SIGILL nostop noprint pass", to_string=True)
gdb.execute("handle SIG63 nostop noprint pass", to_string=True)
register_unwinder(None, DacceUnwinder(), replace=True)
DacceFrameFilter()
gdb.events.stop.connect(TABLE.forget)
gdb.events.cont.connect(TABLE.forget)  # the table changes only while the program runs
gdb.events.exited.connect(TABLE.forget)
gdb.events.exited.connect(_forget_views)
gdb.events.stop.connect(_note_hit)
gdb.events.breakpoint_created.connect(_on_breakpoint)
gdb.events.breakpoint_modified.connect(_on_breakpoint)
gdb.events.new_objfile.connect(TABLE.forget)
gdb.events.memory_changed.connect(TABLE.forget)
