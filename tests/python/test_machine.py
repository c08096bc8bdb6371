"""armada.Machine on the CPU engine: construction, registers, memory, execute and its stops."""

from __future__ import annotations

import struct

import pytest
from conftest import (
    BRK,
    CMP,
    COUNT7,
    FAULT,
    HALT42,
    LOOP,
    MEMINC,
    MOV1,
    MOV2,
    PUSHPOP,
    SPIN,
    SVC,
)

import armada
from armada import StopReason


# ----- construction -----------------------------------------------------------------------


def test_defaults():
    m = armada.Machine()
    assert m.memory_size == 4 << 20
    assert m.backend == "cpu"
    assert m.pc == 0
    assert m.registers[:31] == [0] * 31
    assert m.get_register(31) == m.memory_size  # SP starts at the top of memory
    assert int(m.flags) == 0
    assert "Machine(" in repr(m)


def test_memory_size_and_auto_backend():
    m = armada.Machine(memory_size=1 << 16, backend="auto")
    assert m.memory_size == 1 << 16
    # auto: CUDA where it runs, else the CPU (never wgpu)
    assert m.backend == ("cuda" if "cuda" in armada.available_backends() else "cpu")
    assert armada.Machine(1 << 12, "CPU").backend == "cpu"


@pytest.mark.parametrize("size", [0, 1000, 4097, -4096])
def test_bad_memory_size(size):
    with pytest.raises((ValueError, OverflowError)):
        armada.Machine(memory_size=size)


@pytest.mark.parametrize("backend", ["cuda", "wgpu"])
def test_gpu_backends(backend):
    # where the engine cannot run: EngineUnavailableError naming it, with the reason
    if backend in armada.available_backends():
        assert armada.Machine(1 << 16, backend=backend).backend == backend
    else:
        with pytest.raises(armada.EngineUnavailableError, match=backend):
            armada.Machine(backend=backend)
    assert issubclass(armada.EngineUnavailableError, armada.ArmadaError)


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        armada.Machine(backend="metal")


def test_available_backends():
    assert "cpu" in armada.available_backends()


# ----- registers and flags ----------------------------------------------------------------


def test_registers_roundtrip():
    m = armada.Machine(1 << 16)
    for i in range(32):
        m.set_register(i, 0x1000 + i)
    assert m.registers == [0x1000 + i for i in range(32)]
    assert m.get_register(31) == 0x101F
    m.set_register(3, -1)  # two's complement
    assert m.get_register(3) == 2**64 - 1
    m.set_register(4, 2**64 - 1)
    assert m.get_register(4) == 2**64 - 1
    m.registers = list(range(32))
    assert m.registers == list(range(32))


def test_register_errors():
    m = armada.Machine(1 << 16)
    for bad in (-1, 32, 100):
        with pytest.raises(IndexError):
            m.get_register(bad)
        with pytest.raises(IndexError):
            m.set_register(bad, 0)
    with pytest.raises(OverflowError):
        m.set_register(0, 2**64)
    with pytest.raises(TypeError):
        m.set_register(0, "1")
    with pytest.raises(ValueError):
        m.registers = [0] * 31


def test_pc_property_and_set_pc():
    m = armada.Machine(1 << 16)
    m.set_pc(0x100)
    assert m.pc == 0x100
    m.pc = 0x200
    assert m.pc == 0x200


def test_flags_from_cmp():
    m = armada.Machine(1 << 16)
    m.load_program(CMP)
    m.set_register(0, 5)
    m.set_register(1, 5)
    m.execute(10)
    f = m.flags
    assert (f.n, f.z, f.c, f.v) == (False, True, True, False)
    assert int(f) == 0b0110 and f.value == 0b0110 and f.nzcv == 0b0110 << 28
    assert f == 0b0110 and f == armada.Flags(z=True, c=True)
    m.set_pc(0)
    m.set_register(0, 1)
    m.set_register(1, 2)
    m.execute(10)
    assert m.flags == armada.Flags(n=True)  # 1 - 2: negative, borrow (C clear)


