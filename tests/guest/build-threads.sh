#!/usr/bin/env bash
# Builds the AArch64 guest programs with threads (used by crates/armada-cli/tests/threads.rs).
#
#   tests/guest/build-threads.sh [OUTDIR]      (default OUTDIR: <repo>/target/guest-threads)
#
#   tests/guest/threads/NAME.c    -> OUTDIR/NAME      aarch64-linux-gnu-gcc -O2 -static -pthread
#   tests/guest/threads/NAME.cpp  -> OUTDIR/NAME      aarch64-linux-gnu-g++ -O2 -static -pthread
#   tests/guest/go/NAME/*.go      -> OUTDIR/go_NAME   GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build
#
# A C or C++ source may ask for variants, each built as OUTDIR/NAME-VARIANT with the
# variant's flags appended (commas inside a variant stand for spaces), as in build.sh:
#   // armada-variants: lse=-march=armv8.1-a llsc=-mno-outline-atomics
#
# The Go programs are one module (tests/guest/go/go.mod, standard library only), built
# offline (GOPROXY=off, GOTOOLCHAIN=local) with GOCACHE and GOPATH under OUTDIR/.go, so the
# build needs neither the network nor a writable home directory.
#
# A binary is rebuilt only when it is missing or older than its sources (or this script).
# OUTDIR/programs.list gets one line per binary, "BINARY BASE-PROGRAM", once all are built.
# Compilers: ARMADA_GUEST_CC, ARMADA_GUEST_CXX, ARMADA_GUEST_GO (default
# aarch64-linux-gnu-gcc, aarch64-linux-gnu-g++, go); ARMADA_GUEST_JOBS sets the number of
# parallel C/C++ compiles (default: number of CPUs).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
script="$script_dir/$(basename "${BASH_SOURCE[0]}")"
c_src="$script_dir/threads"
go_src="$script_dir/go"
out_dir=${1:-"$repo_root/target/guest-threads"}
cc=${ARMADA_GUEST_CC:-aarch64-linux-gnu-gcc}
cxx=${ARMADA_GUEST_CXX:-aarch64-linux-gnu-g++}
go=${ARMADA_GUEST_GO:-go}
jobs=${ARMADA_GUEST_JOBS:-$(nproc 2>/dev/null || echo 2)}

