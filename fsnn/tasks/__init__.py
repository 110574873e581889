"""Kinds of task, one module each: :mod:`.vision` (image / event-frame classification), :mod:`.node` (node
classification), :mod:`.link` (link prediction) and :mod:`.sequence` (generated sequence tasks).

A kind declares the data it takes (``DATA_KINDS``, :attr:`fsnn.data.DatasetInfo.kind`), the ``cfg.task`` that picks
it (``TASK``), its ``METRIC``, and the corruption family of its robustness study (``ROBUSTNESS``, ``None`` without
one, run by ``conf/robustness/<STUDY>.yaml``); it builds its Lightning module and data module from a config
(``build``) and knows its corrupted test set (``corrupted_tester``). :func:`build_task` composes one from a config.
"""

from __future__ import annotations

from types import ModuleType

import hydra
from omegaconf import DictConfig

from fsnn.data import dataset_info
from fsnn.models import backbone_supports
from fsnn.tasks import link, node, sequence, vision
from fsnn.tasks.common import ConfigError, Task

KINDS: tuple[ModuleType, ...] = (vision, node, link, sequence)

__all__ = ["KINDS", "ConfigError", "Task", "build_task", "task_kind"]


def task_kind(cfg: DictConfig) -> ModuleType:
    """The kind of task ``cfg`` asks for: by its dataset's kind of data and ``cfg.task``. A backbone that does not
    take the dataset's data, or a task the data has not, is a :class:`ConfigError`."""
    data, supported = dataset_info(cfg.dataset.name).kind, backbone_supports(cfg.backbone.name)
    if data not in supported:
        raise ConfigError(
            f"backbone {cfg.backbone.name!r} takes {sorted(supported)} data, but dataset "
            f"{cfg.dataset.name!r} is {data!r} data; choose another backbone or dataset"
        )
    task = cfg.get("task")
    tasks = {kind.TASK for kind in KINDS}
    if task not in tasks:
        raise ConfigError(f"task must be null (classification) or one of {sorted(t for t in tasks if t)}, "
                          f"got {task!r}")
    for kind in KINDS:
        if kind.TASK == task and data in kind.DATA_KINDS:
            return kind
    raise ConfigError(f"task={task} takes no {data!r} data (dataset {cfg.dataset.name!r})")


def build_task(cfg: DictConfig) -> Task:
    """The Lightning module and data module of ``cfg``, and the metric that selects and reports; the pairing of
    options is checked before any data is loaded."""
    kind = task_kind(cfg)
    scheduler = hydra.utils.instantiate(cfg.scheduler) if cfg.get("scheduler") else None
    optimizer = hydra.utils.instantiate(cfg.optimizer)
    return kind.build(cfg, optimizer, scheduler)
