#!/usr/bin/env bash
# Public test suites under qemu-aarch64 and under armada, test by test (issue 49, "the Linux
# surface"): for every individual test, does it get the same verdict under both? Not timing:
# scripts/bench-real.sh measures that, on the subset of the suites that passes everywhere.
#   go      Go's standard-library tests: `PKG.test -test.short -test.v` for each package, built
#           for arm64 by scripts/bench-go.sh into DIR (statically linked, built here when
#           missing and `go` is installed; existing binaries are reused), run with DIR/src/PKG
#           (a copy of the package's source and testdata) as cwd, as `go test` runs them
#   python  CPython 3.11's regression tests in the sysroot scripts/bench-sysroot.sh builds:
#           `python3 -m test -v MODULE` for each module
#   all     both (the default)
#
#   scripts/peer-suites.sh [--suite go|python|all] [--only NAME,...] [--timeout SEC] [--out DIR]
#                          [--strict] [-- extra armada run arguments...]
#
# --strict: exit 1 when any test's verdict differs, or a row could not run (what CI uses).
# NAME is a Go package (net/http) or a Python module (test_os); with --only the rows are
# exactly those names (test_* is Python, all else Go), even ones outside the default lists.
# Env: ARMADA (default target/release/armada), QEMU_AARCH64 (default qemu-aarch64),
#      SYSROOT_BENCH (default target/sysroot-bench), PEER_GO (the Go build DIR, default
#      target/peer-go). --timeout (default 300 s) bounds each run; --out (default
#      ${TMPDIR:-/tmp}/peer-suites) keeps, per row and side, the raw output (NAME.qemu.log),
#      the verdicts (NAME.qemu.verdicts: "test verdict" lines) and the differences (NAME.differ).
#
# What is compared, exactly: each test's verdict, parsed from the output of both runs:
#   go      `--- PASS|FAIL|SKIP: Name` lines, subtests (indented, Name/sub) included
#   python  unittest's verbose lines `test_x (module.Class.test_x) ... ok|FAIL|ERROR|skipped
#           ...|expected failure|unexpected success` (PASS FAIL ERROR SKIP XFAIL XPASS), the
#           verdict possibly on a later line (after the test's own output, or after the
#           docstring line unittest prints for a test that has one)
# A test that started (=== RUN, or its unittest line) but got no verdict is RUN (the run died
# or timed out in it; a Go subtest whose parent passed is PASS, as Go fails the parents of a
# failed subtest); one the other side never reached is "-". Both count as a verdict, so a
# crash shows up as the tests it lost. Per row the process outcome is shown too: exit status,
# "timeout" when killed by it, "crash" when the output has a Go "panic:" or "fatal error:" or
# a "Fatal Python error" line; and the seconds taken (only to see where time went).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# --- the default rows -------------------------------------------------------------------------
# the packages that exercise the kernel interface, then bench-real.sh's fourteen (pure compute;
# they should always agree, a check that the harness itself is sound)
go_packages=(net os os/signal syscall time net/http
    archive/tar bufio bytes compress/flate encoding/json fmt html/template math/big
    math/rand regexp sort strconv strings text/template)
python_modules=(test_bisect test_heapq test_re test_string test_textwrap test_difflib test_fractions
    test_collections test_operator test_float test_dict test_pprint test_zlib test_functools
    test_io test_subprocess test_pathlib test_time test_os test_socket test_signal test_bz2 test_zipfile)

suite=all only="" tmo=300 out=${TMPDIR:-/tmp}/peer-suites extra=() strict=0
usage() { echo "usage: $0 [--suite go|python|all] [--only NAME,...] [--timeout SEC] [--out DIR] [--strict] [-- armada run args...]" >&2; exit 2; }
while (($#)); do
    case $1 in
    --suite) suite=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --strict) strict=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) usage ;;
    esac
done
[[ $suite == go || $suite == python || $suite == all ]] || usage

# the rows: "suite name" pairs
rows=()
if [[ -n $only ]]; then
    IFS=, read -ra names <<<"$only"
    for n in "${names[@]}"; do
        if [[ $n == test_* ]]; then s=python; else s=go; fi
        [[ $suite == all || $suite == "$s" ]] && rows+=("$s $n")
    done
else
    [[ $suite == python ]] || for n in "${go_packages[@]}"; do rows+=("go $n"); done
    [[ $suite == go ]] || for n in "${python_modules[@]}"; do rows+=("python $n"); done
