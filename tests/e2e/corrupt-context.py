#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Makes the contexts of a capture wrong but still decodable, for tests/e2e.sh.

Every sample whose innermost ccStack entry counts compressed recursion
(aux >= 2) gets one repetition fewer: its context then decodes to a path
one recursion level shorter than the stack it was sampled on, which
validation must report as a mismatch.  Prints how many samples changed.

usage: corrupt-context.py CAPTURE
"""
import sqlite3
import struct
import sys


def main():
    db = sqlite3.connect(sys.argv[1])
    changed = 0
    rows = db.execute("SELECT rowid, entries FROM samples WHERE length(entries) >= 16").fetchall()
    for rowid, entries in rows:
        last = len(entries) - 16
        ident, edge, aux = struct.unpack_from("<QII", entries, last)
        if aux < 2:
            continue
        fixed = entries[:last] + struct.pack("<QII", ident, edge, aux - 1)
        db.execute("UPDATE samples SET entries = ? WHERE rowid = ?", (fixed, rowid))
        changed += 1
    db.commit()
    print(changed)


if __name__ == "__main__":
    main()
