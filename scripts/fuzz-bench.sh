#!/usr/bin/env bash
# Fuzzing speed, in executions per second, of the planted-bug targets (tests/guest/fuzz) on a
# GPU machine, next to the CPU engine on every core and qemu-aarch64 running one process per
# input on every core, all in the same run (docs/performance.md keeps the figures).
#
#   scripts/fuzz-bench.sh [.gpu]     # the bundle of scripts/gpu-bundle.sh
#
# Knobs: TARGETS (default "crc_table nested magic"), LANES (GPU lanes, default "16384 65536"),
# SECS (seconds a run, default 20), BACKEND (default cuda), PERSIST ("1 0": persistent lanes,
# then a new batch each round), PIPE ("1": rounds pipelined, the GPU default; "1 0" compares
# with one round at a time), QEMU_RUNS (inputs qemu runs, default 4096). Each GPU run
# prints its last rounds' breakdown (ARMADA_FUZZ_PROFILE). Logs go to $OUT or /tmp.
set -u
bundle=${1:-.gpu}
A=$bundle/armada
B=${BACKEND:-cuda}
secs=${SECS:-20}
log=${OUT:-/tmp/armada-fuzz-bench}
mkdir -p "$log"
work=$(mktemp -d /tmp/armada-fuzz-bench.XXXXXX)
export ARMADA_CACHE_DIR=$work/cache
cores=$(nproc)
[[ -x $A ]] || { echo "no $A: build the bundle with scripts/gpu-bundle.sh and carry it"; exit 2; }
tar -C "$work" -xJf "$bundle/guest.tar.xz"
F=$work/guest/fuzz
Q=""
if [[ -e $bundle/qemu-aarch64.xz ]]; then
    xz -dc "$bundle/qemu-aarch64.xz" >"$work/qemu-aarch64" && chmod +x "$work/qemu-aarch64" && Q=$work/qemu-aarch64
fi
summary=()
note() {
    summary+=("$*")
    echo "== $*"
}
# "execs N (R/s)" of an armada fuzz log's last line
rate() { grep -o 'execs [0-9]* ([0-9.]*/s)' "$1" | tail -1; }

# inputs for qemu: what a fuzzer's first rounds look like (short, mostly printable)
mkdir -p "$work/in"
python3 - "$work/in" "${QEMU_RUNS:-4096}" <<'EOF'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(5)
for i in range(n):
    with open(os.path.join(d, str(i)), "wb") as f:
        f.write(bytes(r.randrange(256) for _ in range(r.randrange(1, 64))))
EOF
# compile the coverage build once, outside the timed runs
"$A" fuzz --backend "$B" --lanes 64 --corpus "$work/warm-c" --crashes "$work/warm-x" --max-execs 64 --no-progress "$F/magic" >/dev/null 2>&1

for t in ${TARGETS:-crc_table nested magic}; do
    # the device alone: one batch of the most lanes from the snapshot, empty stdin, output
    # dropped, without coverage (the kernel's time and rate, for the rounds' figures)
    most=$(echo ${LANES:-16384 65536} | tr ' ' '\n' | sort -n | tail -1)
    "$A" batch --backend "$B" --lanes "$most" --snapshot-at input --drop-output --no-progress "$F/$t" \
        >/dev/null 2>"$log/batch-$t-$B.txt"
    note "$t: armada batch --backend $B --lanes $most --snapshot-at input --drop-output: kernel s $(grep -o 'kernel s: [0-9.]*' "$log/batch-$t-$B.txt" | head -1 | sed 's/kernel s: //'), $(grep -o '[0-9]* instructions in [0-9.]* s' "$log/batch-$t-$B.txt" | tail -1)"
    for lanes in ${LANES:-16384 65536}; do
        for p in ${PERSIST:-1 0}; do
            for pp in ${PIPE:-1}; do
                rm -rf "$work/c" "$work/x"
                f=$log/fuzz-$t-$B-$lanes-$p-$pp.txt
                ARMADA_FUZZ_PERSISTENT=$p ARMADA_FUZZ_PIPELINE=$pp ARMADA_FUZZ_PROFILE=1 timeout $((secs + 120)) \
                    "$A" fuzz --backend "$B" --lanes "$lanes" \
                    --corpus "$work/c" --crashes "$work/x" --max-time "$secs" --no-progress "$F/$t" \
                    >/dev/null 2>"$f"
                note "$t: armada fuzz --backend $B --lanes $lanes (persistent lanes $p, pipelined $pp): $(rate "$f")"
                grep 'round of\|round [0-9]*:' "$f" | tail -2 | cut -c1-500
            done
        done
    done
    rm -rf "$work/c" "$work/x"
    timeout $((secs + 120)) "$A" fuzz --corpus "$work/c" --crashes "$work/x" --max-time "$secs" --no-progress "$F/$t" \
        >/dev/null 2>"$log/fuzz-$t-cpu.txt"
    note "$t: armada fuzz on the CPU engine, $cores cores: $(rate "$log/fuzz-$t-cpu.txt")"
    if [[ -n $Q ]]; then
        n=$(ls "$work/in" | wc -l)
        t0=$(date +%s.%N)
        ls "$work/in" | xargs -P "$cores" -I{} sh -c "$Q $F/$t < $work/in/{} > /dev/null 2>&1"
        t1=$(date +%s.%N)
        note "$t: qemu-aarch64, one process per input, $cores cores: $(python3 -c "print('%.0f' % ($n / ($t1 - $t0)))") execs/s"
    fi
done
echo
echo "== summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $cores cores)"
printf '%s\n' "${summary[@]}"
rm -rf "$work"
