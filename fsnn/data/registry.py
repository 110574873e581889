"""The dataset registry: name -> :class:`DatasetInfo` (with its kind and builder) for every dataset, frames, graphs and
generated sequences alike, with the options of its ``dataset`` config group; :func:`build_dataset` loads frames,
:func:`load_graph` graphs, :func:`build_sequences` sequences. Each reader module declares its datasets' infos beside
its builder (its ``INFOS``: classes, channels, the paper's ``T`` and size, the published splits); this module
registers them, and a dataset of one's own registers itself with :func:`register_dataset`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from fsnn.checks import (
    Check,
    Count,
    Flag,
    Fraction,
    NonNegativeInt,
    Positive,
    checked,
    one_of,
)
from fsnn.data import digits_dvs, graphs, hardvs, sequences, static, tonic_datasets
from fsnn.data.cache import cache_dir as default_cache_dir
from fsnn.data.environment import abspath, resolve_download, resolve_verify
from fsnn.data.fakes import is_fake
from fsnn.data.info import DATA_KINDS, BuilderArgs, DatasetInfo, resolve_size
from fsnn.registry import Registry

# a builder takes the run's arguments as one BuilderArgs, not from the dataset's config
DATASETS = Registry(
    "dataset",
    supplied=("args",),
    entries=(
        "a DatasetInfo with a callable builder",
        lambda entry: isinstance(entry, DatasetInfo) and callable(entry.builder),
    ),
)
Size = Annotated[
    int | list[int],
    Check(
        "an integer >= 1 or an [H, W] pair of them",
        lambda v: v >= 1 if isinstance(v, int) else len(v) == 2 and all(isinstance(s, int) and s >= 1 for s in v),
    ),
]


class FrameOptions:
    """The ``dataset`` keys of an event dataset: how it is loaded (:func:`build_dataset`) and batched. A key without
    a value here is one every config of the dataset gives (the run reads it); ``= None``: it may be left out."""

    T: Count  # time steps
    size: Size  # frames fed to the model, a side or [H, W]
    batch_size: Count | None  # null: one batch per split
    val_fraction: Fraction
    num_workers: NonNegativeInt
    lr: Positive = None  # the learning rate this dataset recommends (optimizer.lr reads it, 1e-3 without it)


class StaticOptions(FrameOptions):
    """The ``dataset`` keys of a static-image dataset."""

    encoder: one_of(*static.ENCODERS) = "direct"


class GraphOptions:
    """The ``dataset`` keys of a graph: its split, its preprocessing, the Poisson steps and the batches (a key
    without a value is one every config gives, as in :class:`FrameOptions`)."""

    split: one_of("ratio", "public")  # seeded stratified 0.7/0.2/0.1, or the dataset's own
    hops: NonNegativeInt  # feature propagation of SGCN / DRSGNN
    zscore: Flag = True  # standardize the propagated features with the training nodes' mean and std
    T: Count  # Poisson steps (a backbone's own T wins)
    batch_size: Count | None
    eval_batch_size: Count | None = None  # validation and test batches (null: batch_size); only the speed depends on it
    test_repeats: Count  # Poisson re-samplings averaged at test time
    num_workers: NonNegativeInt = 0
    lr: Positive = None
    # link prediction (task=link), switches to the authors' MSG code (fsnn.data.datamodules.link_split): edges
    # split by storage position, and training negatives from a fixed pool that holds the val/test negatives
    authors_link_split: Flag = False
    authors_link_negatives: Flag = False


class SequenceOptions:
    """The ``dataset`` keys of a generated sequence task besides its generator's (:mod:`fsnn.data.sequences`)."""

    batch_size: Count | None
    val_fraction: Fraction
    num_workers: NonNegativeInt
    lr: Positive = None


#: the options of a dataset of each kind (a sequence task adds its generator's)
OPTIONS = {
    "event": (FrameOptions,),
    "static": (StaticOptions,),
    "graph": (GraphOptions,),
    "sequence": (SequenceOptions,),
}


