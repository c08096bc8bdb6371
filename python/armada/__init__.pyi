"""armada: run AArch64 (ARM64) code and static Linux programs from Python.

- :class:`Machine`: a bare AArch64 machine that runs raw code to its first stop.
- :func:`run` / :func:`run_batch`: static AArch64 Linux programs with captured stdio, one at a
  time or many at once.

Every call that runs guest code releases the GIL, and Ctrl-C interrupts it. Errors are
:class:`ArmadaError` subclasses; a guest that faults is a result, never an exception.
"""

import enum
import os
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence, Union, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Self

from . import ray as ray

__version__: str

_PathArg = Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]
_BytesLike = Union[bytes, bytearray, memoryview, npt.NDArray[Any], Sequence[int]]
_Input = Union[bytes, bytearray, memoryview, str, None]
_Env = Mapping[Union[str, bytes], Union[str, bytes]]

# ----- errors ------------------------------------------------------------------------------

class ArmadaError(Exception):
    """Base class of every error armada raises."""

class ElfError(ArmadaError):
    """The program cannot be loaded: missing or unreadable file, not an AArch64 Linux ELF
    executable, damaged, or dynamically linked with its interpreter missing (give
    ``sysroot``). The message says which."""

class GuestMemoryError(ArmadaError):
    """An access from Python (``read_memory``, ``write_memory``, ``load_program``, ...) falls
    outside guest memory ``[0, memory_size)``.

    Also available as ``armada.MemoryError``, the name the design documents use; that alias is
    left out of ``__all__`` so that ``from armada import *`` does not shadow the builtin
    :class:`MemoryError` (which means the host ran out of memory).
    """

MemoryError = GuestMemoryError

class EngineUnavailableError(ArmadaError):
    """The requested engine cannot run on this machine: no NVIDIA GPU or driver for
    ``"cuda"`` (no NVRTC, no device...), no adapter for ``"wgpu"``. The message says why and
    what to do (``backend="cpu"`` always works)."""

# ----- the bare machine --------------------------------------------------------------------

