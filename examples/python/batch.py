"""Run many copies of one Linux program at once with armada.run_batch.

    pip install .            # from the repository root
    python examples/python/batch.py [LANES] [BACKEND]

Each lane is its own process (memory, files, stdin, arguments); all lanes share the loaded
program image. BACKEND is "auto" (the default: the CUDA engine where it runs, else every CPU
core), "cpu", "cuda" or "wgpu" (armada.available_backends() lists what works here).
"""

import os
import sys
import time

import armada

here = os.path.dirname(os.path.abspath(__file__))
hello = os.path.join(here, "..", "..", "tests", "guest", "prebuilt", "hello")
lanes = int(sys.argv[1]) if len(sys.argv) > 1 else 64
backend = sys.argv[2] if len(sys.argv) > 2 else "auto"

# One argument list per lane (the program first, the same in every lane), optional stdins.
argvs = [[hello, f"lane-{i}"] for i in range(lanes)]
stdins = [f"input of lane {i}\n".encode() for i in range(lanes)]

t = time.perf_counter()
results = armada.run_batch(argvs, stdins=stdins, backend=backend)
batch_s = time.perf_counter() - t

t = time.perf_counter()
for argv, stdin in zip(argvs, stdins):
    armada.run(argv, stdin=stdin)
one_by_one_s = time.perf_counter() - t

assert all(r.exit_code == 0 and r.stdout == b"Hello, world!\n" for r in results)
total = sum(r.instructions for r in results)
print(f"{lanes} lanes on {backend!r} (available: {armada.available_backends()}), "
      f"{os.cpu_count()} cores: every lane printed {results[0].stdout!r}")
print(f"run_batch: {batch_s * 1000:.1f} ms ({total / batch_s / 1e6:.0f} M instructions/s in all)")
print(f"one by one with run: {one_by_one_s * 1000:.1f} ms")
