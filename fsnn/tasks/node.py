"""Node classification (SGCN, DRSGNN, MSG on one graph): the Lightning module, the node data module, and the task
built from a config, with its corrupted test graphs (feature masking, edge dropping, spike noise).

Conventions mirror :mod:`fsnn.training` (``train/loss``, ``val/acc``, ``test/acc``; :class:`NonFiniteLossError` on a
NaN/inf training loss; optimizer and scheduler given as factories). :class:`GraphNodeClassifier` trains on
mini-batches of nodes. For SGCN/DRSGNN a batch is just rows of precomputed node features ``(x [B, F], y [B])``; for
full-graph models (``model.full_graph``, MSG) the module holds the graph and a batch is ``(node index [B], y [B])``.
Loss: one cross-entropy on the model output (SGCN's mean firing rates). Test: ``test_repeats`` independent Poisson
re-samplings (the authors used 20); ``test/acc`` is their mean and ``test/acc_std`` their (population) standard
deviation; ``spike_noise_std`` switches on the Gaussian spike-noise probe for the test only. The synaptic energy per
node (``test/energy_mJ``; ``test/energy_output_rate_mJ`` in the authors' convention, see
:func:`fsnn.energy.synaptic_energy`) and the firing rates (``test/rate/<module>``) are logged too.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import torch
from omegaconf import DictConfig
from torch import nn
from torch.nn import functional as F
from torch.utils.data import TensorDataset
from torchmetrics.classification import MulticlassAccuracy

from fsnn.checks import check_int
from fsnn.data import load_graph
from fsnn.data.cache import cache_dir
from fsnn.data.graph_features import node_features
from fsnn.energy import synaptic_energy
from fsnn.models import BACKBONES, build_backbone
from fsnn.robustness import GRAPH_CORRUPTIONS, SPIKE_NOISE, spike_noise_std
from fsnn.tasks.common import Task, backbone_options, options
from fsnn.training import ClassifierModule, SpikeRateMeter, SplitDataModule

DATA_KINDS = frozenset({"graph"})
TASK = None  # cfg.task that selects it
METRIC = "acc"
ROBUSTNESS = "graph"  # its corruptions (fsnn.robustness.KINDS) and the conf/robustness/ study that runs them
STUDY = "graph"


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


def spike_noise(model: nn.Module, std: float):
    """``with spike_noise(model, std):`` sets ``model.spike_noise_std`` (the robustness probe) for the block."""
    return _replaced(model, spike_noise_std=float(std))


class GraphNodeClassifier(ClassifierModule):
    """Node classification with a spiking graph model.

    ``graph`` (an object with ``x`` and ``edge_index``, e.g. a PyG ``Data``) is required for full-graph models and
    kept as non-persistent buffers (so it follows the module's device but stays out of checkpoints). ``monitor`` is
    the metric a ``ReduceLROnPlateau`` scheduler watches (the authors': validation loss).
    """

    def __init__(self, model: nn.Module, num_classes: int, optimizer: Callable, scheduler: Callable | None = None,
                 graph=None, test_repeats: int = 1, spike_noise_std: float = 0.0, monitor: str = "val/loss",
                 log_energy: bool = True):
        test_repeats = check_int("test_repeats", test_repeats)
        super().__init__(model, num_classes, optimizer, scheduler, monitor)
        self.test_repeats = test_repeats
        self.spike_noise_std, self.log_energy = float(spike_noise_std), bool(log_energy)
        self.full_graph = bool(getattr(model, "full_graph", False))
        if self.full_graph:
            if graph is None:
                raise ValueError(
                    f"{type(model).__name__} needs the whole graph: pass graph=Data(x=..., edge_index=...)")
            self.register_buffer("graph_x", graph.x.float(), persistent=False)
            self.register_buffer("graph_edge_index", graph.edge_index.long(), persistent=False)
        self.test_metrics = nn.ModuleList(
            MulticlassAccuracy(self.num_classes, average="micro") for _ in range(self.test_repeats))
        self._meter: SpikeRateMeter | None = None
        self.test_rates: dict[str, float] = {}
        self.test_energy: dict[str, float] = {}
        self.test_energy_output: dict[str, float] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores for rows of features, or (full-graph models) for node indices."""
        if self.full_graph:
            if x.is_floating_point():
                raise ValueError(f"{type(self.model).__name__} is a full-graph model: batches must be node indices "
                                 "(NodeDataModule(features=None, ...)), not feature rows")
            return self.model(self.graph_x, self.graph_edge_index)[x]
        return self.model(x)

    # -- test: repeated Poisson re-samplings, the noise probe, firing rates and energy --------------------------------
    def on_test_epoch_start(self):
        for metric in [*self.test_metrics, self.metrics["test_loss"]]:
            metric.reset()
        self._old_noise = getattr(self.model, "spike_noise_std", 0.0)
        if hasattr(self.model, "spike_noise_std"):
            self.model.spike_noise_std = self.spike_noise_std
        elif self.spike_noise_std > 0:
            raise ValueError(f"{type(self.model).__name__} has no spike-noise probe")
        self._meter = SpikeRateMeter(self.model, self._sum_over_ranks).start() if self.log_energy else None

    def _sum_over_ranks(self, totals: torch.Tensor) -> torch.Tensor:
        trainer = self._trainer
        return totals if trainer is None else trainer.strategy.reduce(totals, reduce_op="sum")

    def test_step(self, batch, batch_idx):
        x, y = batch
        repeats = len(self.test_metrics)
        if self.full_graph:
            outputs = [self(x) for _ in range(repeats)]
        else:  # rows are independent: all re-samplings as one batch (one pass of the neuron's time loop)
            outputs = self(x.repeat(repeats, 1)).view(repeats, len(x), -1).unbind(0)
        for metric, logits in zip(self.test_metrics, outputs):
            metric.update(logits, y)
            self.metrics["test_loss"].update(F.cross_entropy(logits, y), len(y))

    def on_test_epoch_end(self):
        if hasattr(self.model, "spike_noise_std"):
            self.model.spike_noise_std = self._old_noise
        # compute() sums each metric's state over the DDP ranks: every rank logs the values of the whole split
        accs = torch.stack([metric.compute() for metric in self.test_metrics]).float()
        self.log("test/acc", accs.mean(), sync_dist=True)
        self.log("test/acc_std", accs.std(unbiased=False), sync_dist=True)
        self.log("test/loss", self.metrics["test_loss"].compute(), sync_dist=True)
        self.test_accuracies = accs.tolist()
        if self._meter is not None:
            self._meter.stop()
            self.test_rates = self._meter.rates()
            self._meter = None
            if hasattr(self.model, "synaptic_layers") and self.test_rates:
                self.test_energy = synaptic_energy(self.model, self.test_rates)
                self.test_energy_output = synaptic_energy(self.model, self.test_rates, convention="output")
                self.log("test/energy_mJ", self.test_energy["total"], sync_dist=True)
                self.log("test/energy_output_rate_mJ", self.test_energy_output["total"], sync_dist=True)
            for name, rate in self.test_rates.items():
                self.log(f"test/rate/{name}", rate, sync_dist=True)



class NodeDataModule(SplitDataModule):
    """Node splits as data loaders. ``features`` given: batches ``(features[idx], y[idx])`` (SGCN/DRSGNN rows);
    ``features=None``: batches ``(idx, y[idx])`` for full-graph models. ``batch_size=None``: one batch per split.
    Training shuffles with a seeded generator so reruns see the same order."""

    def __init__(self, features: torch.Tensor | None, y: torch.Tensor, train_idx, val_idx, test_idx,
                 batch_size: int | None = 32, seed: int = 0, num_workers: int = 0, eval_batch_size: int | None = None):
        self.features, self.y = features, y.long()
        self.index = [_as_index(i, len(y)) for i in (train_idx, val_idx, test_idx)]
        super().__init__(lambda: tuple(self.dataset(k) for k in range(3)), batch_size, num_workers, seed,
                         eval_batch_size)

    @classmethod
    def from_masks(cls, features, data, **kwargs) -> "NodeDataModule":
        """From a PyG ``Data`` with ``y`` and ``train_mask``/``val_mask``/``test_mask``."""
        return cls(features, data.y, data.train_mask, data.val_mask, data.test_mask, **kwargs)

    def dataset(self, split: int) -> TensorDataset:
        idx = self.index[split]
        rows = idx if self.features is None else self.features[idx]
        return TensorDataset(rows, self.y[idx])


def _as_index(index, n: int) -> torch.Tensor:
    index = torch.as_tensor(index)
    if index.dtype == torch.bool:
        if index.numel() != n:
            raise ValueError(f"a node mask must have {n} entries, got {index.numel()}")
        return index.nonzero(as_tuple=False).view(-1)
    return index.long().view(-1)


# ------------------------------------------------------------------------------------------------------- the task
def full_graph(backbone: str) -> bool:
    """Whether backbone ``backbone`` reads the whole graph (``x``, ``edge_index``) itself (MSG) rather than rows of
    precomputed node features (SGCN, DRSGNN)."""
    return bool(getattr(BACKBONES.factory(backbone), "full_graph", False))


def node_inputs(cfg: DictConfig, graph, cache: Path | None = None) -> torch.Tensor | None:
    """What a node classifier reads of ``graph``: the preprocessed feature rows of SGCN/DRSGNN (SGC propagation,
    z-scoring on the training nodes, the backbone's positional encoding), or ``None`` for a full-graph model (MSG),
    which reads ``graph.x`` and ``graph.edge_index`` itself."""
    if full_graph(cfg.backbone.name):
        return None
    backbone = options(cfg.backbone)
    return node_features(graph, hops=cfg.dataset.hops, zscore=cfg.dataset.get("zscore", True), pe=backbone.get("pe"),
                         pe_dim=backbone.get("pe_dim", 32), pe_seed=0, cache_dir=cache)


def graph_options(cfg: DictConfig) -> dict:
    """:func:`fsnn.tasks.common.backbone_options` with the dataset's Poisson steps ``T`` unless the backbone sets
    its own."""
    return {"T": cfg.dataset.T, **backbone_options(cfg)}


def load(cfg: DictConfig):
    """The graph of ``cfg.dataset``, split as configured and seeded with the run's seed."""
    return load_graph(cfg.dataset.name, data_dir=Path(cfg.paths.data_dir), split=cfg.dataset.split, seed=cfg.seed)


def build(cfg: DictConfig, optimizer: Callable, scheduler: Callable | None) -> Task:
    graph = load(cfg)
    features = node_inputs(cfg, graph, cache=cache_dir(cfg.paths.data_dir, "graphs", cfg.dataset.name))
    in_features, whole = (graph.num_features, graph) if features is None else (features.shape[1], None)
    num_classes = int(graph.y.max()) + 1
    model = build_backbone(cfg.backbone.name, in_features=in_features, num_classes=num_classes, **graph_options(cfg))
    module = GraphNodeClassifier(model, num_classes, optimizer, scheduler, graph=whole,
                                 test_repeats=cfg.dataset.test_repeats, monitor=cfg.get("lr_monitor") or f"val/{METRIC}")
    data = NodeDataModule.from_masks(features, graph, batch_size=cfg.dataset.batch_size, seed=cfg.seed,
                                     eval_batch_size=cfg.dataset.get("eval_batch_size"))
    return Task(module, data, METRIC)


def corrupted_tester(cfg: DictConfig, task: Task, seed: int, run_pass: Callable):
    """``test(name, level, options) -> metric`` of ``run_pass(datamodule)`` with one corruption at test time: the
    graph is corrupted once per level (one draw seeded with ``seed``) and the model's input rebuilt from it with the
    run's own preprocessing; spike noise switches on the model's probe (``spike_noise_std``) instead."""
    module, data, _ = task
    graph = load(cfg)

    def test(name: str, level: float, corruption: dict) -> float:
        if name == SPIKE_NOISE:
            with spike_noise(module, spike_noise_std(level)):
                return run_pass(data)
        corrupted = GRAPH_CORRUPTIONS[name](graph, level, seed, **corruption)
        if module.full_graph:
            with _replaced(module, graph_x=corrupted.x.float(), graph_edge_index=corrupted.edge_index.long()):
                return run_pass(data)
        rows = NodeDataModule.from_masks(node_inputs(cfg, corrupted), corrupted, batch_size=data.batch_size,
                                         seed=cfg.seed, eval_batch_size=data.eval_batch_size)
        return run_pass(rows)

    return test
