#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks that a `dacce report --format json -n 0` of a real program holds
complete contexts: MIN_FRAMES frames or more (default 5), none of them a
[dacce: ...] placeholder, and that every function named in WANTED
(separated by '|') appears in one.

usage: check-complete.py REPORT.json WANTED [MIN_FRAMES]
"""
import json
import sys

report = json.load(open(sys.argv[1]))
want = [w for w in sys.argv[2].split("|") if w]
min_frames = int(sys.argv[3]) if len(sys.argv) > 3 else 5
full = [c for c in report["contexts"]
        if len(c["frames"]) >= min_frames and not any(f["module"] == "[dacce]" for f in c["frames"])]
names = {f["function"] for c in full for f in c["frames"]}
missing = [w for w in want if w not in names]
if not full or missing:
    print("no complete context of %d frames or more" % min_frames if not full
          else "never named in a complete context: " + ", ".join(missing))
    sys.exit(1)
print("%d complete contexts (%d of %d samples), the deepest %d frames"
      % (len(full), sum(c["samples"] for c in full), report["total_samples"],
         max(len(c["frames"]) for c in full)))
