#!/usr/bin/env python3
"""Summarizes a GPU batch's launch trace: where its kernel time goes.

    ARMADA_CUDA_TRACE=1 armada batch --backend cuda ... 2> trace.txt
    scripts/cuda-trace.py trace.txt [--every SECONDS]

Reads the lines `armada-cuda: launch K of N lanes, slice S, T s, I instructions, left:
{...}` (crates/armada-gpu/src/engine/launch.rs) and prints, for each SECONDS (default 1) of
kernel time, the launches, the lanes that ran, the rate (instructions a second of kernel)
and the instructions; then the launches' total and why the lanes left them. A lane's first
launch counts what it had retired before it (a snapshot's start included), so the first
launch is left out of the rates.
"""
import argparse
import re
import sys

LINE = re.compile(
    r"armada-cuda: launch (\d+) of (\d+) lanes, slice \d+, ([\d.]+) s, (\d+) instructions, left: \{(.*)\}"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--every", type=float, default=1.0, help="seconds of kernel a row")
    a = ap.parse_args()
    rows = []
    with open(a.trace, errors="replace") as f:
        for line in f:
            m = LINE.search(line)
            if m:
                k, lanes, secs, ins, left = m.groups()
                why = {w: int(n) for w, n in re.findall(r'"([a-z-]+)": (\d+)', left)}
                rows.append((int(k), int(lanes), float(secs), int(ins), why))
    if not rows:
        print(f"{a.trace}: no launch lines (run the batch with ARMADA_CUDA_TRACE=1)", file=sys.stderr)
        return 1
    total_why: dict = {}
    for r in rows:
        for w, n in r[4].items():
            total_why[w] = total_why.get(w, 0) + n
    body = rows[1:]
    print(f"{'kernel s':>9} {'launches':>11} {'lanes':>13} {'G instr/s':>10} {'G instr':>8}")
    t = mark = secs = ins = 0.0
    first = None
    for r in body:
        first = first or r
        t += r[2]
        secs += r[2]
        ins += r[3]
        if t >= mark + a.every or r is body[-1]:
            rate = ins / secs / 1e9 if secs else 0.0
            print(f"{t:9.2f} {first[0]:>5}-{r[0]:<5} {first[1]:>6}-{r[1]:<6} {rate:10.2f} {ins / 1e9:8.2f}")
            mark, secs, ins, first = t, 0.0, 0.0, None
    kernel = sum(r[2] for r in rows)
    print(f"{len(rows)} launches, {kernel:.2f} s of kernel; the lanes left them: "
          + ", ".join(f"{w} {n}" for w, n in sorted(total_why.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