def test_flags_setter():
    m = armada.Machine(1 << 16)
    m.flags = 0b1001
    assert (m.flags.n, m.flags.z, m.flags.c, m.flags.v) == (True, False, False, True)
    m.flags = armada.Flags(c=True)
    assert int(m.flags) == 0b0010
    with pytest.raises(ValueError):
        m.flags = 16
    with pytest.raises(TypeError):
        m.flags = "z"


# ----- memory ------------------------------------------------------------------------------


def test_read_write_memory():
    m = armada.Machine(1 << 16)
    m.write_memory(0x100, b"\x01\x02\x03")
    assert m.read_memory(0x100, 3) == b"\x01\x02\x03"
    m.write_memory(0x200, [0x12, 0x34])  # a list of ints, as in the design documents
    assert m.read_memory(0x200, 2) == b"\x12\x34"
    m.write_memory(0x300, bytearray(b"ab"))
    m.write_memory(0x302, memoryview(b"cd"))
    assert m.read_memory(0x300, 4) == b"abcd"
    m.write_memory_64(0x1000, 0x1122334455667788)
    assert m.read_memory_64(0x1000) == 0x1122334455667788
    assert m.read_memory(0x1000, 8) == struct.pack("<Q", 0x1122334455667788)
    m.write_memory_64(0x1008, -2)
    assert m.read_memory_64(0x1008) == 2**64 - 2
    # the last bytes of memory, across pages
    m.write_memory(0xFFF8, b"\xAA" * 8)
    assert m.read_memory_64(0xFFF8) == 0xAAAAAAAAAAAAAAAA
    m.write_memory(0x0FFE, b"\x01\x02\x03\x04")
    assert m.read_memory(0x0FFE, 4) == b"\x01\x02\x03\x04"
    assert m.read_memory(0, 0) == b""


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.read_memory(0x10000, 1),
        lambda m: m.read_memory(0xFFFF, 2),
        lambda m: m.read_memory_64(0xFFF9),
        lambda m: m.read_memory_64(2**64 - 4),
        lambda m: m.write_memory(0x10000, b"x"),
        lambda m: m.write_memory(0xFFFF, b"xy"),
        lambda m: m.write_memory_64(0x10000, 1),
        lambda m: m.load_program(b"\0" * 8, 0xFFFC),
        lambda m: m.read_memory(-8, 8),
        lambda m: m.read_memory_64(-8),
        lambda m: m.write_memory_64(-8, 0),
        lambda m: m.write_memory(2**64, b"x"),
    ],
)
def test_bad_address(call):
    m = armada.Machine(1 << 16)
    with pytest.raises(armada.GuestMemoryError, match=r"guest memory (is )?\[0x0, 0x10000\)"):
        call(m)


def test_memory_error_names():
    assert issubclass(armada.GuestMemoryError, armada.ArmadaError)
    assert armada.MemoryError is armada.GuestMemoryError
    assert "MemoryError" not in armada.__all__  # `import *` must not shadow the builtin
    assert armada.MemoryError is not MemoryError


def test_failed_write_changes_nothing():
    m = armada.Machine(1 << 16)
    with pytest.raises(armada.GuestMemoryError):
        m.write_memory(0xFFFE, b"abcd")
    assert m.read_memory(0xFFFE, 2) == b"\0\0"


def test_bad_data_types():
    m = armada.Machine(1 << 16)
    with pytest.raises(TypeError):
        m.write_memory(0, 5)
    with pytest.raises(TypeError):
        m.write_memory(0, "text")
    with pytest.raises(ValueError):
        m.write_memory(0, [1, 300])


# ----- execute --------------------------------------------------------------------------------


