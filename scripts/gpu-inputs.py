#!/usr/bin/env python3
"""Per-lane inputs of the GPU benchmarks (scripts/gpu-check.sh, scripts/gpu-ab.sh), made on
the GPU machine, where nothing is carried that can be made there:

    gpu-inputs.py python DIR N   # DIR/0..N-1: a small CPython script each, different per lane
                                 # (a dict count and a sum whose size depends on the lane)
    gpu-inputs.py dash DIR N     # DIR/0..N-1: the forking dash script (8 command
                                 # substitutions and a pipeline), the lane's number in it
    gpu-inputs.py dash-script    # the dash script itself, its $1 the lane's number (for
                                 # `dash -c SCRIPT sh {lane}`)
"""
import os
import sys

DASH = ('s=0; for i in 1 2 3 4 5 6 7 8; do x=$(echo $i); s=$((s + x * $1)); done; echo $s; '
        'echo a b c | while read p q r; do echo $r $q $p; done')


def python_script(i):
    return f"""import sys
n = {i} % 97 + 10
words = ["w%d" % (k * n % 31) for k in range(n)]
counts = {{}}
for w in words:
    counts[w] = counts.get(w, 0) + 1
print({i}, n, len(counts), sum(k * k for k in range(n * 10)), sorted(counts)[:3])
"""


def main():
    if sys.argv[1:] == ["dash-script"]:
        print(DASH)
        return
    if len(sys.argv) != 4 or sys.argv[1] not in ("python", "dash"):
        sys.exit(__doc__)
    kind, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        text = python_script(i) if kind == "python" else DASH.replace("$1", str(i)) + "\n"
        with open(f"{d}/{i}", "w") as f:
            f.write(text)


main()
