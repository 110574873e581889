"""The dataset registry: name -> :class:`DatasetInfo` (with its builder), and :func:`build_dataset`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from fsnn.data import digits_dvs, events, static
from fsnn.data.common import DatasetInfo, abspath, resolve_download, resolve_size, resolve_verify

#: name -> :class:`DatasetInfo`; ``DATASETS[name].builder`` loads it. Extend with :func:`register_dataset`.
DATASETS: dict[str, DatasetInfo] = {}


def register_dataset(info: DatasetInfo, builder: Callable | None = None) -> DatasetInfo:
    """Add ``info`` (with ``builder``, if given, replacing ``info.builder``) to :data:`DATASETS`; returns it.

    ``builder(info, data_dir, T, size, seed, val_fraction, *, download, verify, num_workers, cache_dir)`` must return
    ``(train, val, test)`` datasets whose items are ``(float32 [T, C, H, W], int)``."""
    if builder is not None:
        info = DatasetInfo(**{**{f: getattr(info, f) for f in info.__dataclass_fields__}, "builder": builder})
    if info.builder is None:
        raise ValueError(f"dataset {info.name!r} has no builder")
    if info.kind not in ("event", "static"):
        raise ValueError(f"kind must be 'event' or 'static', got {info.kind!r}")
    DATASETS[info.name] = info
    return info


for _info in (
    DatasetInfo("digits_dvs", "event", 10, 2, (32, 32), 8, "fsnn (simulated from sklearn digits)",
                "digits_dvs", digits_dvs.build_digits_dvs),
    DatasetInfo("nmnist", "event", 10, 2, (34, 34), 16, "tonic.datasets.NMNIST", "NMNIST", events.build_tonic),
    DatasetInfo("dvsgesture", "event", 11, 2, (128, 128), 16, "tonic.datasets.DVSGesture", "DVSGesture",
                events.build_tonic),
    DatasetInfo("ncaltech101", "event", 101, 2, (128, 128), 16, "tonic.datasets.NCALTECH101", "NCALTECH101",
                events.build_tonic),
    DatasetInfo("dvslip", "event", 100, 2, (128, 128), 16, "tonic.datasets.DVSLip", "DVSLip", events.build_tonic),
    DatasetInfo("hardvs", "event", 300, 2, (128, 128), 8, "spikingjelly.datasets.HARDVS", "HARDVS",
                events.build_hardvs),
    DatasetInfo("cifar10", "static", 10, 3, (32, 32), 4, "torchvision.datasets.CIFAR10", "cifar-10-batches-py",
                static.build_cifar),
    DatasetInfo("cifar100", "static", 100, 3, (32, 32), 4, "torchvision.datasets.CIFAR100", "cifar-100-python",
                static.build_cifar),
    DatasetInfo("imagenet", "static", 1000, 3, (160, 160), 4, "torchvision.datasets.ImageNet", "imagenet",
                static.build_imagenet),
):
    register_dataset(_info)


def dataset_info(name: str) -> DatasetInfo:
    """The :class:`DatasetInfo` registered as ``name``; ``KeyError`` listing the registered names otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        raise KeyError(f"unknown dataset {name!r}; registered: {sorted(DATASETS)}") from None


def build_dataset(name: str, data_dir: str | Path = "./data", T: int | None = None, size=None, seed: int = 0,
                  val_fraction: float = 0.1, *, download: bool | None = None, verify: bool | None = None,
                  num_workers: int | None = None, cache_dir: str | Path | None = None):
    """Load dataset ``name`` from ``data_dir`` -> ``(train, val, test)``; items are ``(float32 [T, C, H, W], int)``.

    ``T``: time steps (default ``info.default_T``); ``size``: output ``(H, W)`` or an int (default ``info.size``);
    ``seed``: seeds the validation carve; ``val_fraction``: share of the training set used for validation (not used
    by HARDVS, which has an official val split). ``download``: try the upstream library's automatic download when
    the data is missing (default ``$FSNN_DATA_DOWNLOAD`` or on); ``verify``: upstream completeness checks (default
    ``$FSNN_DATA_VERIFY`` or on, see :func:`fsnn.data.common.resolve_verify`); ``num_workers``: threads integrating
    event frames on the first run (default ``min(8, cpu_count)``); ``cache_dir``: where integrated frames are cached
    (default ``<data_dir>/fsnn_cache``; one folder per dataset, ``T`` and size inside).

    Raises :class:`DatasetMissingError` (a ``FileNotFoundError``) naming the dataset, the directory, the expected
    layout and where to get the data when it is missing or incomplete.
    """
    info = dataset_info(name)
    T = info.default_T if T is None else int(T)
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    if not 0.0 < float(val_fraction) < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    workers = min(8, os.cpu_count() or 1) if num_workers is None else max(1, int(num_workers))
    cache = abspath(Path(data_dir) / events.CACHE_DIRNAME if cache_dir is None else cache_dir)
    return info.builder(info, Path(data_dir), T, resolve_size(size, info.size), int(seed), float(val_fraction),
                        download=resolve_download(download), verify=resolve_verify(verify), num_workers=workers,
                        cache_dir=cache)
