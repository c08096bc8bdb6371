#!/usr/bin/env bash
# Every check and benchmark of a GPU engine, on a GPU machine, from prebuilt binaries (the
# machine needs no Rust and no internet). Build the bundle first, where Rust is:
#
#   scripts/gpu-bundle.sh                      # -> .gpu/ (armada, gpu_suite, guest.tar.xz, qemu)
#   scripts/gpu-check.sh [.gpu]                # on the GPU machine: the CUDA engine
#   BACKEND=wgpu scripts/gpu-check.sh [.gpu]   # the wgpu engine (Vulkan there)
#
# Sections (GPU_CHECK=env,speed,suite,risu,batch,threads,threadspeed,processes,scripts,python,memcheck,qemu,busybox,resident,fuzz,fuzzdyn,scaling,cpu,devices;
# default all; memcheck is CUDA's compute-sanitizer and runs for BACKEND=cuda only):
#   env       device, first start (NVRTC compile) and second start (disk cache)
#   suite     every guest program as one multi-program batch, each lane compared with the CPU
#             engine (exit, stdout, stderr, instructions); busybox and bash commands too
#   risu      the random-instruction programs of every class, output compared with qemu's
#   batch     `armada batch --check`: per-lane inputs ({lane} arguments, --stdin-dir) compared
#             with the CPU engine lane for lane
#   threads   guest threads: every program of the threads suite (pthreads, C++, Go) as a
#             --check batch of THREAD_LANES lanes, compared lane for lane with the CPU engine
#   threadspeed  GO_LANES lanes of a Go program (goroutines, channels) and of threads_compute
#             vs qemu-aarch64 on every core (qemu timed on a share, scaled; outputs compared);
#             the Go program again from a snapshot at main.main (its runtime's start once)
#   processes every program of the processes suite (fork, vfork, exec, wait, pipes, signals
#             between processes) as a --check batch of PROC_LANES lanes
#   scripts   Debian's dynamically linked programs from the bundle's sysroot: a dash script
#             (pipeline, $(...), coreutils exec'd), python3 with subprocess, sqlite3, each a
#             --check batch of SCRIPT_LANES lanes; then SCRIPT_SPEED_LANES lanes of a dash
#             script that forks (pipeline, $(...)), SQLITE_LANES of sqlite3 :memory: and
#             PY_LANES lanes of python3 -c, each vs qemu-aarch64 on every core; the same
#             SQL and forking script on each lane's stdin from a snapshot at input
#             (SNAP_SQLITE_LANES, SNAP_SCRIPT_LANES; qemu runs them whole); and one
#             --commands batch of MIXED_LANES lanes of 9 programs, checked lane for lane
#   python    python3 from a snapshot at input, each lane its own script on stdin: a --check
#             batch of PYCHECK_LANES, then PYSNAP_LANES lanes (memory a lane, the most lanes
#             resident) vs qemu-aarch64 running each script from the start on every core
#   memcheck  compute-sanitizer --tool memcheck on a representative batch
#   speed     one lane on a tight integer loop; 65,536+ lanes of a compute-bound program
#   qemu      65,536 short runs vs qemu-aarch64 on every core (qemu timed on a share, scaled)
#   busybox   65,536 lanes of busybox sha256sum, each on its own 4 KiB input, vs qemu
#   resident  the most busybox lanes resident at once, and guest memory per lane
#   fuzz      snapshot fan-out: LANES short runs from the entry, from main and from the first
#             read of stdin (checked against full runs and the CPU engine), vs qemu-aarch64 on
#             every core; batch --coverage --check (device maps = CPU maps); `armada fuzz` on
#             every core and on the GPU (FUZZ_LANES, FUZZ_TIME) per planted bug (execs/s, time
#             to it) vs qemu-aarch64 running one process per input (xargs -P cores);
#             scripts/fuzz-bench.sh gives the execs/s table of docs/performance.md
#   fuzzdyn   `armada fuzz` of dynamically linked targets (-L the bundle's sysroot): one
#             inflating its input with Debian's zlib, one splitting it between two threads;
#             each on every core and on the GPU (FUZZ_LANES): execs/s over FUZZDYN_TIME
#             seconds, then the time to its planted bug (at most FUZZDYN_FIND_TIME, 120 s); a --check batch
#             of each target's corpus from a snapshot at input
#   scaling   the CPU engine's fuzzer and batches over the host's cores (issue 53): `armada
#             fuzz` of planted-bug targets for SCALE_TIME seconds and 10,000 `hello` lanes of
#             `armada batch`, each on 1 core and on all (taskset), and the ratio; then
#             `armada fuzz --backend` of the recursive parser: its bugs bucketed once
#   cpu       the CPU engine on this host: `armada bench` of the compute-bound programs on the
#             translation tier and on the interpreter, each against qemu-aarch64 in the same run
#   devices   every GPU of the host (`--devices all`) against the first alone, in the same run:
#             LANES lanes a GPU of a compute-bound program, and LANES busybox sha256sum lanes;
#             the two runs' JSON lines must be identical (a host with one GPU: skipped, said)
# Logs go to $OUT (the device tool's folder) or /tmp/armada-gpu-check; the summary is last.
set -u
bundle=${1:-.gpu}
sections=${GPU_CHECK:-env,speed,suite,risu,batch,threads,threadspeed,processes,scripts,python,memcheck,qemu,busybox,resident,fuzz,fuzzdyn,scaling,cpu,devices}
B=${BACKEND:-cuda}
export ARMADA_BACKEND=$B
# lanes of the aggregate, short-run and busybox batches (wgpu spreads lanes' pages over as
# many frame buffers as the adapter binds, so it runs as many as CUDA)
LANES=${LANES:-65536}
want() { [[ ",$sections," == *",$1,"* ]]; }
log=${OUT:-/tmp/armada-gpu-check}
mkdir -p "$log"
work=$(mktemp -d /tmp/armada-gpu.XXXXXX)
A=$bundle/armada
export ARMADA_CACHE_DIR=$work/cache
summary=()
note() {
    summary+=("$*")
    echo "== $*"
}
secs() { python3 -c "import time; print('%.3f' % time.time())"; }
elapsed() { python3 -c "print('%.2f' % ($2 - $1))"; }
# the figure after "= " in the summary line of armada batch
rate_of() { grep -o '= [0-9.]* [kMGT]\?instructions/s' "$1" | tail -1 | sed 's/= //'; }
stat_of() { grep -o "$2: [^,]*" "$1" | tail -1 | sed "s/$2: //"; }

# differing JSONL PREFIX N: how many of the first N lanes of an `armada batch --out` file
# printed other than qemu's $work/PREFIX<lane>.out
differing() {
    python3 - "$1" "$work/$2" "$3" <<'EOF'
import json, sys
bad = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["lane"] >= int(sys.argv[3]):
        break
    if open(f"{sys.argv[2]}{r['lane']}.out").read() != r["stdout"]:
        bad += 1
print(bad)
EOF
}

