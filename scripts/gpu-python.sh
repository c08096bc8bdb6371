#!/usr/bin/env bash
# The Python package's tests on a GPU machine, from a wheel built here (the GPU machine needs
# no Rust and no internet).
#
#   scripts/gpu-python.sh build     # here, where Rust is: -> target/gpu-python/
#                                   #   armada-*.whl (abi3, CPython 3.9+) and pytest's wheels
#   scripts/gpu-python.sh           # on the GPU machine (carry target/gpu-python): installs
#                                   # the wheel into a temporary directory and runs pytest
#                                   # on tests/python, the CUDA, CuPy and PyTorch tests too
#
# On the GPU machine the interpreter is $PYTHON, default /opt/torch/.venv/bin/python3 (numpy,
# cupy-cuda13x and torch installed there). The wheel goes in with `pip install --no-deps
# --no-index --target`, so nothing in that environment changes. pytest comes from the carried
# wheels when the interpreter lacks it. Extra arguments go to pytest. The pytest log and a
# summary go to $OUT (the device tool's folder) when it is set.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
dist=$root/target/gpu-python

if [[ ${1:-} == build ]]; then
    shift
    venv=$root/target/pyenv
    [[ -x $venv/bin/maturin ]] || scripts/test-python --co -q >/dev/null # makes the venv
    rm -rf "$dist"
    mkdir -p "$dist"
    # --compatibility linux: a plain linux_x86_64 tag, which pip --target takes whatever the
    # other machine's glibc says (the extension needs glibc and libgcc only: CUDA and Vulkan
    # are loaded at run time).
    PATH=$venv/bin:$PATH maturin build --release --strip --compatibility linux -o "$dist" "$@"
    "$venv/bin/python" -m pip download -q --only-binary=:all: --python-version 3.12 \
        --platform any --implementation py --no-deps -d "$dist" \
        'pytest>=7' iniconfig pluggy packaging pygments
    ls -l "$dist"
    echo "carry target/gpu-python; on the GPU machine run scripts/gpu-python.sh"
    exit 0
fi

py=${PYTHON:-/opt/torch/.venv/bin/python3}
out=${OUT:-/tmp/armada-gpu-python}
mkdir -p "$out"
[[ -x $py ]] || { echo "no $py: set PYTHON=/path/to/python3"; exit 2; }
whl=$(ls "$dist"/armada-*.whl 2>/dev/null | head -1 || true)
[[ -n $whl ]] || { echo "no wheel in $dist: run scripts/gpu-python.sh build and carry target/gpu-python"; exit 2; }

site=$(mktemp -d /tmp/armada-py.XXXXXX)
trap 'rm -rf "$site"' EXIT
"$py" -m pip install -q --no-deps --no-index --target "$site" "$whl"
if ! "$py" -c 'import pytest' 2>/dev/null; then
    # pytest and its dependencies, from the carried wheels
    "$py" -m pip install -q --no-deps --no-index --target "$site" \
        $(ls "$dist"/*.whl | grep -v '/armada-')
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
export ARMADA_CACHE_DIR=${ARMADA_CACHE_DIR:-$site/cache}

{
    echo "python: $("$py" -c 'import sys; print(sys.version.split()[0])')"
    "$py" - <<'EOF'
import armada
print("armada", armada.__version__, "from", armada.__file__)
print("available_backends:", armada.available_backends())
for mod in ("numpy", "cupy", "torch"):
    try:
        m = __import__(mod)
        print(mod, m.__version__)
    except Exception as e:  # noqa: BLE001
        print(mod, "missing:", e)
EOF
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /' || true
} 2>&1 | tee "$out/env.txt"

set +e
"$py" -m pytest tests/python -p no:cacheprovider -rs -v --durations=15 "$@" 2>&1 | tee "$out/pytest.log"
rc=${PIPESTATUS[0]}
set -e
tail -1 "$out/pytest.log" >"$out/summary.txt"
grep -E "SKIPPED|FAILED|ERROR" "$out/pytest.log" >>"$out/summary.txt" || true
cat "$out/summary.txt"
exit "$rc"
