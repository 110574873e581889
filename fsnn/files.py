"""Files a run can trust: the one atomic writer (text, JSON), the content digest that checkpoints and caches are checked
against, the differences between two config trees, the lock that keeps one process per run folder, and the
provenance every ``metrics.json`` carries (package versions, the fsnn commit, the device)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO, Callable

import numpy as np
import torch
from filelock import FileLock, Timeout

from fsnn.config import ConfigError

#: the unit of the metrics (accuracy, AUC) in ``metrics.json``, ``eval.json`` and ``robustness.json``, recorded in
#: each as ``metric_unit``; what a person reads (console, tables, report) is in percent (:func:`percent`)
METRIC_UNIT = "fraction"
PACKAGES = ("fsnn", "torch", "torchvision", "lightning", "hydra-core", "spikingjelly", "snntorch",
            "tonic", "timm", "torch-geometric", "numpy", "triton")


def write_atomic(path: str | Path, write: Callable[[BinaryIO], object], *, sync: bool = True) -> Path:
    """Create or replace ``path`` atomically: ``write(binary file)`` fills a temporary file in the same folder, which
    ``os.replace`` then moves over ``path``, so a reader (or a crash) sees either the old file or the complete new
    one, never half of one. ``sync=False`` skips the ``fsync`` where a damaged file is detected and rebuilt anyway
    (cache samples checked against a synced manifest)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # unique per writer (processes of a multirun, threads integrating a cache), created with the usual permissions
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        tmp.unlink(missing_ok=True)
        # a failed write, not an interruption (KeyboardInterrupt, SystemExit), becomes one message naming the file
        cause = _os_error(error) if isinstance(error, Exception) else None
        if cause is None:
            raise
        raise RunFileError(_write_problem(path, cause)) from error
    return path


class RunFileError(OSError):
    """A file fsnn reads or writes that cannot be: a full disk, a folder where a file belongs, no permission. The
    message names the path, what is wrong and, for a full disk, the space left; a failed write leaves the previous
    file whole (:func:`write_atomic`)."""