# check_one SECTION NAME LANES TIMEOUT LOG ARGS...: `armada batch --check` of LANES lanes of
# ARGS (options, program, its arguments); counts NAME in $pass when every lane is identical
# to the CPU engine, else adds it to $fail
check_one() {
    local section=$1 name=$2 n=$3 limit=$4 out=$5 t0
    shift 5
    t0=$(secs)
    timeout "$limit" $A batch --backend $B --check --no-progress --lanes "$n" "$@" >/dev/null 2>"$out"
    echo "$section: $name $(elapsed $t0 "$(secs)") s: $(grep -o 'check: .*identical' "$out")"
    if grep -q "check: $n of $n lanes identical" "$out"; then
        pass=$((pass + 1))
    else
        fail+=("$name")
    fi
}
# speed_vs_qemu LABEL LANES SHARE NAME PROGRAM ARGS...: LANES lanes of PROGRAM ARGS (with the
# sysroot $S as -L; '{lane}' is the lane's number) on armada, then SHARE of the runs on
# qemu-aarch64 on every core, scaled to LANES; their outputs compared (logs: $log/NAME.*)
speed_vs_qemu() {
    local label=$1 n=$2 share=$3 name=$4
    shift 4
    local t0 rc armada_s q_s
    t0=$(secs)
    timeout 600 $A batch --backend $B --lanes "$n" --out "$log/$name.jsonl" -L "$S" "$@" >/dev/null 2>"$log/$name.txt"
    rc=$?
    armada_s=$(elapsed $t0 "$(secs)")
    note "scripts: armada $B, $n runs of $label (rc=$rc): $armada_s s wall: $(grep -o '[0-9]* instructions in [0-9.]* s = [0-9.]* [kMGT]\?instructions/s' "$log/$name.txt"); stops $(stat_of "$log/$name.txt" 'stops'); device frames peak $(stat_of "$log/$name.txt" 'device frames peak'); pages up $(stat_of "$log/$name.txt" 'pages up')"
    [[ -n $Q ]] || return 0
    local qargs=("${@//\{lane\}/{\}}")
    t0=$(secs)
    seq 0 $((share - 1)) | xargs -P "$cores" -I{} sh -c 'o=$1; shift; "$@" >"$o"' sh "$work/$name{}.out" "$Q" -L "$S" "${qargs[@]}"
    q_s=$(elapsed $t0 "$(secs)")
    note "scripts: qemu-aarch64 on $cores cores, $share runs of $label: $q_s s -> $(python3 -c "print('%.1f' % ($q_s * $n / $share))") s for $n; armada $B $(python3 -c "print('%.1f' % ($q_s * $n / $share / $armada_s))")x faster; outputs differing from qemu: $(differing "$log/$name.jsonl" "$name" "$share")"
}

# speed_vs_qemu_stdin LABEL N SHARE NAME DIR ARGS...: as speed_vs_qemu, each lane's input
# DIR/<lane> on stdin and armada's lanes started from a snapshot at `input` (the program's
# first read of it: the dynamic loader's and the program's own start run once a batch);
# qemu-aarch64 runs `ARGS < DIR/<i>` whole, as a user without snapshots would
speed_vs_qemu_stdin() {
    local label=$1 n=$2 share=$3 name=$4 dir=$5
    shift 5
    local t0 rc armada_s q_s
    t0=$(secs)
    timeout 600 $A batch --backend $B --lanes "$n" --snapshot-at input --stdin-dir "$dir" --out "$log/$name.jsonl" -L "$S" "$@" >/dev/null 2>"$log/$name.txt"
    rc=$?
    armada_s=$(elapsed $t0 "$(secs)")
    note "scripts: armada $B, $n runs of $label from a snapshot at input (rc=$rc): $armada_s s wall: $(grep -o '[0-9]* instructions in [0-9.]* s = [0-9.]* [kMGT]\?instructions/s' "$log/$name.txt"); snapshot $(grep -o 'after [0-9]* instructions' "$log/$name.txt"); stops $(stat_of "$log/$name.txt" 'stops'); device frames peak $(stat_of "$log/$name.txt" 'device frames peak'); kernel $(stat_of "$log/$name.txt" 'kernel s') s, service $(stat_of "$log/$name.txt" 'service s') s, apply $(stat_of "$log/$name.txt" 'page-table apply s') s, transfer $(stat_of "$log/$name.txt" 'transfer s') s"
    [[ -n $Q ]] || return 0
    t0=$(secs)
    seq 0 $((share - 1)) | xargs -P "$cores" -I{} sh -c 'o=$1; i=$2; shift 2; "$@" <"$i" >"$o"' sh "$work/$name{}.out" "$dir/{}" "$Q" -L "$S" "$@"
    q_s=$(elapsed $t0 "$(secs)")
    note "scripts: qemu-aarch64 on $cores cores, $share runs of $label (whole, input on stdin): $q_s s -> $(python3 -c "print('%.1f' % ($q_s * $n / $share))") s for $n; armada $B $(python3 -c "print('%.1f' % ($q_s * $n / $share / $armada_s))")x faster; outputs differing from qemu: $(differing "$log/$name.jsonl" "$name" "$share")"
}

[[ -x $A ]] || { echo "no $A: build the bundle with scripts/gpu-bundle.sh and carry it"; exit 2; }
# the wgpu engine: the Vulkan loader the bundle carries, and NVIDIA's headless (EGL) driver
# entry where the machine has it and no ICD was chosen (see gpu-bundle.sh)
if [[ -e $bundle/libvulkan.so.1 ]]; then
    export LD_LIBRARY_PATH=$(cd "$bundle" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [[ -z ${VK_ICD_FILENAMES:-} && -e $bundle/nvidia_egl_icd.json ]] && ldconfig -p | grep -q libEGL_nvidia.so.0; then
    export VK_ICD_FILENAMES=$(cd "$bundle" && pwd)/nvidia_egl_icd.json
fi
tar -C "$work" -xJf "$bundle/guest.tar.xz"
G=$work/guest
BB=$G/busybox
Q=""
if [[ -e $bundle/qemu-aarch64.xz ]]; then
    xz -dc "$bundle/qemu-aarch64.xz" >"$work/qemu-aarch64" && chmod +x "$work/qemu-aarch64" && Q=$work/qemu-aarch64
fi
cores=$(nproc)
# inputs DIR N: files DIR/0 .. DIR/N-1 of 4 KiB each, file i its number repeated
inputs() {
    mkdir -p "$1"
    python3 - "$1" "$2" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, str(i)), "wb") as f:
        f.write(i.to_bytes(4, "little") * 1024)
EOF
}

# ------------------------------------------------------------------------------------ env
if want env; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
    t0=$(secs)
    $A run --backend $B "$G/hello" >"$log/first.out" 2>"$log/first.err"
    rc=$?
    t1=$(secs)
    $A run --backend $B "$G/hello" >/dev/null 2>&1
    t2=$(secs)
    note "env: first start (compile) $(elapsed $t0 $t1) s, second start (cached) $(elapsed $t1 $t2) s, hello rc=$rc: $(head -c 40 "$log/first.out")"
    cat "$log/first.err"
    # a dynamically linked program whose interpreter this machine lacks (no -L: the bundle's
    # sysroot is unpacked later) ends clearly (status 125), as on the CPU engine, never hangs
    for p in dynamic_argv_env; do
        set -- $p
        [[ -e $G/$1 ]] || continue
        timeout 120 $A run --backend $B "$G/$1" "${@:2}" >/dev/null 2>"$log/refuse-$1.err"
        note "env: $1 on $B: rc=$? ($(tail -1 "$log/refuse-$1.err" | cut -c1-150))"
    done
    # a program that forks (a shell pipeline), in run and in batch: rc=0 (the `processes`
    # section compares such lanes with the CPU engine)
    if [[ -e $G/busybox ]]; then
        timeout 120 $A run --backend $B "$G/busybox" sh -c 'echo hi | cat' >/dev/null 2>"$log/fork.err"
        note "env: busybox sh pipeline on $B: rc=$? ($(tail -1 "$log/fork.err" | cut -c1-150))"
        timeout 300 $A batch --backend $B --lanes 64 "$G/busybox" sh -c 'echo {lane} | cat' >/dev/null 2>"$log/fork-batch.err"
        note "env: 64-lane batch of a pipeline on $B: rc=$? ($(grep -m1 -i 'error\|not run' "$log/fork-batch.err" | cut -c1-150))"
    fi
fi

# ---------------------------------------------------------------------------------- speed
# instructions and kernel seconds of an `armada batch` log -> "N instr, wall W/s, kernel K/s"
rates() {
    python3 - "$1" <<'EOF2'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"; (\d+) instructions in ([0-9.]+) s", t)
k = re.search(r"kernel s: ([0-9.]+)", t)
g = lambda x: "%.3g G" % (x / 1e9) if x >= 1e9 else "%.3g M" % (x / 1e6)
if not m:
    print("no result (see log)")
else:
    n, w = int(m.group(1)), float(m.group(2))
    out = f"{n} instructions: wall {w:.2f} s = {g(n / w)}instr/s"
    if k:
        ks = float(k.group(1))
        out += f"; kernel {ks:.3f} s = {g(n / max(ks, 1e-9))}instr/s"
    print(out)