def test_halt():
    m = armada.Machine()
    m.load_program(HALT42, address=0)
    m.set_pc(0)
    r = m.execute(max_cycles=1000)
    assert r.stop_reason is StopReason.HALT
    assert r.stop_reason == StopReason.HALT == 1
    assert r.stop_reason_name == "HALT"
    assert r.cycles == r.cycles_executed == 2
    assert r.pc == 8 == m.pc  # after the HLT
    assert r.immediate == 0
    assert m.get_register(0) == 42
    assert r.elapsed >= 0 and r.ips >= 0
    assert r.fault_address is None and r.undefined_word is None
    assert "HALT" in repr(r)


def test_loop_counts_and_ips():
    m = armada.Machine()
    m.load_program(LOOP, 0x1000)
    m.set_pc(0x1000)
    r = m.execute(10_000_000)
    assert r.stop_reason is StopReason.HALT and r.immediate == 7
    assert m.get_register(0) == 1000 and m.get_register(1) == 0
    assert r.cycles == 2 + 3 * 1000 + 1
    assert r.ips == pytest.approx(r.cycles / r.elapsed)


def test_max_cycles_and_resume():
    m = armada.Machine()
    m.load_program(LOOP)
    r = m.execute(max_cycles=100)
    assert r.stop_reason is StopReason.MAX_CYCLES and r.stop_reason_name == "MAX_CYCLES"
    assert r.cycles == 100
    total = r.cycles
    while True:  # many small slices add up to the same result
        r = m.execute(max_cycles=77)
        total += r.cycles
        if r.stop_reason is not StopReason.MAX_CYCLES:
            break
    assert r.stop_reason is StopReason.HALT
    assert total == 3003 and m.get_register(0) == 1000


def test_zero_budget():
    m = armada.Machine(1 << 16)
    m.load_program(HALT42)
    r = m.execute(0)
    assert r.stop_reason is StopReason.MAX_CYCLES and r.cycles == 0 and r.pc == 0


def test_syscall_stops_after_svc_and_continues():
    m = armada.Machine(1 << 16)
    m.load_program(SVC)
    r = m.execute(100)
    assert r.stop_reason is StopReason.SYSCALL and r.stop_reason_name == "SYSCALL"
    assert r.pc == 8 and m.get_register(8) == 64 and r.cycles == 2
    # the host "services" it and runs on
    m.set_register(0, 123)
    r = m.execute(100)
    assert r.stop_reason is StopReason.HALT
    assert m.get_register(1) == 7 and m.get_register(0) == 123


def test_fault():
    m = armada.Machine(1 << 16)
    m.load_program(FAULT)
    r = m.execute(100)
    assert r.stop_reason is StopReason.FAULT and r.stop_reason_name == "FAULT"
    assert r.fault_address == 0x7FFF_0000_0000
    assert r.fault_access == "read"
    assert r.pc == 4  # at the load
    assert r.cycles == 1


def test_fault_on_execute_outside_memory():
    m = armada.Machine(1 << 16)
    m.set_pc(0x10000)
    r = m.execute(10)
    assert r.stop_reason is StopReason.FAULT
    assert r.fault_address == 0x10000 and r.fault_access == "execute"


def test_zero_word_is_undefined_not_halt():
    m = armada.Machine(1 << 16)
    r = m.execute(10)  # memory is all zeros: 0x00000000 is UDF
    assert r.stop_reason is StopReason.UNDEFINED and r.stop_reason_name == "UNDEFINED"
    assert r.undefined_word == 0
    assert r.pc == 0 and r.cycles == 0


def test_undefined_word_reported():
    m = armada.Machine(1 << 16)
    m.load_program(bytes.fromhex("1f2003d5") + struct.pack("<I", 0xFFFFFFFF))
    r = m.execute(10)
    assert r.stop_reason is StopReason.UNDEFINED
    assert r.undefined_word == 0xFFFFFFFF and r.pc == 4


