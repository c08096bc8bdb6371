#!/usr/bin/env bash
# Programs nobody here wrote, against qemu-aarch64 in the same run, in named suites:
#   tools   (the default) Debian's dynamically linked arm64 programs from the sysroot
#           scripts/sysroot.sh builds (scripts/test builds it in target/sysroot), each on a
#           compute-bound job of 0.5-3 s under qemu
#   python  CPython's own regression tests (Debian's libpython3.11-testsuite, in the sysroot
#           scripts/bench-sysroot.sh builds, target/sysroot-bench): `python3 -m test -q MODULE`
#           for each module, about 1-5 s each under qemu
#   go      Go's standard-library tests: `PKG.test -test.short` for each package, built for
#           arm64 by scripts/bench-go.sh into target/bench-go (statically linked, CGO_ENABLED=0;
#           built here when missing and `go` is installed), run with a copy of the package's
#           source folder (target/bench-go/src/PKG, its testdata) as cwd, as `go test` runs
#           them; about 0.3-5.5 s each under qemu
#   all     the three, one after the other
#
#   scripts/bench-real.sh [--suite tools|python|go|all] [--runs N] [--only NAME,...]
#                         [-- extra armada run arguments...]
#   scripts/bench-real.sh [--suite ...] [--only ...] --list     (the rows' names, nothing run)
#
# NAME is a row's name: python3, gzip, ...; test_re, ...; math/big, ... (with --suite all, --only
# can mix suites; sort names a row of tools and one of go, --suite tells them apart).
# Env: ARMADA (default target/release/armada), SYSROOT (default target/sysroot),
#      SYSROOT_BENCH (default target/sysroot-bench), BENCH_GO (default target/bench-go),
#      QEMU_AARCH64 (default qemu-aarch64). Prints one row per program: the best of N wall
# times of each, their ratio (armada / qemu), and whether the outputs agree; then a total row
# per suite (and one for all of them with --suite all): the sum of the rows' armada times over
# the sum of their qemu times, and the largest ratio.
#
# What "outputs agree" compares, exactly:
#   tools   the exit status and stdout, byte for byte (stderr is not compared)
#   python  the exit status and stdout and stderr together (one stream, as written), less the
#           lines whose text depends on the clock or the host: regrtest's progress line (it
#           holds "load avg") and every line ending in a duration ("Total duration: 357 ms",
#           "test_x passed in 31.2 sec", which regrtest prints only for a test slower than 30 s):
#           `sed -E '/load avg/d; / [0-9.]+ (ms|sec|min|hour)$/d'`; all else must be identical
#           (for a passing module: "== Tests result: SUCCESS ==" and "Tests result: SUCCESS")
#   go      the exit status and stdout and stderr together (as written), each test's time in
#           "--- FAIL: TestX (0.01s)" replaced by "(TIME)": `sed -E 's/\([0-9.]+s\)/(TIME)/g'`;
#           all else must be identical (for a passing package: "PASS")
# When they differ, both outputs (as compared) are kept in ${TMPDIR:-/tmp}/bench-real-differ/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=3
only=""
suite=tools
extra=()
list=0
usage() { echo "usage: $0 [--suite tools|python|go|all] [--runs N] [--only NAME,...] [--list] [-- armada run args...]" >&2; exit 2; }
while (($#)); do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --list) list=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) usage ;;
    esac
done
case $suite in
tools | python | go) suites=("$suite") ;;
all) suites=(tools python go) ;;
*) usage ;;
esac
want_suite() { [[ " ${suites[*]} " == *" $1 "* ]]; }
selected() { [[ -z $only || ",$only," == *",$1,"* ]]; }

# --- the suites' rows -------------------------------------------------------------------------
tools=(python3 lua5.4 perl gawk sqlite3 sha256sum sort grep gzip bzip2 xz)
# each passes under qemu-aarch64 -L the benchmark sysroot and under armada, without starting a
# subprocess (under qemu a child python3 would be run by the host's binfmt handler, without -L)
python_modules=(test_bisect test_heapq test_re test_string test_textwrap test_difflib test_fractions
    test_collections test_operator test_float test_dict test_pprint test_zlib test_functools)
go_packages=(archive/tar bufio bytes compress/flate encoding/json fmt html/template math/big
    math/rand regexp sort strconv strings text/template)