EOF2
}
if want speed; then
    n=${TIGHT_ITERS:-20000000}
    $A batch --backend cpu --lanes 1 "$G/tightloop" "$n" >/dev/null 2>"$log/tight1cpu.txt"
    note "speed: 1 lane tight loop ($n iterations) on the CPU engine: $(rates "$log/tight1cpu.txt")"
    # VARIANTS: space-separated; each is "default", CUDA defines (-DX,-DY), or environment
    # settings (K=V,K2=V2: ARMADA_WGPU_MINPC=0, ARMADA_GPU_LAZY=0, ARMADA_GPU_FUSED=0, ...)
    variants=${VARIANTS:-default}
    for variant in $variants; do
        venv=()
        export ARMADA_CUDA_DEFINES=
        if [[ $variant == *=* ]]; then
            IFS=, read -ra venv <<<"$variant"
        elif [[ $variant != default ]]; then
            [[ $B == cuda ]] || continue
            export ARMADA_CUDA_DEFINES=${variant//,/ }
        fi
        tag=$B-${variant//[^A-Za-z0-9_-]/_}
        env "${venv[@]}" $A run --backend $B "$G/hello" >/dev/null 2>&1 # compile this variant
        # wgpu builds a pipeline for each count of frame buffers a batch grows into (29-43 s
        # the first time on an H200, `kernel builds s`): a short batch of as many lanes grows
        # into the same ones and builds them before the timed runs
        [[ $B == wgpu ]] && timeout 600 env "${venv[@]}" $A batch --backend $B --lanes $LANES "$G/lanecrc" '{lane}' 1 >/dev/null 2>"$log/build$tag.txt"
        timeout 600 env "${venv[@]}" $A batch --backend $B --lanes 1 "$G/tightloop" "$n" >/dev/null 2>"$log/tight1$tag.txt"
        note "speed [$variant]: 1 lane, tight loop: $(rates "$log/tight1$tag.txt")"
        timeout 600 env "${venv[@]}" $A batch --backend $B --lanes $LANES "$G/lanecrc" '{lane}' "${CRC_ROUNDS:-100}" >/dev/null 2>"$log/agg$tag.txt"
        note "speed [$variant]: $LANES lanes lanecrc {lane} ${CRC_ROUNDS:-100} (table: memory bound): $(rates "$log/agg$tag.txt")"
        timeout 600 env "${venv[@]}" $A batch --backend $B --lanes $LANES "$G/lanecrc" '{lane}' "${BIT_ROUNDS:-16}" bit >/dev/null 2>"$log/aggbit$tag.txt"
        note "speed [$variant]: $LANES lanes lanecrc {lane} ${BIT_ROUNDS:-16} bit (bitwise: compute bound): $(rates "$log/aggbit$tag.txt")"
        timeout 600 env "${venv[@]}" $A batch --backend $B --lanes $LANES "$G/tightloop" 20000 >/dev/null 2>"$log/tightshort$tag.txt"
        note "speed [$variant]: $LANES lanes tight loop 20000: $(rates "$log/tightshort$tag.txt") ($(grep -o 'launches: [0-9]*' "$log/tightshort$tag.txt" | tail -1))"
    done
    export ARMADA_CUDA_DEFINES=${BEST_DEFINES:-}
    # sustained: long enough that start-up and the lanes' first syscalls (host work, see the
    # short runs) weigh little against the kernel's rate (SUSTAIN_ROUNDS=0 skips it)
    r=${SUSTAIN_ROUNDS:-400}
    if [[ $r != 0 ]]; then
        timeout 600 $A batch --backend $B --lanes $LANES "$G/lanecrc" '{lane}' "$r" bit >/dev/null 2>"$log/sustain.txt"
        note "speed: $LANES lanes lanecrc {lane} $r bit (sustained): $(rates "$log/sustain.txt")"
    fi
    # more lanes (MORE="LANES ROUNDS,..."; MORE=none skips them)
    more=${MORE:-"131072 50,262144 25"}
    [[ $B == cuda && $more != none ]] || more=""
    IFS=, read -ra specs <<<"$more"
    for spec in "${specs[@]}"; do
        set -- $spec
        timeout 600 $A batch --backend $B --lanes "$1" --out "$log/agg$1.jsonl" "$G/lanecrc" '{lane}' "$2" >/dev/null 2>"$log/agg$1.txt"
        note "speed: $1 lanes lanecrc {lane} $2: $(rates "$log/agg$1.txt")"
    done
    [[ -e $log/agg131072.jsonl ]] && head -1 "$log/agg131072.jsonl" | cut -c1-200
    for iters in 20000 ${TIGHT_MANY_ITERS:-500000}; do
        timeout 600 $A batch --backend $B --lanes $LANES "$G/tightloop" $iters >/dev/null 2>"$log/tight64k-$iters.txt"
        note "speed: $LANES lanes tight loop $iters: $(rates "$log/tight64k-$iters.txt")"
    done
    grep -o "pages synced down: [^,]*, pages up: [^,]*" "$log/agg131072.txt" | head -1
fi

# ---------------------------------------------------------------------------------- suite
if want suite; then
    man=$work/manifest
    while read -r bin _; do
        case $bin in
        crc32) echo "$G/$bin 1" ;;
        sort_bench) echo "$G/$bin 20000" ;;
        matmul) echo "$G/$bin 40" ;;
        tightloop) echo "$G/$bin 100000" ;;
        lanecrc) echo "x 16 $G/$bin {lane} 3" ;;
        threads_compute) echo "$G/$bin 4 1" ;;
        *) echo "$G/$bin" ;;
        esac
    done <"$G/programs.list" >"$man"
    if [[ -x $BB ]]; then
        cat >>"$man" <<EOF