def _os_error(error: BaseException) -> OSError | None:
    """The ``OSError`` behind ``error`` (itself, or what it was raised from or while handling: torch reports a
    failed write of its zip writer as a ``RuntimeError`` raised while handling the ``OSError``), else ``None``."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _write_problem(path: Path, error: OSError) -> str:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        try:
            free = f"{shutil.disk_usage(path.parent).free / 2**20:,.1f} MiB free"
        except OSError:
            free = "free space unknown"
        return (f"cannot write {path}: {error.strerror or 'no space left'} ({free} on its file system); free some "
                "space and rerun: the files written before are whole")
    if path.is_dir() or error.errno == errno.EISDIR:
        return f"cannot write {path}: a folder is in its place, where fsnn writes a file; move it away and rerun"
    return f"cannot write {path}: {error.strerror or error}"


#: the longest name of one file or folder that common file systems take (ext4, xfs, btrfs, APFS, NTFS), in bytes
NAME_MAX = 255


def fitting_name(name: str, limit: int = NAME_MAX) -> str:
    """``name`` if its UTF-8 fits in ``limit`` bytes, else its readable start (whole characters) + ``-`` + the first
    12 hex digits of its SHA-256: a name too long for a folder (many overrides, a long ``run_name``) becomes one that
    fits, and the same name always becomes the same folder, so that rerunning a command finds its run."""
    encoded = name.encode()
    if len(encoded) <= limit:
        return name
    digest = hashlib.sha256(encoded).hexdigest()[:12]
    return f"{encoded[:limit - len(digest) - 1].decode(errors='ignore')}-{digest}"


def read_run_record(run_dir: Path) -> dict | None:
    """The run's ``metrics.json`` as a dict, or ``None`` when there is none or it is unreadable (a run never
    finished writes it again). :class:`RunFileError` when something other than a file is in its place."""
    path = Path(run_dir) / "metrics.json"
    if path.exists() and not path.is_file():
        kind = "folder" if path.is_dir() else "special file"
        raise RunFileError(f"{path}: expected the run's record, a file, got a {kind}; move it away and rerun")
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def write_text_atomic(path: str | Path, text: str) -> Path:
    """``text`` (UTF-8) written atomically (:func:`write_atomic`)."""
    return write_atomic(path, lambda handle: handle.write(text.encode()))


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
            at = [i for i in range(len(parts) - 1) if parts[i:i + 2] == tail]
            if at:
                return str(Path(*parts[at[-1] + 2:])) if len(parts) > at[-1] + 2 else "."
        return node

    return relative(node)


def make_records_relative(results_dir: str | Path) -> list[Path]:
    """Rewrite every ``metrics.json`` under ``results_dir`` whose config names its run folder by an absolute path
    (records of fsnn before the logger's folder was recorded relative), with :func:`relative_to_run`; the record
    keeps a note of it under ``rewritten``. Nothing else of a record changes; returns the files rewritten."""
    done = []
    for path in sorted(Path(results_dir).rglob("metrics.json")):
        record = json.loads(path.read_text())
        config = relative_to_run(record.get("config"), path.parent)
        if config != record.get("config"):
            record["config"] = config
            record.setdefault("rewritten", []).append(
                "absolute paths of the run folder in config made relative to it (fsnn.files.make_records_relative)")
            write_json_atomic(path, record)
            done.append(path)
    return done


def write_json_atomic(path: str | Path, payload: Any) -> Path:
    """``payload`` as indented JSON, written atomically (:func:`write_text_atomic`)."""
    return write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=_jsonable))


def content_digest(obj) -> str:
    """SHA-256 of a tree of tensors, numpy arrays and plain values (dicts, lists, tuples, numbers, strings, None):
    two trees have the same digest exactly when they hold the same values, dtypes and shapes in the same structure,
    whatever the bytes of the file they were read from. A flipped bit in any tensor changes it."""
    digest = hashlib.sha256()
    _feed(digest, obj)
    return digest.hexdigest()


def _feed(digest, obj) -> None:
    if isinstance(obj, torch.Tensor):
        tensor = obj.detach().cpu()
        if tensor.is_sparse:
            tensor = tensor.coalesce()
            digest.update(f"sparse {tuple(tensor.shape)}|".encode())
            _feed(digest, tensor.indices())
            _feed(digest, tensor.values())
            return
        tensor = tensor.contiguous()
        digest.update(f"tensor {tensor.dtype} {tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    elif isinstance(obj, np.ndarray):
        array = np.ascontiguousarray(obj)
        digest.update(f"array {array.dtype.str} {array.shape}|".encode())
        digest.update(array.view(np.uint8).reshape(-1) if array.size else b"")
    elif isinstance(obj, dict):
        digest.update(f"dict {len(obj)}|".encode())
        for key in sorted(obj, key=repr):
            _feed(digest, key)
            _feed(digest, obj[key])
    elif isinstance(obj, (list, tuple)):
        digest.update(f"{type(obj).__name__} {len(obj)}|".encode())
        for value in obj:
            _feed(digest, value)
    else:
        digest.update(f"{type(obj).__name__} {obj!r}|".encode())


def tree_changes(old: dict, new: dict, prefix: str = "") -> list[str]:
    """``key: old -> new`` for every value that differs between two config trees (nested dicts)."""
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            changes += tree_changes(a, b, f"{prefix}{key}.")
        elif a != b:
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
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv),
              "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}

    def write_holder(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)

    run_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path), timeout=0, mode=_umask_mode(), on_acquired=write_holder)
    try:
        lock.acquire()
    except Timeout:
        raise RunLockedError(f"run folder {run_dir} is in use by {describe_holder(_holder(path))}; wait for it to "
                             "finish or stop it") from None
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
    return (f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since {holder.get('since', '?')} "
            f"({holder.get('command', '?')})")


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


#: the folder ``force=true`` moves an earlier generation of a run into: ``previous.1`` (the oldest), ``previous.2``...
GENERATION = re.compile(r"previous\.(\d+)")


def is_earlier_generation(path: Path) -> bool:
    """Whether ``path`` (a file such as ``metrics.json``) belongs to an earlier generation of a run set aside by
    ``force=true`` (:func:`set_aside`), not to a run of its own."""
    return GENERATION.fullmatch(Path(path).parent.name) is not None


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


def _jsonable(value):
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def package_versions() -> dict[str, str | None]:
    """Installed versions of :data:`PACKAGES`, and ``fsnn_commit``: the git commit of the fsnn source that runs
    (:func:`source_commit`)."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["fsnn_commit"] = source_commit()
    return versions


def source_commit() -> str | None:
    """``git rev-parse HEAD`` of the checkout fsnn is imported from, with ``-dirty`` when its tracked files differ
    from that commit; ``None`` outside a git checkout (an installed wheel) or without git."""
    here = Path(__file__).resolve().parent
    try:
        top, head = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel", "HEAD"],
                                   capture_output=True, text=True, timeout=10, check=True).stdout.split()
        if Path(top).resolve() != here.parent:  # an installed copy inside some other repository
            return None
        changed = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if changed else head


def percent(value: float | None) -> str:
    """A fraction as the percent a person reads: ``0.8125 -> "81.25 %"`` (``"—"`` for none)."""
    return "—" if value is None else f"{100 * value:.2f} %"


def device_description(device: torch.device | str) -> str:
    """What a run ran on, for ``metrics.json``: the GPU's name, or the CPU and its torch threads."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def check_writable_folder(key: str, path: str) -> None:
    """``path`` is, or can be created as, a folder this process can write into (tried, not guessed: root passes
    every permission check)."""
    folder = Path(path).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{key}: expected a folder, got {path!r} (a file)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ConfigError(f"{key}: expected a writable folder, got {path!r} ({error.strerror or error})") from None


def check_folders(paths: dict, results: bool) -> None:
    """This machine's side of ``paths.*``: ``data_dir`` is not a file; ``results_dir`` (when ``results``) is a
    writable folder, created if needed."""
    data_dir = Path(paths["data_dir"]).expanduser()
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"paths.data_dir: expected a folder, got {paths['data_dir']!r} (a file)")
    if results:
        check_writable_folder("paths.results_dir", paths["results_dir"])