if ((list)); then # the rows' names, one a line (scripts/gpu-bundle.sh packs the python suite's files)
    for s in "${suites[@]}"; do
        case $s in tools) set -- "${tools[@]}" ;; python) set -- "${python_modules[@]}" ;; go) set -- "${go_packages[@]}" ;; esac
        for n; do if selected "$n"; then echo "$n"; fi; done
    done
    exit 0
fi

armada=${ARMADA:-target/release/armada}
S=${SYSROOT:-target/sysroot}
SB=${SYSROOT_BENCH:-target/sysroot-bench}
G=${BENCH_GO:-target/bench-go}
qemu=${QEMU_AARCH64:-qemu-aarch64}
[[ -x $armada ]] || { echo "bench-real: no $armada (cargo build --release)" >&2; exit 1; }
command -v "$qemu" >/dev/null || { echo "bench-real: no $qemu" >&2; exit 1; }
if want_suite tools; then
    [[ -x $S/usr/bin/python3 ]] || { echo "bench-real: no sysroot at $S (scripts/sysroot.sh $S)" >&2; exit 1; }
fi
if want_suite python; then
    [[ -x $SB/usr/bin/python3 && -d $SB/usr/lib/python3.11/test/libregrtest ]] ||
        { echo "bench-real: no benchmark sysroot at $SB (scripts/bench-sysroot.sh $SB)" >&2; exit 1; }