$BB echo hello from busybox
$BB seq 1 1000
$BB sha256sum $BB
$BB md5sum /etc/passwd
$BB sort /etc/passwd
$BB wc -l /etc/passwd
$BB awk BEGIN{s=0;for(i=0;i<100000;i++)s+=i*i;print(s)}
$BB factor 1234567 9876543210
$BB expr 6 * 7
$BB ls /
$BB sed s/root/ROOT/ /etc/passwd
$BB grep -c : /etc/passwd
$BB od -x $G/hello
EOF
    fi
    if [[ -x $G/bash ]]; then
        # bash scripts as files: the manifest splits arguments at spaces
        mkdir -p "$work/sh"
        printf '%s\n' 's=0; for ((i=1;i<=2000;i++)); do ((s+=i*i)); done; echo $s' >"$work/sh/loop.sh"
        printf '%s\n' 'declare -A m=([x]=1 [y]=2); m[zz]=3; ((m[x]+=10)); for k in x y zz; do echo $k=${m[$k]}; done' >"$work/sh/assoc.sh"
        printf '%s\n' 'x=banana; echo ${x//a/b} ${x/a/o} ${x^^} ${x:2:3} ${#x} ${x%%n*} ${x##*n}' >"$work/sh/subst.sh"
        printf '%s\n' 'fib() { local n=$1; if (( n < 2 )); then ret=$n; return; fi; fib $((n-1)); local a=$ret; fib $((n-2)); ret=$((a+ret)); }; fib 16; echo $ret' >"$work/sh/fib.sh"
        printf '%s\n' 'printf -v v "%05.1f|%x|%s" 3.14159 255 hi; echo "$v"; echo {a..e} {1..10..3}; echo $(( 2**62 )) $(( -7 / 2 ))' >"$work/sh/printf.sh"
        for f in "$work"/sh/*.sh; do echo "$G/bash $f"; done >>"$man"
    fi
    t0=$(secs)
    timeout "${SUITE_TIMEOUT:-900}" "$bundle/gpu_suite" "$man" "${SUITE_MAX:-400000000}" >"$log/suite.txt" 2>&1
    rc=$?
    t1=$(secs)
    grep -E "^(FAIL|SKIP)" "$log/suite.txt" | head -20
    note "suite (rc=$rc, $(elapsed $t0 $t1) s): $(grep '^suite:' "$log/suite.txt")"
    grep -E "^  (stops|host-step ops|kernel s|launches)" "$log/suite.txt"
fi

# ----------------------------------------------------------------------------------- risu
if want risu && [[ -d $G/risu ]]; then
    pass=0 fail=0 failed=""
    for e in "$G"/risu/*.expected; do
        prog=${e%.expected}
        timeout 300 $A run --backend $B "$prog" >"$work/risu.out" 2>"$work/risu.err"
        if cmp -s "$work/risu.out" "$e"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            failed="$failed $(basename "$prog")"
            head -3 "$work/risu.err"
        fi
    done
    note "risu: $pass classes identical to qemu-aarch64, $fail differ${failed:+:$failed}"
fi

# ---------------------------------------------------------------------------------- batch
if want batch; then
    timeout 600 $A batch --backend $B --check --lanes 4096 --out "$log/lanes.jsonl" "$G/lanecrc" '{lane}' 5 >/dev/null 2>"$log/batch1.txt"
    rc=$?
    note "batch {lane} x4096 (rc=$rc): $(grep 'check:' "$log/batch1.txt" | sed 's/armada batch: //')"
    mkdir -p "$work/stdin"
    python3 - "$work/stdin" <<'EOF'
import os, sys, random
d = sys.argv[1]
for i in range(1024):
    r = random.Random(i)
    open(os.path.join(d, str(i)), "w").write(" ".join(str(r.randint(-1000, 1000)) for _ in range(r.randint(0, 200))) + "\n")
EOF
    timeout 600 $A batch --backend $B --check --lanes 1024 --stdin-dir "$work/stdin" "$G/stdin_sum" >/dev/null 2>"$log/batch2.txt"
    rc=$?
    note "batch --stdin-dir x1024 stdin_sum (rc=$rc): $(grep 'check:' "$log/batch2.txt" | sed 's/armada batch: //')"
    if [[ -x $BB ]]; then
        timeout 600 $A batch --backend $B --check --lanes 1024 --stdin-dir "$work/stdin" "$BB" sha256sum >/dev/null 2>"$log/batch3.txt"
        rc=$?
        note "batch --stdin-dir x1024 busybox sha256sum (rc=$rc): $(grep 'check:' "$log/batch3.txt" | sed 's/armada batch: //')"
    fi
    # a lane over its memory cap faults alone; the others finish
    timeout 300 $A batch --backend $B --check --lane-memory 256K --lanes 64 "$G/malloc_test" >/dev/null 2>"$log/batch4.txt"
    rc=$?
    note "batch --lane-memory 256K malloc_test x64 (rc=$rc): $(grep -o '[0-9]* exited 0.*signal' "$log/batch4.txt" | head -1); $(grep 'check:' "$log/batch4.txt" | sed 's/armada batch: //')"
    # sockets and System V IPC, host-serviced: every lane binds TCP port 8080 of its own
    # network, and its IPC keys and ids are its own
    if [[ -x $G/ipc_sockets ]]; then
        timeout 300 $A batch --backend $B --check --lanes 4096 --out "$log/ipc.jsonl" "$G/ipc_sockets" 8080 >/dev/null 2>"$log/batch5.txt"
        rc=$?
        note "batch ipc_sockets 8080 x4096 (rc=$rc): $(grep -o '[0-9]* exited 0' "$log/batch5.txt" | head -1); $(grep 'check:' "$log/batch5.txt" | sed 's/armada batch: //')"
    fi
    # every lane of a full-size batch (LANES) against the CPU engine: lanecrc, and busybox
    # sha256sum each on its own 4 KiB stdin (the CPU engine's side takes most of the time)
    timeout 600 $A batch --backend $B --check --lanes $LANES "$G/lanecrc" '{lane}' 5 >/dev/null 2>"$log/batch6.txt"
    rc=$?
    note "batch {lane} x$LANES lanecrc (rc=$rc): $(grep 'check:' "$log/batch6.txt" | sed 's/armada batch: //'); device frames peak $(stat_of "$log/batch6.txt" 'device frames peak')"
    if [[ -x $BB ]]; then
        inputs "$work/in" $LANES
        timeout 600 $A batch --backend $B --check --lanes $LANES --stdin-dir "$work/in" "$BB" sha256sum >/dev/null 2>"$log/batch7.txt"
        rc=$?
        note "batch --stdin-dir x$LANES busybox sha256sum (rc=$rc): $(grep 'check:' "$log/batch7.txt" | sed 's/armada batch: //'); device frames peak $(stat_of "$log/batch7.txt" 'device frames peak')"
    fi
fi

# -------------------------------------------------------------------------------- threads
if want threads && [[ -d $G/threads ]]; then
    T=$G/threads
    tl=${THREAD_LANES:-256}
    pass=0
    fail=()
    while read -r bin _; do
        # (THREAD_ONLY="a b": only those)
        [[ -n ${THREAD_ONLY:-} && " $THREAD_ONLY " != *" $bin "* ]] && continue
        args=()
        case $bin in
        create1000 | go_nethttp | go_exec | deadlock_*) continue ;; # below, or another section's
        cancel) args=(sleep) ;;
        thread_signals) args=(pthread_kill) ;;
        thread_exit) args=(segv) ;;
        esac
        check_one threads "$bin" "$tl" "${THREAD_TIMEOUT:-600}" "$log/thr-$bin.txt" "$T/$bin" "${args[@]}"
    done <"$T/programs.list"
    note "threads: $pass programs x$tl lanes identical to the CPU engine; differing or failed: ${fail[*]:-none}"
    # (go_nethttp makes a directory under /tmp for its Unix socket: lanes that share the
    # host's /tmp and run at once can pick the same name, and its retry changes their
    # instruction counts on any engine, so each lane gets a root of its own)
    for l in $(seq 0 63); do mkdir -p "$work/roots/$l/tmp"; done
    for bin in deadlock_mutex go_nethttp create1000; do
        [[ -x $T/$bin ]] || continue
        root=()
        [[ $bin == go_nethttp ]] && root=(--root "$work/roots/{lane}")
        timeout "${THREAD_TIMEOUT:-600}" $A batch --backend $B --check --no-progress --lanes 64 "${root[@]}" "$T/$bin" >/dev/null 2>"$log/thr-$bin.txt"
        note "threads: $bin x64 (rc=$?): $(grep 'check:' "$log/thr-$bin.txt" | sed 's/armada batch: //')"
    done
fi
if want threadspeed && [[ -d $G/threads ]]; then
    T=$G/threads
    # speed against qemu: GO_LANES lanes of a Go program and of a pthreads program
    gl=${GO_LANES:-16384}
    share=${QEMU_SHARE_THREADS:-1024}
    for prog in "go_channels" "threads_compute 4 1"; do
        set -- $prog
        p=$T/$1
        [[ $1 == threads_compute ]] && p=$G/$1
        t0=$(secs)
        timeout 600 $A batch --backend $B --lanes "$gl" --out "$log/thr-speed-$1.jsonl" "$p" "${@:2}" >/dev/null 2>"$log/thr-speed-$1.txt"
        rc=$?
        t1=$(secs)
        armada_s=$(elapsed $t0 $t1)
        note "threads: armada $B, $gl runs of $prog (rc=$rc): $armada_s s wall: $(grep -o '[0-9]* instructions in [0-9.]* s = [0-9.]* [kMGT]\?instructions/s' "$log/thr-speed-$1.txt"); stops $(stat_of "$log/thr-speed-$1.txt" 'stops')"
        if [[ -n $Q ]]; then
            t0=$(secs)
            seq 0 $((share - 1)) | xargs -P "$cores" -I{} sh -c "$Q $p ${*:2} > $work/t{}.out"
            t1=$(secs)
            q_s=$(elapsed $t0 $t1)
            bad=$(differing "$log/thr-speed-$1.jsonl" t "$share")
            note "threads: qemu-aarch64 on $cores cores, $share runs of $prog: $q_s s -> $(python3 -c "print('%.1f' % ($q_s * $gl / $share))") s for $gl; armada $B $(python3 -c "print('%.1f' % ($q_s * $gl / $share / $armada_s))")x faster; outputs differing from qemu: $bad"
        fi
        [[ $1 == go_channels ]] || continue
        # The same Go program from a snapshot at main.main: the Go runtime's start (its
        # signal handlers, heap and threads: about 150 of a lane's 220 syscall stops on the
        # simulator) runs once a batch; qemu's runs above are whole, as before
        timeout 300 $A batch --backend $B --check --lanes 64 --snapshot-at main.main "$p" >/dev/null 2>"$log/thr-snap-check.txt"
        note "threads: go_channels from a snapshot at main.main, --check x64 (rc=$?): $(grep -o 'check:.*' "$log/thr-snap-check.txt")"
        t0=$(secs)
        timeout 600 $A batch --backend $B --lanes "$gl" --snapshot-at main.main --out "$log/thr-snap.jsonl" "$p" >/dev/null 2>"$log/thr-snap.txt"
        rc=$?
        t1=$(secs)
        snap_s=$(elapsed $t0 $t1)
        note "threads: armada $B, $gl runs of go_channels from a snapshot at main.main (rc=$rc): $snap_s s wall; stops $(stat_of "$log/thr-snap.txt" 'stops')"
        if [[ -n $Q ]]; then
            note "threads: go_channels from the snapshot $(python3 -c "print('%.1f' % ($q_s * $gl / $share / $snap_s))")x qemu-aarch64's whole runs; outputs differing from qemu: $(differing "$log/thr-snap.jsonl" t "$share")"
        fi
    done
fi

# ------------------------------------------------------------------------------ processes
if want processes && [[ -d $G/processes ]]; then
    P=$G/processes
    pl=${PROC_LANES:-256}
    pass=0
    fail=()
    for l in $(seq 0 $((pl - 1))); do mkdir -p "$work/proots/$l/tmp"; done
    while read -r bin _; do
        args=()
        case $bin in
        fd_offset | socketpair) args=(--root "$work/proots/{lane}") ;; # they write files: a root a lane
        forkcap) args=(--max-processes 40) ;;
        esac
        extra=()
        [[ $bin == fork_big ]] && extra=(8 4)
        check_one processes "$bin" "$pl" "${PROC_TIMEOUT:-600}" "$log/proc-$bin.txt" "${args[@]}" "$P/$bin" "${extra[@]}"
    done <"$P/programs.list"
    note "processes: $pass programs x$pl lanes identical to the CPU engine; differing or failed: ${fail[*]:-none}"
fi

# -------------------------------------------------------------------------------- scripts
if want scripts && [[ -e $bundle/sysroot.tar.xz ]]; then
    tar -C "$work" -xJf "$bundle/sysroot.tar.xz"
    S=$work/sysroot
    sl=${SCRIPT_LANES:-1024}
    script='x=$(echo lane-$1 | tr a-z A-Z); echo "$x"; printf "c\na\nb\n" | sort | head -2; for i in 1 2 3; do echo $i; done | wc -l'
    timeout 600 $A batch --backend $B --check --no-progress --lanes "$sl" -L "$S" "$S/bin/dash" -c "$script" sh '{lane}' >/dev/null 2>"$log/scr-dash.txt"
    note "scripts: dash pipeline + \$(...) + coreutils x$sl (rc=$?): $(grep 'check:' "$log/scr-dash.txt" | sed 's/armada batch: //'); $(grep -o '[0-9]* instructions in [0-9.]* s' "$log/scr-dash.txt")"
    code='import subprocess, json; print(json.dumps(subprocess.run(["echo", "hi"], capture_output=True).stdout.decode()))'
    timeout 600 $A batch --backend $B --check --no-progress --lanes 64 -L "$S" "$S/usr/bin/python3" -c "$code" >/dev/null 2>"$log/scr-python.txt"
    note "scripts: python3 subprocess x64 (rc=$?): $(grep 'check:' "$log/scr-python.txt" | sed 's/armada batch: //')"
    timeout 600 $A batch --backend $B --check --no-progress --lanes "$sl" -L "$S" "$S/usr/bin/sqlite3" :memory: 'create table t(a); insert into t values ({lane}), (2); select sum(a) from t;' >/dev/null 2>"$log/scr-sqlite.txt"
    note "scripts: sqlite3 :memory: x$sl (rc=$?): $(grep 'check:' "$log/scr-sqlite.txt" | sed 's/armada batch: //')"
    # speed: a script that forks (pipelines, command substitution) on builtins only, so that
    # qemu-aarch64 (which cannot exec a guest program without binfmt_misc) runs it too
    fs=$(python3 "$(dirname "${BASH_SOURCE[0]}")/gpu-inputs.py" dash-script)
    speed_vs_qemu "a forking dash script" "${SCRIPT_SPEED_LANES:-16384}" "${QEMU_SHARE_SCRIPTS:-1024}" scr-speed "$S/bin/dash" -c "$fs" sh '{lane}'
    # SQLITE_LANES lanes of sqlite3 :memory:, each its own SQL (the lane's number in it)
    sq='create table t(a, b); insert into t select value, value * {lane} from generate_series(1, 200); select count(*), sum(b), max(a * b) from t where a % 7 = {lane} % 7;'
    speed_vs_qemu "sqlite3 :memory:" "${SQLITE_LANES:-16384}" "${QEMU_SHARE_SQLITE:-1024}" scr-sqlite-speed "$S/usr/bin/sqlite3" :memory: "$sq"
    # the same SQL and the forking script, each lane's on its stdin, from a snapshot at input
    # (SNAP_SQLITE_LANES, SNAP_SCRIPT_LANES; 0 leaves one out)
    python3 - "$work/sqin" "${SNAP_SQLITE_LANES:-65536}" "$sq" "$work/shin" "${SNAP_SCRIPT_LANES:-65536}" "$fs" <<'EOF'
import os, sys
for d, n, text in ((sys.argv[1], int(sys.argv[2]), sys.argv[3]), (sys.argv[4], int(sys.argv[5]), sys.argv[6])):
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        with open(f"{d}/{i}", "w") as f:
            f.write(text.replace("{lane}", str(i)).replace("$1", str(i)) + "\n")
EOF
    if ((${SNAP_SQLITE_LANES:-65536} > 0)); then
        speed_vs_qemu_stdin "sqlite3 :memory: (SQL on stdin)" "${SNAP_SQLITE_LANES:-65536}" "${QEMU_SHARE_SQLITE:-1024}" scr-sqlite-snap "$work/sqin" "$S/usr/bin/sqlite3" :memory:
    fi
    if ((${SNAP_SCRIPT_LANES:-65536} > 0)); then
        speed_vs_qemu_stdin "a forking dash script (on stdin)" "${SNAP_SCRIPT_LANES:-65536}" "${QEMU_SHARE_SCRIPTS:-1024}" scr-dash-snap "$work/shin" "$S/bin/dash"
    fi
    # one batch of several programs (armada batch --commands): static, dynamic, threaded,
    # forking, and lanes that fail alone (past --max-processes, deadlocked, over
    # --lane-memory), each lane against the CPU engine
    if [[ -d $G/threads && -d $G/processes ]]; then
        {
            echo "$G/stdin_sum"
            echo "$G/threads/join"
            echo "$G/threads/go_channels"
            echo "$G/processes/forkcap"
            echo "$G/threads/deadlock_mutex"
            echo "$G/pagetouch 32 1"
            printf '%s -c %q sh {lane}\n' "$S/bin/dash" "$script"
            printf '%s -c %q {lane}\n' "$S/usr/bin/python3" 'import sys, threading; t = threading.Thread(target=print, args=(sys.argv[1],)); t.start(); t.join()'
            printf '%s :memory: %q\n' "$S/usr/bin/sqlite3" 'select {lane} * 3;'
        } >"$work/mixed.commands"
        ml=${MIXED_LANES:-1152}
        mkdir -p "$work/mixed-in"
        for l in $(seq 0 $((ml - 1))); do echo "lane $l" >"$work/mixed-in/$l"; done
        timeout 600 $A batch --backend $B --check --no-progress --lanes "$ml" --commands "$work/mixed.commands" --stdin-dir "$work/mixed-in" -L "$S" --max-processes 8 --lane-memory 24M >/dev/null 2>"$log/scr-mixed.txt"
        note "scripts: one batch of 9 programs (static, dynamic, threads, Go, forks, lanes that fail alone) x$ml (rc=$?): $(grep 'check:' "$log/scr-mixed.txt" | sed 's/armada batch: //'); $(grep -o '[0-9]* instructions in [0-9.]* s' "$log/scr-mixed.txt")"
    fi
    # PY_LANES lanes of python3 (dynamically linked, -L), each running its own expression
    pc='import sys; print(sum(i * i for i in range(int(sys.argv[1]) * 100)))'
    speed_vs_qemu "python3 -c" "${PY_LANES:-4096}" "${QEMU_SHARE_PY:-256}" scr-py "$S/usr/bin/python3" -c "$pc" '{lane}'
fi

# --------------------------------------------------------------------------------- python
# CPython from a snapshot at `input` (its first read of stdin, after its site imports): each
# lane runs a small script of its own from stdin. Checked lane for lane against the CPU
# engine (PYCHECK_LANES), then PYSNAP_LANES lanes (a list: the largest that runs shows the
# most Python lanes resident) against qemu-aarch64 running `python3 < script` on every core
# (timed on QEMU_SHARE_PYSNAP runs and scaled; qemu has no snapshot, so it runs each start).
if want python && [[ -e $bundle/sysroot.tar.xz ]]; then
    [[ -d $work/sysroot ]] || tar -C "$work" -xJf "$bundle/sysroot.tar.xz"
    S=$work/sysroot
    most=0
    for n in ${PYSNAP_LANES:-65536}; do ((n > most)) && most=$n; done
    python3 "$(dirname "${BASH_SOURCE[0]}")/gpu-inputs.py" python "$work/pyin" "$most"
    pass=0 fail=()
    check_one python "python3 from a snapshot" "${PYCHECK_LANES:-256}" 600 "$log/py-check.txt" \
        --snapshot-at input --stdin-dir "$work/pyin" -L "$S" "$S/usr/bin/python3"
    note "python: python3 from a snapshot at input x${PYCHECK_LANES:-256}: $(grep -o 'check: .*identical' "$log/py-check.txt" || tail -2 "$log/py-check.txt")"
    q_s=""
    for n in ${PYSNAP_LANES:-65536}; do
        t0=$(secs)
        timeout 600 $A batch --backend $B --lanes "$n" --snapshot-at input --stdin-dir "$work/pyin" --out "$log/py-$n.jsonl" -L "$S" "$S/usr/bin/python3" >/dev/null 2>"$log/py-$n.txt"
        rc=$?
        armada_s=$(elapsed $t0 "$(secs)")
        peak=$(stat_of "$log/py-$n.txt" 'device frames peak')
        note "python: armada $B, $n lanes from the snapshot (rc=$rc): $armada_s s wall: $(grep -o '[0-9]* exited 0' "$log/py-$n.txt" | head -1); $(grep -o '[0-9]* instructions in [0-9.]* s = [0-9.]* [kMGT]\?instructions/s' "$log/py-$n.txt"); snapshot $(grep -o 'after [0-9]* instructions' "$log/py-$n.txt"); stops $(stat_of "$log/py-$n.txt" 'stops'); frames peak $peak ($(python3 -c "import re,sys; m=re.search(r'\(([0-9]+) MiB', sys.argv[1]); print('%.2f MiB a lane, twice that on the device with the frames\' shadows' % (int(m.group(1)) / $n) if m else '?')" "$peak")), guest frames peak $(stat_of "$log/py-$n.txt" 'guest frames peak'); pages synced down $(stat_of "$log/py-$n.txt" 'pages synced down'); kernel $(stat_of "$log/py-$n.txt" 'kernel s') s, transfer $(stat_of "$log/py-$n.txt" 'transfer s') s, launches $(stat_of "$log/py-$n.txt" 'launches') ($(stat_of "$log/py-$n.txt" 'lanes a launch') lanes a launch); out of memory $(grep -c 'ran out of memory' "$log/py-$n.txt") times; $(grep -o 'slots: [0-9]* lanes at once[^;]*; rounds that left a slot empty for want of memory: [0-9]*' "$log/py-$n.txt" | tail -2 | tr '\n' ' ')"
        if [[ $rc != 0 ]]; then
            grep -i "error\|out of" "$log/py-$n.txt" | head -3
            continue
        fi
        [[ -n $Q ]] || continue
        share=${QEMU_SHARE_PYSNAP:-512}
        if [[ -z $q_s ]]; then
            t0=$(secs)
            seq 0 $((share - 1)) | xargs -P "$cores" -I{} sh -c '"$2" -L "$3" "$3/usr/bin/python3" <"$1/pyin/$4" >"$1/py$4.out"' sh "$work" "$Q" "$S" {}
            q_s=$(elapsed $t0 "$(secs)")
        fi
        note "python: qemu-aarch64 on $cores cores, $share runs of python3 < script: $q_s s -> $(python3 -c "print('%.1f' % ($q_s * $n / $share))") s for $n; armada $B $(python3 -c "print('%.1f' % ($q_s * $n / $share / $armada_s))")x faster; outputs differing from qemu: $(differing "$log/py-$n.jsonl" py "$share")"
    done
fi

# ------------------------------------------------------------------------------- memcheck
if want memcheck && [[ $B == cuda ]]; then
    if command -v compute-sanitizer >/dev/null; then
        timeout 900 compute-sanitizer --tool memcheck --print-limit 20 $A batch --backend $B --lanes 256 "$G/lanecrc" '{lane}' 2 >"$log/memcheck.txt" 2>&1
        rc=$?
        rc2=skipped
        if [[ -x $BB ]]; then
            timeout 900 compute-sanitizer --tool memcheck --print-limit 20 $A batch --backend $B --lanes 16 "$BB" md5sum "$G/hello" >>"$log/memcheck.txt" 2>&1
            rc2=$?
        fi
        # lanes sharing warps: the many-lane build, its min-PC vote and lazy pages
        timeout 900 compute-sanitizer --tool memcheck --print-limit 20 $A batch --backend $B --lanes 4096 "$G/hello" >>"$log/memcheck.txt" 2>&1
        rc3=$?
        note "memcheck (rc=$rc,$rc2,$rc3): $(grep 'ERROR SUMMARY' "$log/memcheck.txt" | tr '\n' ' ')"
    else
        note "memcheck: compute-sanitizer not found"
    fi
fi

# ----------------------------------------------------------------------------------- qemu
if want qemu; then
    lanes=$LANES
    share=${QEMU_SHARE:-8192}
    t0=$(secs)
    timeout 600 $A batch --backend $B --lanes $lanes --out "$log/short.jsonl" "$G/lanecrc" '{lane}' 1 >/dev/null 2>"$log/short.txt"
    t1=$(secs)
    armada_s=$(elapsed $t0 $t1)
    note "qemu: armada $B, $lanes runs of lanecrc {lane} 1: $armada_s s wall (process start included): $(grep -o '[0-9]* instructions in [0-9.]* s' "$log/short.txt")"
    if [[ -n $Q ]]; then
        t0=$(secs)
        seq 0 $((share - 1)) | xargs -P "$cores" -I{} sh -c "$Q $G/lanecrc {} 1 > $work/q{}.out"
        t1=$(secs)
        q_s=$(elapsed $t0 $t1)
        scaled=$(python3 -c "print('%.1f' % ($q_s * $lanes / $share))")
        ratio=$(python3 -c "print('%.1f' % ($q_s * $lanes / $share / $armada_s))")
        # the same answers, for the runs qemu made
        bad=$(differing "$log/short.jsonl" q "$share")
        note "qemu: qemu-aarch64 on $cores cores, $share of the runs: $q_s s -> $scaled s for $lanes; armada $B is ${ratio}x faster; outputs differing from qemu: $bad"
    else
        note "qemu: no qemu-aarch64 in the bundle"
    fi
fi

# ----------------------------------------------------------------------------------- fuzz
if want fuzz && [[ -x $G/fuzz/magic ]]; then
    F=$G/fuzz
    lanes=$LANES
    share=${QEMU_SHARE:-8192}
    mkdir -p "$work/fin"
    python3 - "$work/fin" $lanes <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, str(i)), "wb") as f:
        f.write(b"ARM64FUZ" if i % 4099 == 7 else b"input %08d" % i)
EOF
    for point in none main input; do
        opt=(); [[ $point != none ]] && opt=(--snapshot-at $point)
        t0=$(secs)
        timeout 600 $A batch --backend $B --lanes $lanes --stdin-dir "$work/fin" "${opt[@]}" --out "$log/fan-$point.jsonl" "$F/magic" >/dev/null 2>"$log/fan-$point.txt"
        rc=$?
        t1=$(secs)
        eval "fan_$point=$(elapsed $t0 $t1)"
        note "fuzz: batch $B x$lanes magic, snapshot $point (rc=$rc): $(elapsed $t0 $t1) s wall; $(grep -o '[0-9]* exited 0.*signal' "$log/fan-$point.txt" | head -1)"
    done
    same=$(python3 - "$log" <<'EOF'
import json, sys
def lines(p):
    out = []
    for l in open(p):
        r = json.loads(l)
        r.pop("private_bytes", None)
        out.append(r)
    return out
a = lines(f"{sys.argv[1]}/fan-none.jsonl")
print(sum(x == y for x, y in zip(a, lines(f"{sys.argv[1]}/fan-main.jsonl"))), sum(x == y for x, y in zip(a, lines(f"{sys.argv[1]}/fan-input.jsonl"))), len(a))
EOF
)
    note "fuzz: lanes identical to the full runs (from main, from input, of all): $same"
    timeout 600 $A batch --backend $B --check --lanes $((lanes < 4096 ? lanes : 4096)) --stdin-dir "$work/fin" --snapshot-at input "$F/magic" >/dev/null 2>"$log/fan-check.txt"
    note "fuzz: batch --snapshot-at input --check: $(grep 'check:' "$log/fan-check.txt" | sed 's/armada batch: //')"
    # edge coverage on the device: the same maps as the CPU engine (--check compares them)
    clanes=$((lanes < 4096 ? lanes : 4096))
    t0=$(secs)
    timeout 600 $A batch --backend $B --check --coverage "$work/cov" --lanes $clanes --stdin-dir "$work/fin" --snapshot-at input "$F/magic" >/dev/null 2>"$log/cov-check.txt"
    t1=$(secs)
    note "fuzz: batch --coverage --check x$clanes ($(elapsed $t0 $t1) s): $(grep 'check:' "$log/cov-check.txt" | sed 's/armada batch: //'); kernel s $(grep -o 'kernel s: [0-9.]*' "$log/cov-check.txt" | head -1)"
    rm -rf "$work/cov"
    if [[ -n $Q ]]; then
        t0=$(secs)
        seq 0 $((share - 1)) | xargs -P "$cores" -I{} sh -c "$Q $F/magic < $work/fin/{} > /dev/null"
        t1=$(secs)
        q_s=$(elapsed $t0 $t1)
        ratios=$(python3 -c "q=$q_s*$lanes/$share; print('%.1f s for $lanes; armada $B is %.1fx (from the entry), %.1fx (main), %.1fx (input)' % (q, q/$fan_none, q/$fan_main, q/$fan_input))")
        note "fuzz: qemu-aarch64 on $cores cores, $share runs of magic: $q_s s -> $ratios"
    fi
    # armada fuzz (CPU engine, every core) on each planted bug
    for t in magic length nested fuzz_one crc_table; do
        extra=()
        args=()
        [[ $t == fuzz_one ]] && extra=(--snapshot-at LLVMFuzzerTestOneInput)
        [[ $t == length ]] && extra=(--snapshot-at main) && args=(@@)
        timeout 300 $A fuzz --corpus "$work/fz-$t/c" --crashes "$work/fz-$t/x" --max-time 120 --stop-on-crash --no-progress "${extra[@]}" "$F/$t" "${args[@]}" >/dev/null 2>"$log/fuzz-$t.txt"
        note "fuzz: armada fuzz $t: $(grep 'done:' "$log/fuzz-$t.txt" | sed 's/armada fuzz: done: *//')"
        # the same on the GPU: a round's inputs are one batch of lanes
        timeout 300 $A fuzz --backend $B --lanes ${FUZZ_LANES:-16384} --corpus "$work/gz-$t/c" --crashes "$work/gz-$t/x" --max-time ${FUZZ_TIME:-60} --stop-on-crash --no-progress "${extra[@]}" "$F/$t" "${args[@]}" >/dev/null 2>"$log/gfuzz-$t.txt"
        note "fuzz: armada fuzz --backend $B $t: $(grep 'done:' "$log/gfuzz-$t.txt" | sed 's/armada fuzz: done: *//') $(grep -i 'error' "$log/gfuzz-$t.txt" | head -2)"
    done
    if [[ -n $Q ]]; then
        # the qemu-per-process baseline: one qemu-aarch64 process per input, every core
        t0=$(secs)
        seq 0 $((share - 1)) | xargs -P "$cores" -I{} sh -c "$Q $F/nested < $work/fin/{} > /dev/null"
        t1=$(secs)
        note "fuzz: qemu-aarch64 one process per input on $cores cores (nested): $(python3 -c "print('%.0f' % ($share / ($t1 - $t0)))") execs/s"
    fi