fi
((${#rows[@]})) || { echo "peer-suites: nothing selected" >&2; exit 2; }
want() { [[ " ${rows[*]} " == *" $1 "* ]]; }

armada=${ARMADA:-target/release/armada}
qemu=${QEMU_AARCH64:-qemu-aarch64}
SB=${SYSROOT_BENCH:-target/sysroot-bench}
G=${PEER_GO:-target/peer-go}
[[ -x $armada ]] || { echo "peer-suites: no $armada (cargo build --release)" >&2; exit 1; }
command -v "$qemu" >/dev/null || { echo "peer-suites: no $qemu" >&2; exit 1; }
abs() { if [[ $1 == */* ]]; then echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; else command -v "$1"; fi; }
armada=$(abs "$armada")
qemu=$(abs "$qemu")
mkdir -p "$out"
out=$(cd "$out" && pwd)

if want go; then
    missing=()
    for r in "${rows[@]}"; do
        p=${r#go }
        [[ $r == go\ * && ! -x $G/bin/${p//\//_}.test ]] && missing+=("$p")
    done
    if ((${#missing[@]})); then
        command -v go >/dev/null || { echo "peer-suites: not built in $G: ${missing[*]} (and no go here)" >&2; exit 1; }
        scripts/bench-go.sh --out "$G" "${missing[@]}" >&2
    fi
    G=$(cd "$G" && pwd)
    # time's tests load America/Los_Angeles from GOROOT/lib/time/zoneinfo.zip only (for
    # hermeticity; ../../lib/time/zoneinfo.zip from their cwd) and panic in init without it;
    # Debian's Go ships no zoneinfo.zip, so make one (stored, as Go's reader requires) from the
    # host's tzdata, which both emulators then read alike
    if want "go time" && [[ ! -f $G/lib/time/zoneinfo.zip && -d /usr/share/zoneinfo ]]; then
        mkdir -p "$G/lib/time"
        python3 - "$G/lib/time/zoneinfo.zip" <<'EOF'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1] + ".tmp", "w", zipfile.ZIP_STORED) as z:
    for d, _, fs in os.walk("/usr/share/zoneinfo"):
        for f in sorted(fs):
            p = os.path.join(d, f)
            if os.path.isfile(p):
                z.write(p, os.path.relpath(p, "/usr/share/zoneinfo"))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
EOF
    fi
fi
if want python; then
    [[ -x $SB/usr/bin/python3 && -d $SB/usr/lib/python3.11/test/libregrtest ]] ||
        { echo "peer-suites: no benchmark sysroot at $SB (scripts/bench-sysroot.sh $SB)" >&2; exit 1; }
    SB=$(cd "$SB" && pwd)
fi

# --- one run, its verdicts ----------------------------------------------------------------------
# run LOG CMD...: CMD under the timeout, output into LOG; sets outcome ("rc=N [crash] S.Ss" or
# "timeout S.Ss") and rc. timeout signals its whole process group (SIGKILL 10 s after SIGTERM),
# but that is not enough: it returns as soon as the main process dies, and a child that blocked
# SIGTERM (seen: qemu deadlocked in a forked child of syscall.test, between fork and exec, with
# all signals blocked) or that moved to a group of its own (setpgid tests) lives on. So each
# run gets a session of its own (setsid, whose id is the pid: a background job of a script is
# no group leader, so setsid does not fork), and what is left of it is killed afterwards.
run() {
    local log=$1 t0 t1 secs sid
    shift
    t0=$(date +%s%N)
    setsid timeout --kill-after=10 "$tmo" "$@" >"$log" 2>&1 </dev/null &
    sid=$!
    wait "$sid" && rc=0 || rc=$?
    pkill -KILL -s "$sid" 2>/dev/null || true
    t1=$(date +%s%N)
    secs=$(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.1fs", n / 1e9 }')
    if ((rc == 124 || rc == 137)); then
        outcome="timeout $secs"
    elif grep -qaE '^(panic: |fatal error: |Fatal Python error)' "$log"; then
        outcome="rc=$rc crash $secs"
    else
        outcome="rc=$rc $secs"
    fi
}

# verdicts SUITE LOG: "test verdict" lines, sorted, one per test (its last verdict)
verdicts() {
    if [[ $1 == go ]]; then
        awk '{ sub(/^[ \t]+/, "") }
            $1 == "===" && $2 == "RUN" && !($3 in v) { v[$3] = "RUN" }
            $1 == "---" && $2 ~ /^(PASS|FAIL|SKIP):$/ { v[$3] = substr($2, 1, length($2) - 1) }
            END {
                # a parallel subtest whose parent passed did not fail: Go fails every parent of
                # a failed subtest. Its own line can be lost: seen under qemu-aarch64 (1 run in
                # 25 on 2 busy cores), `--- PASS: TestNohup` listing nohup-1 but not nohup-2
                do {
                    changed = 0
                    for (t in v)
                        if (v[t] == "RUN" && match(t, /\/[^\/]*$/) && v[substr(t, 1, RSTART - 1)] == "PASS") {
                            v[t] = "PASS"; changed = 1
                        }
                } while (changed)
                for (t in v) print t, v[t]
            }' "$2"
    else
        awk 'function word(s) {   # unittest verbose outcome -> our verdict, "" when s is none
                if (s == "ok") return "PASS"
                if (s == "FAIL" || s == "ERROR") return s
                if (s ~ /^skipped/) return "SKIP"
                if (s == "expected failure") return "XFAIL"
                if (s == "unexpected success") return "XPASS"
                return ""
            }
            # "name (module.Class.name)" starts a test: the key is module.Class.name (for
            # "setUpClass (module.Class)", module.Class.setUpClass); indented, it is a subtest
            # of it that failed or was skipped ("  test_x (m.C.test_x) (i=1) ... FAIL"), which
            # sets the test verdict (a failed subtest is the only line its test gets; a passing
            # test prints its own line again after a skipped subtest)
            match($0, /^ *[A-Za-z_][A-Za-z0-9_]* \([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+\)/) {
                name = $1; k = substr($0, RSTART, RLENGTH); sub(/^[^(]*\(/, "", k); sub(/\)$/, "", k)
                if (k !~ ("\\." name "$")) k = k "." name
                cur = k; running = 0; if (!(k in v)) v[k] = "RUN"
                $0 = substr($0, RLENGTH + 1)
            }
            cur == "" { next }
            # " ... " ends the description (the docstring line, when there is one); the verdict
            # follows it, or comes on a line of its own after what the test printed
            !running && (i = index($0, " ... ")) { running = 1; $0 = substr($0, i + 5) }
            running && word($0) != "" { v[cur] = word($0); cur = "" }
            END { for (t in v) print t, v[t] }' "$2"
    fi | LC_ALL=C sort
}

# --- the table ----------------------------------------------------------------------------------
w=10
for r in "${rows[@]}"; do n=${r#* }; ((${#n} > w)) && w=${#n}; done
printf "%-${w}s %-22s %-22s %6s %6s  %s\n" name qemu armada same differ "differences (first 10)"
n_rows=0 n_agree=0 n_rc=0 t_same=0 t_diff=0 n_missing=0
for r in "${rows[@]}"; do
    s=${r%% *} name=${r#* }
    f=$out/$s/${name//\//_}
    mkdir -p "$out/$s"
    if [[ $s == go ]]; then
        bin=$G/bin/${name//\//_}.test
        [[ -x $bin && -d $G/src/$name ]] || { printf "%-${w}s (not built)\n" "$name"; n_missing=$((n_missing + 1)); continue; }
        cd "$G/src/$name"
        run "$f.qemu.log" "$qemu" "$bin" -test.short -test.v
        q=$outcome qrc=$rc
        run "$f.armada.log" "$armada" run ${extra[@]+"${extra[@]}"} "$bin" -test.short -test.v
        cd - >/dev/null
    else
        [[ -e $SB/usr/lib/python3.11/test/$name.py || -d $SB/usr/lib/python3.11/test/$name ]] ||
            { printf "%-${w}s (not in the sysroot)\n" "$name"; n_missing=$((n_missing + 1)); continue; }
        # QEMU_LD_PREFIX: the tests' child python3s run under qemu through the host's binfmt
        # handler, which knows no -L; armada reads it too (as -L's default), and so both guests
        # see the same environment
        run "$f.qemu.log" env QEMU_LD_PREFIX="$SB" "$qemu" -L "$SB" "$SB/usr/bin/python3" -m test -v "$name"
        q=$outcome qrc=$rc
        run "$f.armada.log" env QEMU_LD_PREFIX="$SB" "$armada" run ${extra[@]+"${extra[@]}"} -L "$SB" \
            "$SB/usr/bin/python3" -m test -v "$name"
    fi
    a=$outcome
    verdicts "$s" "$f.qemu.log" >"$f.qemu.verdicts"
    verdicts "$s" "$f.armada.log" >"$f.armada.verdicts"
    # every test either side reported; "-" where one side has none
    LC_ALL=C join -a1 -a2 -e - -o 0,1.2,2.2 "$f.qemu.verdicts" "$f.armada.verdicts" |
        awk '$2 != $3 { print $1, "qemu=" $2, "armada=" $3 }' >"$f.differ"
    same=$(LC_ALL=C join "$f.qemu.verdicts" "$f.armada.verdicts" | awk '$2 == $3' | wc -l)
    nd=$(wc -l <"$f.differ")
    printf "%-${w}s %-22s %-22s %6d %6d\n" "$name" "$q" "$a" "$same" "$nd"
    head -n 10 "$f.differ" | sed 's/^/    /'
    ((nd <= 10)) || echo "    ... and $((nd - 10)) more in $f.differ"
    n_rows=$((n_rows + 1)) t_same=$((t_same + same)) t_diff=$((t_diff + nd))
    ((nd)) || n_agree=$((n_agree + 1))
    [[ $qrc != "$rc" ]] || n_rc=$((n_rc + 1))
done
echo "total: $n_agree of $n_rows with every verdict the same ($n_rc with the same exit status);" \
    "tests: $t_same same, $t_diff differ (raw outputs in $out)"
if ((strict)) && ((t_diff || n_missing || n_rows == 0)); then
    echo "peer-suites: --strict: $t_diff tests differ, $n_missing rows did not run" >&2
    exit 1
fi
