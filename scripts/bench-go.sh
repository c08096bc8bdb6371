#!/usr/bin/env bash
# Builds Go standard-library test binaries for arm64 Linux, for scripts/bench-real.sh --suite go:
#
#   scripts/bench-go.sh [--out DIR] PKG...     (default DIR: <repo>/target/bench-go)
#
# For each PKG (an import path such as math/big), with the host's Go (Debian's golang-go):
#   DIR/bin/PKG.test        GOARCH=arm64 GOOS=linux CGO_ENABLED=0 go test -c -ldflags='-s -w' -o ... PKG
#                           (PKG's slashes become underscores: math_big.test), statically linked;
#                           without the symbol table and DWARF (-s -w: 3.2 MB a binary instead of
#                           4.6, 7 MB of xz for fourteen instead of 25, for scripts/gpu-bundle.sh;
#                           neither emulator loads those sections, and Go's own tracebacks use
#                           pclntab, which stays)
#   DIR/src/PKG/            a copy of $(go env GOROOT)/src/PKG's files and its testdata/, and the
#                           testdata/ of every folder above it (compress/flate's tests read
#                           ../testdata/e.txt and ../../testdata/Isaac.Newton-Opticks.txt):
#                           a test binary runs with this as its cwd, as `go test` would run it in
#                           GOROOT/src/PKG, so DIR works where no Go is installed (the GPU host)
# A cache: a package whose binary is already there is not built again (delete DIR to rebuild,
# e.g. after a Go upgrade; DIR/go-version says which Go built them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/target/bench-go
if [[ ${1:-} == --out ]]; then
    out=$2
    shift 2
fi
(($#)) || { echo "usage: $0 [--out DIR] PKG..." >&2; exit 2; }
command -v go >/dev/null || { echo "bench-go: no go here (apt-get install golang-go)" >&2; exit 1; }
goroot=$(go env GOROOT)
mkdir -p "$out/bin" "$out/src"
for pkg in "$@"; do
    bin=$out/bin/${pkg//\//_}.test
    [[ -x $bin ]] && continue
    [[ -d $goroot/src/$pkg ]] || { echo "bench-go: no package $pkg in $goroot/src" >&2; exit 1; }
    echo "bench-go: building $pkg" >&2
    GOARCH=arm64 GOOS=linux CGO_ENABLED=0 GOFLAGS= go test -c -ldflags="-s -w" -o "$bin.tmp" "$pkg"
    # the package's files (not its sub-packages) and testdata, and the testdata above it
    # (a package's own files only: the folders of its sub-packages, copied for their own
    # binaries, stay)
    dst=$out/src/$pkg
    mkdir -p "$dst"
    find "$dst" -maxdepth 1 -type f -delete
    rm -rf "$dst/testdata"
    find -L "$goroot/src/$pkg" -maxdepth 1 -type f -exec cp -L {} "$dst/" \;
    [[ -d $goroot/src/$pkg/testdata ]] && cp -rL "$goroot/src/$pkg/testdata" "$dst/"
    up=$pkg
    while [[ $up == */* ]]; do
        up=${up%/*}
        if [[ -d $goroot/src/$up/testdata && ! -d $out/src/$up/testdata ]]; then
            mkdir -p "$out/src/$up"
            cp -rL "$goroot/src/$up/testdata" "$out/src/$up/"
        fi
    done
    if [[ -d $goroot/src/testdata && ! -d $out/src/testdata ]]; then
        cp -rL "$goroot/src/testdata" "$out/src/"
    fi
    mv "$bin.tmp" "$bin"
done
go version >"$out/go-version"
