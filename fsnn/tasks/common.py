"""What every kind of task shares: what a build gives (:class:`Task`), the error for options that cannot work
together, and the arguments a config gives its backbone."""

from __future__ import annotations

from typing import NamedTuple

import lightning as L
from omegaconf import DictConfig, OmegaConf


class Task(NamedTuple):
    """What a task builds from a config: the Lightning module, its data module and the metric it reports."""

    module: L.LightningModule
    data: L.LightningDataModule
    metric: str  # the validation/test metric that selects and reports: "acc" or "auc"


class ConfigError(ValueError):
    """A combination of options that cannot work, reported before any data is loaded."""


def options(node: DictConfig, drop: tuple[str, ...] = ("name",)) -> dict:
    """A config group as keyword arguments (resolved, without its ``name``)."""
    return {k: v for k, v in OmegaConf.to_container(node, resolve=True).items() if k not in drop}


def backbone_options(cfg: DictConfig) -> dict:
    """The arguments of :func:`fsnn.models.build_backbone` that ``cfg.backbone`` and ``cfg.neuron`` give: the
    backbone's own options, the neuron's name and its options."""
    return {"neuron": cfg.neuron.name, "neuron_kwargs": options(cfg.neuron), **options(cfg.backbone)}
