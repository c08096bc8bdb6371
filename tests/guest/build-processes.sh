#!/usr/bin/env bash
# Builds the AArch64 guest programs for the process tests (fork, exec, wait, pipes, sessions,
# signals between processes), used by crates/armada-cli/tests/processes.rs, and those of the
# Linux-surface tests (timers, IPC, sockets: tests/guest/surface, crates/armada-cli/tests/surface.rs).
#
#   tests/guest/build-processes.sh [OUTDIR [SRCDIR]]
#       (default OUTDIR: <repo>/target/guest-processes; SRCDIR: tests/guest/processes)
#
#   SRCDIR/NAME.c -> OUTDIR/NAME    aarch64-linux-gnu-gcc -O2 -static -pthread
#
# Every program includes tests/guest/processes/proc.h (CHECK, errno and signal names, status
# text). A binary is rebuilt only when it is missing or older than its source, proc.h, a
# header of SRCDIR or this script. OUTDIR/programs.list gets one line per binary, "BINARY BINARY", once all are built.
# Compiler: ARMADA_GUEST_CC (default aarch64-linux-gnu-gcc); ARMADA_GUEST_JOBS sets the number
# of parallel compiles (default: number of CPUs).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
script="$script_dir/$(basename "${BASH_SOURCE[0]}")"
out_dir=${1:-"$repo_root/target/guest-processes"}
src_dir=${2:-"$script_dir/processes"}
proc_h="$script_dir/processes/proc.h"
cc=${ARMADA_GUEST_CC:-aarch64-linux-gnu-gcc}
jobs=${ARMADA_GUEST_JOBS:-$(nproc 2>/dev/null || echo 2)}

if ! command -v "$cc" >/dev/null 2>&1; then
    echo "error: build-processes.sh: compiler not found: $cc (Debian package gcc-aarch64-linux-gnu)" >&2
    echo "       Install it with: sudo apt-get install gcc-aarch64-linux-gnu" >&2
    echo "       (or run scripts/test, which installs everything the tests need)." >&2
    exit 2
fi

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/armada-processes-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# stale OUT DEPS...: true when OUT is missing or older than a dependency or this script.
stale() {
    local target=$1 d
    shift
    [[ -e $target ]] || return 0
    for d in "$@" "$script"; do
        [[ $d -nt $target ]] && return 0
    done
    return 1
}

# compile OUT SRC: writes a temporary file that replaces OUT on success; on failure removes
# OUT too (never a stale binary behind a failed build) and shows the log.
compile() {
    local target=$1 src=$2 name log tmp
    name=$(basename "$target")
    log="$work/$name.log"
    tmp="$out_dir/.$name.tmp.$$"
    if "$cc" -O2 -Wall -static -pthread -o "$tmp" "$src" >"$log" 2>&1; then
        mv -f "$tmp" "$target"
        echo "  built $name"
    else
        rm -f "$tmp" "$target"
        echo "error: failed to build $name: $cc -O2 -Wall -static -pthread -o $target $src" >&2
        cat "$log" >&2
        return 1
    fi
}

list="$work/programs.list"
: >"$list"
rebuilt=0
shopt -s nullglob
sources=("$src_dir"/*.c)
headers=("$src_dir"/*.h)
if ((${#sources[@]} == 0)); then
    echo "error: no C sources in $src_dir" >&2
    exit 1
fi
for src in "${sources[@]}"; do
    name=$(basename "$src" .c)
    echo "$name $name" >>"$list"
    if stale "$out_dir/$name" "$src" "$proc_h" "${headers[@]}"; then
        while (($(jobs -rp | wc -l) >= jobs)); do
            wait -n || true # failures show as missing binaries below
        done
        compile "$out_dir/$name" "$src" &
        rebuilt=$((rebuilt + 1))
    fi
done
wait

failed=0
while read -r bin _; do
    if [[ ! -x $out_dir/$bin ]]; then
        echo "error: $out_dir/$bin was not built" >&2
        failed=1
    fi
done <"$list"
if ((failed)); then
    echo "error: some process guest programs failed to build" >&2
    exit 1
fi
mv -f "$list" "$out_dir/programs.list"
echo "process guest programs: $(wc -l <"$out_dir/programs.list") binaries in $out_dir ($rebuilt rebuilt)"
