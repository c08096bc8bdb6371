#!/usr/bin/env bash
# Where the CUDA engine's time goes, on the GPU machine, from the prebuilt bundle
# (scripts/gpu-bundle.sh): the kernels' resource use, Nsight Compute on one steady-state launch
# of a compute-bound and of a memory-heavy batch, and the host-side breakdown of short runs.
#
#   scripts/gpu-profile.sh [.gpu]     # PROFILE=res,ncu,host (default all); LANES=65536
#
# Reports go to $OUT (the device tool's folder) or /tmp/armada-gpu-profile.
set -u
bundle=${1:-.gpu}
sections=${PROFILE:-res,ncu,host}
LANES=${LANES:-65536}
want() { [[ ",$sections," == *",$1,"* ]]; }
log=${OUT:-/tmp/armada-gpu-profile}
mkdir -p "$log"
work=$(mktemp -d /tmp/armada-prof.XXXXXX)
A=$bundle/armada
export ARMADA_CACHE_DIR=$work/cache
tar -C "$work" -xJf "$bundle/guest.tar.xz"
G=$work/guest

# the kernels' registers, stack frame and spills, per build
$A run --backend cuda "$G/hello" >/dev/null
if want res; then
    for c in "$ARMADA_CACHE_DIR"/*; do
        echo "== $(basename "$c")"
        cuobjdump -res-usage "$c" 2>&1 | grep -A1 armada_run
    done
fi

# one launch in the steady state (the third), kept short so the replays are quick
if want ncu && command -v ncu >/dev/null; then
    sets="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats --section SourceCounters"
    for spec in "tight:$G/tightloop 200000" "crc:$G/lanecrc {lane} 20"; do
        name=${spec%%:*}
        ARMADA_CUDA_LAUNCH_MS=${NCU_LAUNCH_MS:-30} timeout 500 ncu --clock-control none -k armada_run \
            --launch-skip 2 --launch-count 1 $sets \
            $A batch --backend cuda --lanes "$LANES" ${spec#*:} >"$log/ncu-$name.txt" 2>&1
        echo "== ncu $name (rc=$?)"
        grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Local Memory|L1/TEX Hit|L2 Hit|Memory Throughput|Compute \(SM\)|Issued Ipc|No Eligible|Warp Cycles Per Issued|Executed Ipc|Stall" "$log/ncu-$name.txt" | head -60
    done
fi

# the host side of short runs: where the wall time of a batch of short programs goes
if want host; then
    for spec in "short:$G/lanecrc {lane} 1"; do
        name=${spec%%:*}
        /usr/bin/time -v $A batch --backend cuda --lanes "$LANES" ${spec#*:} >/dev/null 2>"$log/host-$name.txt"
        echo "== host $name"
        grep -vE "^\s*(Page size|Exit status|Swaps|File system|Socket|Signals|Average)" "$log/host-$name.txt" | tail -45
    done
    mkdir -p "$work/in"
    python3 - "$work/in" "$LANES" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, str(i)), "wb") as f:
        f.write(i.to_bytes(4, "little") * 1024)
EOF
    /usr/bin/time -v $A batch --backend cuda --lanes "$LANES" --stdin-dir "$work/in" "$G/busybox" sha256sum >/dev/null 2>"$log/host-bb.txt"
    echo "== host busybox"
    grep -vE "^\s*(Page size|Exit status|Swaps|File system|Socket|Signals|Average)" "$log/host-bb.txt" | tail -45
fi
rm -rf "$work"
