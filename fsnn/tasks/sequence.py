"""Sequence classification (``delayed_cue``, ``seq_digits``): a sequence backbone on ``[T, B, C]`` inputs, read out
over the last steps of the sequence, trained and tested on a generated task's splits.

The backbone returns its readout at each of the last ``readout_steps`` steps (the dataset's: the recall window of
``delayed_cue``); :class:`fsnn.training.SpikingClassifier` averages them into the logits of one cross-entropy, so the
answer depends on what the network still holds at the end of the sequence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from omegaconf import DictConfig

from fsnn.data import build_sequences
from fsnn.models import build_backbone
from fsnn.tasks.common import Task, backbone_options, options
from fsnn.training import SpikingClassifier, SplitDataModule

DATA_KINDS = frozenset({"sequence"})
TASK = None  # cfg.task that selects it
METRIC = "acc"
ROBUSTNESS = None  # no corruption study for generated sequences
# cfg.dataset keys that configure loading and training; every other key is an option of the task's generator
LOADER_KEYS = ("name", "batch_size", "val_fraction", "num_workers", "lr")


def load(cfg: DictConfig):
    """``(train, val, test)`` of ``cfg.dataset`` (generated once, then cached under ``paths.data_dir``)."""
    return build_sequences(cfg.dataset.name, data_dir=Path(cfg.paths.data_dir), seed=cfg.seed,
                           val_fraction=cfg.dataset.val_fraction, **options(cfg.dataset, drop=LOADER_KEYS))


def build(cfg: DictConfig, optimizer: Callable, scheduler: Callable | None) -> Task:
    """The :class:`Task` of a sequence task: the generated sequences, a sequence backbone, accuracy."""
    splits = load(cfg)
    train = splits[0]
    model = build_backbone(cfg.backbone.name, in_features=train.channels, num_classes=train.num_classes,
                           readout_steps=train.readout_steps, **backbone_options(cfg))
    module = SpikingClassifier(model, train.num_classes, optimizer, scheduler)
    data = SplitDataModule(lambda: splits, cfg.dataset.batch_size, cfg.dataset.num_workers, cfg.seed)
    return Task(module, data, METRIC)
