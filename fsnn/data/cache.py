"""The on-disk cache of derived data, all under one folder per data directory, ``<data_dir>/fsnn_cache``
(:data:`CACHE_DIRNAME`): integrated event frames (``<dataset>/T<T>_s<size>/<split>/``,
:class:`fsnn.data.frame_cache.FrameCache`) and graph preprocessing (``graphs/<dataset>/``, :func:`cached_tensor`). Files are
written atomically and built under advisory locks, so parallel runs (a Hydra multirun) build each entry once and never
read half a file.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable

import torch

from fsnn.atomic import content_digest, file_lock, write_atomic
from fsnn.data.environment import abspath

CACHE_DIRNAME = "fsnn_cache"
log = logging.getLogger(__name__)


def cache_dir(data_dir: str | Path, *parts: str) -> Path:
    """``<data_dir>/fsnn_cache/<parts...>`` (absolute): where the derived data of ``data_dir`` is cached."""
    return abspath(data_dir).joinpath(CACHE_DIRNAME, *parts)


def read_json(path: Path):
    """Parsed JSON of ``path``, or ``None`` when it is missing or unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def cached_tensor(cache_dir: str | Path | None, key: str, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``compute()``, memoised in ``<cache_dir>/<key>.pt`` (``cache_dir=None``: no caching).

    The file holds the tensor and its content digest (:func:`fsnn.atomic.content_digest`); it is written atomically
    (temporary sibling + rename) under an advisory lock, so parallel runs build it once and readers never see half a
    file, and loaded with ``weights_only=True``. A file that cannot be read, or whose tensor does not match its
    digest (a changed byte), is rebuilt with a warning naming it.
    """
    if cache_dir is None:
        return compute()
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{key}.pt"

    def load(warn: bool = True):
        if not path.exists():
            return None
        try:
            entry = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(entry, dict):
                problem = "written without a digest, by an older fsnn"
            elif content_digest(entry.get("tensor")) == entry.get("digest"):
                return entry["tensor"]
            else:
                problem = "its tensor does not match the digest stored with it"
        except Exception as error:  # noqa: BLE001 - truncated, damaged, an older format: rebuild it
            problem = f"unreadable: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        if warn:
            log.warning("fsnn cache file %s is damaged or stale (%s); rebuilding it", path, problem)
        return None

    if (out := load()) is not None:
        return out
    with file_lock(cache_dir / f".{key}.lock"):
        if (out := load(warn=False)) is not None:  # built by another process meanwhile
            return out
        out = compute()
        entry = {"tensor": out, "digest": content_digest(out)}
        write_atomic(path, lambda f: torch.save(entry, f))
        return out
