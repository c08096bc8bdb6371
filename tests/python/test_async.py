"""start / is_running / poll / wait, the GIL, Ctrl-C."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from conftest import HALT42, LOOP, SPIN

import armada
from armada import StopReason


def spin_machine():
    m = armada.Machine(1 << 16)
    m.load_program(SPIN)
    m.set_pc(0)
    return m


def test_start_returns_at_once_and_poll_shows_progress():
    m = spin_machine()
    t = time.perf_counter()
    m.start(max_cycles=10**12)  # hours of work: must return at once
    assert time.perf_counter() - t < 0.5
    assert m.is_running()
    seen = []
    deadline = time.time() + 10
    while len(seen) < 3 and time.time() < deadline:
        s = m.poll()
        assert s.running
        if not seen or s.cycles_executed > seen[-1]:
            seen.append(s.cycles_executed)
        time.sleep(0.02)
    assert len(seen) >= 3 and seen[-1] > seen[0]  # live progress
    assert "Status(" in repr(m.poll())
    # while it runs, the state is off limits, with a clear error
    with pytest.raises(armada.ArmadaError, match="running"):
        m.get_register(0)
    with pytest.raises(armada.ArmadaError, match="running"):
        m.execute(10)
    with pytest.raises(armada.ArmadaError, match="running"):
        m.start(10)
    with pytest.raises(armada.ArmadaError, match="running"):
        m.read_memory(0, 4)
    assert "running" in repr(m)
    m.set_pc  # attribute access itself is fine
    del m  # dropping a running machine stops its engine thread


def test_start_wait_result():
    m = armada.Machine()
    m.load_program(LOOP)
    m.start(10_000_000)
    r = m.wait()
    assert r.stop_reason is StopReason.HALT
    assert r.cycles == r.cycles_executed == 3003
    assert not m.is_running()
    s = m.poll()
    assert not s.running and s.cycles_executed == 3003
    assert m.get_register(0) == 1000


def test_start_max_cycles_then_resume():
    m = spin_machine()
    m.start(max_cycles=3_000_000)
    r = m.wait()
    assert r.stop_reason is StopReason.MAX_CYCLES and r.cycles == 3_000_000
    m.start(max_cycles=1000)
    assert m.wait().cycles == 1000


def test_is_running_goes_false_without_wait():
    m = armada.Machine(1 << 16)
    m.load_program(HALT42)
    m.start(100)
    deadline = time.time() + 10
    while m.is_running() and time.time() < deadline:
        time.sleep(0.001)
    assert not m.is_running()
    assert m.get_register(0) == 42  # state is back even before wait()
    assert m.wait().stop_reason is StopReason.HALT


def test_wait_without_start():
    m = armada.Machine(1 << 16)
    with pytest.raises(armada.ArmadaError, match="start"):
        m.wait()


def test_poll_before_any_run():
    s = armada.Machine(1 << 16).poll()
    assert not s.running and s.cycles_executed == 0


def test_execute_releases_the_gil():
    m = spin_machine()
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        r = m.execute(150_000_000)  # a good fraction of a second
    finally:
        stop.set()
        t.join()
    assert r.stop_reason is StopReason.MAX_CYCLES
    assert len(ticks) > 20


def test_poll_from_another_thread_during_execute():
    m = spin_machine()
    seen = []

    def poller():
        for _ in range(50):
            seen.append(m.poll().cycles_executed)
            time.sleep(0.005)

    t = threading.Thread(target=poller)
    t.start()
    m.execute(200_000_000)
    t.join()
    assert max(seen) > 0


def _interrupt_soon(delay=0.3):
    timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_interrupts_execute():
    m = spin_machine()
    timer = _interrupt_soon()
    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        m.execute()  # no limit: only Ctrl-C ends it
    timer.join()
    assert time.perf_counter() - t < 5
    assert not m.is_running()
    assert m.pc == 0  # state is consistent and usable
    assert m.execute(10).cycles == 10


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_interrupts_wait_but_not_the_run():
    m = spin_machine()
    m.start()  # no limit
    timer = _interrupt_soon(0.1)
    with pytest.raises(KeyboardInterrupt):
        m.wait()
    timer.join()
    assert m.is_running()  # the run goes on; wait() again would collect it
    del m  # a dropped machine stops its run
