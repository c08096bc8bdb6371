"""armada: run AArch64 (ARM64) code and Linux programs from Python.

Two ways in:

- ``armada.Machine``: a bare AArch64 machine (registers and one read-write-execute memory
  region ``[0, memory_size)``) that runs raw code to its first stop: ``load_program``,
  ``set_pc``, ``execute(max_cycles)``, or ``start`` / ``poll`` / ``wait`` in the background.
- ``armada.run`` / ``armada.run_batch``: static AArch64 Linux programs with captured stdin,
  stdout and stderr, one at a time or many copies at once on every CPU core or a GPU.

See docs/python.md in the repository, and the type stubs (``__init__.pyi``) for every call.
"""

from __future__ import annotations

import enum
import os
from typing import Iterable, Mapping, Optional, Sequence, Union

from . import _armada
from ._armada import (
    ArmadaError,
    Completed,
    DeviceMemory,
    ElfError,
    EngineUnavailableError,
    ExecResult,
    Flags,
    GuestMemoryError,
    Machine,
    Snapshot,
    Status,
    __version__,
)

#: Alias of :class:`GuestMemoryError`, the name the design documents use. It is not in
#: ``__all__``, so ``from armada import *`` does not shadow the builtin ``MemoryError``.
MemoryError = GuestMemoryError  # noqa: A001


class StopReason(enum.IntEnum):
    """Why ``Machine.execute`` (or ``wait``) returned."""

    #: HLT #imm ran; the PC is after it.
    HALT = 1
    #: SVC #imm ran; the PC is after it, so ``execute`` again continues. The syscall number
    #: is in x8 and the arguments in x0..x5, as on Linux.
    SYSCALL = 2
    #: ``max_cycles`` instructions retired; the PC is at the next instruction.
    MAX_CYCLES = 3
    #: A memory access outside guest memory (or a misaligned PC); the PC is at the
    #: instruction, ``ExecResult.fault_address`` says where.
    FAULT = 4
    #: An instruction armada does not implement or that is unallocated (the word 0 is UDF);
    #: the PC is at it, ``ExecResult.undefined_word`` holds it.
    UNDEFINED = 5
    #: BRK #imm ran; the PC is at the BRK (set_pc(pc + 4) to step over it).
    BREAKPOINT = 6


def available_backends() -> list[str]:
    """The engines that work on this machine: ``"cpu"`` always, ``"cuda"`` and ``"wgpu"``
    when their engine opens (the first call opens them, which compiles their kernels)."""
    return list(_armada.available_backends())


def set_tier(name: str) -> None:
    """Sets how the CPU engine runs code from now on (machines, runs and batches made after
    the call): ``"jit"`` translates hot code to host code (the default on x86-64 and aarch64
    hosts), ``"interp"`` interprets every instruction. Results, instruction counts included,
    are the same. ``ARMADA_TIER`` sets it at import."""
    _armada.set_tier(name)


def tier() -> str:
    """How the CPU engine runs code: ``"jit"`` or ``"interp"``."""
    return _armada.tier()


_PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def _argv(argv: Union[_PathArg, Sequence[_PathArg]], what: str = "argv") -> list[bytes]:
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
    try:
        out = [os.fsencode(a) for a in argv]
    except TypeError:
        raise TypeError(
            f"{what} must be a list of str, bytes or path-like items (the program first)"
        ) from None
    if not out:
        raise ValueError(f"{what} is empty: it needs the program first")
    return out


def _stdin(data: Union[bytes, bytearray, memoryview, str, None], what: str = "stdin") -> bytes:
    if data is None:
        return b""
    if isinstance(data, str):
        return data.encode()
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise TypeError(f"{what} must be bytes-like or str, not {type(data).__name__}") from None


def _env(env: Optional[Mapping[Union[str, bytes], Union[str, bytes]]]) -> list[bytes]:
    if env is None:
        items = list(os.environb.items())
        # qemu-user hands the guest its environment in reverse order, and `armada run` does
        # the same: keep the three consistent.
        items.reverse()
    else:
        items = [(os.fsencode(k), os.fsencode(v)) for k, v in env.items()]
    out = []
    for k, v in items:
        if not k or b"=" in k or b"\0" in k or b"\0" in v:
            raise ValueError(f"invalid environment variable name or value: {k!r}={v!r}")
        out.append(k + b"=" + v)
    return out


def _root(root: Optional[_PathArg]) -> Optional[str]:
    return None if root is None else os.fsdecode(os.fspath(root))


def run(
    argv: Union[_PathArg, Sequence[_PathArg]],
    stdin: Union[bytes, bytearray, memoryview, str, None] = b"",
    env: Optional[Mapping[Union[str, bytes], Union[str, bytes]]] = None,
    backend: str = "cpu",
    root: Optional[_PathArg] = None,
    max_instructions: Optional[int] = None,
    *,
    deterministic: bool = False,
    seed: int = 0,
    sysroot: Optional[_PathArg] = None,
    net: str = "loopback",
    coverage: bool = False,
) -> Completed:
    """Run a static AArch64 Linux program to its end, like ``armada run``.

    See ``__init__.pyi`` for the details.
    """
    return _armada.run_lanes(
        [_argv(argv)],
        [_stdin(stdin)],
        _env(env),
        backend,
        _root(root),
        max_instructions,
        deterministic,
        seed,
        False,
        _root(sysroot),
        net,
        None,
        coverage,
    )[0]


