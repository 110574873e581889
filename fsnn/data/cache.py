"""The on-disk cache of derived data, all under one folder per data directory, ``<data_dir>/fsnn_cache``
(:data:`CACHE_DIRNAME`): integrated event frames (``<dataset>/T<T>_s<size>/<split>/``,
:class:`fsnn.data.events.FrameCache`) and graph preprocessing (``graphs/<dataset>/``, :func:`cached_tensor`). Files are
written atomically and built under advisory locks, so parallel runs (a Hydra multirun) build each entry once and never
read half a file.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Callable

import torch

from fsnn.data.common import abspath
from fsnn.results import write_atomic

try:  # POSIX advisory locks; elsewhere the cache falls back to no locking
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

CACHE_DIRNAME = "fsnn_cache"


def cache_dir(data_dir: str | Path, *parts: str) -> Path:
    """``<data_dir>/fsnn_cache/<parts...>`` (absolute): where the derived data of ``data_dir`` is cached."""
    return abspath(data_dir).joinpath(CACHE_DIRNAME, *parts)


def read_json(path: Path):
    """Parsed JSON of ``path``, or ``None`` when it is missing or unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def file_lock(path: Path):
    """Exclusive advisory lock on ``path`` (created if needed) for the duration of the block, so that parallel
    runs (e.g. a Hydra multirun) do not build the same cache at once."""
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


def cached_tensor(cache_dir: str | Path | None, key: str, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``compute()``, memoised in ``<cache_dir>/<key>.pt`` (``cache_dir=None``: no caching).

    The file is written atomically (temporary sibling + rename) under an advisory lock, so parallel runs build
    it once and readers never see half a file; unreadable files are rebuilt. Loaded with ``weights_only=True``.
    """
    if cache_dir is None:
        return compute()
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{key}.pt"

    def load():
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except Exception:  # missing, truncated or from an incompatible torch: rebuild
            return None

    if path.exists() and (out := load()) is not None:
        return out
    with file_lock(cache_dir / f".{key}.lock"):
        if path.exists() and (out := load()) is not None:
            return out
        out = compute()
        write_atomic(path, lambda f: torch.save(out, f))
        return out
