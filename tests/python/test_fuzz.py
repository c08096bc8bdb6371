"""Snapshots, coverage maps and fuzzing from Python (armada.run_batch(snapshot_at=...),
coverage=True, armada.fuzz). The programs are tests/guest/fuzz, which scripts/test builds
into target/guest-fuzz."""

from __future__ import annotations

import os

import numpy as np
import pytest

import armada
from test_linux import _built


def test_batch_from_a_snapshot_matches_full_runs():
    prog = _built("target/guest-fuzz/magic")
    stdins = [b"lane %d" % i for i in range(8)] + [b"ARM64FUZ"]
    full = armada.run_batch([[prog]] * 9, stdins, env={}, backend="cpu")
    for point in ["main", "input"]:
        snap = armada.run_batch([[prog]] * 9, stdins, env={}, backend="cpu", snapshot_at=point)
        assert [(r.exit_code, r.stdout, r.instructions) for r in snap] == [
            (r.exit_code, r.stdout, r.instructions) for r in full
        ]
    assert full[-1].exit_code == -11
    with pytest.raises(ValueError, match="every argv must be the same"):
        armada.run_batch([[prog], [prog, "x"]], backend="cpu", snapshot_at="main")
    with pytest.raises(armada.ArmadaError, match="was not reached"):
        armada.run_batch([[_built("target/guest-fuzz/noread")]], backend="cpu", snapshot_at="input")


def test_a_snapshot_object_runs_on_from_its_pause():
    prog = _built("target/guest-fuzz/magic")
    stdins = [b"lane %d" % i for i in range(6)] + [b"ARM64FUZ", b""]
    full = armada.run_batch([[prog]] * len(stdins), stdins, env={}, backend="cpu")
    for point in ["main", "input"]:
        snap = armada.snapshot([prog], at=point, env={})
        assert isinstance(snap, armada.Snapshot)
        assert snap.point == point and snap.instructions > 0 and snap.pc > 0
        assert point in repr(snap)
        # one at a time and as a batch, many times: each run is the whole run's
        expect = [(r.exit_code, r.stdout, r.instructions) for r in full]
        for _ in range(2):
            got = snap.run_batch(stdins, backend="cpu")
            assert [(r.exit_code, r.stdout, r.instructions) for r in got] == expect
        one = snap.run(b"ARM64FUZ")
        assert (one.exit_code, one.instructions) == (full[-2].exit_code, full[-2].instructions)
        assert one.exit_code == -11
        # the instruction limit counts from the program's start
        capped = snap.run(b"x", max_instructions=snap.instructions + 10)
        assert capped.stop_reason == "max_instructions"
    m = armada.snapshot([prog], at="input", env={}).run(b"ARM6", coverage=True)
    assert m.coverage is not None and m.coverage.shape == (65536,)
    with pytest.raises(armada.ArmadaError, match="was not reached"):
        armada.snapshot([_built("target/guest-fuzz/noread")], at="input", env={})
    with pytest.raises(armada.ArmadaError, match="no_such_symbol"):
        armada.snapshot([prog], at="no_such_symbol", env={})
    with pytest.raises(TypeError, match="stdins\\[1\\] must be bytes-like"):
        armada.snapshot([prog], env={}).run_batch([b"a", 3.5], backend="cpu")


@pytest.mark.parametrize("backend", ["cuda", "wgpu"])
def test_a_snapshot_runs_on_the_gpu_as_on_the_cpu(backend):
    prog = _built("target/guest-fuzz/magic")
    snap = armada.snapshot([prog], at="input", env={})
    stdins = [b"lane %d" % i for i in range(5)] + [b"ARM64FUZ"]
    try:
        gpu = snap.run_batch(stdins, backend=backend, coverage=True)
    except armada.EngineUnavailableError as e:
        pytest.skip(f"no {backend} engine here: {e}")
    cpu = snap.run_batch(stdins, backend="cpu", coverage=True)
    assert [(r.exit_code, r.stdout, r.instructions) for r in gpu] == [
        (r.exit_code, r.stdout, r.instructions) for r in cpu
    ]
    for a, b in zip(cpu, gpu):
        assert np.array_equal(a.coverage, b.coverage)


def test_coverage_maps_are_numpy_arrays_that_repeat():
    prog = _built("target/guest-fuzz/magic")
    a = armada.run([prog], stdin=b"ARM6xxxx", env={}, coverage=True)
    b = armada.run([prog], stdin=b"ARM6xxxx", env={}, coverage=True)
    c = armada.run([prog], stdin=b"ARM64xxx", env={}, coverage=True)
    assert isinstance(a.coverage, np.ndarray) and a.coverage.dtype == np.uint8
    assert a.coverage.shape == (65536,)
    assert np.array_equal(a.coverage, b.coverage)
    # one more matching byte: one more edge
    assert np.count_nonzero(c.coverage) > np.count_nonzero(a.coverage)
    assert armada.run([prog], stdin=b"", env={}).coverage is None


def test_fuzz_finds_a_planted_bug(tmp_path):
    prog = _built("target/guest-fuzz/magic")
    with pytest.raises(ValueError, match="runs forever"):
        armada.fuzz([prog], tmp_path / "c", tmp_path / "x")
    stats = armada.fuzz(
        [prog], tmp_path / "corpus", tmp_path / "crashes", max_execs=600_000, stop_on_crash=True
    )
    assert stats["crashes"] == 1, stats
    crash = stats["saved"][0]
    assert os.path.basename(crash).startswith("crash-sig11-")
    with open(crash, "rb") as f:
        assert armada.run([prog], stdin=f.read(), env={}).exit_code == -11
    assert stats["corpus"] >= 2 and stats["edges"] > 0 and stats["execs"] <= 600_000
    with pytest.raises(armada.ArmadaError, match="was not reached"):
        armada.fuzz(
            [_built("target/guest-fuzz/noread")],
            tmp_path / "c2",
            tmp_path / "x2",
            max_execs=10,
        )


@pytest.mark.parametrize("backend", ["cuda", "wgpu"])
def test_gpu_coverage_maps_equal_the_cpu_engines(backend):
    prog = _built("target/guest-fuzz/nested")
    stdins = [b"", b"{[(", b"{[(<>)]}", b"plain text"]
    try:
        gpu = armada.run_batch(
            [[prog]] * 4, stdins, env={}, backend=backend, snapshot_at="input", coverage=True
        )
    except armada.EngineUnavailableError as e:
        pytest.skip(f"no {backend} engine here: {e}")
    cpu = armada.run_batch(
        [[prog]] * 4, stdins, env={}, backend="cpu", snapshot_at="input", coverage=True
    )
    for g, c in zip(gpu, cpu):
        assert g.coverage is not None and g.coverage.shape == (65536,)
        assert np.array_equal(g.coverage, c.coverage)
        assert (g.exit_code, g.stdout, g.instructions) == (c.exit_code, c.stdout, c.instructions)
    assert not np.array_equal(cpu[0].coverage, cpu[2].coverage)
