#!/usr/bin/env bash
# Builds everything scripts/gpu-check.sh needs into one folder (default .gpu/, git-ignored),
# to carry to a GPU machine that has no Rust toolchain and no internet:
#   armada, gpu_suite, lockstep, nvrtc_check (release, stripped), guest.tar.xz (the guest
#   programs built by tests/guest/build.sh, busybox, and the risu random-instruction programs
#   with qemu-aarch64's output for each), qemu-aarch64.xz (Debian's static qemu-user, for the
#   speed comparison; optional), sysroot.tar.xz (target/sysroot, Debian's dynamically linked
#   programs, when scripts/test has built it), bench-python.tar.xz and bench-go.tar.xz
#   (scripts/bench-real.sh's python and go suites, when built; see below).
#
#   scripts/gpu-bundle.sh [DIR]
#   BINS_ONLY=1 scripts/gpu-bundle.sh [DIR]   # rebuild the binaries, keep the guest archive
#   PROFILE=ci scripts/gpu-bundle.sh [DIR]    # the test profile's binaries (release without
#                                              # LTO: minutes sooner where scripts/test built it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-.gpu}
mkdir -p "$out"
info=$(git rev-parse --git-common-dir)/info
mkdir -p "$info"
grep -qx '/.gpu/' "$info/exclude" 2>/dev/null || echo '/.gpu/' >>"$info/exclude"

profile=${PROFILE:-release}
cargo build --profile "$profile" -p armada-cli -p armada-cuda --bins --examples
tgt=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
for b in $profile/armada $profile/examples/gpu_suite $profile/examples/lockstep $profile/examples/nvrtc_check; do
    strip -o "$out/$(basename $b)" "$tgt/$b"
done
[[ -n ${BINS_ONLY:-} && -e $out/guest.tar.xz ]] && exit 0

# guest programs (and busybox) as one archive
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
tests/guest/build.sh "$stage/guest" >/dev/null
# busybox-static:arm64, as scripts/test downloads it (here or in the main checkout)
bb=""
for deps in target/guest-deps "$(git rev-parse --git-common-dir)/../target/guest-deps"; do
    [[ -n $bb ]] && break
    bb=$(find "$deps/extracted" -path '*bin/busybox' -type f 2>/dev/null | head -1 || true)
    if [[ -z $bb ]] && compgen -G "$deps/busybox-static_*_arm64.deb" >/dev/null; then
        dpkg-deb -x "$deps"/busybox-static_*_arm64.deb "$stage/bb" && bb=$stage/bb/bin/busybox
    fi
done
[[ -n $bb ]] && cp "$bb" "$stage/guest/busybox"
bash=$(find target/guest-deps/extracted "$(git rev-parse --git-common-dir)/../target/guest-deps/extracted" -path '*bin/bash-static' -type f 2>/dev/null | head -1 || true)
[[ -n $bash ]] && cp "$bash" "$stage/guest/bash"
# a dynamically linked program, whose interpreter gpu-check's env section does not give it
# (no -L): it must end clearly, as on the CPU engine
# and the dynamically linked fuzz targets (zlib's from the sysroot, a threaded one): the
# fuzz section runs them with -L the bundle's sysroot
if tests/guest/build-dynamic.sh "$stage/dyn" >/dev/null 2>&1; then
    cp "$stage/dyn/argv_env" "$stage/guest/dynamic_argv_env"
    mkdir -p "$stage/guest/fuzz-dynamic"
    for t in fuzz_zlib fuzz_threads; do
        [[ -e $stage/dyn/$t ]] && cp "$stage/dyn/$t" "$stage/guest/fuzz-dynamic/"
    done
fi

# the programs with threads (pthreads, C++, Go): gpu-check's threads section
tests/guest/build-threads.sh "$stage/guest/threads" >/dev/null
rm -rf "$stage/guest/threads/.go"

# the process programs (fork, exec, wait, pipes, signals): gpu-check's processes section
tests/guest/build-processes.sh "$stage/guest/processes" >/dev/null

# the fuzz targets (tests/guest/fuzz): snapshot fan-out and fuzzing figures
tests/guest/build-processes.sh "$stage/guest/fuzz" tests/guest/fuzz >/dev/null

# risu programs (RISU_CASES cases of every class) and what qemu-aarch64 prints for each: the GPU
# machine has neither the cross compiler nor qemu, so the oracle's answer travels with them
mkdir -p "$stage/guest/risu"
cases=${RISU_CASES:-200}
for class in $(python3 tests/risu/gen.py --list-classes); do
    r=$stage/guest/risu/$class
    python3 tests/risu/gen.py --class "$class" --seed 7 --cases "$cases" --out "$r.S" >/dev/null
    aarch64-linux-gnu-gcc -nostdlib -static -o "$r" "$r.S"
    qemu-aarch64 "$r" >"$r.expected"
    rm -f "$r.S" "$r.cases"
