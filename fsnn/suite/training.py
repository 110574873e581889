"""How a network is trained and tested: fsnn's Lightning modules (vision, sequence, node and link tasks), with what
they share written once: the optimizer and scheduler set-up, the non-finite-loss check, metrics summed over DDP
ranks and the firing rates of a test pass (:class:`fsnn.models.probes.SpikeRateMeter`). The data modules are in
:mod:`fsnn.data.datamodules`, the tasks that pair them in :mod:`fsnn.suite.tasks`.

Lightning's Trainer owns the loop (checkpoints, resume, AMP, clipping, progress bars, DDP). Image, event and
sequence batches arrive as ``[B, T, ...]``; the backbone sees ``[T, B, ...]`` and returns per-step outputs
``[T, B, classes]`` whose mean over T (the firing rate of a voting layer, or the mean of a linear readout) is the
logit of a single cross-entropy. Graph modules read rows of node features or a whole graph (see their classes).

Under DDP the data modules split the data themselves (the Trainer runs with ``use_distributed_sampler=False``), so
the metrics, which are torchmetrics states summed over the ranks, are those of the whole split, and so are the firing
rates (their totals are summed over the ranks too).
"""

from __future__ import annotations

import logging
import warnings
from typing import Callable

import lightning as L
import torch
from torch import nn
from torch.nn import functional as F
from torchmetrics import MeanMetric
from torchmetrics.classification import MulticlassAccuracy
from torchmetrics.functional.classification import (
    binary_auroc,
    binary_average_precision,
)

from fsnn.checks import (
    ConfigError,
    Count,
    NonNegative,
    checked,
)
from fsnn.data.datamodules import sample_train_negatives
from fsnn.models.energy import synaptic_energy
from fsnn.models.probes import SpikeRateMeter
from fsnn.neurons.base import SpikingNeuron


class _DropLitLoggerTip(logging.Filter):
    """Drops Lightning's advert for its cloud logger, printed at every Trainer start; every other message passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "litlogger" not in record.getMessage()


def quiet_libraries() -> None:
    """Keep a command's output to what it says about the run: Lightning's litlogger advert (2.6) is dropped from its
    ``rank_zero`` logger; the deprecation warnings that libraries raise about their own code are ignored where they
    come from: Lightning's ``CombinedLoader`` building the deprecated ``LeafSpec`` in torch >= 2.14 (once per fit and
    test), and PyG scripting its pooling helpers with the deprecated ``torch.jit.script`` when it is imported (every
    graph run). Other messages and warnings are untouched. Idempotent; called first by the commands."""
    rank_zero = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    if not any(isinstance(f, _DropLitLoggerTip) for f in rank_zero.filters):
        rank_zero.addFilter(_DropLitLoggerTip())
    warnings.filterwarnings(
        "ignore",
        message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
        category=FutureWarning,
        module=r"lightning\.pytorch\.utilities\._pytree",
    )
    warnings.filterwarnings(
        "ignore", message=r"`torch\.jit\.script` is deprecated", category=FutureWarning, module=r"torch\.jit\._script"
    )


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN/inf loss; the last good checkpoint is left untouched."""


class NonFiniteParameterError(NonFiniteLossError):
    """An optimiser step left a parameter NaN/inf (a learning rate far too large, an overflowing gradient); the last
    good checkpoint is left untouched."""


def check_finite_parameters(module: nn.Module, when: str) -> None:
    """Raise :class:`NonFiniteParameterError` naming the first parameter of ``module`` with a NaN or inf entry, its
    layer and the value (``when``: where training stands, for the message)."""
    params = list(module.named_parameters())
    # one reduction and one device sync per call decide the usual all-finite case
    if not params or bool(torch.stack([p.detach().isfinite().all() for _, p in params]).all()):
        return
    for name, p in params:
        bad = ~p.detach().isfinite()
        if bad.any():
            layer, _, param = name.rpartition(".")
            kind = type(module.get_submodule(layer)).__name__
            at = "" if p.dim() == 0 else f" at {list(map(int, bad.nonzero()[0]))} ({int(bad.sum())} of {p.numel()})"
            raise NonFiniteParameterError(
                f"parameter {param} of layer {layer or '(top)'} ({kind}) is {p.detach()[bad][0].item()}{at} after "
                f"the optimiser step of {when}; the last good checkpoint is kept"
            )


