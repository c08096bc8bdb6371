"""armada.run and armada.run_batch: static Linux programs with captured stdio."""

from __future__ import annotations

import os
import pathlib
import signal
import threading
import time

import pytest
from conftest import CAT, ENV0, EXIT3, SEGV, SPIN

import armada


def test_hello(hello):
    r = armada.run([hello])
    assert isinstance(r, armada.Completed)
    assert r.exit_code == 0 and r.returncode == 0
    assert r.stdout == b"Hello, world!\n"
    assert r.stderr == b""
    assert r.stop_reason == "exit"
    assert r.instructions > 1000
    assert r.message is None
    assert r.elapsed >= 0
    assert "Hello" in repr(r)


def test_program_as_str_or_path(hello):
    assert armada.run(hello).stdout == b"Hello, world!\n"
    assert armada.run(pathlib.Path(hello)).stdout == b"Hello, world!\n"
    assert armada.run([os.fsencode(hello)]).stdout == b"Hello, world!\n"


def test_stdin_stdout_stderr_and_argc(elf):
    prog = elf(CAT)
    r = armada.run([prog, "a", "b"], stdin=b"some input\n" * 1000)
    assert r.stdout == b"some input\n" * 1000
    assert r.stderr == b"err\n"
    assert r.exit_code == 3  # argc
    assert armada.run([prog]).stdout == b""  # default stdin is empty
    assert armada.run([prog], stdin="text").stdout == b"text"
    assert armada.run([prog], stdin=bytearray(b"ba")).stdout == b"ba"


def test_exit_code(elf):
    r = armada.run([elf(EXIT3)])
    assert r.exit_code == 3 and r.stop_reason == "exit"


def test_signal_is_negative_exit_code(elf):
    r = armada.run([elf(SEGV)])
    assert r.exit_code == -signal.SIGSEGV
    assert r.stop_reason == "signal"
    assert "SIGSEGV" in r.message


def test_env(elf):
    prog = elf(ENV0)
    assert armada.run([prog], env={"ONLY": "one"}).stdout == b"ONLY=one"
    assert armada.run([prog], env={b"B": b"2"}).stdout == b"B=2"
    assert armada.run([prog], env={}).stdout == b""
    # env=None: the host's environment, as under `armada run` (last variable first, as qemu)
    os.environ["ARMADA_TEST_VAR"] = "x"
    try:
        out = armada.run([prog]).stdout
        assert out == b"ARMADA_TEST_VAR=x"
    finally:
        del os.environ["ARMADA_TEST_VAR"]
    with pytest.raises(ValueError):
        armada.run([prog], env={"A=B": "c"})


def test_max_instructions(elf):
    r = armada.run([elf(SPIN)], max_instructions=100_000)
    assert r.stop_reason == "max_instructions"
    assert r.exit_code == 124
    assert r.instructions == 100_000
    assert "max_instructions" in r.message


def test_root_confines_file_access(hello, tmp_path):
    r = armada.run([hello], root=tmp_path)
    assert r.exit_code == 0 and r.stdout == b"Hello, world!\n"
    with pytest.raises(ValueError, match="not a directory"):
        armada.run([hello], root=tmp_path / "missing")


def test_deterministic(hello):
    a = armada.run([hello], deterministic=True, seed=1)
    b = armada.run([hello], deterministic=True, seed=1)
    assert a.stdout == b.stdout and a.instructions == b.instructions


def test_missing_file_and_bad_elf(tmp_path):
    with pytest.raises(armada.ElfError, match="cannot"):
        armada.run([os.fspath(tmp_path / "nope")])
    bad = tmp_path / "bad"
    bad.write_bytes(b"#!/bin/sh\necho hi\n")
    with pytest.raises(armada.ElfError, match="not an ELF"):
        armada.run([os.fspath(bad)])
    assert issubclass(armada.ElfError, armada.ArmadaError)


def test_host_binary_is_refused():
    with pytest.raises(armada.ElfError):
        armada.run(["/bin/sh", "-c", "true"])