fi

# -------------------------------------------------------------------------------- fuzzdyn
if want scaling && [[ -x $G/fuzz/recurse ]]; then
    F=$G/fuzz
    all="0-$((cores - 1))"
    st=${SCALE_TIME:-15}
    for t in length magic recurse; do
        extra=(); args=()
        [[ $t == length ]] && extra=(--snapshot-at main) && args=(@@)
        for cpus in 0 "$all"; do
            rm -rf "$work/sc-$t"
            # (ARMADA_FUZZ_PROFILE: the fuzzer thread's totals, its serial part, end the log)
            ARMADA_FUZZ_PROFILE=1 timeout 300 taskset -c "$cpus" $A fuzz --corpus "$work/sc-$t/c" --crashes "$work/sc-$t/x" --max-time "$st" --no-progress --stats-json "$log/scale-$t-$cpus.json" "${extra[@]}" "$F/$t" "${args[@]}" >/dev/null 2>"$log/scale-$t-$cpus.txt"
            note "scaling: $t on cpus $cpus: $(grep -o '[0-9]* rounds in .*' "$log/scale-$t-$cpus.txt")"
        done
        note "scaling: armada fuzz $t, 1 core and $cores: $(python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("%.0f and %.0f execs/s: %.1fx; crashes %d and %d, hangs %d and %d" % (a["execs_per_sec"], b["execs_per_sec"], b["execs_per_sec"] / max(a["execs_per_sec"], 1), a["crashes"], b["crashes"], a["hangs"], b["hangs"]))
