#!/usr/bin/env bash
# Builds the dynamically linked AArch64 test programs of tests/guest/dynamic/ (used by
# crates/armada-cli/tests/dynamic.rs).
#
#   tests/guest/build-dynamic.sh [OUTDIR]       (default OUTDIR: <repo>/target/guest-dynamic)
#
# They are linked against Debian's cross sysroot (/usr/aarch64-linux-gnu, from
# libc6-dev-arm64-cross; the cross compiler's default), not -static: run them with
#   qemu-aarch64 -L /usr/aarch64-linux-gnu OUTDIR/libm_dlopen
#   armada run   -L /usr/aarch64-linux-gnu OUTDIR/libm_dlopen
#
# OUTDIR gets:
#   argv_env, argv_env-nopie    argv_env.c (PIE, and a non-PIE ET_EXEC build)
#   libm_dlopen                 libm_dlopen.c -lm (plus dlopen/dlsym of libm.so.6)
#   cxx_features                cxx_features.cpp (libstdc++.so.6, libgcc_s.so.1)
#   libarmadadyn.so             armadadyn.c -shared -fPIC (soname libarmadadyn.so)
#   use_armadadyn               use_armadadyn.c -larmadadyn -Wl,-rpath,'$ORIGIN'
#   use_armadadyn-optrpath      the same with -Wl,-rpath,/opt/armada-dyn: the library is
#                               found only through a sysroot that has opt/armada-dyn/
#   badinterp-missing           argv_env.c with PT_INTERP /nonexistent/armada/ld-linux-aarch64.so.1
#   badinterp-x86               argv_env.c with PT_INTERP /bin/true (an x86-64 file on an
#                               x86-64 host)
#   fuzz_threads                fuzz_threads.c -pthread (a threaded fuzz target)
#   fuzz_zlib                   fuzz_zlib.c against Debian's arm64 libz.so.1 in the sysroot of
#                               scripts/sysroot.sh ($ARMADA_TEST_SYSROOT, default
#                               <repo>/target/sysroot; skipped when that has no libz): run it
#                               with -L that sysroot
# Each is rebuilt only when its sources (or this script) are newer.
# ARMADA_GUEST_CC / ARMADA_GUEST_CXX override the compilers (default aarch64-linux-gnu-gcc/g++).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
src="$script_dir/dynamic"
out=${1:-"$repo_root/target/guest-dynamic"}
cc=${ARMADA_GUEST_CC:-aarch64-linux-gnu-gcc}
cxx=${ARMADA_GUEST_CXX:-aarch64-linux-gnu-g++}

for c in "$cc" "$cxx"; do
    if ! command -v "$c" >/dev/null 2>&1; then
        echo "error: AArch64 cross compiler '$c' not found." >&2
        echo "       Install it with: sudo apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu" >&2
        echo "       (or run scripts/test, which installs everything the tests need)." >&2
        exit 2
    fi
done

mkdir -p "$out"
out=$(cd "$out" && pwd)
script="$script_dir/$(basename "${BASH_SOURCE[0]}")"
rebuilt=0

# build OUT DEPS... -- COMPILER ARGS...: runs the command (writing to a temporary file that
# replaces OUT on success) when OUT is missing or older than a dependency or this script.
build() {
    local target=$1
    shift
    local deps=() stale=0
    while [[ $1 != -- ]]; do
        deps+=("$1")
        shift
    done
    shift
    [[ -e $out/$target ]] || stale=1
    local d
    for d in "${deps[@]}" "$script"; do
        [[ $d -nt $out/$target ]] && stale=1
    done
    ((stale)) || return 0
    local tmp="$out/.$target.tmp.$$"
    local args=() a
    for a in "$@"; do
        [[ $a == @OUT@ ]] && a=$tmp
        args+=("$a")
    done
    if ! "${args[@]}"; then
        rm -f "$tmp" "$out/$target"
        echo "error: failed to build $target: ${args[*]}" >&2
        exit 1
    fi
    mv -f "$tmp" "$out/$target"
    rebuilt=$((rebuilt + 1))
    echo "  built $target"
}

cflags=(-O2 -g0 -Wall -Wextra)

build argv_env "$src/argv_env.c" -- \
    "$cc" "${cflags[@]}" -o @OUT@ "$src/argv_env.c"
build argv_env-nopie "$src/argv_env.c" -- \
    "$cc" "${cflags[@]}" -no-pie -fno-pie -o @OUT@ "$src/argv_env.c"
build libm_dlopen "$src/libm_dlopen.c" -- \
    "$cc" "${cflags[@]}" -fno-builtin -o @OUT@ "$src/libm_dlopen.c" -lm -ldl
build cxx_features "$src/cxx_features.cpp" -- \
    "$cxx" "${cflags[@]}" -std=c++17 -o @OUT@ "$src/cxx_features.cpp"
build libarmadadyn.so "$src/armadadyn.c" "$src/armadadyn.h" -- \
    "$cc" "${cflags[@]}" -shared -fPIC -Wl,-soname,libarmadadyn.so -o @OUT@ "$src/armadadyn.c"
# shellcheck disable=SC2016 # $ORIGIN is for the dynamic linker, not the shell
build use_armadadyn "$src/use_armadadyn.c" "$src/armadadyn.h" "$out/libarmadadyn.so" -- \
    "$cc" "${cflags[@]}" -I"$src" -o @OUT@ "$src/use_armadadyn.c" -L"$out" -larmadadyn '-Wl,-rpath,$ORIGIN'
build use_armadadyn-optrpath "$src/use_armadadyn.c" "$src/armadadyn.h" "$out/libarmadadyn.so" -- \
    "$cc" "${cflags[@]}" -I"$src" -o @OUT@ "$src/use_armadadyn.c" -L"$out" -larmadadyn -Wl,-rpath,/opt/armada-dyn
build badinterp-missing "$src/argv_env.c" -- \
    "$cc" "${cflags[@]}" -Wl,--dynamic-linker=/nonexistent/armada/ld-linux-aarch64.so.1 -o @OUT@ "$src/argv_env.c"
build badinterp-x86 "$src/argv_env.c" -- \
    "$cc" "${cflags[@]}" -Wl,--dynamic-linker=/bin/true -o @OUT@ "$src/argv_env.c"

build fuzz_threads "$src/fuzz_threads.c" -- \
    "$cc" "${cflags[@]}" -pthread -o @OUT@ "$src/fuzz_threads.c"
debian_sysroot=${ARMADA_TEST_SYSROOT:-"$repo_root/target/sysroot"}
libz="$debian_sysroot/usr/lib/aarch64-linux-gnu/libz.so.1"
if [[ -e $libz ]]; then
    # (the library itself on the command line: the cross sysroot has no libz.so to -lz)
    build fuzz_zlib "$src/fuzz_zlib.c" "$libz" -- \
        "$cc" "${cflags[@]}" -o @OUT@ "$src/fuzz_zlib.c" "$libz"
else
    echo "  (no $libz: fuzz_zlib not built; scripts/sysroot.sh makes it)"
fi

echo "dynamic guest programs: $(find "$out" -maxdepth 1 -type f ! -name '.*' | wc -l) files in $out ($rebuilt rebuilt)"
