"""The Lightning callbacks of a training run: the progress bar in percent, the speed monitor, the learned
parameters per epoch, early stopping on the validation metric; and what ``metrics.json`` records of a model's neurons
(:func:`describe_neurons`)."""

from __future__ import annotations

import resource
import time

import lightning as L
import torch
from lightning.pytorch.callbacks import EarlyStopping as LightningEarlyStopping, TQDMProgressBar
from lightning.pytorch.callbacks.early_stopping import EarlyStoppingReason
from torch import nn

from fsnn.neurons.base import SpikingNeuron
from fsnn.neurons.fractional import FractionalNeuron


class PercentProgressBar(TQDMProgressBar):
    """Lightning's progress bar with accuracies shown in percent (``val/acc=81.25%``), the unit of every summary and
    table; the logged metrics, checkpoints and ``metrics.json`` keep fractions."""

    def get_metrics(self, trainer, pl_module):
        metrics = super().get_metrics(trainer, pl_module)
        return {k: f"{100 * v:.2f}%" if k.endswith("/acc") and isinstance(v, float) else v for k, v in metrics.items()}


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
    def samples(batch) -> int:
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
        entry[1] += self.samples(batch)

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
        out = {
            f"{split}_samples_per_s": (count / seconds if seconds > 0 else None)
            for split, (seconds, count) in self.totals.items()
        }
        out["train_epoch_s"] = self.totals["train"][0] / self.train_epochs if self.train_epochs else None
        if self.cuda_device is not None:
            out |= {
                "peak_memory_gib": torch.cuda.max_memory_allocated(self.cuda_device) / 2**30,
                "peak_memory_kind": "cuda max_memory_allocated",
            }
        else:
            out |= {
                "peak_memory_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                "peak_memory_kind": "process peak RSS",
            }
        return out


def describe_neurons(model: nn.Module) -> dict[str, dict]:
    """What ``metrics.json`` records of every neuron of ``model`` (``{module name: entry}``): its class, the engine
    of its last forward, its time constant as ``tau_mean`` / ``tau_std`` over the layer's elements (one value per
    layer has std 0) with ``tau_learned``, and for fractional neurons ``alpha`` with ``alpha_learned``."""
    out = {}
    for name, m in model.named_modules():
        if not isinstance(m, SpikingNeuron):
            continue
        entry = {"type": type(m).__name__, "engine": m.last_engine}
        tau = m.time_constant()
        if tau is not None:
            tau = torch.as_tensor(tau).detach().double().flatten()
            entry |= {
                "tau_mean": float(tau.mean()),
                "tau_std": float(tau.std(unbiased=False)),
                "tau_learned": bool(m.time_constant_parameters()),
            }
        if isinstance(m, FractionalNeuron):
            entry |= {"alpha": float(m.alpha.detach()), "alpha_learned": hasattr(m, "alpha_raw")}
        out[name] = entry
    return out


def learned_values(neurons: dict[str, dict]) -> dict[str, dict]:
    """The learned part of :func:`describe_neurons` (``tau_mean``, ``tau_std``, ``alpha``): what changes in training."""
    keep = {"tau_learned": ("tau_mean", "tau_std"), "alpha_learned": ("alpha",)}
    out = {}
    for name, entry in neurons.items():
        values = {k: entry[k] for flag, keys in keep.items() if entry.get(flag) for k in keys}
        if values:
            out[name] = values
    return out


class LearnedNeurons(L.Callback):
    """The neurons' learned time constants and orders (:func:`learned_values`) before training and
    after every training epoch, for ``metrics.json``'s ``neurons_by_epoch`` (empty when nothing of a neuron learns).
    Kept in checkpoints, so a resumed run keeps the epochs it had."""

    def __init__(self):
        self.epochs: list[dict] = []

    def _record(self, epoch: int, pl_module) -> None:
        values = learned_values(describe_neurons(pl_module.model))
        if values:
            self.epochs.append({"epoch": epoch, "neurons": values})

    def on_fit_start(self, trainer, pl_module):
        if not self.epochs:
            self._record(0, pl_module)

    def on_train_epoch_end(self, trainer, pl_module):
        self._record(trainer.current_epoch + 1, pl_module)

    def state_dict(self) -> dict:
        return {"epochs": self.epochs}

    def load_state_dict(self, state_dict: dict) -> None:
        self.epochs = list(state_dict["epochs"])


class EarlyStopping(LightningEarlyStopping):
    """Lightning's ``EarlyStopping`` on the run's selection metric: training stops once ``val/<metric>``, the
    validation metric the best checkpoint is selected on (higher is better), has not risen by more than ``min_delta``
    above its best for ``patience`` validations in a row (epochs, with a validation every epoch); ``max_epochs``
    stays the most a run trains. The ``conf/early_stopping/`` group builds it; the run gives ``metric``.

    Its state (best value, validations without improvement, why it stopped) is in every checkpoint, decided before
    the epoch's checkpoints are written (Lightning runs checkpointing callbacks last), so a resumed run stops where
    the uninterrupted one does. A run killed after it stopped and before its test ends resumes from that epoch's
    ``last.ckpt`` and stays stopped: Lightning keeps the decision only in the Trainer, so it is restored from the
    callback's state here.

    Args:
        metric: the run's metric (``auc``, ``acc``), given by the run: ``val/<metric>`` is watched.
        patience: validations without improvement before training stops, an integer >= 1; default ``100``.
        min_delta: how far above its best the metric must rise to count as an improvement, >= 0; default ``0``.
    """

    def __init__(self, metric: str, patience: int = 100, min_delta: float = 0.0):
        super().__init__(monitor=f"val/{metric}", mode="max", patience=patience, min_delta=min_delta)

    @property
    def stopped(self) -> bool:
        """Whether it has stopped training (restored from a checkpoint too)."""
        return self.stopping_reason != EarlyStoppingReason.NOT_STOPPED

    def on_train_start(self, trainer, pl_module):
        if self.stopped:
            trainer.should_stop = True

    def summary(self) -> dict:
        """What ``metrics.json`` records of it: its settings, the best value it saw and, once it stopped training,
        why (Lightning's reason, ``patience_exhausted`` or ``non_finite_metric``, and message)."""
        return {
            "monitor": self.monitor,
            "patience": self.patience,
            "min_delta": abs(self.min_delta),
            "best": float(self.best_score),
            "reason": self.stopping_reason.name.lower() if self.stopped else None,
            "message": self.stopping_reason_message,
        }