def register_dataset(info: DatasetInfo) -> DatasetInfo:
    """Add the dataset ``info`` (:class:`fsnn.data.info.DatasetInfo`, its facts given by keyword) to
    :data:`DATASETS` under ``info.name``; returns it. A reader's module declares its datasets' infos beside its
    builder (``INFOS``); one added outside fsnn calls this from its own module.

    Every builder is called as ``builder(args, **options)`` with :class:`fsnn.data.info.BuilderArgs`, which says what
    each kind of builder returns and what each argument means; the loaders (:func:`build_dataset`,
    :func:`load_graph`, :func:`build_sequences`) fill it. ``options`` are a graph's or a sequence task's own (a
    builder's ``Args`` gives only what is particular to its dataset).

    Args:
        info: the dataset: its ``name`` is its name in :data:`DATASETS` (:data:`fsnn.registry.NAME_RULE`), its
            ``kind`` one of :data:`fsnn.data.info.DATA_KINDS`, its ``builder`` what loads it (``builder(args, **options)``) and its ``options`` what declares its config options besides its kind's
            (:data:`OPTIONS`). A ``TypeError`` or ``ValueError`` names the dataset and what is wrong.
    """
    if not isinstance(info, DatasetInfo):
        raise TypeError(f"register_dataset takes a DatasetInfo, got {info!r}")
    DATASETS.check_name(info.name)
    if info.kind not in DATA_KINDS:
        raise ValueError(f"dataset {info.name!r}: kind must be one of {list(DATA_KINDS)}, got {info.kind!r}")
    return DATASETS.register(info.name, info, options=(*OPTIONS[info.kind], *info.options), kind=info.kind)


for _reader in (digits_dvs, tonic_datasets, hardvs, static, graphs, sequences):
    for _info in _reader.INFOS:
        register_dataset(_info)


def dataset_info(name: str) -> DatasetInfo:
    """The :class:`DatasetInfo` registered as ``name`` (``ogbn-arxiv`` and ``ogbn_arxiv`` both work);
    :class:`fsnn.registry.UnknownNameError` (a ``KeyError``) naming the closest registered names otherwise."""
    return DATASETS[name]


def is_fake_dataset(name: str, data_dir: str | Path) -> bool:
    """Whether the dataset ``name`` under ``data_dir`` is a fake written by ``fsnn-fixtures`` (its folder carries
    :data:`fsnn.data.fakes.FAKE_MARKER`); a generated dataset, which has no folder, is not."""
    info = dataset_info(name)
    return bool(info.directory) and is_fake(abspath(data_dir) / info.directory)


#: the function of fsnn.data that loads each kind of data
LOADERS = {"event": "build_dataset", "static": "build_dataset", "graph": "load_graph", "sequence": "build_sequences"}


def _of_kind(name: str, *kinds: str) -> DatasetInfo:
    """The info of ``name``, which must be data of one of ``kinds`` (else a ``ValueError`` naming its loader)."""
    info = dataset_info(name)
    if info.kind not in kinds:
        raise ValueError(f"dataset {info.name!r} is {info.kind} data; load it with fsnn.data.{LOADERS[info.kind]}")
    return info


