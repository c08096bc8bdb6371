"""Machine.memory_view(): a writable numpy array over guest memory, no copy; DLPack on CPU."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from conftest import HALT42, MEMINC, MOV1, MOV2

import armada
from armada import StopReason


def test_view_shape_dtype_and_no_copy():
    m = armada.Machine(1 << 16)
    v = m.memory_view()
    assert isinstance(v, np.ndarray)
    assert v.dtype == np.uint8 and v.shape == (1 << 16,) and v.flags.writeable
    assert v.flags.c_contiguous
    assert v.base is m  # the array keeps the machine alive
    # writes through the view are guest memory, and the other way round
    v[0x100:0x104] = [1, 2, 3, 4]
    assert m.read_memory(0x100, 4) == b"\x01\x02\x03\x04"
    m.write_memory_64(0x200, 0x0102030405060708)
    assert bytes(v[0x200:0x208]) == bytes.fromhex("0807060504030201")
    # two views see the same bytes
    w = m.memory_view()
    w[5] = 99
    assert v[5] == 99
    assert np.shares_memory(v, w)


def test_view_as_other_dtypes():
    m = armada.Machine(1 << 16)
    v = m.memory_view()
    q = v.view(np.uint64)
    q[0x1000 // 8] = 2**64 - 1
    assert m.read_memory_64(0x1000) == 2**64 - 1


def test_guest_writes_show_in_view():
    m = armada.Machine(1 << 16)
    v = m.memory_view().view(np.uint64)
    m.load_program(MEMINC)
    v[0x8000 // 8] = 41
    m.set_register(1, 0x8000)
    assert m.execute(10).stop_reason is StopReason.HALT
    assert v[0x8000 // 8] == 42


def test_view_keeps_machine_alive():
    m = armada.Machine(1 << 16)
    ref = weakref.ref(m)
    v = m.memory_view()
    m.write_memory(0, b"\x2a")
    del m
    gc.collect()
    assert ref() is not None
    assert v[0] == 42
    v[1] = 7  # still valid memory
    sl = v[10:20]
    del v
    gc.collect()
    assert ref() is not None  # a slice keeps it alive too
    sl[0] = 1
    del sl
    gc.collect()
    assert ref() is None


def test_code_written_through_a_new_view_takes_effect():
    m = armada.Machine(1 << 16)
    m.load_program(MOV1)
    m.execute(10)
    assert m.get_register(0) == 1
    v = m.memory_view()
    v[0:4] = np.frombuffer(MOV2, dtype=np.uint8)
    m.set_pc(0)
    m.execute(10)
    assert m.get_register(0) == 2


def test_code_written_through_an_old_view_needs_invalidate_code():
    m = armada.Machine(1 << 16)
    v = m.memory_view()
    v[0:8] = np.frombuffer(MOV1, dtype=np.uint8)
    m.execute(10)
    assert m.get_register(0) == 1
    v[0:4] = np.frombuffer(MOV2, dtype=np.uint8)  # over decoded code, through the old view
    m.invalidate_code()
    m.set_pc(0)
    m.execute(10)
    assert m.get_register(0) == 2


def test_load_program_from_numpy():
    m = armada.Machine(1 << 16)
    words = np.frombuffer(HALT42, dtype=np.uint32).copy()
    m.load_program(words)  # raw bytes of the array
    assert m.execute(10).stop_reason is StopReason.HALT
    assert m.get_register(0) == 42


def test_dlpack_cpu():
    m = armada.Machine(1 << 16)
    assert m.__dlpack_device__() == (1, 0)  # kDLCPU
    if not hasattr(np, "from_dlpack"):
        pytest.skip("numpy without from_dlpack")
    m.write_memory(0, b"\x05\x06")
    a = np.from_dlpack(m)
    assert a.shape == (1 << 16,) and a.dtype == np.uint8
    assert a[0] == 5 and a[1] == 6
    m.write_memory(2, b"\x07")
    assert a[2] == 7  # no copy
