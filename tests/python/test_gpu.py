"""The GPU backends from Python: Machine, run and run_batch on CUDA and wgpu against the CPU
engine, and guest memory in device memory through DLPack (CuPy, PyTorch).

Every test skips where its engine does not open. With ARMADA_CUDA_SIM=1 the CUDA engine
is its kernel compiled for the host (no GPU needed): everything but the CuPy/PyTorch tests
runs, and DLPack exports host memory (kDLCPU), which numpy reads. On a GPU machine with CuPy
and PyTorch installed, all of it runs (scripts/gpu-python.sh).
"""

from __future__ import annotations

import gc
import signal
import struct

import pytest
from conftest import (
    BRK,
    CAT,
    CMP,
    COUNT7,
    EXIT3,
    FAULT,
    HALT42,
    LOOP,
    MEMINC,
    PUSHPOP,
    SEGV,
    SPIN,
    SVC,
)

import armada

# str w1, [x0] ; nop ; movz x0, #1 ; hlt #0      (x0 = 8, w1 = a new instruction for 0x8)
SMC = bytes.fromhex("010000b91f2003d5200080d2000040d4")
# x2 = 0; for x3 in 0..512: x2 += x0[x3]; x1[x3] = x2 ; hlt #1      (prefix sums of u64s)
PREFIX_SUM = bytes.fromhex(
    "020080d2030080d2047863f84200048b227823f8630400917f0008f161ffff54200040d4"
)
# br x2
JUMP = bytes.fromhex("40001fd6")
# scvtf d0, x0 ; fmov d1, #1.5 ; fmul d2, d0, d1 ; fcvtzs x1, d2 ; fadd d3, d2, d2
# fcmp d3, d2 ; cset x5, gt ; hlt #0
FP = bytes.fromhex("0000629e01106f1e0208611e4100789e4328621e6020621ee5d79f9a000040d4")
# stp x0, x1, [x2] ; ldr x3, [x2, #4] ; hlt #0
STRADDLE = bytes.fromhex("400400a9434040f8000040d4")
# ldr x3, [x0] ; str x3, [x1] ; br x1      (copies 8 bytes of code from x0 to x1, runs them)
COPYCODE = bytes.fromhex("030040f9230000f920001fd6")
# movz x0, #1 ; hlt #0
MOV1 = bytes.fromhex("200080d2000040d4")


def _cuda_or_skip():
    try:
        return armada.Machine(1 << 16, backend="cuda")
    except armada.EngineUnavailableError as e:
        pytest.skip(f"no CUDA engine here: {e}")


@pytest.fixture
def cuda():
    _cuda_or_skip()
    return "cuda"


@pytest.fixture(params=["cuda", "wgpu"])
def gpu(request):
    """Each GPU backend that runs here."""
    try:
        armada.Machine(1 << 16, backend=request.param)
    except armada.EngineUnavailableError as e:
        pytest.skip(f"no {request.param} engine here: {e}")
    return request.param


def _on_gpu(m) -> bool:
    return m.memory_view().device.startswith("cuda")


def _state(m, r):
    return dict(
        regs=m.registers,
        flags=int(m.flags),
        pc=m.pc,
        stop=r.stop_reason_name,
        cycles=r.cycles,
        fault_address=r.fault_address,
        fault_access=r.fault_access,
        undefined_word=r.undefined_word,
        immediate=r.immediate,
        result_pc=r.pc,
    )


def _both(gpu, setup, size=1 << 16, max_cycles=None, runs=1):
    """Runs `setup(machine)` then `runs` executes on the CPU and on `gpu`; returns both."""
    out = []
    for backend in ("cpu", gpu):
        m = armada.Machine(size, backend=backend)
        setup(m)
        states = []
        for _ in range(runs):
            r = m.execute(max_cycles)
            states.append(_state(m, r))
        states.append(m.read_memory(0, size))
        out.append(states)
    return out


