"""Lightning pieces for spiking classifiers: the module, the data module, firing-rate probes.

Lightning's Trainer owns the loop (checkpoints, resume, AMP, clipping, progress bars, DDP).
Batches arrive as ``[B, T, C, H, W]`` (the default collate of ``[T, C, H, W]`` samples); the
backbone sees ``[T, B, ...]`` and returns per-step outputs ``[T, B, classes]`` whose mean over T
(the firing rate of a voting layer, or the mean of a linear readout) is the logit of a single
cross-entropy.
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
from torch.utils.data import DataLoader
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
        self.metrics = nn.ModuleDict({
            f"{split}_acc": MulticlassAccuracy(self.num_classes, average="micro") for split in ("train", "val", "test")
        })

    def _step(self, batch, split: str) -> torch.Tensor:
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = self.metrics[f"{split}_acc"]
        acc(logits, y)
        on_step = split == "train"
        self.log(f"{split}/loss", loss, on_step=on_step, on_epoch=True, prog_bar=split != "test", batch_size=len(y))
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


class SplitDataModule(L.LightningDataModule):
    """Wraps the train/val/test datasets returned by ``build()`` (called once, at setup); shuffling is seeded so
    reruns see the same order; ``batch_size=None`` makes each split one batch."""

    def __init__(self, build: Callable[[], tuple], batch_size: int | None, num_workers: int = 0, seed: int = 0):
        super().__init__()
        self.build, self.batch_size, self.num_workers, self.seed = build, batch_size, num_workers, seed
        self.splits = None

    def setup(self, stage: str | None = None):
        if self.splits is None:
            self.splits = self.build()

    def _loader(self, index: int, shuffle: bool) -> DataLoader:
        self.setup()
        data = self.splits[index]
        size = len(data) if self.batch_size is None else self.batch_size
        generator = torch.Generator().manual_seed(self.seed) if shuffle else None
        return DataLoader(data, batch_size=max(size, 1), shuffle=shuffle, generator=generator,
                          num_workers=self.num_workers, persistent_workers=self.num_workers > 0)

    def train_dataloader(self):
        return self._loader(0, shuffle=True)

    def val_dataloader(self):
        return self._loader(1, shuffle=False)

    def test_dataloader(self):
        return self._loader(2, shuffle=False)


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
    ``model``: ``rates()`` gives ``{module name: spikes / elements}`` over all forwards between ``start`` and ``stop``."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.totals: dict[str, list[float]] = {}
        self.handles: list = []

    def start(self) -> "SpikeRateMeter":
        self.stop()
        self.totals = {}
        for name, module in self.model.named_modules():
            if is_neuron(module) or getattr(module, "emits_spikes", False):
                self.handles.append(module.register_forward_hook(self._hook(name)))
        return self

    def _hook(self, name):
        def hook(_module, _inputs, output):
            spikes = output[0] if isinstance(output, tuple) else output
            entry = self.totals.setdefault(name, [0.0, 0])
            entry[0] += float(spikes.detach().sum())
            entry[1] += spikes.numel()

        return hook

    def stop(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def rates(self) -> dict[str, float]:
        return {name: total / count for name, (total, count) in self.totals.items() if count}


@contextmanager
def firing_rates(model: nn.Module):
    """``with firing_rates(model) as rates: ...``: ``rates`` is filled on exit with ``{module name: firing rate}``."""
    meter = SpikeRateMeter(model).start()
    rates: dict[str, float] = {}
    try:
        yield rates
    finally:
        meter.stop()
        rates.update(meter.rates())
