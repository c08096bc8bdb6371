#!/usr/bin/env bash
# Profiles armada on the GPU machine's host, which has no perf, with this machine's perf:
#
#   scripts/gpu-perf.sh pack [DIR]            # here: DIR/perf.tar.xz (default .gpu; ~8 MB):
#                                             # perf, the libraries ldd lists, its loader
#   scripts/gpu-perf.sh record [DIR] -- CMD   # there: perf record -F 499 -e cpu-clock of CMD,
#                                             # into $OUT/perf.data (or /tmp/perf.data)
#   scripts/gpu-perf.sh report PERF.DATA [BINARY]   # here: the profile by symbol, BINARY
#                                             # (default target/release/armada) standing in
#                                             # for the stripped binary that ran there
#
# perf runs there under the loader it came with (`ld-linux-x86-64.so.2 --library-path`), so the
# machine's own libc does not matter. Symbols: the stripped binary that ran and the unstripped
# one here must come from the same build (report checks the build ids); report lays the
# unstripped one out where perf.data says the binary was (a --symfs folder) and reads it there.
# Profiles of stop 71 (docs/performance.md, "Forks without a reference a page") came this way.
# The perf data is flat (no call graphs: the release build keeps no frame pointers); `perf
# annotate --symfs` shows which instructions of a function take the time.
set -euo pipefail
cmd=${1:-}
shift || true
case $cmd in
pack)
    out=${1:-.gpu}
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' EXIT
    mkdir -p "$stage/perf" "$out"
    p=$(command -v perf) || { echo "gpu-perf: no perf here (apt-get install linux-perf)" >&2; exit 2; }
    cp "$p" "$stage/perf/perf"
    ldd "$p" | awk '$3 ~ /^\// {print $3}' | xargs -r -I{} cp -L {} "$stage/perf/"
    cp -L /lib64/ld-linux-x86-64.so.2 "$stage/perf/"
    tar -C "$stage" -cJf "$out/perf.tar.xz" perf
    du -sh "$out/perf.tar.xz"
    ;;
record)
    dir=.gpu
    if [[ ${1:-} != -- && -n ${1:-} ]]; then
        dir=$1
        shift
    fi
    [[ ${1:-} == -- ]] && shift
    (($# > 0)) || { echo "usage: scripts/gpu-perf.sh record [DIR] -- COMMAND..." >&2; exit 2; }
    [[ -e $dir/perf.tar.xz ]] || { echo "gpu-perf: no $dir/perf.tar.xz (scripts/gpu-perf.sh pack $dir, here)" >&2; exit 2; }
    p=$(mktemp -d)
    tar -C "$p" -xJf "$dir/perf.tar.xz"
    data=${OUT:-/tmp}/perf.data
    # (perf's exit status is the command's: a fuzzer that found a crash exits non-zero)
    "$p/perf/ld-linux-x86-64.so.2" --library-path "$p/perf" "$p/perf/perf" record -F 499 -e cpu-clock -o "$data" -- "$@" || true
    "$p/perf/ld-linux-x86-64.so.2" --library-path "$p/perf" "$p/perf/perf" report -i "$data" --no-children --sort comm,dso --stdio 2>/dev/null | grep '%' | head -12
    echo "gpu-perf: $data"
    ;;
report)
    data=${1:?usage: scripts/gpu-perf.sh report PERF.DATA [BINARY]}
    bin=${2:-target/release/armada}
    want=$(readelf -n "$bin" | awk '/Build ID/ {print $3}')
    ran=$(perf buildid-list -i "$data" 2>/dev/null | awk -v id="$want" '$1 == id {print $2; exit}')
    [[ -n $ran ]] || { echo "gpu-perf: $bin (build id $want) is not the binary that ran; perf.data has:" >&2; perf buildid-list -i "$data" >&2; exit 2; }
    symfs=$(mktemp -d)
    trap 'rm -rf "$symfs"' EXIT
    mkdir -p "$symfs$(dirname "$ran")"
    ln -s "$(realpath "$bin")" "$symfs$ran"
    perf report -i "$data" --symfs "$symfs" --no-children --sort dso,symbol --stdio 2>/dev/null | grep '%' | head -${TOP:-40}
    ;;
*)
    sed -n 2,18p "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
