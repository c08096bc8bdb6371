"""armada.ray.run_batch on a local Ray cluster, CPU engine: the same results as
armada.run_batch, shards that fail once and twice, lanes that crash, 10,000 lanes, and bad
input (an address that does not answer, Ray not installed).

Skipped where Ray is not installed (scripts/test-python installs it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from conftest import CAT, HELLO, make_elf

import armada

ray = pytest.importorskip("ray")
import armada.ray as aray  # noqa: E402

# exit(argc), but a SIGSEGV when argc is 3:
#     ldr x0, [sp] ; cmp x0, #3 ; b.ne 1f ; mov x1, #0 ; ldr x1, [x1]
# 1:  mov x8, #93 ; svc #0
CRASH3 = bytes.fromhex("e00340f91f0c00f161000054010080d2210040f9a80b80d2010000d4")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _prog(tmp_path, code: bytes, name: str) -> str:
    p = tmp_path / name
    p.write_bytes(make_elf(code))
    p.chmod(0o755)
    return os.fspath(p)


def _fields(rs):
    return [(r.exit_code, r.stdout, r.stderr, r.instructions, r.stop_reason, r.message) for r in rs]


def test_same_results_as_run_batch(cluster, tmp_path):
    cat = _prog(tmp_path, CAT, "cat")
    argvs = [[cat] + ["a"] * (i % 4) for i in range(24)]
    stdins = [bytes([65 + i % 26]) * (i * 37) for i in range(24)]
    kw = dict(backend="cpu", deterministic=True, max_instructions=25)
    local = armada.run_batch(argvs, stdins, env={"A": "1"}, **kw)
    seen = []
    for shards in (1, 3, 7, 50):
        got = aray.run_batch(
            argvs,
            stdins,
            env={"A": "1"},
            shards=shards,
            progress=lambda *a: seen.append(a),
            **kw,
        )
        assert _fields(got) == _fields(local), f"shards={shards}"
    # some lanes hit the instruction limit, the others exit with their argc
    assert {r.stop_reason for r in local} == {"exit", "max_instructions"}
    # progress came once per shard, ending with every lane done
    assert seen[-1] == (24, 24, 24, 24)
    # env=None: the driver's environment, as run_batch gives it
    hello = os.fspath(HELLO)
    a = armada.run_batch([[hello]] * 5, backend="cpu", deterministic=True)
    b = aray.run_batch([[hello]] * 5, backend="cpu", deterministic=True, shards=2)
    assert _fields(a) == _fields(b)
    # results pickle (they cross processes)
    import pickle

    c = pickle.loads(pickle.dumps(local[5]))
    assert _fields([c]) == _fields([local[5]]) and c.elapsed == local[5].elapsed


def test_lanes_that_crash(cluster, tmp_path):
    prog = _prog(tmp_path, CRASH3, "crash3")
    argvs = [[prog] + ["x"] * (i % 4) for i in range(40)]
    local = armada.run_batch(argvs, backend="cpu", deterministic=True)
    got = aray.run_batch(argvs, backend="cpu", deterministic=True, shards=4)
    assert _fields(got) == _fields(local)
    assert [r.exit_code for r in got[:4]] == [1, 2, -signal.SIGSEGV, 4]


def test_a_shard_that_fails_once_runs_again(cluster, tmp_path, monkeypatch):
    cat = _prog(tmp_path, CAT, "cat")
    argvs = [[cat, str(i)] for i in range(12)]
    local = armada.run_batch(argvs, backend="cpu", deterministic=True)
    monkeypatch.setenv("ARMADA_RAY_FAIL_SHARDS", "0,2")
    got = aray.run_batch(argvs, backend="cpu", deterministic=True, shards=3)
    assert _fields(got) == _fields(local)


def test_a_shard_that_fails_twice_raises(cluster, tmp_path):
    # a program that is not there on the nodes (shared_files: its path is taken as is)
    missing = os.fspath(tmp_path / "missing")
    with pytest.raises(armada.ArmadaError, match=r"shard 0 \(lanes 0 to 1\) failed twice"):
        aray.run_batch([[missing]] * 4, backend="cpu", shards=2, shared_files=True)
    # without shared_files the driver reads it, and says so itself
    with pytest.raises(armada.ElfError, match="cannot run"):
        aray.run_batch([[missing]] * 4, backend="cpu", shards=2)


def test_ten_thousand_lanes(cluster):
    hello = os.fspath(HELLO)
    argvs = [[hello, str(i)] for i in range(10_000)]
    local = armada.run_batch(argvs, backend="cpu", deterministic=True)
    got = aray.run_batch(argvs, backend="cpu", deterministic=True, shards=4)
    assert len(got) == 10_000
    assert _fields(got) == _fields(local)


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )


def test_an_address_that_does_not_answer():
    p = _python(
        "import armada, armada.ray as r\n"
        "try:\n"
        f"    r.run_batch([[{os.fspath(HELLO)!r}]], backend='cpu', address='127.0.0.1:9')\n"
        "except armada.ArmadaError as e:\n"
        "    print('ERR', e)\n"
    )
    assert "ERR the Ray cluster at 127.0.0.1:9 does not answer" in p.stdout, p.stdout + p.stderr


def test_submodules_after_a_plain_import():
    # a fresh interpreter: nothing has imported armada.ray yet
    p = _python("import armada\nprint(callable(armada.ray.run_batch), 'ray' in dir(armada))\n")
    assert p.stdout.strip() == "True True", p.stdout + p.stderr
    p = _python("import armada\narmada.nonexistent\n")
    assert "module 'armada' has no attribute 'nonexistent'" in p.stderr


def test_without_ray_the_error_names_the_install():
    p = _python(
        "import sys; sys.modules['ray'] = None\n"
        "import armada.ray as r\n"
        "try:\n"
        "    r.run_batch([['x']])\n"
        "except ImportError as e:\n"
        "    print('ERR', e)\n"
    )
    assert "pip install 'armada[ray]'" in p.stdout, p.stdout + p.stderr


def test_split():
    assert aray._split(7, 3) == [(0, 3), (3, 2), (5, 2)]
    assert aray._split(2, 4) == [(0, 1), (1, 1)]
    for n in range(30):
        for k in range(1, 6):
            parts = aray._split(n, k)
            assert sum(c for _, c in parts) == n
            assert all(s == sum(c for _, c in parts[:i]) for i, (s, _) in enumerate(parts))