def test_argument_errors(hello):
    with pytest.raises(ValueError):
        armada.run([])
    with pytest.raises(TypeError):
        armada.run([hello], stdin=5)
    with pytest.raises(TypeError):
        armada.run([hello, 5])


@pytest.mark.parametrize("backend", ["cuda", "wgpu"])
def test_run_gpu_backends(hello, backend):
    # where the engine cannot run: EngineUnavailableError with the reason; else it runs
    if backend not in armada.available_backends():
        with pytest.raises(armada.EngineUnavailableError, match=backend):
            armada.run([hello], backend=backend)
        with pytest.raises(armada.EngineUnavailableError):
            armada.run_batch([[hello]], backend=backend)
    else:
        assert armada.run([hello], backend=backend).stdout == b"Hello, world!\n"
        assert armada.run_batch([[hello]] * 2, backend=backend)[1].exit_code == 0
    assert issubclass(armada.EngineUnavailableError, armada.ArmadaError)


def test_run_backend_auto(hello):
    assert armada.run([hello], backend="auto").exit_code == 0


# ----- run_batch ---------------------------------------------------------------------------


def test_run_batch_hello(hello):
    rs = armada.run_batch([[hello]] * 8)
    assert len(rs) == 8
    for r in rs:
        assert r.exit_code == 0 and r.stdout == b"Hello, world!\n"


def test_run_batch_lanes_differ(elf):
    prog = elf(CAT)
    argvs = [[prog] + ["x"] * i for i in range(6)]
    stdins = [f"lane {i}\n".encode() for i in range(6)]
    rs = armada.run_batch(argvs, stdins=stdins)
    assert [r.exit_code for r in rs] == [1, 2, 3, 4, 5, 6]
    assert [r.stdout for r in rs] == stdins  # results in lane order
    assert all(r.stderr == b"err\n" for r in rs)


def test_run_batch_env_and_signals(elf):
    rs = armada.run_batch([[elf(ENV0)]] * 3, env={"K": "v"})
    assert [r.stdout for r in rs] == [b"K=v"] * 3
    rs = armada.run_batch([[elf(SEGV)]] * 2)
    assert [r.exit_code for r in rs] == [-signal.SIGSEGV] * 2


def test_run_batch_max_instructions(elf):
    rs = armada.run_batch([[elf(SPIN)]] * 3, max_instructions=5000)
    assert all(r.stop_reason == "max_instructions" and r.instructions == 5000 for r in rs)


def test_run_batch_edge_cases(hello, elf):
    assert armada.run_batch([]) == []
    with pytest.raises(ValueError, match="one per lane"):
        armada.run_batch([[hello], [hello]], stdins=[b""])
    with pytest.raises(ValueError, match="empty"):
        armada.run_batch([[hello], []])
    with pytest.raises(TypeError):
        armada.run_batch(hello)
    with pytest.raises(armada.ElfError):
        armada.run_batch([["/nonexistent/prog"]] * 2)


def test_run_batch_several_programs(hello, elf):
    # lanes of different programs in one batch: each lane as it runs alone
    cat, exit3 = elf(CAT, "cat"), elf(EXIT3, "exit3")
    argvs = [[hello], [exit3], [cat, "x"], [hello], [cat]]
    stdins = [b"", b"", b"to cat\n", b"", b"more\n"]
    rs = armada.run_batch(argvs, stdins=stdins, deterministic=True)
    alone = [armada.run(a, stdin=i, deterministic=True) for a, i in zip(argvs, stdins)]
    assert [(r.exit_code, r.stdout, r.stderr) for r in rs] == [
        (r.exit_code, r.stdout, r.stderr) for r in alone
    ]
    assert [r.exit_code for r in rs] == [0, 3, 2, 0, 1]
    with pytest.raises(armada.ElfError, match="nonexistent"):
        armada.run_batch([[hello], ["/nonexistent/prog"]])


