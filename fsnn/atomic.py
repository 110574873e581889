"""Files written whole or not at all: the one atomic writer (bytes, text, JSON) that run records, checkpoints
and caches go through, the content digests that checkpoints, caches and builds are checked against, and the advisory
lock under which parallel processes build one of them once."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO, Callable

try:  # POSIX advisory locks; elsewhere there is no locking
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None


def write_atomic(path: str | Path, write: Callable[[BinaryIO], object], *, sync: bool = True) -> Path:
    """Create or replace ``path`` atomically: ``write(binary file)`` fills a temporary file in the same folder, which
    ``os.replace`` then moves over ``path``, so a reader (or a crash) sees either the old file or the complete new
    one, never half of one. ``sync=False`` skips the ``fsync`` where a damaged file is detected and rebuilt anyway
    (cache samples checked against a synced manifest)."""
    path = Path(path)
    # unique per writer (processes of a multirun, threads integrating a cache), created with the usual permissions
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            write(handle)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        # on a read-only file system even removing a file that was never made fails: the first error is the one
        with contextlib.suppress(OSError):
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
        return (
            f"cannot write {path}: {error.strerror or 'no space left'} ({free} on its file system); free some "
            "space and rerun: the files written before are whole"
        )
    if path.is_dir() or error.errno == errno.EISDIR:
        return f"cannot write {path}: a folder is in its place, where fsnn writes a file; move it away and rerun"
    return f"cannot write {path}: {error.strerror or error}"


def write_text_atomic(path: str | Path, text: str) -> Path:
    """``text`` (UTF-8) written atomically (:func:`write_atomic`)."""
    return write_atomic(path, lambda handle: handle.write(text.encode()))


def write_json_atomic(path: str | Path, payload: Any) -> Path:
    """``payload`` as indented JSON, written atomically (:func:`write_text_atomic`)."""
    return write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=_jsonable))


@contextlib.contextmanager
def file_lock(path: str | Path):
    """Exclusive advisory lock on ``path`` (created if needed) for the duration of the block, so that parallel
    processes (e.g. a Hydra multirun) do not build the same cache or extension at once."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        if fcntl is not None:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def content_digest(obj) -> str:
    """SHA-256 of a tree of tensors, numpy arrays and plain values (dicts, lists, tuples, numbers, strings, None):
    two trees have the same digest exactly when they hold the same values, dtypes and shapes in the same structure,
    whatever the bytes of the file they were read from. A flipped bit in any tensor changes it."""
    digest = hashlib.sha256()
    _feed(digest, obj)
    return digest.hexdigest()


def _loaded(module: str):
    """``module`` if some code imported it, else ``None``: a tensor or an array exists only once torch or numpy is
    loaded, so this module (read by the commands before torch loads, for ``--help``) never imports them itself."""
    return sys.modules.get(module)


def _feed(digest, obj) -> None:
    torch, np = _loaded("torch"), _loaded("numpy")
    if torch is not None and isinstance(obj, torch.Tensor):
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
    elif np is not None and isinstance(obj, np.ndarray):
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


def _jsonable(value):
    torch = _loaded("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
