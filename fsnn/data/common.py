"""Shared machinery of the dataset layer: the registry record, the missing-data error (and the file counts that find
missing data), environment switches and the seeded stratified splitter.

Nothing here imports tonic, SpikingJelly, torchvision or PyG; those load lazily inside the dataset modules.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from fsnn.checks import round_count
from fsnn.data.fakes import is_fake


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


class DatasetDamagedError(ValueError):
    """A dataset's files are there but do not hold what they should (a truncated file, values out of range, another
    dataset's files). ``str(err)`` is one line naming the file, or the quantity, and what to do.

    Attributes: ``dataset`` (registry name), ``path`` (the file or files named, ``""`` when none)."""

    def __init__(self, message: str, *, dataset: str = "", path: Path | str = ""):
        super().__init__(message)
        self.dataset = dataset
        self.path = str(path)


def dataset_missing(
    name: str, directory: Path, problem: str, layout: list[str], get_it: str, cause: BaseException | None = None
) -> DatasetMissingError:
    """The :class:`DatasetMissingError` of every loader: what is wrong (with the library's error, ``cause``), where,
    which files are expected, how to get them."""
    if cause is not None:
        problem = f"{problem} ({type(cause).__name__}: {cause})"
    lines = [f"Dataset {name!r} is missing or incomplete in {directory}: {problem}.", "Expected layout:"]
    lines += [f"  {line}" for line in layout]
    lines.append(f"How to get it: {get_it}")
    return DatasetMissingError("\n".join(lines), dataset=name, directory=directory)


def missing_in_folder(name: str, folder: Path, problem: str, layout, get_it: str, library: str) -> DatasetMissingError:
    """:func:`dataset_missing` for a dataset that ``library`` reads from ``folder``: each line of ``layout`` is a
    path relative to ``folder`` unless it places ``{dir}`` itself, ``{dir}`` in ``get_it`` is ``folder``, and the
    layout ends naming the library (the tonic and HarDVS loaders' error)."""
    lines = [line.format(dir=folder) if "{dir}" in line else f"{folder}/{line}" for line in layout]
    return dataset_missing(name, folder, problem, lines + [f"(read by {library})"], get_it.format(dir=folder))


def count_files(folder: Path, ext: str, limit: int | None = None) -> int:
    """Number of ``*ext`` files under ``folder`` (recursively), counting no further than ``limit`` when given;
    ``0`` when ``folder`` is not a directory (the layout checks of the event loaders)."""
    if not folder.is_dir():
        return 0
    return sum(1 for _ in islice(folder.rglob(f"*{ext}"), limit))


def env_flag(var: str, default: bool) -> bool:
    """Boolean environment switch: ``0/false/no/off`` -> False, ``1/true/yes/on`` -> True, unset -> ``default``."""
    value = os.environ.get(var)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def resolve_verify(verify: bool | None, folder: str | Path | None = None) -> bool:
    """``verify`` if given, else ``$FSNN_DATA_VERIFY`` if set; else off for a fake (``folder``, the dataset's folder,
    carries the marker ``fsnn-fixtures`` writes: :func:`fsnn.data.fakes.is_fake`) and on for anything else.

    On: each split of an event dataset must hold the published number of files (DVS128 Gesture 1,077 / 264, N-MNIST
    60,000 / 10,000, N-Caltech101 8,709, DVS-Lip 14,896 / 4,975, HARDVS its label files' counts), CIFAR must pass
    torchvision's checksums, ImageNet have all 1000 classes and a graph its published node count. Off: the expected
    layout with at least one sample per split suffices (fakes, subsets)."""
    if verify is not None:
        return bool(verify)
    fake = folder is not None and is_fake(folder)
    return env_flag("FSNN_DATA_VERIFY", not fake)


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


def stratified_split(labels, fractions: Sequence[float], seed: int) -> tuple[np.ndarray, ...]:
    """Split indices ``0..n-1`` into ``len(fractions) + 1`` parts, stratified by label: part ``j`` takes a share
    ``fractions[j]`` of the samples and the last part keeps the rest (``val, train = stratified_split(y, [0.1], s)``;
    ``val, test, train = stratified_split(y, [0.2, 0.1], s)``). Returns the parts' indices, each sorted ascending.

    The parts are cut one after another from each class's seeded permutation. The first ``j + 1`` parts together
    hold ``round(F * n)`` samples (``F`` the sum of their fractions, rounded half up by
    :func:`fsnn.checks.round_count`; at least one for each part with a positive fraction and one for the rest, when
    ``n`` allows): each class ``c`` of ``n_c`` members gives ``floor(F * n_c)``, and what the total still lacks goes
    one sample each to the classes with the largest fractional parts (ties broken by the seeded generator),
    preferring classes that keep at least one member for the rest. So each class's count in the first part and in
    the rest is within one sample of its share. The result depends only on ``labels`` (in their given order),
    ``fractions`` and ``seed``.
    """
    labels = np.asarray(labels)
    n = len(labels)
    fractions = [float(f) for f in fractions]
    if not fractions or min(fractions) < 0.0 or not sum(fractions) < 1.0:
        raise ValueError(f"split fractions must be >= 0 with a sum below 1, got {fractions!r}")
    if n == 0:
        return tuple(np.arange(0) for _ in range(len(fractions) + 1))
    rng = np.random.default_rng(seed)
    classes, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse, minlength=len(classes))
    cuts, cut, share = [], np.zeros(len(classes), dtype=np.int64), 0.0
    for j, fraction in enumerate(fractions):
        share += fraction
        total = round_count(share, n)
        if n >= 2:  # leave one sample for every later part with a positive fraction and for the rest
            least = int(cut.sum()) + (fraction > 0)
            total = min(max(total, least), n - 1 - sum(f > 0 for f in fractions[j + 1 :]))
        quota = share * counts
        cut = np.maximum(np.floor(quota).astype(np.int64), cut)
        remainder = total - int(cut.sum())
        tie_break = rng.random(len(classes))
        order = np.lexsort((tie_break, -(quota - np.floor(quota))))
        for min_room in (2, 1):  # first never empty a class on the rest side, then fill up if still short
            for c in order:  # largest fractional part first
                if remainder <= 0:
                    break
                if counts[c] - cut[c] >= min_room:
                    cut[c] += 1
                    remainder -= 1
        cuts.append(cut)
    parts = [[] for _ in range(len(fractions) + 1)]
    for c in range(len(classes)):
        members = rng.permutation(np.flatnonzero(inverse == c))
        bounds = [0, *(int(cut[c]) for cut in cuts), len(members)]
        for part, start, stop in zip(parts, bounds[:-1], bounds[1:]):
            part.append(members[start:stop])
    return tuple(np.sort(np.concatenate(part)) for part in parts)


# -- registry record ---------------------------------------------------------------------------

#: the kinds of data: what a dataset is (:attr:`DatasetInfo.kind`), what a backbone and a task take
DATA_KINDS = ("event", "static", "graph", "sequence")


@dataclass(frozen=True, kw_only=True)
class DatasetInfo:
    """What a model needs to know about a dataset before loading it.

    ``kind``: ``"event"`` (integrated event frames, 2 polarity channels), ``"static"`` (images repeated over T),
    ``"sequence"`` (generated ``[T, C]`` sequences, :mod:`fsnn.data.sequences`; ``in_channels``: ``C``) or
    ``"graph"`` (one graph whose nodes are classified or whose links are predicted); ``in_channels``: channels of a
    frame, or features of a node; ``size``: ``(H, W)`` of the frames fed to the model by default (``None`` for
    graphs); ``default_T``: time steps used in the paper; ``library``: what reads it; ``directory``: its folder under
    ``data_dir`` (``""``: nothing on disk); ``num_nodes``: a graph's published node count; ``published``: the samples
    of each split of the published release (``train``, ``val``, ``test``, or ``all`` where the release has no test
    split; what the cost estimates count). ``builder`` loads it, through :func:`fsnn.data.build_dataset` for frames,
    :func:`fsnn.data.load_graph` for graphs and :func:`fsnn.data.build_sequences` for sequences; its arguments are in
    :func:`fsnn.data.register_dataset`. ``options``: what declares its config options besides its kind's (a
    generator whose annotated keyword arguments are options). Every field is given by keyword; the reader's module
    declares its datasets' infos beside the builder.
    """

    name: str
    kind: str
    num_classes: int
    in_channels: int
    size: tuple[int, int] | None
    default_T: int
    library: str = ""
    directory: str = ""
    builder: Callable | None = field(default=None, repr=False, compare=False)
    num_nodes: int | None = None  # a graph's published number of nodes (cost estimates; checked when verifying)
    published: dict = field(default_factory=dict, compare=False)
    options: tuple = field(default=(), repr=False, compare=False)
