"""Lightning pieces for spiking classifiers: the module, the data module, firing-rate probes.

Lightning's Trainer owns the loop (checkpoints, resume, AMP, clipping, progress bars, DDP).
Batches arrive as ``[B, T, C, H, W]`` (the default collate of ``[T, C, H, W]`` samples); the
backbone sees ``[T, B, ...]`` and returns per-step outputs ``[T, B, classes]`` whose mean over T
(the firing rate of a voting layer, or the mean of a linear readout) is the logit of a single
cross-entropy.

Under DDP the data modules split the data themselves (the Trainer runs with ``use_distributed_sampler=False``): each
rank trains on its share of every epoch's permutation, and validation and test give every sample to exactly one rank
(no padding), so the metrics, which are torchmetrics states summed over the ranks, are those of the whole split.
"""

from __future__ import annotations

import resource
import time
from contextlib import contextmanager
from typing import Callable

import lightning as L
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, DistributedSampler, Sampler
from torchmetrics import MeanMetric
from torchmetrics.classification import MulticlassAccuracy

from fsnn.neurons import is_neuron


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN/inf loss; the last good checkpoint is left untouched."""


class ClassifierModule(L.LightningModule):
    """One cross-entropy on ``self(x)``, accuracy per split, ``NonFiniteLossError`` on a NaN/inf loss, and
    optimizer/scheduler factories (``functools.partial`` from Hydra). Subclasses define ``forward``."""

    def __init__(self, model: nn.Module, num_classes: int, optimizer: Callable, scheduler: Callable | None = None,
                 monitor: str = "val/acc"):
        super().__init__()
        self.model, self.optimizer_factory, self.scheduler_factory = model, optimizer, scheduler
        self.num_classes, self.monitor = int(num_classes), monitor
        # metric states are summed over DDP ranks: each split's loss and accuracy are those of all its samples
        self.metrics = nn.ModuleDict({
            f"{split}_{name}": metric for split in ("train", "val", "test")
            for name, metric in (("acc", MulticlassAccuracy(self.num_classes, average="micro")),
                                 ("loss", MeanMetric(nan_strategy="disable")))
        })

    def _step(self, batch, split: str) -> torch.Tensor:
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc, mean_loss = self.metrics[f"{split}_acc"], self.metrics[f"{split}_loss"]
        acc(logits, y)
        mean_loss(loss.detach(), len(y))
        on_step = split == "train"
        self.log(f"{split}/loss", mean_loss, on_step=on_step, on_epoch=True, prog_bar=split != "test",
                 batch_size=len(y))
        self.log(f"{split}/acc", acc, on_step=False, on_epoch=True, prog_bar=True, batch_size=len(y))
        return loss

    def training_step(self, batch, batch_idx):
        loss = self._step(batch, "train")
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"non-finite training loss ({loss.item()}) at epoch {self.current_epoch}, "
                f"step {self.global_step} (batch {batch_idx}); the last good checkpoint is kept"
            )
        return loss

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def configure_optimizers(self):
        return configure_optimizers(self, self.optimizer_factory, self.scheduler_factory, self.monitor)


def configure_optimizers(module: L.LightningModule, optimizer_factory, scheduler_factory, monitor: str):
    """Lightning's optimizer config; a ``ReduceLROnPlateau`` scheduler watches ``monitor``."""
    optimizer = optimizer_factory(module.parameters())
    if scheduler_factory is None:
        return optimizer
    scheduler = scheduler_factory(optimizer)
    config = {"scheduler": scheduler, "interval": "epoch"}
    if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
        config["monitor"] = monitor
    return {"optimizer": optimizer, "lr_scheduler": config}


