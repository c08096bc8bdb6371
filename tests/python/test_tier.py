"""armada.set_tier / armada.tier: the CPU engine's two tiers give the same results."""

from __future__ import annotations

import os

import pytest
from conftest import REPO

import armada

SORT = REPO / "target" / "guest" / "sort_bench"
CRC = REPO / "target" / "guest" / "crc32"


@pytest.fixture
def restore_tier():
    before = armada.tier()
    yield
    armada.set_tier(before)


def test_tier_names(restore_tier):
    assert armada.tier() in ("jit", "interp")
    armada.set_tier("interp")
    assert armada.tier() == "interp"
    armada.set_tier("jit")
    assert armada.tier() == "jit"
    with pytest.raises(ValueError, match="unknown tier"):
        armada.set_tier("fast")


@pytest.mark.parametrize("prog,args", [(SORT, ["20000"]), (CRC, ["2"])])
def test_tiers_agree(restore_tier, prog, args):
    if not prog.exists():
        pytest.skip(f"{prog} is missing")
    out = {}
    for t in ("interp", "jit"):
        armada.set_tier(t)
        r = armada.run([os.fspath(prog), *args])
        out[t] = (r.exit_code, r.stdout, r.stderr, r.instructions)
    assert out["interp"] == out["jit"]
    assert out["jit"][0] == 0 and out["jit"][3] > 1_000_000


def test_machine_budget_on_both_tiers(restore_tier):
    if not CRC.exists():
        pytest.skip(f"{CRC} is missing")
    counts = {}
    for t in ("interp", "jit"):
        armada.set_tier(t)
        r = armada.run([os.fspath(CRC), "2"], max_instructions=3_000_001)
        counts[t] = (r.stop_reason, r.instructions, r.stdout)
    assert counts["interp"] == counts["jit"]
    assert counts["jit"][1] == 3_000_001
