"""Shared helpers for the armada Python tests.

Guest code is embedded as hex so the tests need no cross toolchain. Each snippet's assembly
is next to it; to regenerate one, assemble it with
``aarch64-linux-gnu-as -o p.o p.s && aarch64-linux-gnu-objcopy -O binary -j .text p.o p.bin``.
"""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "tests" / "guest" / "prebuilt" / "hello"

# Bare-machine snippets ------------------------------------------------------------------

# movz x0, #42 ; hlt #0
HALT42 = bytes.fromhex("400580d2000040d4")
# mov x0, #0 ; mov x1, #1000 ; 1: add x0, x0, #1 ; subs x1, x1, #1 ; b.ne 1b ; hlt #0x7
LOOP = bytes.fromhex("000080d2017d80d200040091210400f1c1ffff54e00040d4")
# mov x8, #64 ; svc #0 ; mov x1, #7 ; hlt #0
SVC = bytes.fromhex("080880d2010000d4e10080d2000040d4")
# movz x1, #0x7fff, lsl #32 ; ldr x0, [x1] ; hlt #0
FAULT = bytes.fromhex("e1ffcfd2200040f9000040d4")
# nop ; brk #5 ; hlt #0
BRK = bytes.fromhex("1f2003d5a00020d4000040d4")
# ldr x0, [x1] ; add x0, x0, #1 ; str x0, [x1] ; hlt #0
MEMINC = bytes.fromhex("200040f900040091200000f9000040d4")
# cmp x0, x1 ; hlt #0
CMP = bytes.fromhex("1f0001eb000040d4")
# 1: b 1b
SPIN = bytes.fromhex("00000014")
# mov x0, #1 ; hlt #0
MOV1 = bytes.fromhex("200080d2000040d4")
# mov x0, #2
MOV2 = bytes.fromhex("400080d2")
# stp x0, x1, [sp, #-16]! ; ldp x2, x3, [sp], #16 ; hlt #0
PUSHPOP = bytes.fromhex("e007bfa9e20fc1a8000040d4")
# mov x0, #5 ; add x0, x0, #1 ; add x0, x0, #1 ; hlt #0
COUNT7 = bytes.fromhex("a00080d20004009100040091000040d4")

# Linux programs (entry code of a one-segment static ELF, see make_elf) --------------------

# Copies stdin to stdout, writes "err\n" to stderr, exits with argc.
#     ldr x19, [sp] ; sub sp, sp, #4096
# 1:  mov x0, #0 ; mov x1, sp ; mov x2, #4096 ; mov x8, #63 ; svc #0      // read
#     cmp x0, #0 ; b.le 2f
#     mov x2, x0 ; mov x0, #1 ; mov x1, sp ; mov x8, #64 ; svc #0 ; b 1b  // write
# 2:  mov x0, #2 ; adr x1, 3f ; mov x2, #4 ; mov x8, #64 ; svc #0
#     mov x0, x19 ; mov x8, #93 ; svc #0                                  // exit(argc)
# 3:  .ascii "err\n"
CAT = bytes.fromhex(
    "f30340f9ff0740d1000080d2e1030091020082d2e80780d2010000d41f0000f1ed000054e20300aa"
    "200080d2e1030091080880d2010000d4f4ffff17400080d2e1000010820080d2080880d2010000d4"
    "e00313aaa80b80d2010000d46572720a"
)
# Writes envp[0] to stdout, exits 0.
#     ldr x19, [sp] ; add x20, sp, #8 ; add x20, x20, x19, lsl #3 ; add x20, x20, #8
#     ldr x1, [x20] ; cbz x1, 3f ; mov x2, #0
# 1:  ldrb w3, [x1, x2] ; cbz w3, 2f ; add x2, x2, #1 ; b 1b
# 2:  mov x0, #1 ; mov x8, #64 ; svc #0
# 3:  mov x0, #0 ; mov x8, #93 ; svc #0
ENV0 = bytes.fromhex(
    "f30340f9f4230091940e138b94220091810240f9210100b4020080d2236862386300003442040091"
    "fdffff17200080d2080880d2010000d4000080d2a80b80d2010000d4"
)
# mov x0, #0 ; ldr x0, [x0] ; mov x8, #93 ; svc #0     (SIGSEGV)
SEGV = bytes.fromhex("000080d2000040f9a80b80d2010000d4")
# mov x0, #3 ; mov x8, #93 ; svc #0
EXIT3 = bytes.fromhex("600080d2a80b80d2010000d4")


def make_elf(code: bytes, base: int = 0x400000) -> bytes:
    """A static AArch64 Linux executable: one R+X PT_LOAD segment, `code` at the entry."""
    ehsize, phentsize = 64, 56
    entry_off = ehsize + phentsize
    size = entry_off + len(code)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, v1, SysV
    ehdr = ident + struct.pack(
        "<HHIQQQIHHHHHH",
        2,  # ET_EXEC
        183,  # EM_AARCH64
        1,
        base + entry_off,  # e_entry
        ehsize,  # e_phoff
        0,  # e_shoff
        0,  # e_flags
        ehsize,
        phentsize,
        1,  # e_phnum
        0,
        0,
        0,
    )
    phdr = struct.pack(
        "<IIQQQQQQ",
        1,  # PT_LOAD
        5,  # PF_R | PF_X
        0,
        base,
        base,
        size,
        size,
        0x1000,
    )
    return ehdr + phdr + code


@pytest.fixture
def elf(tmp_path):
    """elf(code, name="prog") -> path of an executable static ELF running `code`."""

    def build(code: bytes, name: str = "prog") -> str:
        p = tmp_path / name
        p.write_bytes(make_elf(code))
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
        return os.fspath(p)

    return build


@pytest.fixture
def hello() -> str:
    if not HELLO.exists():
        pytest.skip(f"{HELLO} is missing")
    return os.fspath(HELLO)
