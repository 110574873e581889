"""The registry's record of a dataset (:class:`DatasetInfo`), the kinds of data (:data:`DATA_KINDS`) and what a
dataset's builder is given (:class:`BuilderArgs`).

Nothing here imports tonic, SpikingJelly, torchvision or PyG; those load lazily inside the dataset modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

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
    :func:`fsnn.data.load_graph` for graphs and :func:`fsnn.data.build_sequences` for sequences, as
    ``builder(args, **options)`` with :class:`BuilderArgs`. ``options``: what declares its config options besides its
    kind's (a generator whose annotated keyword arguments are options). Every field is given by keyword; the reader's
    module declares its datasets' infos beside the builder.
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


@dataclass(frozen=True, kw_only=True)
class BuilderArgs:
    """What the loaders (:func:`fsnn.data.build_dataset`, :func:`fsnn.data.load_graph`,
    :func:`fsnn.data.build_sequences`) give a dataset's builder, ``builder(args, **options)``: every builder takes
    this one type, reads the fields of its kind and leaves the others. A frame builder returns ``(train, val, test)``
    datasets with items ``(float32 [T, C, H, W], int)``; a graph's returns a PyG ``Data`` with ``x``,
    ``edge_index`` and ``y``; a sequence task's returns ``(train, val, test)``
    :class:`fsnn.data.sequences.SequenceDataset` s with items ``(float32 [T, C], int)``, its generator's options
    coming as ``**options``.

    * ``info``: the dataset's registry entry (:class:`DatasetInfo`): its name, kind, classes, default ``T`` and
      size, and ``directory``, its folder under ``data_dir``.
    * ``data_dir``: the root folder of the datasets, an absolute path (the config's ``paths.data_dir``, default
      ``$FSNN_DATA`` or ``./data``). Data that is missing, incomplete or unreadable there raises
      :class:`fsnn.data.errors.DatasetMissingError`, which names the dataset, the folder, the expected layout and
      where to get the files. A sequence task is generated: nothing is read from it, only the default cache lives
      under it.
    * ``seed``: the seed of the validation split carved from the training samples, an integer >= 0 (the run's
      seed). A sequence task's data and test split do not depend on it.
    * ``val_fraction``: the share of the training samples (those outside the test split) held out for validation,
      stratified by class, a number in ``(0, 1)``; default ``0.1`` (``conf/dataset/*.yaml``). A static dataset serves
      its validation images without augmentation.
    * ``T`` (frames): the number of time steps, an integer >= 1 (:func:`fsnn.data.build_dataset` passes
      ``info.default_T``, the paper's, when not given): an event recording is integrated into ``T`` frames (split by
      event count), a static image is presented at each of the ``T`` steps.
    * ``size`` (frames): the frames' ``(H, W)``, a pair of integers >= 1 (events are binned from the sensor's grid
      onto it); :func:`fsnn.data.build_dataset` turns an int, or ``None`` (``info.size``), into the pair
      (:func:`resolve_size`).
    * ``download``: whether the upstream library (tonic, torchvision, PyG, OGB) may download missing files (the
      loaders resolve ``None`` from ``$FSNN_DATA_DOWNLOAD``, default on,
      :func:`fsnn.data.environment.resolve_download`).
    * ``verify`` (frames): whether the dataset's completeness checks run (resolved from ``$FSNN_DATA_VERIFY``,
      default on, :func:`fsnn.data.environment.resolve_verify`).
    * ``num_workers`` (events): the threads integrating event recordings into frames when the frame cache is first
      built, an integer >= 1 (:func:`fsnn.data.build_dataset`'s default: ``min(8, cpu_count)``); not the data
      loader's workers. Static images are decoded by the data loader's workers and use neither this nor
      ``cache_dir``.
    * ``cache_dir``: the root of the cache, a path (default ``<data_dir>/fsnn_cache``, :mod:`fsnn.data.cache`): the
      event frames of one ``T`` and size live in ``<cache_dir>/<name>/T<T>_s<size>/<split>/``, a sequence task's
      tensors in ``<cache_dir>/<name>/<hash of the options>.pt`` (``None``: generated anew, not cached).
    * ``encoder`` (static images): how an image becomes ``T`` steps: ``"direct"`` (default: the normalised image at
      every step) or ``"spike"`` (Bernoulli spikes of the un-normalised intensities in ``[0, 1]``, drawn anew at each
      access; the paper's "ImageNet (spike encoder)" row); event data is already spikes.
    """

    info: DatasetInfo
    data_dir: Path
    seed: int = 0
    val_fraction: float = 0.1
    T: int | None = None
    size: tuple[int, int] | None = None
    download: bool = True
    verify: bool = True
    num_workers: int = 1
    cache_dir: Path | None = None
    encoder: str = "direct"