class SpikingModule(L.LightningModule):
    """What every fsnn module shares. ``optimizer`` and ``scheduler`` are factories (``functools.partial`` from
    Hydra) of the parameters and of the optimizer; a ``ReduceLROnPlateau`` scheduler watches ``monitor``. A
    subclass gives the training loss of a batch (:meth:`training_loss`); a NaN/inf one stops training with
    :class:`NonFiniteLossError`, and so does a NaN/inf parameter after an optimiser step
    (:class:`NonFiniteParameterError`, naming it). Every test pass measures the firing rate of every neuron (and
    spike encoder) of ``model``, summed over the ranks, into :attr:`test_rates`, and the names of those layers in the
    order ``model`` registers them into :attr:`test_layer_order` (``measure_rates = False`` switches that off, e.g.
    for a pass timed for throughput)."""

    def __init__(
        self, model: nn.Module, optimizer: Callable, scheduler: Callable | None = None, monitor: str = "val/acc"
    ):
        super().__init__()
        self.model, self.optimizer_factory, self.scheduler_factory = model, optimizer, scheduler
        self.monitor = monitor
        self.measure_rates = True
        self.test_rates: dict[str, float] = {}
        self.test_layer_order: list[str] = []
        self._meter: SpikeRateMeter | None = None

    def training_loss(self, batch) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def training_step(self, batch, batch_idx):
        loss = self.training_loss(batch)
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"non-finite training loss ({loss.item()}) at epoch {self.current_epoch}, "
                f"step {self.global_step} (batch {batch_idx}); the last good checkpoint is kept"
            )
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        # after the optimiser step: a NaN parameter would otherwise surface batches later, far from its cause
        check_finite_parameters(self, f"epoch {self.current_epoch}, step {self.global_step} (batch {batch_idx})")

    #: the learning rate of the neurons' time-constant parameters relative to the optimizer's (``tau_lr_scale``)
    tau_lr_scale: float = 1.0

    def parameter_groups(self) -> list[dict]:
        """The optimizer's parameter groups: every parameter at the optimizer's ``lr``, except the ones the neurons
        learn ``tau`` through (:meth:`fsnn.neurons.fractional.SpikingNeuron.time_constant_parameters`) at ``lr *
        tau_lr_scale``, so a schedule scales both alike."""
        taus = {
            id(p) for m in self.model.modules() if isinstance(m, SpikingNeuron) for p in m.time_constant_parameters()
        }
        if self.tau_lr_scale == 1.0 or not taus:
            return [{"params": list(self.parameters())}]
        rest = [p for p in self.parameters() if id(p) not in taus]
        lr = getattr(self.optimizer_factory, "keywords", {}).get("lr")
        if lr is None:
            raise ConfigError("tau_lr_scale needs optimizer.lr set (the time constants' rate is a multiple of it)")
        return [
            {"params": rest},
            {"params": [p for p in self.parameters() if id(p) in taus], "lr": lr * self.tau_lr_scale},
        ]

    def configure_optimizers(self):
        optimizer = self.optimizer_factory(self.parameter_groups())
        if self.scheduler_factory is None:
            return optimizer
        scheduler = self.scheduler_factory(optimizer)
        config = {"scheduler": scheduler, "interval": "epoch"}
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            config["monitor"] = self.monitor
        return {"optimizer": optimizer, "lr_scheduler": config}

    def sum_over_ranks(self, totals: torch.Tensor) -> torch.Tensor:
        """``totals`` summed over the DDP ranks (as they are without a Trainer)."""
        trainer = self._trainer
        return totals if trainer is None else trainer.strategy.reduce(totals, reduce_op="sum")

    def on_test_epoch_start(self):
        self._meter = SpikeRateMeter(self.model, self.sum_over_ranks).start() if self.measure_rates else None

    def on_test_epoch_end(self):
        if self._meter is not None:
            self._meter.stop()
            self.test_rates = self._meter.rates()
            self.test_layer_order = list(self.test_rates)  # the meter's order: model.named_modules()
            self._meter = None


class ClassifierModule(SpikingModule):
    """One cross-entropy on ``self(x)`` and accuracy per split. Subclasses define ``forward``."""

    def __init__(
        self,
        model: nn.Module,
        num_classes: int,
        optimizer: Callable,
        scheduler: Callable | None = None,
        monitor: str = "val/acc",
    ):
        super().__init__(model, optimizer, scheduler, monitor)
        self.num_classes = int(num_classes)
        # metric states are summed over DDP ranks: each split's loss and accuracy are those of all its samples
        self.metrics = nn.ModuleDict(
            {
                f"{split}_{name}": metric
                for split in ("train", "val", "test")
                for name, metric in (
                    ("acc", MulticlassAccuracy(self.num_classes, average="micro")),
                    ("loss", MeanMetric(nan_strategy="disable")),
                )
            }
        )

    def _step(self, batch, split: str) -> torch.Tensor:
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc, mean_loss = self.metrics[f"{split}_acc"], self.metrics[f"{split}_loss"]
        acc(logits, y)
        # the batch's mean once per sample, not with weight=len(y): MeanMetric(nan_strategy="disable") (no host sync
        # a step) replaces any weight by 1 (torchmetrics issue #3434), which made the loss a mean of batch means
        mean_loss(loss.detach().expand(len(y)))
        on_step = split == "train"
        self.log(
            f"{split}/loss", mean_loss, on_step=on_step, on_epoch=True, prog_bar=split != "test", batch_size=len(y)
        )
        self.log(f"{split}/acc", acc, on_step=False, on_epoch=True, prog_bar=True, batch_size=len(y))
        return loss

    def training_loss(self, batch) -> torch.Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")


