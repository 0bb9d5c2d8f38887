# Benchmark workload (tests/bench-launch.sh): JSON round trips and regular expressions
# over generated records, as a log or API service would do.  Prints a checksum.
import json
import re
import zlib

records = [{"id": i, "user": "user%d" % (i % 997), "path": "/api/v1/items/%d" % (i * 7),
            "status": 200 if i % 13 else 404, "tags": ["t%d" % (i % 5), "x"],
            "latency_ms": (i * 37) % 1000 / 10.0} for i in range(60000)]
text = json.dumps(records)
back = json.loads(text)
line_re = re.compile(r'"path": "(/api/v\d+/items/(\d+))", "status": (\d{3})')
hits = 0
total = 0
for m in line_re.finditer(text):
    if m.group(3) == "404":
        hits += 1
    total += int(m.group(2))
words = re.findall(r"user\d+", text)
print(len(back), hits, total, len(words), zlib.crc32(json.dumps(back, sort_keys=True).encode()))
