#!/usr/bin/env bash
# Build the AArch64 guest test programs.
#
#   tests/guest/build.sh [OUTDIR]        (default OUTDIR: <repo>/target/guest)
#
# Every tests/guest/src/NAME.c becomes OUTDIR/NAME, compiled with
#   $ARMADA_GUEST_CC <cflags> -static -o OUTDIR/NAME NAME.c -lm
# where <cflags> is "-O2" unless the source has a line
#   // armada-cflags: -O3 -march=armv8.1-a
# A source may also ask for extra variants, each built as OUTDIR/NAME-VARIANT with the
# variant's flags appended (commas inside a variant stand for spaces; a variant whose
# flags contain -static-pie is linked with -static-pie instead of -static):
#   // armada-variants: lse=-march=armv8.1-a pie=-static-pie
#
# Binaries are only rebuilt when the source (or this script) is newer than the binary.
# OUTDIR/programs.list gets one line per binary: "BINARY BASE-PROGRAM".
# The compiler can be overridden with ARMADA_GUEST_CC (default aarch64-linux-gnu-gcc);
# ARMADA_GUEST_JOBS sets the number of parallel compiles (default: number of CPUs).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
src_dir="$script_dir/src"
out_dir=${1:-"$repo_root/target/guest"}
cc=${ARMADA_GUEST_CC:-aarch64-linux-gnu-gcc}
jobs=${ARMADA_GUEST_JOBS:-$(nproc 2>/dev/null || echo 2)}

if ! command -v "$cc" >/dev/null 2>&1; then
    echo "error: AArch64 cross compiler '$cc' not found." >&2
    echo "       Install it with: sudo apt-get install gcc-aarch64-linux-gnu" >&2
    echo "       (or run scripts/test, which installs everything the tests need)." >&2
    exit 2
fi

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
log_dir=$(mktemp -d "${TMPDIR:-/tmp}/armada-guest-build.XXXXXX")
trap 'rm -rf "$log_dir"' EXIT

# Extract the text after "// armada-KEY:" from a source file (first match, trimmed).
directive() {
    sed -n "s|^[[:space:]]*//[[:space:]]*armada-$2:[[:space:]]*||p" "$1" | head -n 1 | sed 's/[[:space:]]*$//'
}

# build_one OUT SRC FLAGS...: compile unless OUT is up to date.
build_one() {
    local out=$1 src=$2
    shift 2
    local link=-static
    local f
    for f in "$@"; do
        if [[ $f == -static-pie ]]; then link=; fi
    done
    local name log tmp
    name=$(basename "$out")
    log="$log_dir/$name.log"
    tmp="$out.tmp.$$"
    # shellcheck disable=SC2086
    if "$cc" "$@" $link -o "$tmp" "$src" -lm >"$log" 2>&1; then
        mv -f "$tmp" "$out"
        echo "  built $name ($*${link:+ $link})"
    else
        rm -f "$tmp" "$out" # never leave a stale binary behind a failed build
        echo "error: failed to build $name from $src with: $cc $* $link" >&2
        cat "$log" >&2
        return 1
    fi
}

needs_build() { # OUT SRC
    [[ ! -e $1 || $2 -nt $1 || ${BASH_SOURCE[0]} -nt $1 ]]
}

shopt -s nullglob
sources=("$src_dir"/*.c)
if ((${#sources[@]} == 0)); then
    echo "error: no sources in $src_dir" >&2
    exit 1
fi

list_tmp="$log_dir/programs.list"
: >"$list_tmp"
pids=()
failed=0
queued=0

run_job() {
    # Limit the number of concurrent compiles.
    while (($(jobs -rp | wc -l) >= jobs)); do
        wait -n || failed=1
    done
    build_one "$@" &
    pids+=($!)
    queued=$((queued + 1))
}

for src in "${sources[@]}"; do
    name=$(basename "$src" .c)
    cflags=$(directive "$src" cflags)
    [[ -n $cflags ]] || cflags=-O2
    read -r -a base_flags <<<"$cflags"
    out="$out_dir/$name"
    echo "$name $name" >>"$list_tmp"
    if needs_build "$out" "$src"; then
        run_job "$out" "$src" "${base_flags[@]}"
    fi
    variants=$(directive "$src" variants)
    for v in $variants; do
        vname=${v%%=*}
        vflags=${v#*=}
        if [[ $vname == "$v" || -z $vname ]]; then
            echo "error: $src: bad armada-variants entry '$v' (want NAME=FLAGS)" >&2
            failed=1
            continue
        fi
        read -r -a extra <<<"${vflags//,/ }"
        vout="$out_dir/$name-$vname"
        echo "$name-$vname $name" >>"$list_tmp"
        if needs_build "$vout" "$src"; then
            run_job "$vout" "$src" "${base_flags[@]}" "${extra[@]}"
        fi
    done
done

for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
done
# wait -n above already reaped some jobs; re-check results by looking at the outputs.
while read -r bin _; do
    if [[ ! -x $out_dir/$bin ]]; then
        failed=1
    fi
done <"$list_tmp"

if ((failed)); then
    echo "error: some guest programs failed to build" >&2
    exit 1
fi
mv -f "$list_tmp" "$out_dir/programs.list"
echo "guest programs: $(wc -l <"$out_dir/programs.list") binaries in $out_dir ($queued rebuilt)"
