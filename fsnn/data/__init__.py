"""Datasets of the f-SNN experiments, by name: ``build_dataset(name, data_dir, T, size, seed, val_fraction)``.

>>> from fsnn.data import build_dataset, dataset_info
>>> train, val, test = build_dataset("dvsgesture", data_dir="./data", T=16, size=128, seed=0)
>>> x, y = train[0]  # x: float32 [T, 2, 128, 128] event counts, y: int

Event datasets (``digits_dvs``, ``nmnist``, ``dvsgesture``, ``ncaltech101``, ``dvslip``, ``hardvs``) are read by
tonic / SpikingJelly from their own folders under ``data_dir``, integrated into ``T`` frames by event count and
cached under ``data_dir/fsnn_cache``; static ones (``cifar10``, ``cifar100``, ``imagenet``) come from torchvision
and are repeated over ``T``. Modules: :mod:`.common` (errors, splits, atomic files), :mod:`.events`,
:mod:`.digits_dvs`, :mod:`.static`, :mod:`.registry`, :mod:`.fixtures` (tiny fakes in the real formats).
"""

from fsnn.data.common import DatasetInfo, DatasetMissingError, stratified_split
from fsnn.data.events import events_to_frames, frame_slices
from fsnn.data.registry import DATASETS, build_dataset, dataset_info, register_dataset

__all__ = [
    "DATASETS",
    "DatasetInfo",
    "DatasetMissingError",
    "build_dataset",
    "dataset_info",
    "events_to_frames",
    "frame_slices",
    "register_dataset",
    "stratified_split",
]