class SpikingClassifier(ClassifierModule):
    """Image/event classification: batches ``[B, T, ...]``, the backbone's ``[T, B, classes]`` averaged over T."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x.transpose(0, 1)).mean(0)


class ShardSampler(Sampler[int]):
    """Indices ``rank, rank + world, ...`` of ``n`` samples: each sample on exactly one of ``world`` ranks, in order
    (``DistributedSampler`` would pad the shards to one length with repeated samples, counting those twice)."""

    def __init__(self, n: int, world: int = 1, rank: int = 0):
        self.n, self.world, self.rank = int(n), int(world), int(rank)

    def __iter__(self):
        return iter(range(self.rank, self.n, self.world))

    def __len__(self) -> int:
        return len(range(self.rank, self.n, self.world))


def distributed_rank(module: L.LightningDataModule) -> tuple[int, int]:
    """``(world size, global rank)`` of the Trainer a data module is attached to (``(1, 0)`` without one)."""
    trainer = getattr(module, "trainer", None)
    return (trainer.world_size, trainer.global_rank) if trainer is not None else (1, 0)


class SplitDataModule(L.LightningDataModule):
    """Wraps the train/val/test datasets returned by ``build()`` (called once, at setup); ``batch_size=None`` makes
    each split one batch. ``eval_batch_size`` (default: ``batch_size``) batches validation and test: for models whose
    samples do not interact at evaluation it changes only the speed, since a spiking network's per-step cost at small
    widths is mostly fixed overhead.

    Training order: a fresh permutation each epoch that depends only on ``(seed, epoch)`` (``DistributedSampler``'s
    rule; Lightning sets the epoch), so a run resumed from a checkpoint sees the order an uninterrupted run sees, and
    under DDP each rank takes its share. Validation and test: :class:`ShardSampler`, every sample once."""

    def __init__(self, build: Callable[[], tuple], batch_size: int | None, num_workers: int = 0, seed: int = 0,
                 eval_batch_size: int | None = None):
        super().__init__()
        self.build, self.batch_size, self.num_workers, self.seed = build, batch_size, num_workers, seed
        self.eval_batch_size = eval_batch_size
        self.splits = None

    def setup(self, stage: str | None = None):
        if self.splits is None:
            self.splits = self.build()

    def split_sizes(self) -> dict[str, int]:
        """Samples in each split (for ``metrics.json``)."""
        self.setup()
        return {name: len(data) for name, data in zip(("train", "val", "test"), self.splits) if data is not None}

    def _loader(self, index: int, train: bool) -> DataLoader:
        self.setup()
        data = self.splits[index]
        size = self.batch_size if train or self.eval_batch_size is None else self.eval_batch_size
        size = len(data) if size is None else size
        world, rank = distributed_rank(self)
        sampler = (DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=self.seed) if train
                   else ShardSampler(len(data), world, rank))
        return DataLoader(data, batch_size=max(size, 1), sampler=sampler, num_workers=self.num_workers,
                          persistent_workers=self.num_workers > 0)

    def train_dataloader(self):
        return self._loader(0, train=True)

    def val_dataloader(self):
        return self._loader(1, train=False)

    def test_dataloader(self):
        return self._loader(2, train=False)


class SpeedMonitor(L.Callback):
    """Samples per second of training and of testing, and peak memory, for ``metrics.json``.

    A train step is timed from ``on_train_batch_start`` to ``on_train_batch_end`` (forward, backward and
    optimizer step; data loading excluded), a test step likewise; on CUDA both ends synchronize so the time
    is the GPU's. ``samples`` counts labels (``len(batch[-1])``), or 1 for a batch that is one graph.
    ``train_epoch_s``: the train steps' seconds per training epoch run by this process.
    Peak memory: ``torch.cuda.max_memory_allocated`` since fit start on CUDA (the paper's "Memory (GB)"),
    else the process's peak resident set size (``ru_maxrss``: data and model included)."""

    def __init__(self):
        self.totals = {"train": [0.0, 0], "test": [0.0, 0]}
        self.train_epochs = 0
        self._start = 0.0
        self.cuda_device: torch.device | None = None

    def _tick(self) -> float:
        if self.cuda_device is not None:
            torch.cuda.synchronize(self.cuda_device)
        return time.perf_counter()

    @staticmethod
    def _samples(batch) -> int:
        last = batch[-1] if isinstance(batch, (tuple, list)) else None
        return len(last) if isinstance(last, torch.Tensor) and last.dim() > 0 else 1

    def on_fit_start(self, trainer, pl_module):
        device = trainer.strategy.root_device
        self.cuda_device = device if device.type == "cuda" else None
        if self.cuda_device is not None:
            torch.cuda.reset_peak_memory_stats(device)

    def _begin(self, *_):
        self._start = self._tick()

    def _end(self, split, batch):
        entry = self.totals[split]
        entry[0] += self._tick() - self._start
        entry[1] += self._samples(batch)

    on_train_batch_start = on_test_batch_start = _begin

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._end("train", batch)

    def on_train_epoch_end(self, trainer, pl_module):
        self.train_epochs += 1

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._end("test", batch)

    def reset_test(self) -> None:
        self.totals["test"] = [0.0, 0]

    def summary(self) -> dict:
        out = {f"{split}_samples_per_s": (count / seconds if seconds > 0 else None)
               for split, (seconds, count) in self.totals.items()}
        out["train_epoch_s"] = self.totals["train"][0] / self.train_epochs if self.train_epochs else None
        if self.cuda_device is not None:
            out |= {"peak_memory_gib": torch.cuda.max_memory_allocated(self.cuda_device) / 2**30,
                    "peak_memory_kind": "cuda max_memory_allocated"}
        else:
            out |= {"peak_memory_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                    "peak_memory_kind": "process peak RSS"}
        return out


class SpikeRateMeter:
    """Forward hooks on every neuron (and every module with ``emits_spikes = True``, e.g. an input encoder) of
    ``model``: ``rates()`` gives ``{module name: spikes / elements}`` over all forwards between ``start`` and ``stop``.
    ``reduce`` (e.g. a DDP strategy's sum over ranks) is applied to the ``[modules, 2]`` totals first."""

    def __init__(self, model: nn.Module, reduce: Callable[[torch.Tensor], torch.Tensor] | None = None):
        self.model, self.reduce = model, reduce
        self.totals: dict[str, list[float]] = {}
        self.handles: list = []

    def start(self) -> "SpikeRateMeter":
        self.stop()
        self.totals = {}
        for name, module in self.model.named_modules():
            if is_neuron(module) or getattr(module, "emits_spikes", False):
                self.totals[name] = [0.0, 0]  # every rank reduces the same modules, fired or not
                self.handles.append(module.register_forward_hook(self._hook(name)))
        return self

    def _hook(self, name):
        def hook(_module, _inputs, output):
            spikes = output[0] if isinstance(output, tuple) else output
            entry = self.totals[name]
            # an encoder may return structured spikes (fsnn.models.sgcn.PoissonSpikes) that count themselves
            entry[0] += float(spikes.detach().sum()) if isinstance(spikes, torch.Tensor) else spikes.count()
            entry[1] += spikes.numel()

        return hook

    def stop(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def rates(self) -> dict[str, float]:
        names = list(self.totals)
        totals = torch.tensor([self.totals[n] for n in names], dtype=torch.float64).reshape(-1, 2)
        if self.reduce is not None:
            totals = self.reduce(totals)
        return {name: float(total / count) for name, (total, count) in zip(names, totals.tolist()) if count}


@contextmanager
def firing_rates(model: nn.Module, reduce: Callable[[torch.Tensor], torch.Tensor] | None = None):
    """``with firing_rates(model) as rates: ...``: ``rates`` is filled on exit with ``{module name: firing rate}``
    (``reduce``: see :class:`SpikeRateMeter`)."""
    meter = SpikeRateMeter(model, reduce).start()
    rates: dict[str, float] = {}
    try:
        yield rates
    finally:
        meter.stop()
        rates.update(meter.rates())
