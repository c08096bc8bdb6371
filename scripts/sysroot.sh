#!/usr/bin/env bash
# Builds a Debian arm64 sysroot for armada's dynamically linked program tests
# (crates/armada-cli/tests/dynamic.rs): glibc plus coreutils, grep, sed, gawk, sqlite3,
# lua5.4, perl-base and python3-minimal, and exactly the libraries these need to start.
#
#   scripts/sysroot.sh [OUTDIR]        (default OUTDIR: <repo>/target/sysroot)
#
# Then, for example:
#   qemu-aarch64 -L target/sysroot target/sysroot/usr/bin/python3 -c 'print(2**100)'
#   armada run   -L target/sysroot target/sysroot/usr/bin/python3 -c 'print(2**100)'
#
# How: `apt-get download PKG:arm64` into target/guest-deps/sysroot/ (a cache: once every
# .deb is there, re-runs are offline), `dpkg-deb -x` of every .deb into a fresh staging
# directory, then what installing base-files on a merged-/usr system would leave:
#   bin -> usr/bin, sbin -> usr/sbin, lib -> usr/lib  (the contents of the packages' /bin,
#   /sbin and /lib moved under usr/), so that PT_INTERP /lib/ld-linux-aarch64.so.1 resolves;
# absolute symlinks inside the tree are made relative (under qemu's -L an absolute link
# target would be resolved on the host, outside the sysroot);
# Python's standard library is byte-compiled (with the host's python3 if it is 3.11, else
# with the sysroot's own python3 under qemu-aarch64) so that guest runs do not try to write
# __pycache__ directories into the sysroot; documentation, message catalogs and glibc's
# iconv modules are left out (the programs run with LANG=C). Every executable's DT_NEEDED
# closure is checked (readelf), and each program is started once under
# qemu-aarch64 -L OUTDIR when qemu is there.
#
# Idempotent: OUTDIR/.armada-sysroot records the .debs it was built from; when they have
# not changed, nothing is done. The arm64 dpkg architecture is added (and apt-get update
# run) only when a .deb has to be downloaded and apt does not know arm64 yet; that needs
# root (or sudo).
#
# Environment: QEMU_AARCH64 (default qemu-aarch64) for the start-up check;
# ARMADA_SYSROOT_NO_CHECK=1 skips that check.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
out=${1:-"$root/target/sysroot"}
[[ $out == /* ]] || out="$(pwd)/$out" # relative to where we were started
cd "$root"

cache="$root/target/guest-deps/sysroot"
qemu=${QEMU_AARCH64:-qemu-aarch64}

log() { printf 'sysroot: %s\n' "$*" >&2; }
die() { printf 'scripts/sysroot.sh: error: %s\n' "$*" >&2; exit 1; }

# The packages, all :arm64. The programs (with the package that ships each):
#   coreutils grep sed gawk sqlite3 lua5.4 perl-base python3-minimal dash
#   gzip bzip2 xz-utils (compression: compute-bound work users try first; scripts/bench-real.sh)
#   (/bin/sh: python's subprocess with shell=True, perl's system with one string, ...)
#   python3.11-minimal (the interpreter) libpython3.11-minimal (its core standard library)
#   libpython3.11-stdlib (the rest of it, for its pure-Python modules: http.server, urllib,
#   json, socketserver; its extension modules' libraries are not included)
# and the libraries they need to start (the DT_NEEDED closure, checked below):
#   libc6 (glibc, ld.so, libm, libresolv) libgcc-s1 (libc6 needs it: pthread_cancel, unwinding)
#   libselinux1 libpcre2-8-0 (ls, sed, ... ; grep)     libacl1 libattr1 (cp, sed, ...)
#   libgmp10 libmpfr6 libsigsegv2 (gawk, factor, expr)  libreadline8 libtinfo6 (gawk, sqlite3, lua)
#   libsqlite3-0 zlib1g (sqlite3, python)  libexpat1 (python)  libcrypt1 (perl)
#   libbz2-1.0 (bzip2)  liblzma5 (xz)
# Deliberately left out (not needed to start any of these): libssl3 (python's _ssl and
# _hashlib extension modules only), libstdc++6 and liblua5.4-0 (lua5.4 links liblua
# statically), readline-common (inputrc, docs), gcc-12-base (docs), tzdata, locales.
packages=(
    libc6 libgcc-s1
    coreutils grep sed gawk sqlite3 lua5.4 perl-base dash gzip bzip2 xz-utils
    python3-minimal python3.11-minimal libpython3.11-minimal libpython3.11-stdlib
    libselinux1 libpcre2-8-0 libacl1 libattr1
    libgmp10 libmpfr6 libsigsegv2 libreadline8 libtinfo6
    libsqlite3-0 zlib1g libexpat1 libcrypt1 libbz2-1.0 liblzma5
)
# Programs started once under qemu as a check: "PATH|ARG|ARG..." (PATH inside the sysroot).
checks=(
    "usr/bin/ls|--version"
    "usr/bin/sort|--version"
    "usr/bin/grep|--version"
    "usr/bin/sed|--version"
    "usr/bin/gawk|--version"
    "usr/bin/sqlite3|--version"
    "usr/bin/lua5.4|-v"
    "bin/gzip|--version"
    "bin/bzip2|--help"
    "usr/bin/xz|--version"
    'usr/bin/perl|-e|print qq(perl $^V\n)'
    "usr/bin/python3|-c|import sys, os, http.server, json; print('python', sys.version.split()[0])"
)

as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo -E "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found (apt-get install dpkg)"

# --- 1. the .debs ---------------------------------------------------------------------
mkdir -p "$cache"
# The newest cached PKG_*_arm64.deb (versions compared by dpkg's rules), or nothing.
cached_deb() {
    local best='' f v bv=''
    for f in "$cache/$1"_*_arm64.deb; do
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
    [[ -n $(cached_deb "$p") ]] || missing+=("$p:arm64")
done
if ((${#missing[@]})); then
    command -v apt-get >/dev/null 2>&1 ||
        die "${#missing[@]} .debs are not in $cache (${missing[*]}) and apt-get is not available to download them"
    export DEBIAN_FRONTEND=noninteractive
    updated=0
    if [[ $(dpkg --print-architecture) != arm64 ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
        log "adding the arm64 dpkg architecture (dpkg --add-architecture arm64)"
        as_root dpkg --add-architecture arm64
        # Ubuntu serves arm64 from ports.ubuntu.com, not from the amd64 mirrors.
        if [[ -r /etc/os-release ]] && . /etc/os-release && [[ ${ID:-} == ubuntu && -n ${VERSION_CODENAME:-} ]]; then
            list=/etc/apt/sources.list.d/armada-arm64-ports.list
            if [[ ! -e $list ]]; then
                log "adding $list"
                printf 'deb [arch=arm64] http://ports.ubuntu.com/ubuntu-ports %s main universe\ndeb [arch=arm64] http://ports.ubuntu.com/ubuntu-ports %s-updates main universe\n' \
                    "$VERSION_CODENAME" "$VERSION_CODENAME" | as_root tee "$list" >/dev/null
            fi
        fi
        log "apt-get update"
        as_root apt-get update -q || log "apt-get update reported errors (continuing)"
        updated=1
    fi
    if ((updated == 0)) && ! apt-cache show "${missing[0]}" >/dev/null 2>&1; then
        log "apt-get update (apt does not know ${missing[0]} yet)"
        as_root apt-get update -q || log "apt-get update reported errors (continuing)"
    fi
    log "downloading ${#missing[@]} packages into $cache: ${missing[*]}"
    # apt downloads as the unprivileged _apt user when it can write the directory.
    chmod 777 "$cache"
    dl_status=0
    (cd "$cache" && apt-get download -q "${missing[@]}") || dl_status=$?
    chmod 755 "$cache"
    still=()
    for p in "${packages[@]}"; do
        [[ -n $(cached_deb "$p") ]] || still+=("$p:arm64")
    done
    if ((${#still[@]})); then
        die "apt-get download (status $dl_status) left these missing in $cache: ${still[*]}
       check that apt has arm64 sources (dpkg --print-foreign-architectures; apt-cache policy ${still[0]})"
    fi
fi

debs=()
for p in "${packages[@]}"; do
    debs+=("$(cached_deb "$p")")
done

# --- 2. up to date? -------------------------------------------------------------------
stamp_text() {
    echo "armada sysroot v1 (scripts/sysroot.sh)"
    local d
    for d in "${debs[@]}"; do
        echo "$(basename "$d") $(stat -c %s "$d")"
    done
    sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1
}
want_stamp=$(stamp_text)
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
if [[ -f $out/.armada-sysroot ]] && [[ $(cat "$out/.armada-sysroot") == "$want_stamp" ]]; then
    log "$out is up to date ($(du -sh "$out" | cut -f1), ${#debs[@]} packages)"
    exit 0
fi

# --- 3. extract into a staging directory ------------------------------------------------
stage="$out.tmp.$$"
# (an if, not `&&`: a false test as the trap's last command would become the exit status)
cleanup() {
    if [[ -n ${stage:-} && -e $stage ]]; then
        rm -rf "$stage"
    fi
}
trap cleanup EXIT
rm -rf "$stage"
mkdir -p "$stage"
log "extracting ${#debs[@]} packages into $out"
for d in "${debs[@]}"; do
    dpkg-deb -x "$d" "$stage" || die "dpkg-deb -x $d failed (a broken download? delete it from $cache and re-run)"
done

# merged /usr: move /bin, /sbin, /lib (and /lib64 if a package had one) under usr/
for d in bin sbin lib lib64; do
    [[ -e $stage/$d || -L $stage/$d ]] || continue
    [[ -L $stage/$d ]] && die "a package ships /$d as a symlink; scripts/sysroot.sh does not expect that"
    mkdir -p "$stage/usr/$d"
    # a file both in /X and /usr/X would be silently replaced: refuse instead
    while IFS= read -r -d '' f; do
        rel=${f#"$stage/$d/"}
        if [[ -e $stage/usr/$d/$rel || -L $stage/usr/$d/$rel ]] && [[ ! -d $f || -L $f ]]; then
            die "/$d/$rel and /usr/$d/$rel are both shipped; cannot merge /usr"
        fi
    done < <(find "$stage/$d" -mindepth 1 -print0)
    cp -a "$stage/$d/." "$stage/usr/$d/"
    rm -rf "${stage:?}/$d"
done
ln -s usr/bin "$stage/bin"
ln -s usr/sbin "$stage/sbin"
ln -s usr/lib "$stage/lib"
mkdir -p "$stage/usr/sbin"
# dash's maintainer script, not its .deb, makes /bin/sh; a guest's /bin/sh must be arm64
# (armada runs no host program), so the sysroot has one
[[ -e $stage/usr/bin/sh || -L $stage/usr/bin/sh ]] || ln -s dash "$stage/usr/bin/sh"

# absolute symlinks -> relative ones (e.g. usr/lib/python3.11/sitecustomize.py -> /etc/...)
while IFS= read -r -d '' l; do
    target=$(readlink "$l")
    [[ $target == /* ]] || continue
    rel_dir=$(dirname "${l#"$stage"/}")
    if [[ $rel_dir == . ]]; then
        up=.
    else
        up=$(sed -e 's|[^/][^/]*|..|g' <<<"$rel_dir")
    fi
    ln -sfn "$up${target}" "$l"
done < <(find "$stage" -type l -print0)

# Not needed by programs run with LANG=C (the tests' setting): documentation, message
# translations (14 MB) and glibc's iconv modules (20 MB; UTF-8 and ASCII are built in).
rm -rf "$stage"/usr/share/{doc,man,info,lintian,bug,locale} "$stage"/usr/lib/aarch64-linux-gnu/gconv

# --- 4. check the DT_NEEDED closure of every program ------------------------------------
if command -v readelf >/dev/null 2>&1 || command -v aarch64-linux-gnu-readelf >/dev/null 2>&1; then
    readelf_bin=$(command -v aarch64-linux-gnu-readelf || command -v readelf)
    libdirs=("$stage/usr/lib/aarch64-linux-gnu" "$stage/usr/lib")
    find_lib() { # SONAME -> path in the sysroot, or nothing
        local d
        for d in "${libdirs[@]}"; do
            if [[ -e $d/$1 ]]; then
                printf '%s\n' "$d/$1"
                return
            fi
        done
    }
    declare -A seen=()
    problems=()
    queue=()
    for f in "$stage"/usr/bin/*; do
        [[ -f $f && ! -L $f && -x $f ]] || continue
        [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
        queue+=("$f")
    done
    while ((${#queue[@]})); do
        f=${queue[0]}
        queue=("${queue[@]:1}")
        [[ -n ${seen[$f]:-} ]] && continue
        seen[$f]=1
        while read -r so; do
            [[ -n $so ]] || continue
            p=$(find_lib "$so")
            if [[ -z $p ]]; then
                problems+=("${f#"$stage"/} needs $so, which no package in the list provides")
            else
                queue+=("$(readlink -f "$p")")
            fi
        done < <("$readelf_bin" -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    done
    if ((${#problems[@]})); then
        printf '  %s\n' "${problems[@]}" >&2
        die "the sysroot's libraries are incomplete (add the packages that ship them to \$packages in $0)"
    fi
    log "checked the shared-library closure of ${#seen[@]} executables and libraries"
else
    log "note: readelf not found; the shared-library closure is not checked"
fi

# --- 5. byte-compile Python's standard library --------------------------------------------
pylib="$stage/usr/lib/python3.11"
if [[ -d $pylib ]]; then
    host_py=$(command -v python3 || true)
    if [[ -n $host_py ]] && "$host_py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
        log "byte-compiling $pylib with the host's python3"
        "$host_py" -m compileall -q -j 0 "$pylib" >/dev/null ||
            log "note: compileall reported errors (some modules do not compile; harmless)"
    elif command -v "$qemu" >/dev/null 2>&1; then
        log "byte-compiling $pylib with the sysroot's python3 under $qemu"
        env -i PATH=/usr/bin:/bin "$qemu" -L "$stage" "$stage/usr/bin/python3.11" -m compileall -q "$pylib" >/dev/null ||
            log "note: compileall reported errors (some modules do not compile; harmless)"
    else
        log "note: no python3.11 nor $qemu here: the standard library is not byte-compiled (guests compile it on each run)"
    fi
fi

# --- 6. start every program once under qemu ------------------------------------------------
if [[ -z ${ARMADA_SYSROOT_NO_CHECK:-} ]] && command -v "$qemu" >/dev/null 2>&1; then
    failed=0
    for c in "${checks[@]}"; do
        IFS='|' read -r -a argv <<<"$c"
        set -- "${argv[@]}"
        prog=$1
        shift
        if ! o=$(cd / && env -i PATH=/usr/bin:/bin LANG=C "$qemu" -L "$stage" "$stage/$prog" "$@" 2>&1 </dev/null); then
            printf '  %s %s failed:\n%s\n' "$prog" "$*" "$o" >&2
            failed=1
        else
            log "  qemu-aarch64 -L OUTDIR OUTDIR/$prog $*: $(head -n 1 <<<"$o")"
        fi
    done
    ((failed == 0)) || die "some programs do not start under $qemu -L $stage (see above)"
elif [[ -z ${ARMADA_SYSROOT_NO_CHECK:-} ]]; then
    log "note: $qemu not found; the programs were not test-started"
fi

# --- 7. put it in place ----------------------------------------------------------------------
printf '%s\n' "$want_stamp" >"$stage/.armada-sysroot"
rm -rf "$out"
mv "$stage" "$out"
stage=
log "built $out: ${#debs[@]} packages, $(du -sh "$out" | cut -f1) ($(du -ch "${debs[@]}" | tail -n 1 | cut -f1) of .debs in $cache)"
