"""Image and event-frame classification: a backbone on ``[T, B, C, H, W]`` frames, trained and tested on a frame
dataset's splits; its corrupted test set applies one event corruption to every test sample."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from omegaconf import DictConfig

from fsnn.data import build_dataset, dataset_info
from fsnn.models import build_backbone
from fsnn.robustness import CorruptedDataset
from fsnn.tasks.common import Task, backbone_options
from fsnn.training import SpikingClassifier, SplitDataModule

DATA_KINDS = frozenset({"event", "static"})
TASK = None  # cfg.task that selects it
METRIC = "acc"
ROBUSTNESS = "vision"  # its corruptions (fsnn.robustness.KINDS) and the conf/robustness/ study that runs them
STUDY = "events"


def build(cfg: DictConfig, optimizer: Callable, scheduler: Callable | None) -> Task:
    """The :class:`Task` of image or event classification: the dataset's splits, a vision backbone, accuracy."""
    info = dataset_info(cfg.dataset.name)
    size = cfg.dataset.size
    model = build_backbone(cfg.backbone.name, num_classes=info.num_classes, in_channels=info.in_channels,
                           input_size=(size, size), **backbone_options(cfg))
    module = SpikingClassifier(model, info.num_classes, optimizer, scheduler)

    def splits():
        return build_dataset(cfg.dataset.name, data_dir=Path(cfg.paths.data_dir), T=cfg.dataset.T, size=size,
                             seed=cfg.seed, val_fraction=cfg.dataset.val_fraction,
                             encoder=cfg.dataset.get("encoder", "direct"))

    data = SplitDataModule(splits, cfg.dataset.batch_size, cfg.dataset.num_workers, cfg.seed)
    return Task(module, data, METRIC)


def corrupted_tester(cfg: DictConfig, task: Task, seed: int, run_pass: Callable):
    """``test(name, level, options) -> metric`` of ``run_pass(datamodule)`` on the test split with one corruption
    applied sample by sample (:class:`fsnn.robustness.CorruptedDataset`, seeded with ``seed``)."""
    data = task.data
    data.setup()
    test_set = data.splits[2]

    def test(name: str, level: float, corruption: dict) -> float:
        corrupted = CorruptedDataset(test_set, name, level, seed, corruption)
        return run_pass(SplitDataModule(lambda: (None, None, corrupted), data.batch_size, data.num_workers, data.seed))

    return test