PROGRAMS = {
    "halt": (lambda m: m.load_program(HALT42), None),
    "loop": (lambda m: m.load_program(LOOP), None),
    "count7": (lambda m: m.load_program(COUNT7), None),
    "svc": (lambda m: m.load_program(SVC), None),
    "fault": (lambda m: m.load_program(FAULT), None),
    "brk": (lambda m: m.load_program(BRK), None),
    "pushpop": (
        lambda m: (m.load_program(PUSHPOP), m.set_register(0, 7), m.set_register(1, 9)),
        None,
    ),
    "cmp": (lambda m: (m.load_program(CMP), m.set_register(0, 5), m.set_register(1, 7)), None),
    "meminc": (
        lambda m: (
            m.load_program(MEMINC),
            m.set_register(1, 0x2000),
            m.write_memory_64(0x2000, 41),
        ),
        None,
    ),
    "spin-limit": (lambda m: m.load_program(SPIN), 300_000),
    "loop-limit": (lambda m: m.load_program(LOOP), 1234),
    "undefined-fresh-memory": (lambda m: m.set_pc(0x4000), None),
    "jump-outside": (lambda m: (m.load_program(JUMP), m.set_register(2, 1 << 40)), None),
    "jump-misaligned": (lambda m: (m.load_program(JUMP), m.set_register(2, 0x102)), None),
    "run-off-the-end": (lambda m: (m.write_memory(0xFFF8, bytes.fromhex("1f2003d5" * 2)),
                                   m.set_pc(0xFFF8)), None),
    "self-modifying": (
        lambda m: (
            m.load_program(SMC),
            m.set_register(0, 8),
            m.set_register(1, 0xD2800C60),  # movz x0, #99
        ),
        None,
    ),
    "store-into-code-page": (
        lambda m: (
            m.load_program(MEMINC),
            m.set_register(1, 0x800),  # same page as the code
            m.write_memory_64(0x800, 1),
        ),
        None,
    ),
    "prefix-sum": (
        lambda m: (
            m.load_program(PREFIX_SUM),
            m.write_memory(0x4000, struct.pack("<512Q", *range(1, 513))),
            m.set_register(0, 0x4000),
            m.set_register(1, 0x8000),
        ),
        None,
    ),
    "fp": (lambda m: (m.load_program(FP), m.set_register(0, 12345)), None),
    "straddle-pages": (
        lambda m: (
            m.load_program(STRADDLE),
            m.set_register(0, 0x1122334455667788),
            m.set_register(1, 0x99AABBCCDDEEFF00),
            m.set_register(2, 0x2FFC),
        ),
        None,
    ),
    "copy-code-and-run": (
        lambda m: (
            m.load_program(COPYCODE),
            m.write_memory(0x1000, HALT42),
            m.set_register(0, 0x1000),
            m.set_register(1, 0x3000),
        ),
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_execute_gpu_equals_cpu(gpu, name):
    setup, max_cycles = PROGRAMS[name]
    cpu, dev = _both(gpu, setup, max_cycles=max_cycles)
    assert dev[:-1] == cpu[:-1]
    assert dev[-1] == cpu[-1], "memory differs"


def test_execute_again_continues(gpu):
    # LOOP in slices of max_cycles, each execute going on from the last
    def setup(m):
        m.load_program(LOOP)

    cpu, dev = _both(gpu, setup, max_cycles=1000, runs=4)
    assert dev == cpu
    assert cpu[-2]["stop"] == "HALT"


def test_code_written_between_runs(gpu):
    for backend in ("cpu", gpu):
        m = armada.Machine(1 << 16, backend=backend)
        m.load_program(MOV1)
        assert m.execute().stop_reason_name == "HALT" and m.get_register(0) == 1
        m.write_memory(0, HALT42)  # code that already ran
        m.set_pc(0)
        m.execute()
        assert m.get_register(0) == 42, backend


def test_guest_overwrites_code_that_ran(gpu):
    for backend in ("cpu", gpu):
        m = armada.Machine(1 << 16, backend=backend)
        m.load_program(COPYCODE)
        m.write_memory(0x1000, MOV1)
        m.write_memory(0x1100, HALT42)
        m.registers = [0x1000, 0x3000] + [0] * 29 + [1 << 16]
        m.execute()
        assert m.get_register(0) == 1
        m.registers = [0x1100, 0x3000] + [0] * 29 + [1 << 16]
        m.set_pc(0)
        m.execute()  # the store into 0x3000, whose code ran, must be seen
        assert m.get_register(0) == 42, backend


def test_syscall_loop_from_python(gpu):
    m = armada.Machine(1 << 16, backend=gpu)
    m.load_program(SVC)
    r = m.execute()
    assert r.stop_reason == armada.StopReason.SYSCALL and r.pc == 8
    assert m.get_register(8) == 64
    m.set_register(0, 5)
    r = m.execute()
    assert r.stop_reason == armada.StopReason.HALT
    assert m.get_register(1) == 7


def test_background_run(gpu):
    m = armada.Machine(1 << 16, backend=gpu)
    m.load_program(SPIN)
    # (several of the kernel's slices, but few: 1,000,000 took lavapipe 24 s on 2 cores)
    m.start(max_cycles=300_000)
    r = m.wait()
    assert r.stop_reason == armada.StopReason.MAX_CYCLES
    assert r.cycles == 300_000
    assert m.poll().cycles_executed == 300_000
    assert not m.is_running()


def test_backend_name_and_repr(gpu):
    m = armada.Machine(1 << 16, backend=gpu)
    assert m.backend == gpu
    assert gpu in repr(m)
    assert gpu in armada.available_backends()


# ----- DLPack -----------------------------------------------------------------------------


def test_device_memory_object(cuda):
    m = armada.Machine(1 << 16, backend="cuda")
    v = m.memory_view()
    assert isinstance(v, armada.DeviceMemory)
    assert v.nbytes == len(v) == 1 << 16 and v.shape == (1 << 16,)
    dev = v.__dlpack_device__()
    assert dev == m.__dlpack_device__()
    assert dev in ((2, 0), (1, 0))
    assert "DeviceMemory" in repr(v)


def test_numpy_reads_simulator_memory(cuda):
    np = pytest.importorskip("numpy")
    m = armada.Machine(1 << 16, backend="cuda")
    if _on_gpu(m):
        pytest.skip("device memory is on the GPU (numpy cannot read it)")
    m.write_memory(0x100, b"\x01\x02\x03")
    a = np.from_dlpack(m.memory_view())
    assert a.dtype == np.uint8 and a.shape == (1 << 16,)
    assert a[0x100:0x103].tolist() == [1, 2, 3]
    # a guest store shows up in the array
    m.load_program(MEMINC)
    m.set_register(1, 0x2000)
    m.write_memory_64(0x2000, 41)
    m.execute()
    assert a[0x2000:0x2008].view(np.uint64)[0] == 42
    # and a write through the array reaches the guest
    a[0x2000:0x2008] = np.frombuffer(struct.pack("<Q", 99), dtype=np.uint8)
    m.set_pc(0)
    m.execute()
    assert m.read_memory_64(0x2000) == 100
    # the array keeps the memory alive after the machine is gone
    b = np.from_dlpack(m)
    del m, a
    gc.collect()
    assert b[0x2000:0x2008].view(np.uint64)[0] == 100


def _gpu_machine():
    m = _cuda_or_skip()
    if not _on_gpu(m):
        pytest.skip("the CUDA engine is the simulator: no device memory")
    return m


def test_cupy_sees_guest_memory():
    cp = pytest.importorskip("cupy")
    _gpu_machine()
    m = armada.Machine(1 << 20, backend="cuda")
    m.write_memory(0x100, b"hello")
    a = cp.from_dlpack(m.memory_view())
    assert a.dtype == cp.uint8 and a.shape == (1 << 20,)
    assert a.data.ptr == m.memory_view().ptr  # no copy
    assert bytes(cp.asnumpy(a[0x100:0x105])) == b"hello"
    m.load_program(MEMINC)
    m.set_register(1, 0x2000)
    m.write_memory_64(0x2000, 41)
    m.execute()
    assert int(a[0x2000:0x2008].view(cp.uint64)[0]) == 42  # a guest store
    a[0x2000:0x2008].view(cp.uint64)[0] = 99  # a write by CuPy reaches the guest
    cp.cuda.runtime.deviceSynchronize()
    m.set_pc(0)
    m.execute()
    assert m.read_memory_64(0x2000) == 100
    # code written through CuPy runs
    a[0x40000:0x40008] = cp.asarray(bytearray(HALT42), dtype=cp.uint8)
    cp.cuda.runtime.deviceSynchronize()
    m.set_pc(0x40000)
    m.execute()
    assert m.get_register(0) == 42
    b = cp.from_dlpack(m)  # Machine.__dlpack__ too
    del m, a
    gc.collect()
    assert int(b[0x2000:0x2008].view(cp.uint64)[0]) == 100  # kept alive


def test_torch_sees_guest_memory():
    torch = pytest.importorskip("torch")
    _gpu_machine()
    m = armada.Machine(1 << 20, backend="cuda")
    m.write_memory(0x100, b"hello")
    t = torch.from_dlpack(m.memory_view())
    assert t.dtype == torch.uint8 and t.shape == (1 << 20,) and t.is_cuda
    assert t.data_ptr() == m.memory_view().ptr  # no copy
    assert bytes(t[0x100:0x105].cpu().numpy()) == b"hello"
    m.load_program(MEMINC)
    m.set_register(1, 0x2000)
    m.write_memory_64(0x2000, 41)
    m.execute()
    assert int(t[0x2000:0x2008].view(torch.int64)[0]) == 42  # a guest store
    t[0x2000] = 99
    torch.cuda.synchronize()
    m.set_pc(0)
    m.execute()
    assert m.read_memory_64(0x2000) == 100
    u = torch.from_dlpack(m)
    del m, t
    gc.collect()
    assert int(u[0x2000:0x2008].view(torch.int64)[0]) == 100


# ----- run / run_batch ----------------------------------------------------------------------


def _same(a, b):
    assert (a.exit_code, a.stop_reason, a.stdout, a.stderr, a.instructions, a.message) == (
        b.exit_code,
        b.stop_reason,
        b.stdout,
        b.stderr,
        b.instructions,
        b.message,
    )


def test_run_gpu_equals_cpu(gpu, hello, elf):
    env = {"A": "1"}
    for argv, kw in [
        ([hello], {}),
        ([elf(CAT, "cat"), "x", "y"], {"stdin": b"some input\n" * 500}),
        ([elf(EXIT3, "exit3")], {}),
        ([elf(SEGV, "segv")], {}),
        ([elf(SPIN, "spin")], {"max_instructions": 200_000}),
    ]:
        c = armada.run(argv, env=env, backend="cpu", deterministic=True, **kw)
        g = armada.run(argv, env=env, backend=gpu, deterministic=True, **kw)
        _same(g, c)
    assert armada.run([elf(SEGV, "segv2")], backend=gpu).exit_code == -signal.SIGSEGV


def test_run_batch_gpu_equals_cpu(gpu, elf):
    prog = elf(CAT)
    argvs = [[prog] + ["a"] * (i % 4) for i in range(24)]
    stdins = [bytes([65 + i % 26]) * (i * 37) for i in range(24)]
    c = armada.run_batch(argvs, stdins, env={}, backend="cpu", deterministic=True)
    g = armada.run_batch(argvs, stdins, env={}, backend=gpu, deterministic=True)
    assert len(g) == len(c) == 24
    for a, b in zip(g, c):
        _same(a, b)
    assert g[5].exit_code == 2 and g[5].stdout == b"F" * 185


def test_run_batch_several_programs_gpu_equals_cpu(gpu, hello, elf):
    cat, exit3 = elf(CAT, "cat"), elf(EXIT3, "exit3")
    argvs = [[hello], [cat, "a"], [exit3], [cat]] * 3
    stdins = [f"lane {i}\n".encode() for i in range(len(argvs))]
    c = armada.run_batch(argvs, stdins, env={}, backend="cpu", deterministic=True)
    g = armada.run_batch(argvs, stdins, env={}, backend=gpu, deterministic=True)
    for a, b in zip(g, c):
        _same(a, b)
    assert [r.exit_code for r in g[:4]] == [0, 2, 3, 1]


def test_run_batch_hello(gpu, hello):
    rs = armada.run_batch([[hello]] * 8, backend=gpu, deterministic=True)
    assert all(r.exit_code == 0 and r.stdout == b"Hello, world!\n" for r in rs)


def test_wgpu_memory_view_explains():
    try:
        m = armada.Machine(1 << 16, backend="wgpu")
    except armada.EngineUnavailableError as e:
        pytest.skip(f"no wgpu engine here: {e}")
    with pytest.raises(armada.ArmadaError, match="wgpu"):
        m.memory_view()


def test_probing_for_gpus_is_quiet_without_a_display():
    # Mesa's device-select Vulkan layer used to make libwayland print "error: XDG_RUNTIME_DIR
    # is invalid ..." twice while armada only looked for a GPU (then ran on the CPU)
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "NODEVICE_SELECT")}
    p = subprocess.run(
        [sys.executable, "-c", "import armada; print(armada.available_backends())"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "error:" not in p.stderr, p.stderr
