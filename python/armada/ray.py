"""``armada.ray``: one batch of runs spread over a Ray cluster.

``armada.ray.run_batch`` takes what :func:`armada.run_batch` takes and returns exactly what it
returns, in the same order, but splits the lanes into shards that run as Ray tasks on the
cluster's nodes: one GPU each on GPU backends (``num_gpus=1``), a node's CPUs on the CPU
engine. Each task runs armada's own batch on its node, so every node needs armada installed
(``pip install 'armada[ray]'``).

- The program travels through Ray's object store (each node writes it once, named by its
  hash) unless ``shared_files=True`` says its path is the same on every node. Inputs (stdin)
  travel with their shard. ``root`` and ``sysroot`` are paths on the nodes.
- The guest environment is resolved here, on the driver: ``env=None`` gives every lane this
  process's environment, as :func:`armada.run_batch` does, not the worker's.
- A shard that fails (its node lacks the engine, its GPU fails, its worker dies) runs once
  more, on another node where there is one; a second failure raises :class:`ArmadaError`.
- Progress: ``progress`` is called as shards complete (or, with ``True``, a line per shard on
  stderr).

Ray is optional: without it this module imports, and ``run_batch`` raises ImportError naming
the command that installs it.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import tempfile
import time
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import ArmadaError, Completed, _armada, _devices, _env, _lanes, _root

__all__ = ["run_batch"]

_PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
#: progress(shards_done, shards, lanes_done, lanes)
Progress = Callable[[int, int, int, int], None]

_INSTALL = "pip install 'armada[ray]' (or pip install ray)"


def _ray():
    try:
        import ray
    except ImportError:
        raise ImportError(f"armada.ray needs Ray, which is not installed here: {_INSTALL}") from None
    return ray


def _check_address(address: str) -> None:
    """Fails fast, with a clear message, when a "host:port" address does not answer
    (Ray itself would wait a long time)."""
    target = address[len("ray://") :] if address.startswith("ray://") else address
    if target in ("auto", "local") or ":" not in target:
        return
    host, _, port = target.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except (OSError, ValueError) as e:
        raise ArmadaError(
            f"the Ray cluster at {address} does not answer ({e}): check the address "
            "(ray status on the head node prints it), or leave address out to start a local one"
        ) from None


def _split(n: int, k: int) -> list[tuple[int, int]]:
    """(start, count) of k contiguous shards of n lanes, as even as can be (the first n % k
    shards take one lane more); empty shards are left out."""
    out, at = [], 0
    for i in range(k):
        c = n // k + (1 if i < n % k else 0)
        if c:
            out.append((at, c))
        at += c
    return out


def _program_file(data: bytes) -> str:
    """The program's bytes as a file on this node, written once per content."""
    d = os.path.join(tempfile.gettempdir(), f"armada-ray-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, hashlib.sha256(data).hexdigest())
    if not os.path.exists(p):
        tmp = f"{p}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o755)
        os.replace(tmp, p)
    return p


def _run_shard(program: Optional[bytes], argvs, stdins, env, backend, kw, fail: bool):
    """One shard on its node: ("ok", node, results, seconds) or ("error", node, why)."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    t = time.time()
    try:
        if fail:
            raise ArmadaError("a failure injected by ARMADA_RAY_FAIL_SHARDS (tests)")
        path = _program_file(program) if program is not None else None
        results = _armada.run_lanes(
            argvs,
            stdins,
            env,
            backend,
            kw["root"],
            kw["max_instructions"],
            kw["deterministic"],
            kw["seed"],
            True,
            kw["sysroot"],
            kw["net"],
            kw["snapshot_at"],
            kw["coverage"],
            kw["devices"],
            path,
        )
    except Exception as e:  # every failure goes back to the driver, which retries once
        return ("error", node, f"{type(e).__name__}: {e}")
    return ("ok", node, results, time.time() - t)


def _alive_nodes(ray, need_gpu: bool) -> list[dict]:
    return [
        n
        for n in ray.nodes()
        if n.get("Alive") and (not need_gpu or n.get("Resources", {}).get("GPU", 0) >= 1)
    ]


def run_batch(
    argvs: Iterable[Sequence[_PathArg]],
    stdins: Optional[Iterable[Union[bytes, bytearray, memoryview, str, None]]] = None,
    env: Optional[Mapping[Union[str, bytes], Union[str, bytes]]] = None,
    backend: str = "auto",
    root: Optional[_PathArg] = None,
    *,
    shards: Optional[int] = None,
    address: Optional[str] = None,
    shared_files: bool = False,
    num_cpus: Optional[float] = None,
    progress: Union[bool, Progress, None] = None,
    max_instructions: Optional[int] = None,
    deterministic: bool = False,
    seed: int = 0,
    sysroot: Optional[_PathArg] = None,
    net: str = "loopback",
    snapshot_at: Optional[str] = None,
    coverage: bool = False,
    devices: Union[None, str, int, Sequence[int]] = None,
) -> list[Completed]:
    """Run one program in many lanes over a Ray cluster; the same results, in the same
    order, as :func:`armada.run_batch` with the same arguments.

    :param shards: how many Ray tasks the lanes are split into (contiguous, as even as can
        be). Default: one per GPU of the cluster on a GPU backend, one per node on the CPU.
    :param address: the cluster to connect to when Ray is not initialized yet (as
        ``ray.init(address=...)``); None: ``RAY_ADDRESS``, or a local cluster. A cluster
        already initialized in this process is used as it is.
    :param shared_files: the program's path is the same on every node (a shared file
        system): it is not sent through the object store.
    :param num_cpus: CPUs each CPU-engine task asks for (default: the smallest node's).
    :param progress: called as ``progress(shards_done, shards, lanes_done, lanes)`` as shards
        complete; ``True`` prints a line per shard on stderr.
    :param backend: ``"auto"`` runs shards on GPUs (``num_gpus=1`` each) when the cluster has
        any, on CPUs otherwise; ``"cuda"``/``"wgpu"`` ask for a GPU; ``"cpu"`` for CPUs.
    :raises ImportError: Ray is not installed (the message names the install command).
    :raises ArmadaError: the cluster does not answer, or a shard failed twice.
    """
    lanes, ins = _lanes(argvs, stdins)
    if shards is not None and shards < 1:
        raise ValueError(f"shards must be at least 1, not {shards}")
    if not lanes:
        return []
    prog = lanes[0][0]
    for i, a in enumerate(lanes):
        if a[0] != prog:
            raise ValueError(
                f"armada.ray.run_batch carries one program to the nodes, for every lane: argvs[{i}][0] is {a[0]!r}, argvs[0][0] is {prog!r} (armada.run_batch runs lanes of several programs on one machine)"
            )
    guest_env = _env(env)
    kw: dict[str, Any] = {
        "root": _root(root),
        "max_instructions": max_instructions,
        "deterministic": deterministic,
        "seed": seed,
        "sysroot": _root(sysroot),
        "net": net,
        "snapshot_at": snapshot_at,
        "coverage": coverage,
        "devices": _devices(devices),
    }

    ray = _ray()
    if not ray.is_initialized():
        if address is not None:
            _check_address(address)
        try:
            ray.init(address=address, log_to_driver=False)
        except Exception as e:
            raise ArmadaError(f"cannot start or reach a Ray cluster ({type(e).__name__}: {e})") from None

    res = ray.cluster_resources()
    b = backend.lower()
    gpu = b in ("cuda", "wgpu") or (b == "auto" and res.get("GPU", 0) >= 1)
    nodes = _alive_nodes(ray, gpu)
    if not nodes:
        raise ArmadaError(
            "the Ray cluster has no GPU node for a GPU backend: use backend='cpu', or add GPU nodes"
            if gpu
            else "the Ray cluster has no live node"
        )
    if shards is None:
        shards = int(res.get("GPU", 0)) if gpu else len(nodes)
    shards = max(1, min(shards, len(lanes)))
    if gpu:
        options: dict[str, Any] = {"num_gpus": 1, "num_cpus": 1}
    else:
        cpus = num_cpus or max(1, min(int(n["Resources"].get("CPU", 1)) for n in nodes))
        options = {"num_cpus": cpus}
    task_backend = backend if not (b == "auto" and not gpu) else "cpu"

    if shared_files:
        program_ref = None
    else:
        try:
            with open(os.fsdecode(prog), "rb") as f:
                program_ref = ray.put(f.read())
        except OSError as e:
            raise _armada_elf_error(f"cannot run {os.fsdecode(prog)}: {e.strerror}") from None

    failing = {
        int(x) for x in os.environ.get("ARMADA_RAY_FAIL_SHARDS", "").split(",") if x.strip()
    }
    remote = ray.remote(max_retries=0)(_run_shard)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    parts = _split(len(lanes), shards)

    def submit(k: int, attempt: int, avoid: Optional[str]):
        start, count = parts[k]
        opts = dict(options)
        if avoid is not None:
            others = [n["NodeID"] for n in _alive_nodes(ray, gpu) if n["NodeID"] != avoid]
            if others:
                # soft: if that node is gone by then, Ray places it elsewhere
                opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                    node_id=others[k % len(others)], soft=True
                )
        ref = remote.options(**opts).remote(
            program_ref,
            lanes[start : start + count],
            ins[start : start + count],
            guest_env,
            task_backend,
            kw,
            attempt == 0 and k in failing,
        )
        return ref

    pending = {submit(k, 0, None): (k, 0) for k in range(len(parts))}
    results: list[Optional[list]] = [None] * len(parts)
    first_error: dict[int, str] = {}
    done_lanes = 0
    report = _progress(progress)
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            k, attempt = pending.pop(ref)
            start, count = parts[k]
            try:
                out = ray.get(ref)
            except Exception as e:  # the worker or its node died
                out = ("error", None, f"{type(e).__name__}: {e}")
            if out[0] == "ok":
                results[k] = out[2]
                done_lanes += count
                if report:
                    report(sum(r is not None for r in results), len(parts), done_lanes, len(lanes))
                continue
            where = f"node {out[1]}" if out[1] else "a node that failed"
            if attempt == 0:
                first_error[k] = f"on {where}: {out[2]}"
                pending[submit(k, 1, out[1])] = (k, 1)
                continue
            raise ArmadaError(
                f"shard {k} (lanes {start} to {start + count - 1}) failed twice: first "
                f"{first_error.get(k, '')}; then on {where}: {out[2]}"
            )
    finally:
        for ref in pending:
            ray.cancel(ref)
    return [c for r in results for c in (r or [])]


def _armada_elf_error(msg: str) -> Exception:
    from . import ElfError

    return ElfError(msg)


def _progress(progress: Union[bool, Progress, None]) -> Optional[Progress]:
    if callable(progress):
        return progress
    if progress or (progress is None and sys.stderr.isatty()):
        t0 = time.time()

        def line(done: int, total: int, lanes_done: int, lanes: int) -> None:
            print(
                f"armada.ray: {done}/{total} shards done, {lanes_done}/{lanes} lanes "
                f"({time.time() - t0:.1f} s)",
                file=sys.stderr,
                flush=True,
            )

        return line
    return None
