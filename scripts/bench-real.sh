#!/usr/bin/env bash
# Programs nobody here wrote, against qemu-aarch64 in the same run: Debian's dynamically
# linked arm64 programs from the sysroot scripts/sysroot.sh builds (scripts/test builds it
# in target/sysroot), each on a compute-bound job of 0.5-3 s under qemu.
#
#   scripts/bench-real.sh [--runs N] [--only NAME,...] [-- extra armada run arguments...]
#
# Env: ARMADA (default target/release/armada), SYSROOT (default target/sysroot),
#      QEMU_AARCH64 (default qemu-aarch64). Prints one row per program: the best of N wall
# times of each, their ratio, and whether the outputs (stdout and exit status) agree.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=3
only=""
extra=()
while (($#)); do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--runs N] [--only NAME,...] [-- armada run args...]" >&2; exit 2 ;;
    esac
done

armada=${ARMADA:-target/release/armada}
S=${SYSROOT:-target/sysroot}
qemu=${QEMU_AARCH64:-qemu-aarch64}
[[ -x $armada ]] || { echo "bench-real: no $armada (cargo build --release)" >&2; exit 1; }
[[ -x $S/usr/bin/python3 ]] || { echo "bench-real: no sysroot at $S (scripts/sysroot.sh $S)" >&2; exit 1; }
command -v "$qemu" >/dev/null || { echo "bench-real: no $qemu" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 4 MB of base64 lines: the input of the text tools (the same bytes every run)
head -c 3000000 /dev/zero | openssl enc -aes-128-ctr -nosalt -pass pass:armada -pbkdf2 2>/dev/null |
    base64 >"$work/text" || { python3 -c 'import random,base64,sys; r=random.Random(1); sys.stdout.write(base64.encodebytes(bytes(r.getrandbits(8) for _ in range(3000000))).decode())' >"$work/text"; }

names=(python3 lua5.4 perl gawk sqlite3 sha256sum sort grep gzip bzip2 xz)
# the guest's argv for program $1 ($T: the text file)
argv_of() {
    local T=$work/text
    case $1 in
    python3) argv=("$S/usr/bin/python3" -c 'print(sum(i*i%7 for i in range(2000000)))') ;;
    lua5.4) argv=("$S/usr/bin/lua5.4" -e 'local function f(n) if n<2 then return n end return f(n-1)+f(n-2) end print(f(30))') ;;
    perl) argv=("$S/usr/bin/perl" -e 'my $s=0; for my $i (1..3000000) { $s += $i*$i%7 } print "$s\n"') ;;
    gawk) argv=("$S/usr/bin/gawk" 'BEGIN { for (i = 0; i < 3000000; i++) s += i*i%7; print s }') ;;
    sqlite3) argv=("$S/usr/bin/sqlite3" :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<1000000) SELECT sum(x%7) FROM c;') ;;
    sha256sum) argv=("$S/usr/bin/sha256sum" "$T") ;;
    sort) argv=("$S/usr/bin/sort" "$T") ;;
    grep) argv=("$S/usr/bin/grep" -c ab "$T") ;;
    gzip) argv=("$S/usr/bin/gzip" -c "$T") ;;
    bzip2) argv=("$S/usr/bin/bzip2" -c "$T") ;;
    xz) argv=("$S/usr/bin/xz" -1 -T1 -c "$T") ;;
    esac
}

best() { # best wall time in ms of $runs runs of "$@" into $b, its output in $work/out, $rc
    local t0 t1 ms
    b=999999999
    for ((i = 0; i < runs; i++)); do
        t0=$(date +%s%N)
        "$@" >"$work/out" 2>"$work/err" </dev/null && rc=0 || rc=$?
        t1=$(date +%s%N)
        ms=$(((t1 - t0) / 1000000))
        if ((ms < b)); then b=$ms; fi
    done
}

printf '%-10s %10s %12s %8s  %s\n' program "qemu (ms)" "armada (ms)" ratio outputs
for name in "${names[@]}"; do
    [[ -n $only && ",$only," != *",$name,"* ]] && continue
    argv_of "$name"
    set -- "${argv[@]}"
    [[ -x $1 ]] || { printf '%-10s (not in the sysroot)\n' "$name"; continue; }
    best "$qemu" -L "$S" "$@"
    q=$b qrc=$rc
    cp "$work/out" "$work/qout"
    best "$armada" run ${extra[@]+"${extra[@]}"} -L "$S" "$@"
    a=$b
    same=same
    [[ $rc == "$qrc" ]] && cmp -s "$work/out" "$work/qout" || same="DIFFER (exit $qrc vs $rc)"
    printf '%-10s %10s %12s %7.2fx  %s\n' "$name" "$q" "$a" "$(awk -v a="$a" -v q="$q" 'BEGIN { print a / q }')" "$same"
done