class DeviceMemory:
    """Guest memory of a machine on the CUDA backend, in device memory
    (``Machine.memory_view()``). Hand it to a DLPack consumer: ``cupy.from_dlpack(view)``,
    ``torch.from_dlpack(view)`` give a 1-D ``uint8`` array of ``memory_size`` elements over
    the same device memory (no copy; element ``i`` is guest address ``i``). The object, and
    every array made from it, keeps the memory alive, also after the machine is gone.
    """

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Optional[tuple[int, int]] = None,
        dl_device: Optional[tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A DLPack capsule (``dltensor``, or ``dltensor_versioned`` for
        ``max_version >= (1, 0)``). The memory is ready on any stream."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """``(2, 0)``: kDLCUDA, device 0 (``(1, 0)`` on the CUDA engine's simulator,
        ``ARMADA_CUDA_SIM=1``, whose device memory is host memory)."""
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA array interface, version 3 (CUDA devices only)."""
    @property
    def ptr(self) -> int:
        """Device address of guest address 0."""
    @property
    def nbytes(self) -> int: ...
    @property
    def shape(self) -> tuple[int]: ...
    @property
    def device(self) -> str:
        """``"cuda:0"`` (``"cpu"`` on the simulator)."""
    def __len__(self) -> int: ...

class StopReason(enum.IntEnum):
    """Why :meth:`Machine.execute` (or :meth:`Machine.wait`) returned."""

    HALT = 1
    """HLT #imm ran. The PC is after it; :attr:`ExecResult.immediate` is the #imm."""
    SYSCALL = 2
    """SVC #imm ran. The PC is after it, so ``execute`` again continues; the syscall number is
    in x8 and the arguments in x0..x5 (service it, put the result in x0, execute again)."""
    MAX_CYCLES = 3
    """``max_cycles`` instructions retired. The PC is at the next instruction."""
    FAULT = 4
    """A memory access outside guest memory, or a jump there or to a misaligned PC. The PC is
    at the instruction; :attr:`ExecResult.fault_address` and ``fault_access`` say what."""
    UNDEFINED = 5
    """An instruction armada does not implement or that is unallocated; the word 0x00000000
    (UDF #0, what fresh memory holds) is one. The PC is at it;
    :attr:`ExecResult.undefined_word` holds the word."""
    BREAKPOINT = 6
    """BRK #imm ran. The PC is at the BRK (``set_pc(pc + 4)`` steps over it);
    :attr:`ExecResult.immediate` is the #imm."""

@final
class ExecResult:
    """The result of :meth:`Machine.execute` and :meth:`Machine.wait`."""

    @property
    def cycles(self) -> int:
        """Instructions retired by this run."""
    @property
    def cycles_executed(self) -> int:
        """Same as :attr:`cycles`."""
    @property
    def stop_reason(self) -> StopReason:
        """Why the machine stopped."""
    @property
    def stop_reason_name(self) -> Literal[
        "HALT", "SYSCALL", "MAX_CYCLES", "FAULT", "UNDEFINED", "BREAKPOINT"
    ]:
        """``stop_reason.name``."""
    @property
    def pc(self) -> int:
        """The PC where the machine stopped (see :class:`StopReason` for where that is)."""
    @property
    def elapsed(self) -> float:
        """Wall-clock seconds the run took."""
    @property
    def ips(self) -> float:
        """Instructions per second: ``cycles / elapsed``."""
    @property
    def fault_address(self) -> Optional[int]:
        """FAULT: the address that could not be accessed; None for other stops."""
    @property
    def fault_access(self) -> Optional[Literal["read", "write", "execute"]]:
        """FAULT: what kind of access failed; None for other stops."""
    @property
    def undefined_word(self) -> Optional[int]:
        """UNDEFINED: the 32-bit instruction word; None for other stops."""
    @property
    def immediate(self) -> Optional[int]:
        """HALT and BREAKPOINT: the #imm of the HLT or BRK; None for other stops."""

@final
class Status:
    """What :meth:`Machine.poll` reports."""

    @property
    def cycles_executed(self) -> int:
        """Instructions retired so far by the current run (the last run once it is over).
        Updated about every million instructions while the engine runs."""
    @property
    def running(self) -> bool:
        """Whether the machine is running."""
    @property
    def elapsed(self) -> float:
        """Seconds since the current run started (how long the last run took, once over)."""

@final
class Flags:
    """The condition flags. ``int(flags)`` is the 4-bit value ``N<<3 | Z<<2 | C<<1 | V``;
    a Flags compares equal to another Flags or to that int."""

    def __new__(cls, n: bool = False, z: bool = False, c: bool = False, v: bool = False) -> Self: ...
    @property
    def n(self) -> bool:
        """Negative."""
    @property
    def z(self) -> bool:
        """Zero."""
    @property
    def c(self) -> bool:
        """Carry (set when a subtraction does not borrow)."""
    @property
    def v(self) -> bool:
        """Overflow."""
    @property
    def value(self) -> int:
        """``N<<3 | Z<<2 | C<<1 | V``."""
    @property
    def nzcv(self) -> int:
        """The NZCV system register as ``MRS x0, NZCV`` reads it: ``value << 28``."""
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

class Machine:
    """A bare AArch64 machine: 31 general registers, SP, PC, the NZCV flags and one
    read-write-execute memory region ``[0, memory_size)``, zero-filled.

    Fresh state: every register 0 except SP, which is ``memory_size`` (the top of memory, so
    code can push without setting it up); PC 0; flags clear. Memory accesses outside the
    region stop the machine with :attr:`StopReason.FAULT`; nothing is serviced behind your
    back (SVC stops with :attr:`StopReason.SYSCALL` for you to handle).

    Example::

        m = armada.Machine(memory_size=4 << 20)
        m.load_program(code, address=0)
        m.set_pc(0)
        r = m.execute(max_cycles=10_000_000)
        print(r.cycles, r.stop_reason_name, m.get_register(0))

    While the machine runs (after :meth:`start`, until the run is over), calls that need its
    state raise :class:`ArmadaError`; :meth:`poll`, :meth:`is_running` and :meth:`wait` are
    what to call then. Dropping a running machine stops its run.
    """

    def __new__(cls, memory_size: int = 4 << 20, backend: str = "cpu") -> Self:
        """Create a machine.

        :param memory_size: bytes of guest memory, a positive multiple of 4096.
        :param backend: ``"cpu"``; ``"cuda"`` (the fetch-execute loop in a CUDA kernel; guest
            memory lives in device memory, see :meth:`memory_view`); ``"wgpu"`` (the same in
            a WGSL shader); ``"auto"``: CUDA when it is available here, else the CPU. Every
            backend gives the same results (stops, registers, flags, memory, cycles).
        :raises EngineUnavailableError: the backend cannot run here.
        :raises ValueError: bad memory_size or unknown backend.
        """
    @property
    def memory_size(self) -> int:
        """Bytes of guest memory."""
    @property
    def backend(self) -> str:
        """The engine this machine runs on: ``"cpu"``, ``"cuda"`` or ``"wgpu"``."""

    # -- program, registers ----------------------------------------------------------------
    def load_program(self, code: _BytesLike, address: int = 0) -> None:
        """Copy ``code`` (bytes-like: bytes, bytearray, memoryview, a numpy array's raw bytes;
        or a sequence of ints 0..255) into memory at ``address``. Code decoded earlier at
        those addresses is dropped, so the new instructions are what runs. Does not set the
        PC: call :meth:`set_pc`.

        :raises GuestMemoryError: the range is outside guest memory (nothing is written).
        """
    def set_pc(self, address: int) -> None:
        """Set the program counter."""
    @property
    def pc(self) -> int:
        """The program counter (assignable, like :meth:`set_pc`)."""
    @pc.setter
    def pc(self, address: int) -> None: ...
    def get_register(self, index: int) -> int:
        """x0..x30 for ``index`` 0..30; SP for 31. Values are unsigned 64-bit.

        :raises IndexError: index outside 0..31.
        """
    def set_register(self, index: int, value: int) -> None:
        """Set x0..x30 (``index`` 0..30) or SP (31). ``value`` is a 64-bit int; negative
        values down to ``-2**63`` are stored as two's complement.

        :raises IndexError: index outside 0..31.
        :raises OverflowError: value outside ``[-2**63, 2**64)``.
        """
    @property
    def registers(self) -> list[int]:
        """All 32: x0..x30 and SP (a copy; assign a list of 32 ints to set them all)."""
    @registers.setter
    def registers(self, values: Sequence[int]) -> None: ...
    @property
    def flags(self) -> Flags:
        """The NZCV condition flags. Assign a :class:`Flags` or an int 0..15
        (``N<<3 | Z<<2 | C<<1 | V``)."""
    @flags.setter
    def flags(self, value: Union[Flags, int]) -> None: ...

    # -- memory ----------------------------------------------------------------------------
    def read_memory(self, address: int, size: int) -> bytes:
        """``size`` bytes of guest memory from ``address``.

        :raises GuestMemoryError: the range is outside guest memory.
        """
    def write_memory(self, address: int, data: _BytesLike) -> None:
        """Write ``data`` (as for :meth:`load_program`) at ``address``. Writes over code
        that already ran take effect: the stale decoded instructions are dropped.

        :raises GuestMemoryError: the range is outside guest memory (nothing is written).
        """
    def read_memory_64(self, address: int) -> int:
        """The little-endian 64-bit value at ``address`` (any alignment).

        :raises GuestMemoryError: the 8 bytes are not all inside guest memory.
        """
    def write_memory_64(self, address: int, value: int) -> None:
        """Store ``value`` as 8 little-endian bytes at ``address`` (negative values as two's
        complement).

        :raises GuestMemoryError: the 8 bytes are not all inside guest memory.
        """
    def memory_view(self) -> Union[npt.NDArray[np.uint8], DeviceMemory]:
        """All of guest memory without a copy.

        On the CUDA backend: a :class:`DeviceMemory` over the device memory that holds guest
        memory, for ``cupy.from_dlpack(view)``, ``torch.from_dlpack(view)`` and other DLPack
        consumers (1-D ``uint8``). Writes made through such arrays are seen by the machine
        at its next call that uses memory (synchronize the consumer's stream first if it is
        not the default one). On wgpu: :class:`ArmadaError` (use :meth:`read_memory`).

        On the CPU: a writable numpy ``uint8`` array over all of guest memory: element
        ``i`` is guest address ``i``. Reads see what the guest wrote and guest loads see
        what you write. The array (and every view of it) keeps the machine alive. Use
        ``.view(np.uint32)`` or ``.view(np.uint64)`` for wider elements.

        Code: writes through a view made *after* the code last ran take effect at the next
        :meth:`execute` or :meth:`start` (making a view tells the machine to re-decode). If
        you keep a view and write over code that already ran, call :meth:`invalidate_code`
        before running again (or write code with :meth:`write_memory`, which tracks it).

        Do not touch the array while the machine runs (after :meth:`start`): the engine
        writes to the same memory at the same time.
        """
    def invalidate_code(self) -> None:
        """Drop every decoded instruction, so the next run decodes memory afresh. Needed
        only after writing over code through a :meth:`memory_view` kept from before."""
    def __dlpack__(self, **kwargs: Any) -> Any:
        """DLPack export of guest memory (``uint8``, 1-D, zero-copy), so
        ``np.from_dlpack(machine)`` (CPU) or ``cupy.from_dlpack(machine)`` /
        ``torch.from_dlpack(machine)`` (CUDA) see guest memory without copying."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)``: kDLCPU, device 0, on the CPU; ``(2, 0)``: kDLCUDA, device 0, on
        CUDA."""

    # -- running ---------------------------------------------------------------------------
    def execute(self, max_cycles: Optional[int] = None) -> ExecResult:
        """Run from the PC until the first stop (see :class:`StopReason`) or until
        ``max_cycles`` instructions have retired (None: no limit). The GIL is released while
        the engine runs; Ctrl-C stops it within a fraction of a second and raises
        :class:`KeyboardInterrupt`, leaving the machine at a clean instruction boundary.

        :raises ArmadaError: the machine is running (after :meth:`start`).
        """
    def start(self, max_cycles: Optional[int] = None) -> None:
        """Like :meth:`execute`, but return at once: the engine runs on a background thread.
        Watch it with :meth:`is_running` and :meth:`poll`; collect the result with
        :meth:`wait`. The machine's state (registers, memory) is back as soon as the run is
        over, even before :meth:`wait`.

        :raises ArmadaError: the machine is already running.
        """
    def is_running(self) -> bool:
        """Whether a run (from :meth:`start`, or :meth:`execute` on another thread) is going."""
    def poll(self) -> Status:
        """Progress of the current run, without blocking."""
    def wait(self) -> ExecResult:
        """Block (GIL released) until the run from :meth:`start` is over; return its result.
        Ctrl-C interrupts the wait (not the run: wait again to collect it).

        :raises ArmadaError: nothing was started.
        """

# ----- Linux programs ----------------------------------------------------------------------

@final
class Completed:
    """How a Linux program ended (:func:`run`, :func:`run_batch`)."""

    @property
    def exit_code(self) -> int:
        """The exit status 0..255; minus the signal number when a signal ended the program
        (``-11`` for SIGSEGV), as :mod:`subprocess` reports it; 124 when ``max_instructions``
        ran out (as ``armada run`` and ``timeout`` do)."""
    @property
    def returncode(self) -> int:
        """Same as :attr:`exit_code` (the :class:`subprocess.CompletedProcess` name)."""
    @property
    def stdout(self) -> bytes:
        """Everything the program wrote to file descriptor 1."""
    @property
    def stderr(self) -> bytes:
        """Everything the program wrote to file descriptor 2 (armada's own messages are in
        :attr:`message`, not here)."""
    @property
    def instructions(self) -> int:
        """Instructions the program retired."""
    @property
    def stop_reason(self) -> Literal["exit", "signal", "max_instructions"]:
        """``"exit"``: the program called exit; ``"signal"``: a signal ended it (a fault, an
        undefined instruction, abort()); ``"max_instructions"``: the budget ran out."""
    @property
    def message(self) -> Optional[str]:
        """armada's one-line explanation when armada ended the program (a fault with the PC
        and address, an undefined instruction word, the instruction limit); None otherwise."""
    @property
    def elapsed(self) -> float:
        """Wall-clock seconds the program ran."""
    @property
    def coverage(self) -> Optional[npt.NDArray[np.uint8]]:
        """With ``coverage=True``: the run's edge coverage, 65,536 hit counters (uint8,
        saturating), AFL's layout: the slot of the edge from a branch at ``src`` to ``dst``
        is ``((((src >> 2) * 0x9E3779B1) ^ (dst >> 2)) * 0x85EBCA6B) >> 16`` in 32-bit
        arithmetic. None otherwise."""

def run(
    argv: Union[_PathArg, Sequence[_PathArg]],
    stdin: _Input = b"",
    env: Optional[_Env] = None,
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
    """Run an AArch64 Linux program to its end, like ``armada run``, and capture its
    output.

    :param argv: the program (a host path) and its arguments; ``argv[0]`` is also what the
        guest sees as its name. A single path runs the program with no arguments.
    :param stdin: what the program reads on fd 0 (str is encoded as UTF-8).
    :param env: the guest's whole environment; None passes the host's (as ``armada run``
        and qemu-user do).
    :param backend: ``"cpu"`` (the default), ``"cuda"`` or ``"wgpu"`` (a GPU engine: one
        lane in a kernel, syscalls serviced by the host), or ``"auto"`` (CUDA when it is
        available, else the CPU).
    :param root: confine the guest's file access to this host directory (no ``..``,
        absolute path or symlink escapes it). None: guest paths are host paths.
    :param max_instructions: stop the program after this many instructions
        (``exit_code`` 124, ``stop_reason`` ``"max_instructions"``).
    :param deterministic: a virtual clock and seeded random bytes, so runs repeat exactly.
    :param seed: the seed of those random bytes.
    :param sysroot: where a dynamically linked program finds its interpreter and libraries
        (``armada run -L``, qemu-aarch64's ``-L``): an absolute guest path names
        ``sysroot/path`` when that exists, the host's path otherwise. Dynamically linked
        programs run on the CPU engine only (``"auto"`` picks it for them).
    :param net: where the program's sockets lead: ``"loopback"`` (the default), the run's
        own in-memory network (TCP, UDP and Unix sockets between its processes and threads,
        nothing else reachable; each lane of a batch has its own), or ``"host"``: IPv4 and
        IPv6 sockets are the host's, as under qemu-user. ``"host"`` leaves the sandbox, and
        runs are no longer deterministic.
    :raises ElfError: the program is missing or not an AArch64 Linux executable, or its
        interpreter is missing (give ``sysroot``).
    :raises ArmadaError: the process cannot be set up (arguments too long, ...), or the
        GPU engine failed.
    :raises EngineUnavailableError: the backend cannot run here.

    The GIL is released while the program runs; Ctrl-C stops it and raises
    :class:`KeyboardInterrupt`. A program that faults is a result (negative ``exit_code``),
    not an exception.
    """

def run_batch(
    argvs: Iterable[Sequence[_PathArg]],
    stdins: Optional[Iterable[_Input]] = None,
    env: Optional[_Env] = None,
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
    """Run many lanes at once: one lane per argument list, each its own process (memory,
    files, stdin). Lanes may run different programs: each program is loaded once and its
    lanes share its image. Returns one :class:`Completed` per lane, in order.

    :param argvs: one argv per lane; ``argv[0]`` is the lane's program (lanes with
        ``snapshot_at`` all run lane 0's).
    :param stdins: one stdin per lane, or None for empty stdin everywhere.
    :param env, root, max_instructions, deterministic, seed, sysroot, net: as for :func:`run`, the same
        for every lane (``max_instructions`` counts per lane).
    :param backend: ``"auto"`` (the default): CUDA when it is available here, else every
        CPU core; ``"cpu"``: every CPU core; ``"cuda"``, ``"wgpu"``: all lanes in one batch
        on that GPU engine (:class:`EngineUnavailableError` when it cannot run here).
    :param snapshot_at: run lane 0's start once, up to this point, and start every lane
        there with its own stdin: ``"input"`` (the program's first read of stdin),
        ``"main"`` or another symbol, or an address (``"0x4005d0"``). Every argv must then
        be the same; lanes share lane 0's start (its random seed too). Every engine.
    :param coverage: record each lane's edge coverage into :attr:`Completed.coverage`
        (CPU engine).
    :param devices: the GPUs a GPU batch spreads over, as ``armada batch --devices``:
        ``"all"``, a device number or a list of them (``[0, 2]``); None (the default): the
        first. Each device runs a contiguous share of the lanes; the results are the same,
        in the same order, as on one device. A device that fails hands its lanes to the
        others. A ValueError with ``backend="cpu"``; unused when ``"auto"`` finds no GPU.
    :raises ElfError, ArmadaError, ValueError: as for :func:`run`; mismatched lists; a
        snapshot point the start never reaches (:class:`ArmadaError`);
        :class:`EngineUnavailableError` for a device number the host lacks.
    """

class Snapshot:
    """A program run once to a point and paused there (:func:`snapshot`). Each run from it
    restores the paused process (registers, memory shared copy-on-write, open files, Linux
    state) with a stdin of its own, so the start every run shares is paid once."""

    @property
    def point(self) -> str:
        """Where the program was paused, as asked for."""
    @property
    def instructions(self) -> int:
        """Instructions the program retired before the pause (every run's count includes
        them, and ``max_instructions`` counts from the program's start)."""
    @property
    def pc(self) -> int:
        """The program counter at the pause."""
    def run(
        self,
        stdin: Union[bytes, bytearray, memoryview, None] = None,
        backend: str = "cpu",
        max_instructions: Optional[int] = None,
        coverage: bool = False,
    ) -> Completed:
        """Run on from the pause with ``stdin`` as what is left of stdin (the pause at
        ``"input"`` is before the first read, so all of it); as :func:`run` returns."""
    def run_batch(
        self,
        stdins: Sequence[Union[bytes, bytearray, memoryview]],
        backend: str = "auto",
        max_instructions: Optional[int] = None,
        coverage: bool = False,
    ) -> list[Completed]:
        """Run on from the pause once for each stdin, all at once (every CPU core, or one
        GPU batch whose lanes share the paused program's pages); results in order, each the
        same as a whole run of the program with that stdin gives."""

def snapshot(
    argv: Sequence[_PathArg],
    at: str = "main",
    stdin: Union[bytes, bytearray, memoryview, str, None] = None,
    env: Optional[_Env] = None,
    root: Optional[_PathArg] = None,
    *,
    max_instructions: Optional[int] = None,
    deterministic: bool = False,
    seed: int = 0,
    sysroot: Optional[_PathArg] = None,
    net: str = "loopback",
) -> Snapshot:
    """Run a program once to ``at`` and pause it there.

    :param at: ``"main"``, another symbol, an address (``"0x..."``), or ``"input"``: the
        program's first read (or stat, seek, map) of its stdin, before it happens.
    :param stdin: the stdin of the run to the pause (``"input"`` pauses before reading it).
    :param max_instructions: the start may run this many instructions; a point not reached
        by then (or by the program's end) raises :class:`ArmadaError` saying how the start
        ended.
    :returns: a :class:`Snapshot`: ``run(stdin)`` and ``run_batch(stdins, backend=...)``
        run on from the pause.
    """

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
    env: Optional[_Env] = None,
    sysroot: Optional[_PathArg] = None,
    backend: str = "cpu",
) -> dict[str, Any]:
    """Coverage-guided fuzzing of one program, as ``armada fuzz`` does it, on every CPU
    core or on a GPU (``backend``): mutate inputs (LibAFL's havoc, splice, dictionary and input-to-state mutators),
    keep those that reach new edges (saved in ``corpus``), save those that crash or hang the
    program in ``crashes`` (``crash-sigN-pcADDR-stackHASH``, ``hang-HASH``).

    :param argv: the program and its arguments; ``"@@"`` stands for the input file.
    :param corpus: inputs to start from, and where new ones go (created if missing).
    :param max_time, max_execs, stop_on_crash: when to stop (at least one is needed).
    :param snapshot_at: where each execution starts: ``"input"`` (the default: the
        program's first touch of its input), ``"main"``, a symbol, an address, or None
        (the whole program every time).
    :param input: ``"stdin"``, ``"file"`` (``"@@"`` in argv) or ``"buffer"`` (``data,
        size`` in x0/x1 at ``snapshot_at``, libFuzzer's ``LLVMFuzzerTestOneInput``); by
        default chosen from argv and ``snapshot_at``.
    :param dict: an AFL/libFuzzer dictionary file.
    :param exec_limit: instructions an execution may run before it counts as a hang.
    :param backend: ``"cpu"`` (every host core), ``"cuda"`` or ``"wgpu"`` (a round's inputs
        run as one batch of GPU lanes; coverage stays on the device).
    :param lanes: inputs a round (default 256 on the CPU engine, 16384 on a GPU).
    :returns: the figures: ``execs``, ``execs_per_sec``, ``elapsed_s``, ``corpus``,
        ``edges``, ``crashes``, ``hangs``, ``rounds``, ``snapshot_instructions``,
        ``warnings`` and ``saved`` (the crash and hang files written).
    :raises ArmadaError: a snapshot point never reached, an unwritable directory, every
        corpus input crashing; :class:`ElfError` for a program that cannot load.

    The GIL is released; Ctrl-C stops the run at the end of a round and raises
    :class:`KeyboardInterrupt`.

    Example::

        stats = armada.fuzz(["./target", "@@"], "corpus", "crashes", max_time=60)
        for crash in stats["saved"]:
            print(crash, armada.run(["./target", crash]).exit_code)
    """

def available_backends() -> list[str]:
    """The engines that work on this machine: ``"cpu"`` always, ``"cuda"`` and ``"wgpu"``
    when their engine opens (the first call opens them, which compiles their kernels: up to
    seconds the first time, cached afterwards)."""

def set_tier(name: str) -> None:
    """Sets how the CPU engine runs code from now on: ``"jit"`` (translation; the default on
    x86-64 and aarch64 hosts) or ``"interp"``. Raises ValueError for another name."""

def tier() -> str:
    """How the CPU engine runs code: ``"jit"`` or ``"interp"``."""

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
    "Status",
    "StopReason",
    "available_backends",
    "fuzz",
    "run",
    "run_batch",
    "set_tier",
    "tier",
    "__version__",
]
