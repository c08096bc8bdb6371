"""A bare AArch64 machine driven from Python: load code, run it, read the results.

    pip install .            # from the repository root
    python examples/python/raw_machine.py

The machine code is embedded as bytes (the assembly is next to it), so nothing but armada is
needed. Three things are shown: a function-style call with numpy data, servicing system calls
from Python, and a long run in the background with progress.
"""

import time

import numpy as np

import armada

# ---- 1. Sum an array of 64-bit numbers --------------------------------------------------------
#     mov x2, #0
# 1:  cbz x1, 2f          // x0 = array, x1 = count
#     ldr x3, [x0], #8
#     add x2, x2, x3
#     sub x1, x1, #1
#     b 1b
# 2:  mov x0, x2
#     hlt #0
SUM = bytes.fromhex("020080d2a10000b4038440f84200038b210400d1fcffff17e00302aa000040d4")

cpu = armada.Machine(memory_size=4 << 20)
cpu.load_program(SUM, address=0)

# Put the data in guest memory through a zero-copy numpy view.
data = np.arange(1, 100_001, dtype=np.uint64)
DATA = 0x10000
mem = cpu.memory_view()  # uint8 array over guest memory, no copy
mem[DATA : DATA + data.nbytes] = data.view(np.uint8)

cpu.set_pc(0)
cpu.set_register(0, DATA)
cpu.set_register(1, len(data))
result = cpu.execute(max_cycles=10_000_000)
print(f"sum: {cpu.get_register(0):,} (numpy says {int(data.sum()):,})")
print(f"  {result.cycles:,} instructions, stop reason {result.stop_reason_name}, "
      f"{result.ips / 1e6:.0f} M instructions/s")
assert result.stop_reason == armada.StopReason.HALT

# ---- 2. System calls: the machine stops at SVC, Python services it, execution continues -------
#     mov x0, #1 ; adr x1, msg ; mov x2, #len ; mov x8, #64 ; svc #0     // write(1, msg, len)
#     mov x0, #0 ; mov x8, #93 ; svc #0                                  // exit(0)
# msg: .ascii "hello from the guest\n"
WRITE = bytes.fromhex(
    "200080d2e1000010a20280d2080880d2010000d4000080d2a80b80d2010000d4"
    "68656c6c6f2066726f6d207468652067756573740a"
)
cpu = armada.Machine(memory_size=1 << 16)
cpu.load_program(WRITE)
cpu.set_pc(0)
while True:
    r = cpu.execute(max_cycles=1_000_000)
    if r.stop_reason != armada.StopReason.SYSCALL:
        raise SystemExit(f"unexpected stop: {r}")
    number = cpu.get_register(8)
    if number == 64:  # write(fd, buf, count)
        buf, count = cpu.get_register(1), cpu.get_register(2)
        print("guest wrote:", cpu.read_memory(buf, count).decode(), end="")
        cpu.set_register(0, count)  # the syscall's result
    elif number == 93:  # exit(status)
        print("guest exited with", cpu.get_register(0))
        break
    else:
        cpu.set_register(0, -38)  # -ENOSYS

# ---- 3. A long run in the background ------------------------------------------------------------
# 1:  subs x1, x1, #1 ; b.ne 1b ; hlt #0
COUNTDOWN = bytes.fromhex("210400f1e1ffff54000040d4")
cpu = armada.Machine(memory_size=1 << 16)
cpu.load_program(COUNTDOWN)
cpu.set_pc(0)
cpu.set_register(1, 100_000_000)
cpu.start(max_cycles=1_000_000_000)  # returns at once
while cpu.is_running():
    status = cpu.poll()
    print(f"  progress: {status.cycles_executed:,} instructions after {status.elapsed:.2f} s")
    time.sleep(0.25)
result = cpu.wait()
print(f"background run: {result.cycles:,} instructions @ {result.ips / 1e6:.0f} M/s, "
      f"{result.stop_reason_name}, x1 = {cpu.get_register(1)}")