done
tar -C "$stage" -cJf "$out/guest.tar.xz" guest

# Debian's dynamically linked programs (dash, coreutils, sqlite3, perl, python3) in the sysroot
# scripts/test builds: gpu-check's scripts section (CPython's own tests left out)
if [[ -d target/sysroot/usr ]]; then
    tar -C target --exclude='sysroot/usr/lib/python3.*/test' -cJf "$out/sysroot.tar.xz" sysroot
fi

# scripts/bench-real.sh's python and go suites: the python suite's files when
# scripts/bench-sysroot.sh has built target/sysroot-bench, the go suite's binaries (built here by
# scripts/bench-go.sh when Go is installed and they are not yet in target/bench-go); there:
#   tar -C W -xJf sysroot.tar.xz && tar -C W/sysroot -xJf bench-python.tar.xz && tar -C W -xJf bench-go.tar.xz
#   SYSROOT=W/sysroot SYSROOT_BENCH=W/sysroot BENCH_GO=W/bench-go QEMU_AARCH64=... scripts/bench-real.sh --suite all
# bench-python.tar.xz: the files of CPython's test package (usr/lib/python3.11/test, which
# sysroot.tar.xz leaves out) that the python suite's modules open, with their bytecode: found
# by running each module once under qemu-aarch64 -strace (about 0.7 MB instead of 7 MB for the
# whole package); bench-go.tar.xz: target/bench-go, the Go test binaries and their testdata
# (about 8 MB)
sb=target/sysroot-bench
if [[ -d $sb/usr/lib/python3.11/test/libregrtest ]] && command -v qemu-aarch64 >/dev/null; then
    sb=$(cd "$sb" && pwd)
    for m in $(scripts/bench-real.sh --suite python --list); do
        (cd "$stage" && qemu-aarch64 -strace -L "$sb" "$sb/usr/bin/python3" -m test -q "$m" 2>&1 >/dev/null </dev/null || true)
    done | grep -o 'usr/lib/python3\.11/test/[^"]*' | sort -u >"$stage/bench-python.opened"
    {
        (cd "$sb" && find usr/lib/python3.11/test/libregrtest usr/lib/python3.11/test/support -type f)
        while read -r f; do
            [[ -f $sb/$f ]] && echo "$f"
            if [[ $f == *.py ]]; then
                c=$(dirname "$f")/__pycache__/$(basename "$f" .py).cpython-311.pyc
                [[ -f $sb/$c ]] && echo "$c"
            fi
        done <"$stage/bench-python.opened"
        (cd "$sb" && ls usr/lib/python3.11/test/{__init__,__main__,regrtest}.py usr/lib/python3.11/test/__pycache__/{__init__,__main__,regrtest}.cpython-311.pyc)
    } | sort -u >"$stage/bench-python.files"
    tar -C "$sb" --no-recursion -cJf "$out/bench-python.tar.xz" -T "$stage/bench-python.files"
fi
if command -v go >/dev/null; then # (a binary already built is kept)
    scripts/bench-go.sh $(scripts/bench-real.sh --suite go --list) >/dev/null
fi
if [[ -d target/bench-go/bin ]]; then
    tar -C target -cJf "$out/bench-go.tar.xz" bench-go
fi

# qemu-aarch64 (static) for the comparison, if apt can fetch it
if [[ ! -e $out/qemu-aarch64.xz ]]; then
    q=$(command -v qemu-aarch64-static || true)
    if [[ -z $q ]]; then
        (cd "$stage" && apt-get download qemu-user-static >/dev/null 2>&1 && dpkg-deb -x qemu-user-static_*.deb q) || true
        [[ -x $stage/q/usr/bin/qemu-aarch64-static ]] && q=$stage/q/usr/bin/qemu-aarch64-static
    fi
    [[ -n $q ]] && xz -c "$q" >"$out/qemu-aarch64.xz"
fi
# the wgpu engine on the GPU machine: its containers have NVIDIA's Vulkan driver but no Vulkan
# loader, and the driver's GLX entry (the usual ICD) cannot make an instance without a display,
# so the loader travels (Debian's libvulkan1, as scripts/test installs it) with an ICD
# manifest naming NVIDIA's EGL library, which can (gpu-check.sh uses both)
vk=$(ldconfig -p | awk '/libvulkan.so.1 .*x86-64/ {print $NF; exit}')
[[ -n $vk ]] && cp -L "$vk" "$out/libvulkan.so.1"
printf '{\n    "file_format_version" : "1.0.1",\n    "ICD": {\n        "library_path": "libEGL_nvidia.so.0",\n        "api_version" : "1.3.0"\n    }\n}\n' >"$out/nvidia_egl_icd.json"
du -sh "$out"/*