@checked
def build_dataset(
    name: str,
    data_dir: str | Path = "./data",
    T: Count | None = None,
    size: Size | None = None,
    seed: int = 0,
    val_fraction: Fraction = 0.1,
    *,
    download: bool | None = None,
    verify: bool | None = None,
    num_workers: NonNegativeInt | None = None,
    cache_dir: str | Path | None = None,
    encoder: one_of(*static.ENCODERS) = "direct",
):
    """Load the frame dataset ``name`` (event or static) from ``data_dir`` -> ``(train, val, test)``; items are
    ``(float32 [T, C, H, W], int)``.

    The arguments after ``name`` go to the dataset's builder, whose arguments :func:`register_dataset` describes with
    the defaults this function gives them (``None``: ``info.default_T``, ``info.size``, ``$FSNN_DATA_DOWNLOAD``,
    ``$FSNN_DATA_VERIFY``, ``min(8, cpu_count)`` threads, ``<data_dir>/fsnn_cache``); ``encoder`` goes to a static
    dataset's only (an ``encoder`` other than ``"direct"`` for event data is a ``ValueError``).

    Raises :class:`DatasetMissingError` (a ``FileNotFoundError``) naming the dataset, the directory, the expected
    layout and where to get the data when it is missing or incomplete.
    """
    info = _of_kind(name, "event", "static")
    T = info.default_T if T is None else T
    workers = min(8, os.cpu_count() or 1) if num_workers is None else max(1, num_workers)
    cache = default_cache_dir(data_dir) if cache_dir is None else abspath(cache_dir)
    if info.kind != "static" and encoder != "direct":
        raise ValueError(f"encoder={encoder!r} encodes static images; dataset {info.name!r} is {info.kind} data")
    args = BuilderArgs(
        info=info,
        data_dir=abspath(data_dir),
        seed=int(seed),
        val_fraction=val_fraction,
        T=T,
        size=resolve_size(size, info.size),
        download=resolve_download(download),
        verify=resolve_verify(verify, Path(data_dir) / info.directory),
        num_workers=workers,
        cache_dir=cache,
        encoder=encoder,
    )
    return info.builder(args)


def load_graph(
    name: str,
    data_dir: str | Path = "./data",
    split: str = "ratio",
    seed: int = 0,
    ratios=graphs.PAPER_RATIOS,
    *,
    download: bool | None = None,
    **options,
):
    """Load the graph ``name`` as a ``torch_geometric.data.Data`` with ``x`` (float32 ``[N, F]``), ``edge_index``
    (``[2, E]`` undirected, coalesced, no self loops), ``y`` (long ``[N]``) and boolean
    ``train_mask``/``val_mask``/``test_mask``.

    ``split="ratio"``: per-class stratified seeded split (:func:`fsnn.data.graphs.stratified_masks`, ``ratios`` =
    train/val/test, default 0.7/0.2/0.1); ``split="public"``: Planetoid's public split or ogbn-arxiv's time split
    (other datasets have none: ValueError). ``download``: try the library's automatic download when files are
    missing (default ``$FSNN_DATA_DOWNLOAD``, on); missing data raises :class:`fsnn.data.DatasetMissingError` naming
    the dataset, the directory and the files expected. ``options``: only for ``synthetic`` (``num_nodes``,
    ``num_classes``, ``num_features``, ``avg_degree``, ``homophily``, ``feature_signal``, ``graph_seed``; the graph
    depends on ``graph_seed``, the split on ``seed``).
    """
    info = _of_kind(name, "graph")
    return graphs.build_graph(info, data_dir, split, seed, ratios, download=download, **options)


@checked
def build_sequences(
    name: str,
    data_dir: str | Path = "./data",
    seed: int = 0,
    val_fraction: Fraction = 0.1,
    *,
    cache_dir: str | Path | None = None,
    **options,
):
    """Generate (once; then read from the cache) the sequence task ``name`` -> ``(train, val, test)``
    :class:`fsnn.data.sequences.SequenceDataset` s with items ``(float32 [T, C], int)`` and ``readout_steps``.

    ``options``: the task's own (the arguments of :func:`fsnn.data.sequences.delayed_cue`, or of
    :func:`fsnn.data.sequences.seq_digits` and ``readout_steps``); the data depend on them only,
    ``seed`` seeds the validation carve. ``cache_dir``: default ``<data_dir>/fsnn_cache``. An option the task does
    not take, or an invalid value, is a ``ValueError`` naming it.
    """
    info = _of_kind(name, "sequence")
    cache = default_cache_dir(data_dir) if cache_dir is None else abspath(cache_dir)
    args = BuilderArgs(
        info=info, data_dir=abspath(data_dir), seed=int(seed), val_fraction=val_fraction, cache_dir=cache
    )
    return info.builder(args, **options)