class SpikingClassifier(ClassifierModule):
    """Image/event/sequence classification: batches ``[B, T, ...]``, the backbone's ``[T, B, classes]`` averaged
    over T."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x.transpose(0, 1)).mean(0)

    def on_after_batch_transfer(self, batch, dataloader_idx: int):
        """Integer event counts (:class:`fsnn.data.datamodules.SplitDataModule` with ``counts=True``) become float32
        here, on the device, after the smaller copy."""
        x, y = batch
        return as_float(x), y


def as_float(x: torch.Tensor) -> torch.Tensor:
    """``x`` as float32 when it holds integers (event counts), else unchanged."""
    return x if torch.is_floating_point(x) else x.float()


class GraphNodeClassifier(ClassifierModule):
    """Node classification with a spiking graph model, on mini-batches of nodes.

    For SGCN/DRSGNN a batch is rows of precomputed node features ``(x [B, F], y [B])``; for full-graph models
    (``model.full_graph``, MSG) the module holds ``graph`` (an object with ``x`` and ``edge_index``, e.g. a PyG
    ``Data``) as non-persistent buffers (they follow the module's device but stay out of checkpoints) and a batch is
    ``(node index [B], y [B])``. Loss: one cross-entropy on the model output (SGCN's mean firing rates). ``monitor``
    is the metric a ``ReduceLROnPlateau`` scheduler watches (the authors': validation loss).

    Test: ``test_repeats`` independent Poisson re-samplings (the authors used 20); ``test/acc`` is their mean and
    ``test/acc_std`` their (population) standard deviation; ``spike_noise_std`` switches on the Gaussian spike-noise
    probe for the test only. The synaptic energy per node (``test/energy_mJ``; ``test/energy_output_rate_mJ`` in the
    authors' convention, see :func:`fsnn.models.energy.synaptic_energy`) and the firing rates (``test/rate/<module>``) are
    logged too.
    """

    @checked
    def __init__(
        self,
        model: nn.Module,
        num_classes: int,
        optimizer: Callable,
        scheduler: Callable | None = None,
        graph=None,
        test_repeats: Count = 1,
        spike_noise_std: NonNegative = 0.0,
        monitor: str = "val/loss",
    ):
        super().__init__(model, num_classes, optimizer, scheduler, monitor)
        self.test_repeats, self.spike_noise_std = test_repeats, spike_noise_std
        self.full_graph = bool(getattr(model, "full_graph", False))
        if self.full_graph:
            if graph is None:
                raise ValueError(
                    f"{type(model).__name__} needs the whole graph: pass graph=Data(x=..., edge_index=...)"
                )
            self.register_buffer("graph_x", graph.x.float(), persistent=False)
            self.register_buffer("graph_edge_index", graph.edge_index.long(), persistent=False)
        self.test_metrics = nn.ModuleList(
            MulticlassAccuracy(self.num_classes, average="micro") for _ in range(self.test_repeats)
        )
        self.test_energy: dict[str, float] = {}
        self.test_energy_output: dict[str, float] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores for rows of features, or (full-graph models) for node indices."""
        if self.full_graph:
            if x.is_floating_point():
                raise ValueError(
                    f"{type(self.model).__name__} is a full-graph model: batches must be node indices "
                    "(NodeDataModule(features=None, ...)), not feature rows"
                )
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
        super().on_test_epoch_start()

    #: the most ``rows x T x classes`` entries of one test forward: the re-samplings of a batch run as few forwards as
    #: fit (Cora's 20 x 2048 rows x 100 x 7 is one), so memory does not grow with ``eval_batch_size x test_repeats``
    test_chunk_elements = 1 << 25

    def test_step(self, batch, batch_idx):
        x, y = batch
        repeats = len(self.test_metrics)
        if self.full_graph:
            outputs = [self(x) for _ in range(repeats)]
        else:  # rows are independent: the re-samplings as few batches as fit (few passes of the neuron's time loop)
            per_repeat = len(x) * getattr(self.model, "T", 1) * self.num_classes
            together = max(1, min(repeats, self.test_chunk_elements // max(per_repeat, 1)))
            outputs = [
                logits
                for r in range(0, repeats, together)
                for logits in self(x.repeat(min(together, repeats - r), 1)).view(-1, len(x), self.num_classes)
            ]
        for metric, logits in zip(self.test_metrics, outputs):
            metric.update(logits, y)
            self.metrics["test_loss"].update(F.cross_entropy(logits, y).expand(len(y)))  # per sample, see _step

    def on_test_epoch_end(self):
        if hasattr(self.model, "spike_noise_std"):
            self.model.spike_noise_std = self._old_noise
        # compute() sums each metric's state over the DDP ranks: every rank logs the values of the whole split
        accs = torch.stack([metric.compute() for metric in self.test_metrics]).float()
        self.log("test/acc", accs.mean(), sync_dist=True)
        self.log("test/acc_std", accs.std(unbiased=False), sync_dist=True)
        self.log("test/loss", self.metrics["test_loss"].compute(), sync_dist=True)
        self.test_accuracies = accs.tolist()
        measured = self._meter is not None
        super().on_test_epoch_end()
        if not measured:
            return
        if hasattr(self.model, "synaptic_layers") and self.test_rates:
            self.test_energy = synaptic_energy(self.model, self.test_rates)
            self.test_energy_output = synaptic_energy(self.model, self.test_rates, convention="output")
            self.log("test/energy_mJ", self.test_energy["total"], sync_dist=True)
            self.log("test/energy_output_rate_mJ", self.test_energy_output["total"], sync_dist=True)
        for name, rate in self.test_rates.items():
            self.log(f"test/rate/{name}", rate, sync_dist=True)


class GraphLinkPredictor(SpikingModule):
    """Link prediction with a model offering ``encode(x, edge_index)`` and ``decode(z, pairs) -> logits`` (MSG), on
    the splits of :class:`fsnn.data.datamodules.LinkDataModule` (one graph per batch).

    Training step: encode with the training edges, decode the training positives and as many fresh negatives
    (:func:`fsnn.data.datamodules.sample_train_negatives`), binary cross-entropy with logits. Validation/test: encode in
    eval mode with the split's message-passing edges, score its positive and negative pairs, log AUC and average
    precision.
    """

    def __init__(
        self, model: nn.Module, optimizer: Callable, scheduler: Callable | None = None, monitor: str = "val/auc"
    ):
        super().__init__(model, optimizer, scheduler, monitor)

    def forward(self, data) -> torch.Tensor:
        return self.model.encode(data.x, data.edge_index)

    def _scores(self, data, negatives: torch.Tensor):
        """Logits of the split's positive pairs and of ``negatives``, with their labels, and the loss."""
        pos = data.pos_edge_label_index
        logits = self.model.decode(self(data), torch.cat([pos, negatives.to(pos.device)], dim=1))
        labels = torch.cat([logits.new_ones(pos.shape[1]), logits.new_zeros(negatives.shape[1])])
        return logits, labels, F.binary_cross_entropy_with_logits(logits, labels)

    def training_loss(self, data) -> torch.Tensor:
        _, _, loss = self._scores(data, sample_train_negatives(data))
        self.log("train/loss", loss, on_step=True, on_epoch=True, prog_bar=True, batch_size=1)
        return loss

    def _evaluate(self, data, split: str):
        logits, labels, loss = self._scores(data, data.neg_edge_label_index)
        target = labels.long()
        # under DDP every rank scores the whole split (one graph), so the mean over ranks is that value
        self.log(f"{split}/loss", loss, prog_bar=split == "val", batch_size=1, sync_dist=True)
        self.log(f"{split}/auc", binary_auroc(logits, target), prog_bar=True, batch_size=1, sync_dist=True)
        self.log(f"{split}/ap", binary_average_precision(logits, target), batch_size=1, sync_dist=True)

    def validation_step(self, data, batch_idx):
        self._evaluate(data, "val")

    def test_step(self, data, batch_idx):
        self._evaluate(data, "test")


# -- the training loop's options: checked by fsnn.suite.config with every run's config, declared here beside the modules
# that build the optimizer and scheduler and the Trainer that runs them


#: allocations up to this size come from glibc's heap and stay there when freed (see :func:`reuse_freed_memory`)
KEEP_FREED_BELOW = 1 << 30


def reuse_freed_memory() -> bool:
    """Ask glibc (Linux) to serve allocations below :data:`KEEP_FREED_BELOW` from its heap and to keep freed memory
    there (``mallopt`` ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD``); ``False`` where the C library is not glibc.

    By default glibc maps every block over 32 MiB fresh from the kernel and unmaps it when it is freed, so a tensor
    of that size costs page faults at every use: a full-graph model's spike trains (``[T, nodes x dim]``, 44 MiB on
    Physics) were five times slower to allocate and fill, and whole link-prediction epochs 40 % slower. Values do not
    change; the process's resident memory stays at its peak instead of shrinking between steps. Called by the
    training and evaluation commands (every job of a sweep), never on import."""
    import ctypes
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(libc.mallopt(m_mmap_threshold, KEEP_FREED_BELOW)) and bool(
        libc.mallopt(m_trim_threshold, KEEP_FREED_BELOW)
    )
