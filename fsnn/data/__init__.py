"""Datasets of the f-SNN experiments, by name, behind one registry (:data:`DATASETS`, each with its ``kind``).

>>> from fsnn.data import build_dataset, dataset_info, load_graph
>>> train, val, test = build_dataset("dvsgesture", data_dir="./data", T=16, size=128, seed=0)
>>> x, y = train[0]  # x: float32 [T, 2, 128, 128] event counts, y: int
>>> graph = load_graph("cora", data_dir="./data", seed=0)  # PyG Data with x, edge_index, y and split masks

Event datasets (``digits_dvs``, ``nmnist``, ``dvsgesture``, ``ncaltech101``, ``dvslip``, ``hardvs``,
``hardvs_mini``) are read by tonic / SpikingJelly from their own folders under ``data_dir``, integrated into ``T``
frames by event count and cached under ``data_dir/fsnn_cache``; static ones (``cifar10``, ``cifar100``,
``imagenet``) come from torchvision and are repeated over ``T`` (or Bernoulli-encoded); graphs (``cora``,
``citeseer``, ``pubmed``, ``photo``, ``computers``, ``cs``, ``physics``, ``ogbn_arxiv``, ``karate``, ``synthetic``)
come from PyG / OGB or are generated; sequence tasks (``delayed_cue``, ``seq_digits``: ``build_sequences``, items
``[T, C]``) are generated and cached. Modules:
:mod:`.info` (the record and its builder's arguments), :mod:`.errors`, :mod:`.environment` (the ``$FSNN_DATA_*``
switches), :mod:`.splits`, :mod:`.cache`, :mod:`.registry`, :mod:`.event_frames` (events ->
frames), :mod:`.frame_cache` (the frames on disk and the datasets served from them), :mod:`.tonic_datasets`,
:mod:`.hardvs`, :mod:`.digits_dvs`, :mod:`.static`, :mod:`.sequences`, :mod:`.graphs`, :mod:`.graph_features` (sparse
graph preprocessing), :mod:`.graph_checks` (graph files and caches checked before use), :mod:`.corruptions` (the
robustness study's corruptions of frames and graphs), :mod:`.fakes` (fake datasets in the real formats, and the
``fsnn-fixtures DIR`` command that writes them).
"""

from fsnn.data.errors import DatasetDamagedError, DatasetMissingError
from fsnn.data.event_frames import events_to_frames, frame_slices
from fsnn.data.info import BuilderArgs, DatasetInfo
from fsnn.data.registry import (
    DATASETS,
    build_dataset,
    build_sequences,
    dataset_info,
    is_fake_dataset,
    load_graph,
    register_dataset,
)
from fsnn.data.splits import stratified_split

__all__ = [
    "DATASETS",
    "BuilderArgs",
    "DatasetDamagedError",
    "DatasetInfo",
    "DatasetMissingError",
    "build_dataset",
    "build_sequences",
    "dataset_info",
    "events_to_frames",
    "frame_slices",
    "is_fake_dataset",
    "load_graph",
    "register_dataset",
    "stratified_split",
]