def test_breakpoint():
    m = armada.Machine(1 << 16)
    m.load_program(BRK)
    r = m.execute(10)
    assert r.stop_reason is StopReason.BREAKPOINT and r.stop_reason_name == "BREAKPOINT"
    assert r.pc == 4 and r.immediate == 5
    m.set_pc(r.pc + 4)  # step over it
    assert m.execute(10).stop_reason is StopReason.HALT


def test_memory_access_from_guest():
    m = armada.Machine(1 << 16)
    m.load_program(MEMINC)
    m.write_memory_64(0x8000, 41)
    m.set_register(1, 0x8000)
    assert m.execute(10).stop_reason is StopReason.HALT
    assert m.read_memory_64(0x8000) == 42


def test_default_stack_pointer_works():
    m = armada.Machine(1 << 16)
    m.load_program(PUSHPOP)
    m.set_register(0, 11)
    m.set_register(1, 22)
    assert m.execute(10).stop_reason is StopReason.HALT
    assert (m.get_register(2), m.get_register(3)) == (11, 22)
    assert m.get_register(31) == 1 << 16
    assert m.read_memory(0xFFF0, 16) == struct.pack("<QQ", 11, 22)


def test_code_across_internal_area_boundary():
    # The machine's memory is one buffer; code runs straight across any internal boundary.
    m = armada.Machine()
    for start in (0x40000 - 8, 0x3FFFC, 0x100000 - 4):
        m.load_program(COUNT7, start)
        m.set_pc(start)
        r = m.execute(10)
        assert r.stop_reason is StopReason.HALT and m.get_register(0) == 7, hex(start)


def test_write_over_decoded_code_takes_effect():
    m = armada.Machine(1 << 16)
    m.load_program(MOV1)
    m.execute(10)
    assert m.get_register(0) == 1
    m.write_memory(0, MOV2)  # same instruction slot, new instruction
    m.set_pc(0)
    m.execute(10)
    assert m.get_register(0) == 2
    m.load_program(MOV1)
    m.set_pc(0)
    m.execute(10)
    assert m.get_register(0) == 1
    m.write_memory_64(0, int.from_bytes(MOV2 + HALT42[4:], "little"))
    m.set_pc(0)
    m.execute(10)
    assert m.get_register(0) == 2


def test_write_spanning_two_decoded_pages():
    m = armada.Machine(1 << 16)
    for page in (0x1000, 0x2000):
        m.load_program(MOV1, page)
        m.set_pc(page)
        m.execute(10)
    # one write covering both pages' code
    blob = bytearray(0x1008)
    blob[0:8] = MOV2 + HALT42[4:]
    blob[0x1000:0x1008] = MOV2 + HALT42[4:]
    m.write_memory(0x1000, bytes(blob))
    for page in (0x1000, 0x2000):
        m.set_register(0, 0)
        m.set_pc(page)
        m.execute(10)
        assert m.get_register(0) == 2, hex(page)


def test_invalidate_code():
    m = armada.Machine(1 << 16)
    m.load_program(MOV1)
    m.execute(10)
    m.invalidate_code()  # nothing changed: harmless
    m.set_pc(0)
    m.execute(10)
    assert m.get_register(0) == 1


def test_execute_without_limit_runs_to_stop():
    m = armada.Machine(1 << 16)
    m.load_program(HALT42)
    r = m.execute()
    assert r.stop_reason is StopReason.HALT


def test_subclass():
    class MetalCPU(armada.Machine):
        pass

    cpu = MetalCPU(memory_size=1 << 16)
    cpu.load_program(HALT42, address=0)
    cpu.set_pc(0)
    assert cpu.execute(max_cycles=10).stop_reason_name == "HALT"


def test_spin_budget():
    m = armada.Machine(1 << 16)
    m.load_program(SPIN)
    r = m.execute(5_000_000)  # more than one internal slice
    assert r.stop_reason is StopReason.MAX_CYCLES and r.cycles == 5_000_000 and r.pc == 0