fi
abs() { if [[ $1 == */* ]]; then echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; else command -v "$1"; fi; }
armada=$(abs "$armada")
qemu=$(abs "$qemu")

here=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
differ_dir=${TMPDIR:-/tmp}/bench-real-differ

if want_suite tools; then
    # 4 MB of base64 lines: the input of the text tools (the same bytes every run)
    head -c 3000000 /dev/zero | openssl enc -aes-128-ctr -nosalt -pass pass:armada -pbkdf2 2>/dev/null |
        base64 >"$work/text" || { python3 -c 'import random,base64,sys; r=random.Random(1); sys.stdout.write(base64.encodebytes(bytes(r.getrandbits(8) for _ in range(3000000))).decode())' >"$work/text"; }
fi

if want_suite go; then
    missing=()
    for p in "${go_packages[@]}"; do
        selected "$p" && [[ ! -x $G/bin/${p//\//_}.test ]] && missing+=("$p")
    done
    if ((${#missing[@]})) && command -v go >/dev/null; then
        scripts/bench-go.sh --out "$G" "${missing[@]}" >&2
    fi
    [[ -d $G ]] && G=$(cd "$G" && pwd)
fi
[[ -d $SB ]] && SB=$(cd "$SB" && pwd)

# the guest's argv for row $2 of suite $1 into argv, the sysroot into lflag (-L DIR; none for
# the statically linked Go tests), the cwd into dir ('' = stay), and how to compare its output
# into mode (stdout | python | go); returns 1 (the reason in why) when the program is not there
row_of() {
    local T=$work/text
    dir='' mode=stdout lflag=(-L "$S")
    case $1 in
    tools)
        case $2 in
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
        [[ -x ${argv[0]} ]] || { why="not in the sysroot"; return 1; }
        ;;
    python)
        argv=("$SB/usr/bin/python3" -m test -q "$2")
        mode=python lflag=(-L "$SB")
        [[ -e $SB/usr/lib/python3.11/test/$2.py || -d $SB/usr/lib/python3.11/test/$2 ]] ||
            { why="not in the benchmark sysroot"; return 1; }
        ;;
    go)
        argv=("$G/bin/${2//\//_}.test" -test.short)
        dir=$G/src/$2
        mode=go lflag=()
        [[ -x ${argv[0]} && -d $dir ]] || { why="not built (scripts/bench-go.sh $2, where Go is)"; return 1; }
        ;;
    esac
}

# the output of the last run as compared, from $work/out into $1
compared() {
    case $mode in
    stdout) cp "$work/out" "$1" ;;
    python) sed -E '/load avg/d; / [0-9.]+ (ms|sec|min|hour)$/d' "$work/out" >"$1" ;;
    go) sed -E 's/\([0-9.]+s\)/(TIME)/g' "$work/out" >"$1" ;;
    esac
}

best() { # best wall time in ms of $runs runs of "$@" into $b, its output in $work/out, $rc
    local t0 t1 ms
    b=999999999
    for ((i = 0; i < runs; i++)); do
        t0=$(date +%s%N)
        if [[ $mode == stdout ]]; then
            "$@" >"$work/out" 2>"$work/err" </dev/null && rc=0 || rc=$?
        else
            "$@" >"$work/out" 2>&1 </dev/null && rc=0 || rc=$?
        fi
        t1=$(date +%s%N)
        ms=$(((t1 - t0) / 1000000))
        if ((ms < b)); then b=$ms; fi
    done
}

# --- the table --------------------------------------------------------------------------------
w=10
for s in "${suites[@]}"; do
    case $s in tools) set -- "${tools[@]}" ;; python) set -- "${python_modules[@]}" ;; go) set -- "${go_packages[@]}" ;; esac
    for n; do selected "$n" && ((${#n} > w)) && w=${#n}; done
done
((${#suites[@]} > 1 && w < 12)) && w=12
ratio() { awk -v a="$1" -v q="$2" 'BEGIN { printf "%.2f", (q > 0 ? a / q : 0) }'; }
total_row() { # label sum_qemu sum_armada largest_name largest_ratio rows differing
    local label=$1
    (($6)) || return 0
    local agree="all $6 same"
    (($7)) && agree="$7 of $6 DIFFER"
    printf "%-${w}s %10s %12s %7.2fx  largest: %s %sx; outputs: %s\n" "$label" "$2" "$3" \
        "$(ratio "$3" "$2")" "$4" "$5" "$agree"
}

printf "%-${w}s %10s %12s %8s  %s\n" program "qemu (ms)" "armada (ms)" ratio outputs
all_q=0 all_a=0 all_n=0 all_d=0 all_lr=0 all_ln=-
for s in "${suites[@]}"; do
    case $s in tools) names=("${tools[@]}") ;; python) names=("${python_modules[@]}") ;; go) names=("${go_packages[@]}") ;; esac
    sq=0 sa=0 sn=0 sd=0 lr=0 ln=-
    for name in "${names[@]}"; do
        selected "$name" || continue
        if ! row_of "$s" "$name"; then
            printf "%-${w}s (%s)\n" "$name" "$why"
            continue
        fi
        set -- "${argv[@]}"
        [[ -n $dir ]] && cd "$dir"
        best "$qemu" ${lflag[@]+"${lflag[@]}"} "$@"
        q=$b qrc=$rc
        compared "$work/qout"
        best "$armada" run ${extra[@]+"${extra[@]}"} ${lflag[@]+"${lflag[@]}"} "$@"
        a=$b
        compared "$work/aout"
        [[ -n $dir ]] && cd "$here"
        same=same
        if [[ $rc != "$qrc" ]] || ! cmp -s "$work/aout" "$work/qout"; then
            same="DIFFER (exit $qrc vs $rc)"
            sd=$((sd + 1))
            mkdir -p "$differ_dir"
            cp "$work/qout" "$differ_dir/${name//\//_}.qemu"
            cp "$work/aout" "$differ_dir/${name//\//_}.armada"
            echo "bench-real: $name: the outputs as compared are in $differ_dir/${name//\//_}.{qemu,armada}" >&2
        fi
        r=$(ratio "$a" "$q")
        printf "%-${w}s %10s %12s %7.2fx  %s\n" "$name" "$q" "$a" "$r" "$same"
        sq=$((sq + q)) sa=$((sa + a)) sn=$((sn + 1))
        if awk -v r="$r" -v l="$lr" 'BEGIN { exit !(r > l) }'; then lr=$r ln=$name; fi
    done
    if ((${#suites[@]} > 1)); then label="total $s"; else label=total; fi
    total_row "$label" "$sq" "$sa" "$ln" "$lr" "$sn" "$sd"
    all_q=$((all_q + sq)) all_a=$((all_a + sa)) all_n=$((all_n + sn)) all_d=$((all_d + sd))
    if awk -v r="$lr" -v l="$all_lr" 'BEGIN { exit !(r > l) }'; then all_lr=$lr all_ln=$ln; fi
done
((${#suites[@]} > 1)) && total_row "total all" "$all_q" "$all_a" "$all_ln" "$all_lr" "$all_n" "$all_d"
exit 0