missing=()
command -v "$cc" >/dev/null 2>&1 || missing+=("$cc (Debian package gcc-aarch64-linux-gnu)")
command -v "$cxx" >/dev/null 2>&1 || missing+=("$cxx (Debian package g++-aarch64-linux-gnu)")
command -v "$go" >/dev/null 2>&1 || missing+=("$go (Debian package golang-go)")
if ((${#missing[@]})); then
    echo "error: build-threads.sh: compiler not found:" >&2
    printf '         %s\n' "${missing[@]}" >&2
    echo "       Install them with: sudo apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu golang-go" >&2
    echo "       (or run scripts/test, which installs everything the tests need)." >&2
    exit 2
fi

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/armada-threads-build.XXXXXX")
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

# The text after "// armada-KEY:" in a source file (first match, trimmed).
directive() {
    sed -n "s|^[[:space:]]*//[[:space:]]*armada-$2:[[:space:]]*||p" "$1" | head -n 1 | sed 's/[[:space:]]*$//'
}

# compile OUT COMPILER SRC FLAGS...: writes a temporary file that replaces OUT on success;
# on failure removes OUT too (never a stale binary behind a failed build) and shows the log.
compile() {
    local target=$1 compiler=$2 src=$3
    shift 3
    local name log tmp
    name=$(basename "$target")
    log="$work/$name.log"
    tmp="$out_dir/.$name.tmp.$$"
    if "$compiler" "$@" -static -pthread -o "$tmp" "$src" >"$log" 2>&1; then
        mv -f "$tmp" "$target"
        echo "  built $name"
    else
        rm -f "$tmp" "$target"
        echo "error: failed to build $name: $compiler $* -static -pthread -o $target $src" >&2
        cat "$log" >&2
        return 1
    fi
}

list="$work/programs.list"
: >"$list"
rebuilt=0

# queue_compile OUT COMPILER SRC FLAGS...: runs compile in the background, at most $jobs at once.
queue_compile() {
    while (($(jobs -rp | wc -l) >= jobs)); do
        wait -n || true # failures show as missing binaries below
    done
    compile "$@" &
    rebuilt=$((rebuilt + 1))
}

# --- C and C++ ----------------------------------------------------------------------
shopt -s nullglob
sources=("$c_src"/*.c "$c_src"/*.cpp)
if ((${#sources[@]} == 0)); then
    echo "error: no C or C++ sources in $c_src" >&2
    exit 1
fi
for src in "${sources[@]}"; do
    case $src in
    *.c) name=$(basename "$src" .c) compiler=$cc ;;
    *) name=$(basename "$src" .cpp) compiler=$cxx ;;
    esac
    echo "$name $name" >>"$list"
    if stale "$out_dir/$name" "$src" "$c_src/check.h"; then
        queue_compile "$out_dir/$name" "$compiler" "$src" -O2
    fi
    for v in $(directive "$src" variants); do
        vname=${v%%=*}
        vflags=${v#*=}
        if [[ $vname == "$v" || -z $vname ]]; then
            echo "error: $src: bad armada-variants entry '$v' (want NAME=FLAGS)" >&2
            exit 1
        fi
        read -r -a extra <<<"${vflags//,/ }"
        echo "$name-$vname $name" >>"$list"
        if stale "$out_dir/$name-$vname" "$src" "$c_src/check.h"; then
            queue_compile "$out_dir/$name-$vname" "$compiler" "$src" -O2 "${extra[@]}"
        fi
    done
done
wait

# --- Go -----------------------------------------------------------------------------
go_stale=()
for dir in "$go_src"/*/; do
    pkg=$(basename "$dir")
    files=("$dir"*.go)
    ((${#files[@]})) || continue
    echo "go_$pkg go_$pkg" >>"$list"
    if stale "$out_dir/go_$pkg" "${files[@]}" "$go_src/go.mod"; then
        go_stale+=("./$pkg")
    fi
done
if ((${#go_stale[@]})); then
    mkdir -p "$out_dir/.go/cache" "$out_dir/.go/path" "$work/go"
    echo "  go build ${go_stale[*]}"
    if (
        cd "$go_src"
        export GOOS=linux GOARCH=arm64 CGO_ENABLED=0 GO111MODULE=on GOFLAGS='' GOENV=off \
            GOPROXY=off GOTOOLCHAIN=local GOWORK=off \
            GOCACHE="$out_dir/.go/cache" GOPATH="$out_dir/.go/path"
        "$go" build -trimpath -buildvcs=false -o "$work/go/" "${go_stale[@]}"
    ); then
        for p in "${go_stale[@]}"; do
            pkg=${p#./}
            mv -f "$work/go/$pkg" "$out_dir/go_$pkg"
            echo "  built go_$pkg"
            rebuilt=$((rebuilt + 1))
        done
    else
        for p in "${go_stale[@]}"; do
            rm -f "$out_dir/go_${p#./}"
        done
        echo "error: go build failed (GOOS=linux GOARCH=arm64 CGO_ENABLED=0, in $go_src)" >&2
        exit 1
    fi
fi

# --- the list -------------------------------------------------------------------------
failed=0
while read -r bin _; do
    if [[ ! -x $out_dir/$bin ]]; then
        echo "error: $out_dir/$bin was not built" >&2
        failed=1
    fi
done <"$list"
if ((failed)); then
    echo "error: some thread guest programs failed to build" >&2
    exit 1
fi
mv -f "$list" "$out_dir/programs.list"
echo "thread guest programs: $(wc -l <"$out_dir/programs.list") binaries in $out_dir ($rebuilt rebuilt)"
