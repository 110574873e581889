"""Lightning pieces for spiking graph models: node classification, link prediction, energy.

Conventions mirror :mod:`fsnn.training` (``train/loss``, ``val/acc``, ``test/acc``; :class:`NonFiniteLossError` on a
NaN/inf training loss; optimizer and scheduler given as factories).

* :class:`GraphNodeClassifier` trains on mini-batches of nodes. For SGCN/DRSGNN a batch is just rows of precomputed
  node features ``(x [B, F], y [B])``; for full-graph models (``model.full_graph``, MSG) the module holds the graph
  and a batch is ``(node index [B], y [B])``. Loss: one cross-entropy on the model output (SGCN's mean firing rates).
  Test: ``test_repeats`` independent Poisson re-samplings (the authors used 20); ``test/acc`` is their mean and
  ``test/acc_std`` their (population) standard deviation; ``spike_noise_std`` switches on the Gaussian spike-noise
  probe for the test only. The synaptic energy per node (``test/energy_mJ``; ``test/energy_output_rate_mJ`` in the
  authors' convention, see :func:`synaptic_energy`) and the firing rates (``test/rate/<module>``) are logged too.
* :class:`GraphLinkPredictor` (MSG) trains full-graph on the training edges of a :class:`LinkDataModule`
  (PyG ``RandomLinkSplit``: shuffled, val/test negatives disjoint and sampled against the whole graph) with fresh
  training negatives every step, sampled against *all* positive edges and the val/test negatives, so that no evaluation
  pair is ever a training negative. Evaluation embeds the graph in eval mode and logs ``val/auc``, ``val/ap``,
  ``test/auc``, ``test/ap``.
* :func:`synaptic_energy` implements the paper's energy appendix for these models.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Callable

import lightning as L
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.classification import MulticlassAccuracy
from torchmetrics.functional.classification import binary_auroc, binary_average_precision

from fsnn.training import ClassifierModule, NonFiniteLossError, SpikeRateMeter, SplitDataModule, configure_optimizers

__all__ = [
    "E_AC_PJ",
    "E_MAC_PJ",
    "GraphLinkPredictor",
    "GraphNodeClassifier",
    "LinkDataModule",
    "NodeDataModule",
    "link_split",
    "sample_train_negatives",
    "spike_noise",
    "synaptic_energy",
]

E_AC_PJ = 0.9  # 32-bit float accumulate, 45 nm (Horowitz 2014; the paper's energy appendix)
E_MAC_PJ = 4.6  # 32-bit float multiply-accumulate


# ------------------------------------------------------------------------------------------------------- energy
def synaptic_energy(model: nn.Module, firing_rates: dict[str, float], T: int | None = None, convention: str = "input",
                    e_ac: float = E_AC_PJ, e_mac: float = E_MAC_PJ) -> dict[str, float]:
    """Synaptic energy per sample (node) in mJ: ``{layer name: mJ, ..., "total": mJ}``.

    For each :class:`~fsnn.graphs.models.SynapticLayer` of ``model.synaptic_layers()``: an accumulate layer driven by
    spikes costs ``E_AC (0.9 pJ) x ops x T x rate`` (``ops`` = fan-in x fan-out for a linear layer), i.e. one
    accumulate per input spike and fan-out connection; a layer with a non-spike (dense) input counts ``ops`` per step
    at rate 1, as ``E_MAC (4.6 pJ)`` when it is a multiply-accumulate layer (e.g. a first layer on real-valued
    features). ``T`` defaults to ``model.T``; a layer may run fewer steps (MSG's encoder runs once). Neuron-intrinsic
    costs (membrane updates) are not included.

    ``convention="input"`` (default; the paper's appendix, Yao et al.): ``rate`` is the firing rate of the spikes that
    drive the layer (``layer.source``), so SGCN's energy depends on the Poisson input only. ``convention="output"``:
    ``rate`` is the firing rate of the neuron the layer feeds (``layer.target``), what the authors' fspikeDE SGCN code
    computes (``E_AC x in*out x T x`` the output neurons' rate), and what makes their energies differ by neuron; dense
    layers stay at rate 1 in both. ``firing_rates``: ``{module name: rate}``, e.g. from :func:`fsnn.training.firing_rates`.
    """
    if convention not in ("input", "output"):
        raise ValueError(f"convention must be 'input' or 'output', got {convention!r}")
    T = int(T if T is not None else model.T)
    energies: dict[str, float] = {}
    for layer in model.synaptic_layers():
        key = layer.source if convention == "input" else (layer.target if layer.source is not None else None)
        if key is None:
            rate = 1.0
        elif key in firing_rates:
            rate = float(firing_rates[key])
        else:
            raise KeyError(f"no firing rate for {key!r} ({convention} of {layer.name!r}); "
                           f"measured: {sorted(firing_rates)}")
        if layer.kind not in ("AC", "MAC"):
            raise ValueError(f"layer {layer.name!r}: kind must be 'AC' or 'MAC', got {layer.kind!r}")
        per_op = e_ac if layer.kind == "AC" else e_mac
        steps = T if layer.steps is None else layer.steps
        energies[layer.name] = per_op * layer.ops * steps * rate * 1e-9  # pJ -> mJ
    energies["total"] = sum(energies.values())
    return energies


@contextmanager
def spike_noise(model: nn.Module, std: float):
    """Temporarily set ``model.spike_noise_std`` (the robustness probe) to ``std``."""
    old = model.spike_noise_std
    model.spike_noise_std = float(std)
    try:
        yield model
    finally:
        model.spike_noise_std = old


# -------------------------------------------------------------------------------------------- node classification
class GraphNodeClassifier(ClassifierModule):
    """Node classification with a spiking graph model.

    ``graph`` (an object with ``x`` and ``edge_index``, e.g. a PyG ``Data``) is required for full-graph models and
    kept as non-persistent buffers (so it follows the module's device but stays out of checkpoints). ``monitor`` is
    the metric a ``ReduceLROnPlateau`` scheduler watches (the authors': validation loss).
    """

    def __init__(self, model: nn.Module, num_classes: int, optimizer: Callable, scheduler: Callable | None = None,
                 graph=None, test_repeats: int = 1, spike_noise_std: float = 0.0, monitor: str = "val/loss",
                 log_energy: bool = True):
        if isinstance(test_repeats, bool) or int(test_repeats) != test_repeats or test_repeats < 1:
            raise ValueError(f"test_repeats must be an integer >= 1, got {test_repeats!r}")
        super().__init__(model, num_classes, optimizer, scheduler, monitor)
        self.test_repeats = int(test_repeats)
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
        self._test_loss = [0.0, 0]
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
        for metric in self.test_metrics:
            metric.reset()
        self._test_loss = [0.0, 0]
        self._old_noise = getattr(self.model, "spike_noise_std", 0.0)
        if hasattr(self.model, "spike_noise_std"):
            self.model.spike_noise_std = self.spike_noise_std
        elif self.spike_noise_std > 0:
            raise ValueError(f"{type(self.model).__name__} has no spike-noise probe")
        self._meter = SpikeRateMeter(self.model).start() if self.log_energy else None

    def test_step(self, batch, batch_idx):
        x, y = batch
        for metric in self.test_metrics:
            logits = self(x)
            metric.update(logits, y)
            self._test_loss[0] += float(F.cross_entropy(logits, y, reduction="sum"))
            self._test_loss[1] += len(y)

    def on_test_epoch_end(self):
        if hasattr(self.model, "spike_noise_std"):
            self.model.spike_noise_std = self._old_noise
        accs = torch.stack([metric.compute() for metric in self.test_metrics]).float()
        self.log("test/acc", accs.mean())
        self.log("test/acc_std", accs.std(unbiased=False))
        self.log("test/loss", self._test_loss[0] / max(self._test_loss[1], 1))
        self.test_accuracies = accs.tolist()
        if self._meter is not None:
            self._meter.stop()
            self.test_rates = self._meter.rates()
            self._meter = None
            if hasattr(self.model, "synaptic_layers") and self.test_rates:
                self.test_energy = synaptic_energy(self.model, self.test_rates)
                self.test_energy_output = synaptic_energy(self.model, self.test_rates, convention="output")
                self.log("test/energy_mJ", self.test_energy["total"])
                self.log("test/energy_output_rate_mJ", self.test_energy_output["total"])
            for name, rate in self.test_rates.items():
                self.log(f"test/rate/{name}", rate)



class NodeDataModule(SplitDataModule):
    """Node splits as data loaders. ``features`` given: batches ``(features[idx], y[idx])`` (SGCN/DRSGNN rows);
    ``features=None``: batches ``(idx, y[idx])`` for full-graph models. ``batch_size=None``: one batch per split.
    Training shuffles with a seeded generator so reruns see the same order."""

    def __init__(self, features: torch.Tensor | None, y: torch.Tensor, train_idx, val_idx, test_idx,
                 batch_size: int | None = 32, seed: int = 0, num_workers: int = 0):
        self.features, self.y = features, y.long()
        self.index = [_as_index(i, len(y)) for i in (train_idx, val_idx, test_idx)]
        super().__init__(lambda: tuple(self.dataset(k) for k in range(3)), batch_size, num_workers, seed)

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


# -------------------------------------------------------------------------------------------------- link prediction
def link_split(data, num_val: float = 0.05, num_test: float = 0.1, seed: int = 0):
    """``(train, val, test)`` of PyG's ``RandomLinkSplit`` on an undirected graph, reproducible under ``seed``.

    Edges are shuffled (not split by position); val/test get one negative per positive, sampled against the whole
    graph and disjoint from each other; no training negatives are stored (see :func:`sample_train_negatives`).
    Message passing uses the training edges for train/val and training + validation edges for test. Each split
    carries ``forbidden_edge_index``: all positive edges and the val/test negatives, both directions.
    """
    from torch_geometric.transforms import RandomLinkSplit

    split = RandomLinkSplit(num_val=num_val, num_test=num_test, is_undirected=True, split_labels=True,
                            add_negative_train_samples=False, neg_sampling_ratio=1.0)
    state = random.getstate()  # PyG's negative sampling draws with Python's random module
    try:
        random.seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            train, val, test = split(data.clone())
    finally:
        random.setstate(state)
    eval_neg = torch.cat([val.neg_edge_label_index, test.neg_edge_label_index], dim=1)
    forbidden = torch.cat([data.edge_index, eval_neg, eval_neg.flip(0)], dim=1)
    for part in (train, val, test):
        part.forbidden_edge_index = forbidden
    return train, val, test


def sample_train_negatives(data, num: int | None = None) -> torch.Tensor:
    """Training negatives ``[2, num]`` (default: as many as training positives), never a positive edge of the whole
    graph nor a val/test negative (``data.forbidden_edge_index``); no self loops."""
    from torch_geometric.utils import negative_sampling

    num = data.pos_edge_label_index.shape[1] if num is None else int(num)
    forbidden = data.forbidden_edge_index
    neg = negative_sampling(forbidden, num_nodes=data.num_nodes, num_neg_samples=num, method="sparse")
    return neg[:, neg[0] != neg[1]]


class _Single(torch.utils.data.Dataset):
    def __init__(self, item):
        self.item = item

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return self.item


class LinkDataModule(L.LightningDataModule):
    """One graph, split for link prediction by :func:`link_split`; every loader yields that split's ``Data`` once."""

    def __init__(self, data, num_val: float = 0.05, num_test: float = 0.1, seed: int = 0):
        super().__init__()
        self.data, self.num_val, self.num_test, self.seed = data, num_val, num_test, seed
        self.splits = None

    def setup(self, stage: str | None = None):
        if self.splits is None:
            self.splits = link_split(self.data, self.num_val, self.num_test, self.seed)

    def _loader(self, i):
        self.setup()
        return DataLoader(_Single(self.splits[i]), batch_size=None, collate_fn=lambda d: d)

    def train_dataloader(self):
        return self._loader(0)

    def val_dataloader(self):
        return self._loader(1)

    def test_dataloader(self):
        return self._loader(2)


class GraphLinkPredictor(L.LightningModule):
    """Link prediction with a model offering ``encode(x, edge_index)`` and ``decode(z, pairs) -> logits`` (MSG).

    Training step: encode with the training edges, decode the training positives and as many fresh negatives
    (:func:`sample_train_negatives`), binary cross-entropy with logits. Validation/test: encode in eval mode with the
    split's message-passing edges, score its positive and negative pairs, log AUC and average precision.
    """

    def __init__(self, model: nn.Module, optimizer: Callable, scheduler: Callable | None = None,
                 monitor: str = "val/auc"):
        super().__init__()
        self.model, self.optimizer_factory, self.scheduler_factory, self.monitor = model, optimizer, scheduler, monitor

    def forward(self, data) -> torch.Tensor:
        return self.model.encode(data.x, data.edge_index)

    def training_step(self, data, batch_idx):
        z = self(data)
        pos = data.pos_edge_label_index
        neg = sample_train_negatives(data).to(pos.device)
        logits = self.model.decode(z, torch.cat([pos, neg], dim=1))
        labels = torch.cat([logits.new_ones(pos.shape[1]), logits.new_zeros(neg.shape[1])])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"non-finite training loss ({loss.item()}) at epoch {self.current_epoch}, "
                f"step {self.global_step}; the last good checkpoint is kept"
            )
        self.log("train/loss", loss, on_step=True, on_epoch=True, prog_bar=True, batch_size=1)
        return loss

    def _evaluate(self, data, split: str):
        z = self(data)
        pos, neg = data.pos_edge_label_index, data.neg_edge_label_index
        logits = self.model.decode(z, torch.cat([pos, neg], dim=1))
        labels = torch.cat([logits.new_ones(pos.shape[1]), logits.new_zeros(neg.shape[1])])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        target = labels.long()
        self.log(f"{split}/loss", loss, prog_bar=split == "val", batch_size=1)
        self.log(f"{split}/auc", binary_auroc(logits, target), prog_bar=True, batch_size=1)
        self.log(f"{split}/ap", binary_average_precision(logits, target), batch_size=1)

    def validation_step(self, data, batch_idx):
        self._evaluate(data, "val")

    def test_step(self, data, batch_idx):
        self._evaluate(data, "test")

    def configure_optimizers(self):
        return configure_optimizers(self, self.optimizer_factory, self.scheduler_factory, self.monitor)