' "$log/scale-$t-0.json" "$log/scale-$t-$all.json")"
    done
    t0=$(secs); taskset -c 0 $A batch --lanes 10000 --no-progress "$G/hello" >/dev/null 2>&1; t1=$(secs)
    b1=$(elapsed $t0 $t1)
    t0=$(secs); taskset -c "$all" $A batch --lanes 10000 --no-progress "$G/hello" >/dev/null 2>&1; t1=$(secs)
    bn=$(elapsed $t0 $t1)
    note "scaling: armada batch of 10,000 hello lanes on 1 core and on $cores: $b1 s and $bn s: $(python3 -c "print('%.1fx' % ($b1 / $bn))")"
    # the GPU's fuzzer files each of the parser's bugs once too
    rm -rf "$work/sc-gpu"
    timeout 300 $A fuzz --backend $B --lanes ${FUZZ_LANES:-16384} -o "$work/sc-gpu" --max-time 60 --no-progress "$F/recurse" >/dev/null 2>"$log/scale-gpu-recurse.txt"
    note "scaling: armada fuzz --backend $B recurse, 60 s: $(grep 'done:' "$log/scale-gpu-recurse.txt" | sed 's/armada fuzz: done: *//'); crashes/: $(ls "$work/sc-gpu/default/crashes" | grep -c '^id:'), hangs/: $(ls "$work/sc-gpu/default/hangs" | grep -c '^id:')"