def test_run_batch_releases_the_gil(elf):
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    # long enough for the ticker to tick on the translation tier too (about 4 G
    # instructions/s on this loop: 50 M took 12 ms)
    try:
        rs = armada.run_batch([[elf(SPIN)]] * 2, max_instructions=500_000_000)
    finally:
        stop.set()
        t.join()
    assert all(r.instructions == 500_000_000 for r in rs)
    assert len(ticks) > 10


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_interrupts_run(elf):
    prog = elf(SPIN)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        armada.run_batch([[prog]] * 2)  # never ends by itself
    timer.join()
    assert time.perf_counter() - t < 5


def _built(rel: str) -> str:
    """A guest program scripts/test builds; missing is a skip here and a failure on CI."""
    from conftest import REPO

    p = REPO / rel
    if not p.exists():
        if os.environ.get("CI") or os.environ.get("ARMADA_TEST_STRICT"):
            pytest.fail(f"{p} is missing (scripts/test builds it)")
        pytest.skip(f"{p} is missing (scripts/test builds it)")
    return str(p)


CROSS_SYSROOT = "/usr/aarch64-linux-gnu"


def test_dynamic_program_with_sysroot():
    prog = _built("target/guest-dynamic/argv_env")
    if not os.path.exists(CROSS_SYSROOT + "/lib/ld-linux-aarch64.so.1"):
        pytest.skip("no cross sysroot (libc6-arm64-cross)")
    r = armada.run([prog, "x"], env={"A": "1"}, sysroot=CROSS_SYSROOT)
    assert r.exit_code == 2, (r.stdout, r.stderr)  # argc
    assert b"argv[1]=[x]" in r.stdout
    # without a sysroot the interpreter is missing: an ElfError that says what to do
    with pytest.raises(armada.ElfError, match="-L DIR"):
        armada.run([prog], env={})
    # a batch (the CPU engine here, or CUDA where "auto" finds it); lanes share the interpreter
    rs = armada.run_batch([[prog, str(i)] for i in range(3)], env={}, sysroot=CROSS_SYSROOT)
    assert [r.exit_code for r in rs] == [2, 2, 2]
    assert [b"argv[1]=[%d]" % i in r.stdout for i, r in enumerate(rs)] == [True] * 3


def test_threads_run_on_the_cpu_engine():
    prog = _built("target/guest-threads/sum64")
    r = armada.run([prog, "10"], env={}, deterministic=True)
    assert r.exit_code == 0, r.stderr
    assert b"n=10: sum=55" in r.stdout
    again = armada.run([prog, "10"], env={}, deterministic=True)
    assert (again.stdout, again.instructions) == (r.stdout, r.instructions)


def test_processes_run_on_the_cpu_engine():
    # a program that forks, waits, pipes and execs (tests/guest/processes/pipes.c): the
    # whole process tree runs inside the one run, deterministically
    prog = _built("target/guest-processes/pipes")
    r = armada.run([prog], env={}, deterministic=True)
    assert r.exit_code == 0, r.stderr
    assert r.stdout, r.stderr
    again = armada.run([prog], env={}, deterministic=True)
    assert (again.stdout, again.instructions) == (r.stdout, r.instructions)


def test_each_lane_has_its_own_network():
    # tests/guest/src/ipc_sockets.c binds TCP port 8080 and uses System V IPC: every lane
    # of a batch does so at once, on its own loopback network and IPC table
    prog = _built("target/guest/ipc_sockets")
    rs = armada.run_batch([[prog, "8080"]] * 16, env={}, backend="cpu")
    assert [r.exit_code for r in rs] == [0] * 16, rs[0].stdout + rs[0].stderr
    assert all(b"listening on port 8080" in r.stdout for r in rs)
    assert len({r.stdout for r in rs}) == 1
    with pytest.raises(ValueError, match="loopback"):
        armada.run([prog], env={}, net="internet")
    # the host's network: an ephemeral port of the host's loopback
    r = armada.run([prog], env={}, net="host")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert b"tcp: server read" in r.stdout
