"""The files of a run folder: its records' paths made relative to it, the differences between two config trees, the
lock that keeps one process per run folder, and the setting aside of an earlier generation (``force=true``)."""

from __future__ import annotations

import json
import os
import socket
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from fsnn.runs.records import GENERATION


def relative_to_run(node: Any, run_dir: str | Path) -> Any:
    """``node`` (a config tree) with every absolute path of the run folder relative to it: a path inside
    ``run_dir`` (the csv logger's ``save_dir`` is the run folder itself), or one naming ``<task>/<run>`` of it at
    another place (a record written before the folder moved). A record then names no place the run happened to be
    in; other paths (a ``paths.data_dir`` given on the command line) stay as they are."""
    tail = Path(run_dir).resolve().parts[-2:]

    def relative(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: relative(v) for k, v in node.items()}
        if isinstance(node, list):
            return [relative(v) for v in node]
        if isinstance(node, str) and os.path.isabs(node):
            parts = Path(node).parts
            at = [i for i in range(len(parts) - 1) if parts[i : i + 2] == tail]
            if at:
                return str(Path(*parts[at[-1] + 2 :])) if len(parts) > at[-1] + 2 else "."
        return node

    return relative(node)


def tree_changes(old: dict, new: dict, prefix: str = "", *, added: bool = True) -> list[str]:
    """``key: old -> new`` for every value that differs between two config trees (nested dicts); ``added=False``
    leaves out the keys only ``new`` has."""
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            changes += tree_changes(a, b, f"{prefix}{key}.", added=added)
        elif a != b and (added or key in old):
            changes.append(f"{prefix}{key}: {a!r} -> {b!r}")
    return changes


class RunLockedError(RuntimeError):
    """Another process is training in the run folder."""


def _umask_mode(mode: int = 0o666) -> int:
    umask = os.umask(0)
    os.umask(umask)
    return mode & ~umask


@contextmanager
def run_lock(run_dir: Path):
    """Hold ``<run_dir>/.lock`` (``filelock``, an ``flock`` the kernel drops when its holder dies, so a lock left by
    a killed run is taken over) for the block; the holder's pid, host, start time and command are written into it.
    :class:`RunLockedError` naming the holder when another live process has it. The file is removed when the block
    ends (a finished run leaves no ``.lock``); removed while still held, so a process that opened it just before
    finds the inode unlinked when it gets the ``flock`` and makes a new one (``filelock`` checks for that)."""
    path = run_dir / ".lock"
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": " ".join(sys.argv),
        "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }

    def write_holder(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)

    run_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path), timeout=0, mode=_umask_mode(), on_acquired=write_holder)
    try:
        lock.acquire()
    except Timeout:
        raise RunLockedError(
            f"run folder {run_dir} is in use by {describe_holder(_holder(path))}; wait for it to finish or stop it"
        ) from None
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        lock.release()


def _holder(path: Path) -> dict:
    try:
        holder = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def describe_holder(holder: dict) -> str:
    """The process that holds a run folder's lock, as a person reads it."""
    return (
        f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since {holder.get('since', '?')} "
        f"({holder.get('command', '?')})"
    )


def lock_holder(run_dir: Path) -> dict | None:
    """What :func:`run_lock` wrote about the live process that holds ``run_dir``'s lock (``pid``, ``host``,
    ``since``, ``command``), or ``None`` when no process holds it. Creates nothing."""
    path = Path(run_dir) / ".lock"
    if not path.is_file():
        return None
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return _holder(path)
    lock.release()
    return None


def set_aside(run_dir: Path, patterns: tuple[str, ...]) -> Path | None:
    """Move what matches ``patterns`` (glob patterns of files or folders) in ``run_dir`` into its next generation
    folder ``previous.<n>`` (one more than the highest there), so that nothing of an earlier generation is ever
    replaced. Returns that folder, or ``None`` when there was nothing to move."""
    present = sorted({p.name for pattern in patterns for p in run_dir.glob(pattern)})
    if not present:
        return None
    taken = [int(m.group(1)) for p in run_dir.iterdir() if (m := GENERATION.fullmatch(p.name))]
    target = run_dir / f"previous.{max(taken, default=0) + 1}"
    target.mkdir()
    for name in present:
        os.replace(run_dir / name, target / name)
    return target
