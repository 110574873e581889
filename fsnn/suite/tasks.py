"""Kinds of task behind one registry (:data:`TASKS`): ``vision`` (image and event-frame classification), ``node``
(node classification), ``link`` (link prediction) and ``sequence`` (generated sequence tasks).

A task is registered with the kinds of data it takes (``data``, :data:`fsnn.data.info.DATA_KINDS`) and whether it is
the task of that data when the config's ``task`` is null (``default``); ``task=<name>`` asks for one by name
(``task=link``). Its entry, a :class:`TaskKind`, names its metric and builds its Lightning module
(:mod:`fsnn.suite.training`) and data module (:mod:`fsnn.data.datamodules`) from a config. It supports the post-training studies
(:mod:`fsnn.suite.studies`) its entry allows: robustness when it has a corruption family (:mod:`fsnn.data.corruptions`) and a
corrupted test set, energy when it can give a sample input for the layer-wise count.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

import hydra
import lightning as L
import torch
from omegaconf import DictConfig, OmegaConf

from fsnn.checks import ConfigError
from fsnn.data import build_dataset, build_sequences, dataset_info, load_graph
from fsnn.data.cache import cache_dir
from fsnn.data.corruptions import CORRUPTIONS, CorruptedDataset
from fsnn.data.datamodules import LinkDataModule, NodeDataModule, SplitDataModule
from fsnn.data.graph_features import node_features
from fsnn.models import BACKBONES, backbone_supports, build_backbone
from fsnn.models.registry import backbone_options
from fsnn.registry import Registry, UnknownNameError
from fsnn.suite.training import (
    GraphLinkPredictor,
    GraphNodeClassifier,
    SpikingClassifier,
    as_float,
)


@dataclass(frozen=True)
class TaskMeta:
    """What picks a task for a run, given at its registration.

    Args:
        data: the data kinds it trains on (:data:`fsnn.data.info.DATA_KINDS`), a non-empty tuple of strings.
        default: whether it is the task of a run of that data that names none (``task: null``).
    """

    data: tuple[str, ...]
    default: bool

    def __post_init__(self):
        if not self.data or not all(isinstance(kind, str) for kind in self.data):
            raise ValueError(f"a task's data must name at least one kind of data, got {self.data!r}")


TASKS = Registry("task", entries=("a TaskKind", lambda entry: isinstance(entry, TaskKind)), meta=TaskMeta)


class Task(NamedTuple):
    """What a task builds from a config."""

    module: L.LightningModule
    data: L.LightningDataModule
    metric: str  # the validation/test metric that selects and reports: "acc" or "auc"


def config_kwargs(node: DictConfig, drop: tuple[str, ...] = ("name",)) -> dict:
    """A config group as keyword arguments (resolved, without its ``name``)."""
    return {k: v for k, v in OmegaConf.to_container(node, resolve=True).items() if k not in drop}


class TaskKind:
    """A kind of task (an entry of :data:`TASKS`); subclasses build it and say which studies it supports."""

    name: str  # its name in TASKS (cfg.task)
    metric = "acc"
    corruptions: str | None = None  # the corruption family of its robustness study (fsnn.data.corruptions)
    robustness_plan: str | None = None  # the conf/robustness/ plan of those corruptions

    def build(self, cfg: DictConfig, optimizer: Callable, scheduler: Callable | None) -> Task:  # pragma: no cover
        """The task's Lightning module, data module and metric, built from ``cfg`` (:func:`build_task`).

        Args:
            cfg: the run's composed config (``conf/config.yaml`` with its groups ``dataset``, ``backbone``,
                ``neuron``, ``paths``, and ``seed``), already checked (:mod:`fsnn.suite.config`); its dataset must be of
                a kind of data this task takes.
            optimizer: ``optimizer(params) -> torch.optim.Optimizer``, the ``conf/optimizer/`` group instantiated
                as a partial (``_partial_: true``; default ``adam``, lr ``1e-3`` unless the dataset sets its own).
            scheduler: ``scheduler(optimizer) -> LRScheduler``, the ``conf/scheduler/`` group instantiated as a
                partial (``cosine``), or ``None`` for a constant learning rate (``scheduler=none``).
        """
        raise NotImplementedError

    def check(self, cfg: DictConfig) -> None:
        """A :class:`ConfigError` for an option of ``cfg`` this task cannot take, before anything is built or made
        (:func:`task_kind`); none by default.

        Args:
            cfg: the run's composed config (``conf/config.yaml`` with its groups); the check reads its ``dataset``
                and ``backbone`` groups.
        """

    def corrupted_tester(self, cfg: DictConfig, task: Task, seed: int, run_pass: Callable):  # pragma: no cover
        """``test(name, level, options) -> metric``: ``run_pass(datamodule)`` with one corruption of its family.

        Args:
            cfg: the run's composed config (``conf/config.yaml`` with its groups, as the run recorded it); the
                tester reads ``cfg.dataset``, ``cfg.backbone`` and ``cfg.paths`` to rebuild the test data.
            task: the run's built task (:meth:`build`) with the checkpoint's weights loaded.
            seed: the seed of the corruptions' random draws, an integer >= 0 (the study's seed, the run's own by
                default), so every level of a study corrupts reproducibly.
            run_pass: ``run_pass(datamodule) -> float``: one seeded test pass of the model on ``datamodule``,
                returning the task's metric (:meth:`fsnn.suite.studies.StudyRun.test_pass`'s ``test/<metric>``).
        """
        raise NotImplementedError

    def sample_input(self, task: Task) -> torch.Tensor:  # pragma: no cover
        """One test batch as the backbone reads it, ``[T, B, ...]`` (the energy study's forward pass).

        Args:
            task: the run's built task (:meth:`build`); its test split gives the batch (the dataset's
                ``batch_size`` samples).
        """
        raise NotImplementedError

    @property
    def studies(self) -> tuple[str, ...]:
        """The post-training studies this task supports."""
        kind = type(self)
        return (
            *(("robustness",) if self.corruptions else ()),
            *(("energy",) if kind.sample_input is not TaskKind.sample_input else ()),
        )


def _first_test_batch(task: Task) -> torch.Tensor:
    task.data.setup("test")
    x, _y = next(iter(task.data.test_dataloader()))
    return as_float(x).transpose(0, 1).contiguous()  # [B, T, ...] -> [T, B, ...]


class VisionTask(TaskKind):
    """Image and event-frame classification: a backbone on ``[T, B, C, H, W]`` frames, trained and tested on a frame
    dataset's splits. Its corrupted test set (:meth:`TaskKind.corrupted_tester`) is the test split with one event
    corruption applied sample by sample (:class:`fsnn.data.corruptions.CorruptedDataset`, seeded with the study's
    seed)."""

    name, corruptions, robustness_plan = "vision", "vision", "events"

    def build(self, cfg, optimizer, scheduler) -> Task:
        info = dataset_info(cfg.dataset.name)
        size = cfg.dataset.size
        model = build_backbone(
            cfg.backbone.name,
            num_classes=info.num_classes,
            in_channels=info.in_channels,
            input_size=(size, size),
            **backbone_options(cfg),
        )
        module = SpikingClassifier(model, info.num_classes, optimizer, scheduler)

        def splits():
            return build_dataset(
                cfg.dataset.name,
                data_dir=Path(cfg.paths.data_dir),
                T=cfg.dataset.T,
                size=size,
                seed=cfg.seed,
                val_fraction=cfg.dataset.val_fraction,
                encoder=cfg.dataset.get("encoder", "direct"),
            )

        data = SplitDataModule(splits, cfg.dataset.batch_size, cfg.dataset.num_workers, cfg.seed, counts=True)
        return Task(module, data, self.metric)

    def corrupted_tester(self, cfg, task, seed, run_pass):
        data = task.data
        data.setup()
        test_set = data.splits[2]

        def test(name: str, level: float, corruption: dict) -> float:
            corrupted = CorruptedDataset(test_set, name, level, seed, corruption)
            return run_pass(
                SplitDataModule(lambda: (None, None, corrupted), data.batch_size, data.num_workers, data.seed)
            )

        return test

    sample_input = staticmethod(_first_test_batch)


class SequenceTask(TaskKind):
    """Sequence classification (``delayed_cue``, ``seq_digits``): a sequence backbone on ``[T, B, C]`` inputs, trained
    and tested on a generated task's splits. The backbone returns its readout at each of the last ``readout_steps``
    steps (the dataset's: the recall window of ``delayed_cue``), which :class:`fsnn.suite.training.SpikingClassifier`
    averages into the logits of one cross-entropy, so the answer depends on what the network still holds at the end
    of the sequence."""

    name = "sequence"
    # cfg.dataset keys that configure loading and training; every other key is an option of the task's generator
    LOADER_KEYS = ("name", "batch_size", "val_fraction", "num_workers", "lr")

    def build(self, cfg, optimizer, scheduler) -> Task:
        splits = build_sequences(
            cfg.dataset.name,
            data_dir=Path(cfg.paths.data_dir),
            seed=cfg.seed,
            val_fraction=cfg.dataset.val_fraction,
            **config_kwargs(cfg.dataset, drop=self.LOADER_KEYS),
        )
        train = splits[0]
        model = build_backbone(
            cfg.backbone.name,
            in_features=train.channels,
            num_classes=train.num_classes,
            readout_steps=train.readout_steps,
            **backbone_options(cfg),
        )
        module = SpikingClassifier(model, train.num_classes, optimizer, scheduler)
        data = SplitDataModule(lambda: splits, cfg.dataset.batch_size, cfg.dataset.num_workers, cfg.seed)
        return Task(module, data, self.metric)

    sample_input = staticmethod(_first_test_batch)


@contextmanager
def _replaced(obj, **values):
    """Set attributes of ``obj`` (e.g. a module's graph buffers) for the duration of the block."""
    old = {name: getattr(obj, name) for name in values}
    try:
        for name, value in values.items():
            setattr(obj, name, value)
        yield obj
    finally:
        for name, value in old.items():
            setattr(obj, name, value)


def spike_noise(module, std: float):
    """``with spike_noise(module, std):`` sets ``module.spike_noise_std`` (the robustness probe) for the block."""
    return _replaced(module, spike_noise_std=float(std))


def full_graph(backbone: str) -> bool:
    """Whether backbone ``backbone`` reads the whole graph (``x``, ``edge_index``) itself (MSG) rather than rows of
    precomputed node features (SGCN, DRSGNN)."""
    return bool(getattr(BACKBONES.get(backbone), "full_graph", False))


def node_inputs(cfg: DictConfig, graph, cache: Path | None = None) -> torch.Tensor | None:
    """What a node classifier reads of ``graph``: the preprocessed feature rows of SGCN/DRSGNN (SGC propagation,
    z-scoring on the training nodes, the backbone's positional encoding), or ``None`` for a full-graph model (MSG),
    which reads ``graph.x`` and ``graph.edge_index`` itself."""
    if full_graph(cfg.backbone.name):
        return None
    backbone = config_kwargs(cfg.backbone)
    return node_features(
        graph,
        hops=cfg.dataset.hops,
        zscore=cfg.dataset.get("zscore", True),
        pe=backbone.get("pe"),
        pe_dim=backbone.get("pe_dim", 32),
        pe_seed=0,
        cache_dir=cache,
    )


def graph_options(cfg: DictConfig) -> dict:
    """:func:`backbone_options` with the dataset's Poisson steps ``T`` unless the backbone sets its own."""
    return {"T": cfg.dataset.T, **backbone_options(cfg)}


def load_split_graph(cfg: DictConfig):
    """The graph of ``cfg.dataset``, split as configured and seeded with the run's seed."""
    return load_graph(cfg.dataset.name, data_dir=Path(cfg.paths.data_dir), split=cfg.dataset.split, seed=cfg.seed)


class NodeTask(TaskKind):
    """Node classification (SGCN, DRSGNN, MSG on one graph); its corrupted test graphs: feature masking, edge
    dropping, spike noise. Its corrupted tester (:meth:`TaskKind.corrupted_tester`) corrupts the graph once per
    level (one draw seeded with the study's seed) and rebuilds the model's input from it with the run's own
    preprocessing; spike noise switches on the model's probe (``spike_noise_std``)."""

    name, corruptions, robustness_plan = "node", "graph", "graph"

    def check(self, cfg) -> None:
        link_only = [key for key in ("authors_link_split", "authors_link_negatives") if cfg.dataset.get(key)]
        if link_only:
            raise ConfigError(
                f"dataset.{link_only[0]}: a switch of link prediction (task=link), got true for node classification"
            )
        if getattr(BACKBONES.get(cfg.backbone.name), "link_only", False):
            raise ConfigError(
                f"backbone={cfg.backbone.name} predicts links and has no classification head: run it with task=link"
            )

    def build(self, cfg, optimizer, scheduler) -> Task:
        graph = load_split_graph(cfg)
        features = node_inputs(cfg, graph, cache=cache_dir(cfg.paths.data_dir, "graphs", cfg.dataset.name))
        in_features, whole = (graph.num_features, graph) if features is None else (features.shape[1], None)
        num_classes = int(graph.y.max()) + 1
        model = build_backbone(
            cfg.backbone.name, in_features=in_features, num_classes=num_classes, **graph_options(cfg)
        )
        module = GraphNodeClassifier(
            model,
            num_classes,
            optimizer,
            scheduler,
            graph=whole,
            test_repeats=cfg.dataset.test_repeats,
            monitor=cfg.get("lr_monitor") or f"val/{self.metric}",
        )
        data = NodeDataModule.from_masks(
            features,
            graph,
            batch_size=cfg.dataset.batch_size,
            seed=cfg.seed,
            eval_batch_size=cfg.dataset.get("eval_batch_size"),
        )
        return Task(module, data, self.metric)

    def corrupted_tester(self, cfg, task, seed, run_pass):
        module, data, _ = task
        graph = load_split_graph(cfg)

        def test(name: str, level: float, corruption: dict) -> float:
            if CORRUPTIONS.meta(name).probe:
                with spike_noise(module, CORRUPTIONS[name](level)):
                    return run_pass(data)
            corrupted = CORRUPTIONS[name](graph, level, seed, **corruption)
            if module.full_graph:
                with _replaced(module, graph_x=corrupted.x.float(), graph_edge_index=corrupted.edge_index.long()):
                    return run_pass(data)
            rows = NodeDataModule.from_masks(
                node_inputs(cfg, corrupted),
                corrupted,
                batch_size=data.batch_size,
                seed=cfg.seed,
                eval_batch_size=data.eval_batch_size,
            )
            return run_pass(rows)

        return test


class LinkTask(TaskKind):
    """Link prediction (MSG on one graph): AUC and average precision."""

    name, metric = "link", "auc"

    def check(self, cfg) -> None:
        decoders = BACKBONES.names(supports="graph", decodes_links=True)
        if cfg.backbone.name not in decoders:
            raise ConfigError(
                f"task=link needs a backbone that decodes edges ({', '.join(decoders)}), "
                f"got backbone={cfg.backbone.name!r}"
            )

    def build(self, cfg, optimizer, scheduler) -> Task:
        graph = load_split_graph(cfg)
        model = build_backbone(cfg.backbone.name, in_features=graph.num_features, **graph_options(cfg))
        data = LinkDataModule(
            graph,
            seed=cfg.seed,
            authors_by_position=cfg.dataset.get("authors_link_split", False),
            authors_negative_pool=cfg.dataset.get("authors_link_negatives", False),
        )
        return Task(GraphLinkPredictor(model, optimizer, scheduler), data, self.metric)


TASKS.register(VisionTask.name, VisionTask(), data=("event", "static"), default=True)
TASKS.register(NodeTask.name, NodeTask(), data=("graph",), default=True)
TASKS.register(LinkTask.name, LinkTask(), data=("graph",), default=False)
TASKS.register(SequenceTask.name, SequenceTask(), data=("sequence",), default=True)


def task_kind(cfg: DictConfig) -> TaskKind:
    """The kind of task ``cfg`` asks for: ``cfg.task`` by name, or (null) the default task of its dataset's kind of
    data. A backbone that does not take the dataset's data, or a task that does not, or an option the task cannot take
    (:meth:`TaskKind.check`), is a :class:`ConfigError`."""
    data, supported = dataset_info(cfg.dataset.name).kind, backbone_supports(cfg.backbone.name)
    if data not in supported:
        raise ConfigError(
            f"backbone {cfg.backbone.name!r} takes {sorted(supported)} data, but dataset "
            f"{cfg.dataset.name!r} is {data!r} data; choose another backbone or dataset"
        )
    name = cfg.get("task")
    if name is None:
        kind = TASKS[TASKS.names(data=data, default=True)[0]]
    else:
        try:
            kind = TASKS[name]
        except UnknownNameError as error:
            raise ConfigError(
                f"task: expected null or one of {', '.join(error.choices)}, got {name!r}{error.suggestion}"
            ) from None
        if data not in TASKS.meta(name).data:
            raise ConfigError(f"task={name} takes no {data!r} data (dataset {cfg.dataset.name!r})")
    kind.check(cfg)
    return kind


def build_task(cfg: DictConfig) -> Task:
    """The Lightning module and data module of ``cfg``, and the metric that selects and reports; the pairing of
    options is checked before any data is loaded."""
    kind = task_kind(cfg)
    scheduler = hydra.utils.instantiate(cfg.scheduler) if cfg.get("scheduler") else None
    optimizer = hydra.utils.instantiate(cfg.optimizer)
    task = kind.build(cfg, optimizer, scheduler)
    task.module.tau_lr_scale = float(cfg.get("tau_lr_scale", 1.0))
    return task