fi

if want fuzzdyn && [[ -d $G/fuzz-dynamic && -e $bundle/sysroot.tar.xz ]]; then
    [[ -d $work/sysroot ]] || tar -C "$work" -xJf "$bundle/sysroot.tar.xz"
    S=$work/sysroot
    for t in fuzz_zlib fuzz_threads; do
        seeds=$work/seeds-$t
        mkdir -p "$seeds"
        # zlib: "BUGx" stored (one byte from the bug) and a Huffman-coded text; threads: two
        # inputs of 8 bytes, one two bytes from the bug
        python3 - "$seeds" $t <<'EOF2'
import sys, zlib
d, t = sys.argv[1], sys.argv[2]
seeds = [zlib.compress(b"BUGx", 0), zlib.compress(b"hello hello hello armada fuzz", 9)] if t == "fuzz_zlib" else [b"abcdefgh", b"abcdTHxx"]
for i, s in enumerate(seeds):
    open(f"{d}/seed{i}", "wb").write(s)
EOF2
        for engine in cpu $B; do
            lanes=(); [[ $engine != cpu ]] && lanes=(--lanes ${FUZZ_LANES:-16384})
            for mode in rate find; do
                c=$work/fd-$t-$engine-$mode
                rm -rf "$c"; cp -r "$seeds" "$c"
                stop=(--max-time ${FUZZDYN_TIME:-30}); [[ $mode == find ]] && stop=(--max-time ${FUZZDYN_FIND_TIME:-120} --stop-on-crash)
                timeout 300 $A fuzz --backend $engine "${lanes[@]}" --corpus "$c" --crashes "$c-x" "${stop[@]}" --no-progress -L "$S" "$G/fuzz-dynamic/$t" >/dev/null 2>"$log/fd-$t-$engine-$mode.txt"
                note "fuzzdyn: armada fuzz --backend $engine $t ($mode, rc=$?): $(grep 'done:' "$log/fd-$t-$engine-$mode.txt" | sed 's/armada fuzz: done: *//') $(grep -i 'error' "$log/fd-$t-$engine-$mode.txt" | head -2)"
            done
        done
        # the corpus the GPU found, run as a batch from a snapshot at input: every lane as on
        # the CPU engine (exit, output, instructions, coverage)
        c=$work/fd-$t-$B-rate
        n=$(ls "$c" | wc -l); n=$((n < 4096 ? n : 4096))
        mkdir -p "$work/fdin-$t"; i=0
        for f in $(ls "$c" | head -$n); do cp "$c/$f" "$work/fdin-$t/$i"; i=$((i + 1)); done
        timeout 600 $A batch --backend $B --check --coverage "$work/fdcov-$t" --lanes $n --stdin-dir "$work/fdin-$t" --snapshot-at input -L "$S" "$G/fuzz-dynamic/$t" >/dev/null 2>"$log/fd-$t-check.txt"
        note "fuzzdyn: $t corpus as a batch --coverage --check x$n: $(grep 'check:' "$log/fd-$t-check.txt" | sed 's/armada batch: //')"
        rm -rf "$work/fdcov-$t"
    done
