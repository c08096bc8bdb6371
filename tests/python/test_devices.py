"""run_batch(devices=...): one batch over several GPUs gives what the CPU engine gives.

CI has no GPU: the CUDA kernel's simulator stands in for three devices
(ARMADA_CUDA_SIM_DEVICES) and fails one on cue (ARMADA_CUDA_SIM_FAIL). The engine is opened
once per process, so each case runs in a Python process of its own with those variables set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import CAT

import armada

SCRIPT = r"""
import json, sys
import armada

prog = sys.argv[1]
argvs = [[prog] + ["a"] * (i % 4) for i in range(24)]
stdins = [bytes([65 + i % 26]) * (i * 37) for i in range(24)]


def run(**kw):
    rs = armada.run_batch(argvs, stdins, env={}, deterministic=True, **kw)
    return [[r.exit_code, r.stdout.hex(), r.stderr.hex(), r.instructions] for r in rs]


out = {}
try:
    out["cpu"] = run(backend="cpu")
    out["one"] = run(backend="cuda")
except armada.EngineUnavailableError as e:
    print(json.dumps({"unavailable": str(e)}))
    sys.exit(0)
for name, devices in [("all", "all"), ("list", [2, 0]), ("int", 1)]:
    try:
        out[name] = run(backend="cuda", devices=devices)
    except armada.ArmadaError as e:
        out[name] = f"{type(e).__name__}: {e}"

errors = {}
for name, kw in [
    ("seven", {"backend": "cuda", "devices": [7]}),
    ("text", {"backend": "cuda", "devices": "x"}),
    ("negative", {"backend": "cuda", "devices": [-1]}),
    ("cpu", {"backend": "cpu", "devices": "all"}),
]:
    try:
        run(**kw)
        errors[name] = "no error"
    except Exception as e:
        errors[name] = f"{type(e).__name__}: {e}"
out["errors"] = errors
print(json.dumps(out))
"""


def _run(prog: str, **env: str) -> dict:
    e = dict(os.environ)
    e.update({"ARMADA_CUDA_SIM": "1", "ARMADA_CUDA_SIM_DEVICES": "3"})
    e.pop("ARMADA_CUDA_SIM_FAIL", None)
    e.update(env)
    p = subprocess.run(
        [sys.executable, "-c", SCRIPT, prog], env=e, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if "unavailable" in out:
        pytest.skip(f"no CUDA simulator in this build: {out['unavailable']}")
    return out


def test_devices_give_what_one_device_and_the_cpu_give(elf):
    out = _run(elf(CAT, "cat"))
    assert out["one"] == out["cpu"]
    assert out["all"] == out["cpu"]
    assert out["list"] == out["cpu"]
    assert out["int"] == out["cpu"]
    errors = out["errors"]
    assert errors["seven"].startswith("EngineUnavailableError"), errors
    assert "no CUDA device 7" in errors["seven"], errors
    assert errors["text"].startswith("ValueError") and "not a device list" in errors["text"]
    assert errors["negative"].startswith("ValueError"), errors
    assert errors["cpu"].startswith("ValueError") and "devices= chooses GPUs" in errors["cpu"]


def test_a_failing_device_hands_its_lanes_over(elf):
    out = _run(elf(CAT, "cat"), ARMADA_CUDA_SIM_FAIL="1@0")
    assert out["all"] == out["cpu"]
    assert out["list"] == out["cpu"]
    # device 1 alone: nothing is left to take its lanes, so the batch fails with its error
    assert out["int"] == "ArmadaError: simulated failure of device 1 at launch 1 (ARMADA_CUDA_SIM_FAIL)"


def test_devices_argument_types():
    with pytest.raises(TypeError):
        armada.run_batch([["x"]], devices=True)
    with pytest.raises(TypeError):
        armada.run_batch([["x"]], devices=[0, "1"])


def test_devices_on_real_gpus(elf):
    """On a host with two or more GPUs (scripts/gpu-python.sh): devices="all" and a list
    give the CPU engine's results. Skipped elsewhere."""
    if os.environ.get("ARMADA_CUDA_SIM"):
        pytest.skip("the CUDA engine is the simulator here")
    prog = elf(CAT, "cat")
    argvs = [[prog] + ["a"] * (i % 4) for i in range(4096)]
    stdins = [bytes([65 + i % 26]) * (i % 300) for i in range(4096)]

    def run(**kw):
        rs = armada.run_batch(argvs, stdins, env={}, deterministic=True, **kw)
        return [(r.exit_code, r.stdout, r.stderr, r.instructions) for r in rs]

    try:
        two = run(backend="cuda", devices=[1, 0])
    except armada.EngineUnavailableError as e:
        pytest.skip(f"no second CUDA device here: {e}")
    cpu = run(backend="cpu")
    assert two == cpu
    assert run(backend="cuda", devices="all") == cpu
    assert run(backend="cuda") == cpu