def run_batch(
    argvs: Iterable[Sequence[_PathArg]],
    stdins: Optional[Iterable[Union[bytes, bytearray, memoryview, str, None]]] = None,
    env: Optional[Mapping[Union[str, bytes], Union[str, bytes]]] = None,
    backend: str = "auto",
    root: Optional[_PathArg] = None,
    *,
    max_instructions: Optional[int] = None,
    deterministic: bool = False,
    seed: int = 0,
    sysroot: Optional[_PathArg] = None,
    net: str = "loopback",
    snapshot_at: Optional[str] = None,
    coverage: bool = False,
    devices: Union[None, str, int, Sequence[int]] = None,
) -> list[Completed]:
    """Run many lanes at once (one per argv list, each running its ``argv[0]``); results
    in order.

    See ``__init__.pyi`` for the details.
    """
    lanes, ins = _lanes(argvs, stdins)
    return _armada.run_lanes(
        lanes,
        ins,
        _env(env),
        backend,
        _root(root),
        max_instructions,
        deterministic,
        seed,
        True,
        _root(sysroot),
        net,
        snapshot_at,
        coverage,
        _devices(devices),
    )


def _lanes(
    argvs: Iterable[Sequence[_PathArg]],
    stdins: Optional[Iterable[Union[bytes, bytearray, memoryview, str, None]]],
) -> tuple[list[list[bytes]], list[bytes]]:
    """run_batch's lanes as the engine takes them: (argvs, stdins), checked."""
    if isinstance(argvs, (str, bytes, os.PathLike)):
        raise TypeError("argvs is a list of argument lists, one per lane: [[prog, arg, ...], ...]")
    lanes = [_argv(a, f"argvs[{i}]") for i, a in enumerate(argvs)]
    if stdins is None:
        return lanes, [b""] * len(lanes)
    if isinstance(stdins, (bytes, bytearray, memoryview, str)):
        raise TypeError("stdins is a list of stdin buffers, one per lane (or None)")
    ins = [_stdin(s, f"stdins[{i}]") for i, s in enumerate(stdins)]
    if len(ins) != len(lanes):
        raise ValueError(
            f"{len(ins)} stdin buffers for {len(lanes)} argument lists: give one per lane"
        )
    return lanes, ins


def _devices(devices: Union[None, str, int, Sequence[int]]) -> Optional[str]:
    """``devices=`` as the engine's text: None, "all", or numbers joined by commas."""
    if devices is None:
        return None
    if isinstance(devices, str):
        return devices
    if isinstance(devices, bool):
        raise TypeError("devices is 'all', a device number or a list of them, not a bool")
    if isinstance(devices, int):
        devices = [devices]
    nums = list(devices)
    if not nums or not all(isinstance(n, int) and not isinstance(n, bool) for n in nums):
        raise TypeError(f"devices is 'all', a device number or a list of them: got {devices!r}")
    if any(n < 0 for n in nums):
        raise ValueError(f"devices: device numbers start at 0: got {nums!r}")
    return ",".join(str(n) for n in nums)


def snapshot(
    argv: Sequence[_PathArg],
    at: str = "main",
    stdin: Union[bytes, bytearray, memoryview, str, None] = None,
    env: Optional[Mapping[Union[str, bytes], Union[str, bytes]]] = None,
    root: Optional[_PathArg] = None,
    *,
    max_instructions: Optional[int] = None,
    deterministic: bool = False,
    seed: int = 0,
    sysroot: Optional[_PathArg] = None,
    net: str = "loopback",
) -> Snapshot:
    """Run a program to ``at`` once and pause it there: a :class:`Snapshot` to run on from.

    See ``__init__.pyi`` for the details.
    """
    return _armada.take_snapshot(
        _argv(argv),
        at,
        _stdin(stdin),
        _env(env),
        _root(root),
        max_instructions,
        deterministic,
        seed,
        _root(sysroot),
        net,
    )


def fuzz(
    argv: Sequence[_PathArg],
    corpus: _PathArg,
    crashes: _PathArg,
    *,
    max_time: Optional[float] = None,
    max_execs: Optional[int] = None,
    lanes: Optional[int] = None,
    snapshot_at: Optional[str] = "input",
    input: Optional[str] = None,
    dict: Optional[_PathArg] = None,
    stop_on_crash: bool = False,
    seed: int = 0,
    max_len: int = 4096,
    exec_limit: int = 50_000_000,
    env: Optional[Mapping[Union[str, bytes], Union[str, bytes]]] = None,
    sysroot: Optional[_PathArg] = None,
    backend: str = "cpu",
) -> dict:
    """Coverage-guided fuzzing of one program, like ``armada fuzz``.

    See ``__init__.pyi`` for the details.
    """
    if max_time is None and max_execs is None and not stop_on_crash:
        raise ValueError("give max_time, max_execs or stop_on_crash: otherwise fuzz runs forever")
    return _armada.fuzz_program(
        _argv(argv),
        _env(env),
        _root(corpus),
        _root(crashes),
        lanes,
        max_time,
        max_execs,
        stop_on_crash,
        snapshot_at,
        input,
        _root(dict),
        seed,
        max_len,
        exec_limit,
        _root(sysroot),
        backend,
    )


__all__ = [
    "ArmadaError",
    "Completed",
    "DeviceMemory",
    "ElfError",
    "EngineUnavailableError",
    "ExecResult",
    "Flags",
    "GuestMemoryError",
    "Machine",
    "Snapshot",
    "Status",
    "StopReason",
    "available_backends",
    "fuzz",
    "run",
    "run_batch",
    "set_tier",
    "snapshot",
    "tier",
    "__version__",
]

#: The package's submodules, each imported on first use: ``armada.ray.run_batch`` works after a
#: plain ``import armada`` (as the README shows), and a process that never uses Ray does not
#: pay for importing its glue.
_SUBMODULES = ("ray",)


def __getattr__(name: str):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