fi

# -------------------------------------------------------------------------------- busybox
if want busybox && [[ -x $BB ]]; then
    lanes=$LANES
    share=${QEMU_SHARE:-8192}
    inputs "$work/in" $lanes
    t0=$(secs)
    timeout 600 $A batch --backend $B --lanes $lanes --stdin-dir "$work/in" --out "$log/bb.jsonl" "$BB" sha256sum >/dev/null 2>"$log/bb.txt"
    t1=$(secs)
    armada_s=$(elapsed $t0 $t1)
    note "busybox: armada $B, $lanes x sha256sum of a 4 KiB stdin: $armada_s s wall: $(grep -o '[0-9]* instructions in [0-9.]* s = [0-9.]* [kMGT]\?instructions/s' "$log/bb.txt"); frames peak $(stat_of "$log/bb.txt" 'device frames peak'), guest pages $(stat_of "$log/bb.txt" 'guest frames peak')"
    if [[ -n $Q ]]; then
        t0=$(secs)
        seq 0 $((share - 1)) | xargs -P "$cores" -I{} sh -c "$Q $BB sha256sum < $work/in/{} > $work/b{}.out"
        t1=$(secs)
        q_s=$(elapsed $t0 $t1)
        note "busybox: qemu-aarch64 on $cores cores, $share runs: $q_s s -> $(python3 -c "print('%.1f' % ($q_s * $lanes / $share))") s for $lanes; armada $B $(python3 -c "print('%.1f' % ($q_s * $lanes / $share / $armada_s))")x faster"
    fi
fi

# ------------------------------------------------------------------------------- resident
if want resident && [[ -x $BB ]]; then
    for lanes in ${RESIDENT_LANES:-262144 524288}; do
        t0=$(secs)
        timeout 600 $A batch --backend $B --lanes $lanes "$BB" sha256sum >/dev/null 2>"$log/res$lanes.txt"
        rc=$?
        t1=$(secs)
        peak=$(stat_of "$log/res$lanes.txt" 'device frames peak')
        guest=$(stat_of "$log/res$lanes.txt" 'guest frames peak')
        note "resident: $lanes busybox lanes (rc=$rc, $(elapsed $t0 $t1) s): $(grep -o '[0-9]* exited 0' "$log/res$lanes.txt" | head -1); frames peak $peak, guest pages $guest (the rest: lanes' frame reserves); $(grep -o '[0-9.]* [kMGT]\?instructions/s' "$log/res$lanes.txt" | head -1)"
        [[ $rc == 0 ]] || break
    done
fi

# -------------------------------------------------------------------------------- devices
if want devices; then
    ndev=${NDEV:-$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")}
    if ((ndev < 2)); then
        note "devices: this host has $ndev GPU: a batch over several GPUs needs two or more (skipped)"
    else
        inputs "$work/din" $LANES
        # NAME LANES ARGS...: the batch on the first GPU, then on all of them
        run_case() {
            local name=$1 lanes=$2
            shift 2
            local t0 t1 t2 rc1 rc2 same=differ
            t0=$(secs)
            timeout 600 $A batch --backend $B --devices 0 --lanes "$lanes" --out "$log/dev1-$name.jsonl" "$@" >/dev/null 2>"$log/dev1-$name.txt"
            rc1=$?
            t1=$(secs)
            timeout 600 $A batch --backend $B --devices all --lanes "$lanes" --out "$log/devall-$name.jsonl" "$@" >/dev/null 2>"$log/devall-$name.txt"
            rc2=$?
            t2=$(secs)
            cmp -s "$log/dev1-$name.jsonl" "$log/devall-$name.jsonl" && same=identical
            note "devices: $name x$lanes (rc=$rc1,$rc2), JSON lines $same: 1 GPU $(elapsed $t0 $t1) s process wall, batch $(rates "$log/dev1-$name.txt"); $ndev GPUs $(elapsed $t1 $t2) s process wall, batch $(grep -o '; [0-9]* instructions in [0-9.]* s = [0-9.]* [kMGT]\?instructions/s' "$log/devall-$name.txt" | sed 's/^; //'); speedup $(python3 -c "print('%.2f' % (($t1 - $t0) / max($t2 - $t1, 1e-9)))")x"
            grep -o 'device [0-9]* (.*instructions/s[^,]*' "$log/devall-$name.txt" | grep -v 'device [0-9]*: ' | cut -c1-200
        }
        # compute-bound: LANES lanes a GPU; the busybox batch: LANES lanes in all
        run_case crcbit $((LANES * ndev)) "$G/lanecrc" '{lane}' "${DEV_BIT_ROUNDS:-64}" bit
        [[ -x $BB ]] && run_case busybox "$LANES" --stdin-dir "$work/din" "$BB" sha256sum
    fi
fi

# ------------------------------------------------------------------------------------ cpu
if want cpu; then
    cases=("$G/tightloop" "$G/crc32 30" "$G/sort_bench 1000000" "$G/matmul 200" "$G/sieve"
        "$G/nbody 500000" "$G/spectral_norm 800" "$G/mandelbrot 800" "$G/vector_fp 3000")
    qarg=(--no-qemu)
    [[ -n $Q ]] && qarg=(--qemu "$Q")
    for tier in jit interp; do
        ARMADA_TIER=$tier $A bench --runs 3 "${qarg[@]}" "${cases[@]}" >"$log/cpu-$tier.txt" 2>&1
        while read -r line; do
            note "cpu ($tier, $cores cores): $line"
        done < <(grep 'armada/qemu\|instr ' "$log/cpu-$tier.txt" | sed "s|$G/||")
    done
fi

echo
echo "================================ summary ================================"
for s in "${summary[@]}"; do echo "$s"; done
rm -rf "$work"
