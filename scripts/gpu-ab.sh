#!/usr/bin/env bash
# Two builds of armada against each other on the GPU machine, in one device call: the host
# behind a device kind changes between calls (the same binary ran gpu-check's dash batch in
# 26.5 s in one call and 39.8 s in another), so a host-side change is measured old against
# new on the same host, with qemu-aarch64 in the same call for the ratio.
#
#   scripts/gpu-ab.sh pack OLD [NEW] [DIR]   # here: DIR (default .gpu-ab, git-ignored, under
#                                            # the device tool's 64 MiB carry) with both
#                                            # binaries stripped (NEW: target/release/armada),
#                                            # the sysroot, qemu-aarch64 and go_channels
#   scripts/gpu-ab.sh run [DIR]              # there: AB=dash,go,gosnap,python (default all);
#                                            # OLD_ENV, NEW_ENV="VAR=value ...": set for
#                                            # the old and the new runs (a knob against
#                                            # its default: pack the same binary twice, and
#                                            # set the variable in both, OLD_ENV=K=1
#                                            # NEW_ENV=K=2, since lanes inherit armada's
#                                            # environment and its size moves their counts)
#
# Batches (each is one of gpu-check's): 65,536 lanes of the forking dash script from its
# snapshot (DASH_LANES), 16,384 lanes of go_channels (GO_LANES), the same from a snapshot at
# main.main (gosnap), 16,384 lanes of python3 from
# its snapshot at input (PY_LANES). Each runs old then new; their outputs must be identical
# (`cmp`), and a --check of the new binary compares lanes with the CPU engine first.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmd=${1:-}
shift || true
case $cmd in
pack)
    old=${1:?usage: scripts/gpu-ab.sh pack OLD [NEW] [DIR]}
    new=${2:-target/release/armada}
    dir=${3:-.gpu-ab}
    bundle=.gpu
    [[ -e $bundle/sysroot.tar.xz && -e $bundle/guest.tar.xz ]] || { echo "gpu-ab: run scripts/gpu-bundle.sh first (it makes $bundle/sysroot.tar.xz and guest.tar.xz)" >&2; exit 2; }
    info=$(git rev-parse --git-common-dir)/info
    grep -qx "/$dir/" "$info/exclude" 2>/dev/null || echo "/$dir/" >>"$info/exclude"
    mkdir -p "$dir"
    strip -o "$dir/armada-old" "$old"
    strip -o "$dir/armada-new" "$new"
    cp "$bundle/sysroot.tar.xz" "$bundle/qemu-aarch64.xz" "$dir/"
    tar -xJOf "$bundle/guest.tar.xz" guest/threads/go_channels >"$dir/go_channels"
    chmod +x "$dir/go_channels"
    du -sh "$dir"
    ;;
run)
    D=${1:-.gpu-ab}
    for f in armada-old armada-new sysroot.tar.xz qemu-aarch64.xz; do
        [[ -e $D/$f ]] || { echo "gpu-ab: $D/$f is missing: pack here first, and carry $D to the device (it is git-ignored)" >&2; exit 2; }
    done
    sections=${AB:-dash,go,gosnap,python}
    want() { [[ ",$sections," == *",$1,"* ]]; }
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    W=$(mktemp -d /tmp/armada-ab.XXXXXX)
    tar -C "$W" -xJf "$D/sysroot.tar.xz"
    S=$W/sysroot
    xz -dc "$D/qemu-aarch64.xz" >"$W/qemu" && chmod +x "$W/qemu"
    F='translated blocks: [^,]*\|lanes on cuda.*\|kernel s: [0-9.]*\|service s: [0-9.]*\|transfer s: [0-9.]*\|page-table apply s: [0-9.]*\|apply parts s: [a-z0-9. ]*\|upload parts s: [a-z0-9. ]*\|transfer parts s: [a-z0-9. ]*\|check:.*\|ran out of memory with [0-9]* lanes\|slots: [0-9][^;]*\|rounds that left a slot[^;]*'
    # ab NAME ARGS...: old then new, each timed, outputs compared
    ab() {
        local name=$1
        shift
        for b in old new; do
            echo "== $name $b"
            local envs=()
            if [[ $b == new ]]; then read -ra envs <<<"${NEW_ENV:-}"; else read -ra envs <<<"${OLD_ENV:-}"; fi
            env "${envs[@]}" /usr/bin/time -f "$name $b: wall %e s, user %U s, sys %S s" "$D/armada-$b" batch --backend cuda --no-progress --out "$W/$name-$b.jsonl" "$@" 2>&1 | grep -o "$F\|^$name $b: wall.*"
        done
        cmp -s "$W/$name-old.jsonl" "$W/$name-new.jsonl" && echo "$name: old and new outputs identical" || echo "$name: OUTPUTS DIFFER"
    }
    # qemu NAME RUNS LANES CMD: qemu-aarch64 on every core, RUNS runs of CMD (lane {} in it), scaled to LANES
    qemu() {
        local t0 t1 runs=$(($2 < $3 ? $2 : $3))
        t0=$(date +%s.%N)
        seq 0 $((runs - 1)) | xargs -P "$(nproc)" -I{} sh -c "$4"
        t1=$(date +%s.%N)
        python3 -c "print('qemu-aarch64 $1: %d runs on $(nproc) cores %.2f s -> %.1f s for %d' % ($runs, $t1 - $t0, ($t1 - $t0) * $3 / $runs, $3))"
    }
    if want dash; then
        n=${DASH_LANES:-65536}
        python3 scripts/gpu-inputs.py dash "$W/shin" "$n"
        "$D/armada-new" batch --backend cuda --no-progress --check --lanes $((n < 1024 ? n : 1024)) --snapshot-at input --stdin-dir "$W/shin" -L "$S" "$S/bin/dash" 2>&1 >/dev/null | grep -o "check:.*"
        ab dash --lanes "$n" --snapshot-at input --stdin-dir "$W/shin" -L "$S" "$S/bin/dash"
        qemu dash 1024 "$n" "$W/qemu -L $S $S/bin/dash < $W/shin/{} > /dev/null"
    fi
    if want go; then
        n=${GO_LANES:-16384}
        "$D/armada-new" batch --backend cuda --no-progress --check --lanes $((n < 64 ? n : 64)) "$D/go_channels" 2>&1 >/dev/null | grep -o "check:.*"
        ab go --lanes "$n" "$D/go_channels"
        qemu go_channels 512 "$n" "$W/qemu $D/go_channels > /dev/null"
    fi
    if want gosnap; then
        # go_channels from a snapshot at main.main (its runtime's start once a batch)
        n=${GO_LANES:-16384}
        "$D/armada-new" batch --backend cuda --no-progress --check --lanes $((n < 64 ? n : 64)) --snapshot-at main.main "$D/go_channels" 2>&1 >/dev/null | grep -o "check:.*"
        ab gosnap --lanes "$n" --snapshot-at main.main "$D/go_channels"
        qemu go_channels 512 "$n" "$W/qemu $D/go_channels > /dev/null"
    fi
    if want python; then
        n=${PY_LANES:-16384}
        python3 scripts/gpu-inputs.py python "$W/pyin" "$n"
        ab python --lanes "$n" --snapshot-at input --stdin-dir "$W/pyin" -L "$S" "$S/usr/bin/python3"
        qemu python3 256 "$n" "$W/qemu -L $S $S/usr/bin/python3 < $W/pyin/{} > /dev/null"
    fi
    rm -rf "$W"
    ;;
*)
    sed -n 2,16p "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
