"""Shared machinery of the dataset layer: the error type, environment switches, seeded splits, atomic files.

Nothing here imports tonic, SpikingJelly or torchvision; those load lazily inside the dataset modules.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

try:  # POSIX advisory locks; elsewhere the cache falls back to no locking
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None


class DatasetMissingError(FileNotFoundError):
    """A dataset is absent or incomplete on disk. ``str(err)`` is one message for the user: the dataset name,
    the exact directory expected, the layout expected there, and where to get the data.

    Attributes: ``dataset`` (registry name), ``directory`` (the absolute path checked).
    """

    def __init__(self, message: str, *, dataset: str = "", directory: Path | str = ""):
        super().__init__(message)
        self.dataset = dataset
        self.directory = str(directory)

    def __str__(self) -> str:  # FileNotFoundError would otherwise format errno/filename
        return self.args[0]


def missing_message(name: str, directory: Path, problem: str, layout: list[str], get_it: str) -> str:
    """The text of a :class:`DatasetMissingError`: what is wrong, where, which files are expected, how to get them."""
    lines = [f"Dataset {name!r} is missing or incomplete in {directory}: {problem}.", "Expected layout:"]
    lines += [f"  {line}" for line in layout]
    lines.append(f"How to get it: {get_it}")
    return "\n".join(lines)


def env_flag(var: str, default: bool) -> bool:
    """Boolean environment switch: ``0/false/no/off`` -> False, ``1/true/yes/on`` -> True, unset -> ``default``."""
    value = os.environ.get(var)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def resolve_verify(verify: bool | None) -> bool:
    """``verify`` if given, else ``$FSNN_DATA_VERIFY`` (default on).

    On: a dataset must pass the same completeness checks as its upstream library (tonic's minimum file counts,
    torchvision's CIFAR checksums, all 1000 ImageNet classes). Off: the expected layout with at least one sample
    per split suffices (tiny fixtures, subsets)."""
    return env_flag("FSNN_DATA_VERIFY", True) if verify is None else bool(verify)


def resolve_download(download: bool | None) -> bool:
    """``download`` if given, else ``$FSNN_DATA_DOWNLOAD`` (default on): whether to try an automatic download
    where the upstream library can do one."""
    return env_flag("FSNN_DATA_DOWNLOAD", True) if download is None else bool(download)


def resolve_size(size, default: tuple[int, int]) -> tuple[int, int]:
    """``(H, W)`` from an int (square), a pair, or ``None`` (the dataset's default)."""
    if size is None:
        return tuple(default)
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        out = (int(size), int(size))
    else:
        try:
            out = tuple(int(s) for s in size)
        except TypeError:
            raise ValueError(f"size must be an int, an (H, W) pair or None, got {size!r}") from None
    if len(out) != 2 or min(out) < 1:
        raise ValueError(f"size must be positive (H, W), got {size!r}")
    return out


def abspath(path: Path | str) -> Path:
    """Absolute path without resolving symlinks (error messages show the directory the user passed)."""
    return Path(os.path.abspath(os.path.expanduser(str(path))))


# -- seeded, stratified splits -----------------------------------------------------------------


def stratified_split(labels, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Split indices ``0..n-1`` into ``(keep, take)`` with ``len(take) == round(fraction * n)`` (at least 1 and at
    most ``n - 1`` when ``n >= 2``), stratified by label.

    Each class ``c`` with ``n_c`` members gives ``floor(fraction * n_c)`` samples to ``take``; the remaining quota
    goes one sample each to the classes with the largest fractional parts (ties broken by the seeded generator),
    preferring classes that keep at least one member on the ``keep`` side. Members are drawn
    by a seeded permutation within each class. The result depends only on ``labels`` (in their given, sorted-file
    order), ``fraction`` and ``seed``; both outputs are sorted ascending.
    """
    labels = np.asarray(labels)
    n = len(labels)
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"split fraction must be in (0, 1), got {fraction!r}")
    if n == 0:
        return np.arange(0), np.arange(0)
    n_take = int(round(fraction * n))
    if n >= 2:
        n_take = min(max(n_take, 1), n - 1)
    rng = np.random.default_rng(seed)
    classes, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse, minlength=len(classes))
    quota = fraction * counts
    take_per_class = np.floor(quota).astype(np.int64)
    remainder = n_take - int(take_per_class.sum())
    tie_break = rng.random(len(classes))
    order = np.lexsort((tie_break, -(quota - take_per_class)))
    for min_room in (2, 1):  # first never empty a class on the keep side, then fill up if still short
        for c in order:  # largest fractional part first
            if remainder <= 0:
                break
            if counts[c] - take_per_class[c] >= min_room:
                take_per_class[c] += 1
                remainder -= 1
    take = []
    for c in range(len(classes)):
        members = np.flatnonzero(inverse == c)
        take.append(rng.permutation(members)[: take_per_class[c]])
    take = np.sort(np.concatenate(take)) if take else np.arange(0)
    keep = np.setdiff1d(np.arange(n), take)
    return keep, take


# -- atomic files and locks --------------------------------------------------------------------


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")


def atomic_write(path: Path, write: Callable) -> int:
    """Create ``path`` atomically: ``write(fileobj)`` fills a temporary sibling which is then renamed over
    ``path``, so readers see either no file or a complete one. Returns the final size in bytes."""
    path = Path(path)
    tmp = _tmp_name(path)
    try:
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path.stat().st_size


def atomic_write_json(path: Path, obj) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (fsynced: completion markers must survive a crash)."""

    def write(f):
        f.write(json.dumps(obj, sort_keys=True).encode())
        f.flush()
        os.fsync(f.fileno())

    atomic_write(path, write)


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


# -- registry record ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetInfo:
    """What a model needs to know about a dataset before loading it.

    ``kind``: ``"event"`` (integrated event frames, 2 polarity channels) or ``"static"`` (images repeated over T);
    ``size``: ``(H, W)`` of the frames fed to the model by default; ``default_T``: time steps used in the paper.
    ``builder(info, data_dir, T, size, seed, val_fraction, **options) -> (train, val, test)`` loads it.
    """

    name: str
    kind: str
    num_classes: int
    in_channels: int
    size: tuple[int, int]
    default_T: int
    library: str = ""
    directory: str = ""
    builder: Callable | None = field(default=None, repr=False, compare=False)
