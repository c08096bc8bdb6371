#!/usr/bin/env bash
# Builds the benchmarks' sysroot: the sysroot scripts/sysroot.sh builds (target/sysroot, which
# CI uses and which stays as it is) plus CPython's own regression tests, Debian's
# libpython3.11-testsuite, for scripts/bench-real.sh --suite python.
#
#   scripts/bench-sysroot.sh [OUTDIR]   (default OUTDIR: <repo>/target/sysroot-bench)
#
# Then, for example:
#   qemu-aarch64 -L target/sysroot-bench target/sysroot-bench/usr/bin/python3 -m test -q test_bisect
#
# How: scripts/sysroot.sh target/sysroot first (a no-op when that is up to date), then a copy
# of it, and into the copy the .debs below, downloaded with `apt-get download` into
# target/guest-deps/bench-sysroot/ (a cache: once every .deb is there, re-runs are offline) and
# unpacked with `dpkg-deb -x`, treated as scripts/sysroot.sh treats its own (the same steps,
# repeated here because sysroot.sh has them inline, not as functions): a package's /bin, /sbin
# and /lib go under usr/ (merged /usr), absolute symlinks become relative ones, documentation
# goes, and the new Python files are byte-compiled (the host's python3 if it is 3.11, else the
# sysroot's under qemu-aarch64) so that guest runs write no __pycache__ into the sysroot and
# each run of a test costs the same. Last, `python3 -m test -q test_bisect` runs once under
# qemu-aarch64 -L OUTDIR as a check.
#
# Idempotent: OUTDIR/.armada-sysroot-bench records the base sysroot's stamp, the .debs and
# this script; when none has changed, nothing is done.
#
# Environment: QEMU_AARCH64 (default qemu-aarch64); ARMADA_SYSROOT_NO_CHECK=1 skips the check.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
out=${1:-"$root/target/sysroot-bench"}
[[ $out == /* ]] || out="$(pwd)/$out"
cd "$root"

base="$root/target/sysroot"
cache="$root/target/guest-deps/bench-sysroot"
qemu=${QEMU_AARCH64:-qemu-aarch64}

log() { printf 'bench-sysroot: %s\n' "$*" >&2; }
die() { printf 'scripts/bench-sysroot.sh: error: %s\n' "$*" >&2; exit 1; }

# The packages added to target/sysroot, with the architecture apt names them by:
#   libpython3.11-testsuite (all): Lib/test and the other packages' tests (ctypes, idlelib,
#     lib2to3, tkinter, unittest); libregrtest, test.support and the _test* extension
#     modules are already in libpython3.11-stdlib, which target/sysroot has.
# (Its Depends, python3.11 and net-tools, are not needed by the modules the benchmark runs.)
packages=(
    libpython3.11-testsuite:all
)

command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found (apt-get install dpkg)"

# --- 1. the base sysroot ------------------------------------------------------------------
"$script_dir/sysroot.sh" "$base"
[[ -f $base/.armada-sysroot ]] || die "scripts/sysroot.sh left no $base/.armada-sysroot"

# --- 2. the .debs ---------------------------------------------------------------------------
mkdir -p "$cache"
cached_deb() { # PKG ARCH -> the newest cached PKG_*_ARCH.deb, or nothing
    local best='' f v bv=''
    for f in "$cache/$1"_*_"$2".deb; do
        [[ -e $f ]] || continue
        v=$(dpkg-deb -f "$f" Version 2>/dev/null) || continue
        if [[ -z $best ]] || dpkg --compare-versions "$v" gt "$bv"; then
            best=$f
            bv=$v
        fi
    done
    [[ -n $best ]] && printf '%s\n' "$best"
}
missing=()
for p in "${packages[@]}"; do
    [[ -n $(cached_deb "${p%:*}" "${p#*:}") ]] || missing+=("$([[ ${p#*:} == all ]] && echo "${p%:*}" || echo "$p")")
done
if ((${#missing[@]})); then
    command -v apt-get >/dev/null 2>&1 ||
        die "${#missing[@]} .debs are not in $cache (${missing[*]}) and apt-get is not available to download them"
    log "downloading ${#missing[@]} packages into $cache: ${missing[*]}"
    chmod 777 "$cache" # apt downloads as the unprivileged _apt user when it can write there
    dl_status=0
    (cd "$cache" && apt-get download -q "${missing[@]}") || dl_status=$?
    chmod 755 "$cache"
    for p in "${packages[@]}"; do
        [[ -n $(cached_deb "${p%:*}" "${p#*:}") ]] ||
            die "apt-get download (status $dl_status) left $p missing in $cache (apt-get update? scripts/sysroot.sh adds the arm64 architecture)"
    done
fi
debs=()
for p in "${packages[@]}"; do
    debs+=("$(cached_deb "${p%:*}" "${p#*:}")")
done

# --- 3. up to date? ---------------------------------------------------------------------------
stamp_text() {
    echo "armada bench sysroot v1 (scripts/bench-sysroot.sh)"
    cat "$base/.armada-sysroot"
    local d
    for d in "${debs[@]}"; do
        echo "$(basename "$d") $(stat -c %s "$d")"
    done
    sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1
}
want_stamp=$(stamp_text)
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
if [[ -f $out/.armada-sysroot-bench ]] && [[ $(cat "$out/.armada-sysroot-bench") == "$want_stamp" ]]; then
    log "$out is up to date ($(du -sh "$out" | cut -f1))"
    exit 0
fi

# --- 4. copy the base, add the packages -----------------------------------------------------
stage="$out.tmp.$$"
cleanup() {
    if [[ -n ${stage:-} && -e $stage ]]; then
        rm -rf "$stage"
    fi
}
trap cleanup EXIT
rm -rf "$stage"
log "copying $base"
cp -a "$base" "$stage"
rm -f "$stage/.armada-sysroot"
x="$stage.x"
for d in "${debs[@]}"; do
    rm -rf "$x"
    mkdir -p "$x"
    dpkg-deb -x "$d" "$x" || die "dpkg-deb -x $d failed (a broken download? delete it from $cache and re-run)"
    # merged /usr, as scripts/sysroot.sh does it
    for t in bin sbin lib lib64; do
        [[ -e $x/$t || -L $x/$t ]] || continue
        [[ -L $x/$t ]] && die "$(basename "$d") ships /$t as a symlink"
        mkdir -p "$x/usr/$t"
        cp -a "$x/$t/." "$x/usr/$t/"
        rm -rf "${x:?}/$t"
    done
    # absolute symlinks -> relative ones
    while IFS= read -r -d '' l; do
        target=$(readlink "$l")
        [[ $target == /* ]] || continue
        rel_dir=$(dirname "${l#"$x"/}")
        if [[ $rel_dir == . ]]; then up=.; else up=$(sed -e 's|[^/][^/]*|..|g' <<<"$rel_dir"); fi
        ln -sfn "$up${target}" "$l"
    done < <(find "$x" -type l -print0)
    rm -rf "$x"/usr/share/{doc,man,info,lintian,bug,locale}
    # a file the base already has is not replaced
    while IFS= read -r -d '' f; do
        rel=${f#"$x/"}
        if [[ -e $stage/$rel || -L $stage/$rel ]] && [[ ! -d $f || -L $f ]]; then
            die "$(basename "$d") ships /$rel, which the base sysroot already has"
        fi
    done < <(find "$x" -mindepth 1 -print0)
    cp -a "$x/." "$stage/"
    rm -rf "$x"
done

# --- 5. byte-compile what was added ------------------------------------------------------------
pylib="$stage/usr/lib/python3.11"
host_py=$(command -v python3 || true)
if [[ -n $host_py ]] && "$host_py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    log "byte-compiling $pylib with the host's python3"
    "$host_py" -W ignore -m compileall -q -j 0 "$pylib" >/dev/null ||
        log "note: compileall reported errors (the tests' deliberately broken modules; harmless)"
elif command -v "$qemu" >/dev/null 2>&1; then
    log "byte-compiling $pylib with the sysroot's python3 under $qemu (minutes)"
    env -i PATH=/usr/bin:/bin "$qemu" -L "$stage" "$stage/usr/bin/python3.11" -m compileall -q "$pylib" >/dev/null ||
        log "note: compileall reported errors (the tests' deliberately broken modules; harmless)"
else
    log "note: no python3.11 nor $qemu here: the tests are not byte-compiled (guests compile them on each run)"
fi

# --- 6. one test module under qemu ----------------------------------------------------------------
if [[ -z ${ARMADA_SYSROOT_NO_CHECK:-} ]] && command -v "$qemu" >/dev/null 2>&1; then
    o=$(cd / && env -i PATH=/usr/bin:/bin LANG=C "$qemu" -L "$stage" "$stage/usr/bin/python3" -m test -q test_bisect 2>&1 </dev/null) ||
        die "python3 -m test -q test_bisect fails under $qemu -L $stage:
$o"
    log "  qemu-aarch64 -L OUTDIR OUTDIR/usr/bin/python3 -m test -q test_bisect: $(tail -n 1 <<<"$o")"
fi

# --- 7. put it in place ------------------------------------------------------------------------------
printf '%s\n' "$want_stamp" >"$stage/.armada-sysroot-bench"
rm -rf "$out"
mv "$stage" "$out"
stage=
log "built $out: $(du -sh "$out" | cut -f1) (the base: $(du -sh "$base" | cut -f1))"
