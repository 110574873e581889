r"""Generated sequence tasks (kind ``"sequence"``): what a network must remember, with the horizon as a knob.

Both are generated offline in seconds, deterministically from ``data_seed``, and cached once under
``<data_dir>/fsnn_cache/<name>/`` (:func:`fsnn.data.cache.cached_tensor`, keyed by every generation parameter).
Items are ``(float32 [T, C], int)``; a batch is ``[B, T, C]``. Splits follow ``digits_dvs``: a fixed stratified
20 % test set (seed :data:`fsnn.data.events.SPLIT_SEED`), then a seeded stratified ``val_fraction`` of the rest.
Each split carries ``readout_steps``: the last steps a model reads its answer from.

``delayed_cue`` (a delayed match-to-sample task): ``C`` input channels and one "go" channel, ``T = cue_steps + delay +
recall_steps`` steps::

    steps [0, cue_steps)            cue: template y (one of K frozen Poisson spike patterns [cue_steps, C], rate
                                    cue_rate), OR background
    steps [cue_steps, T - recall)   background only: Poisson spikes at noise_rate on every channel
    steps [T - recall, T)           background, and the go channel spikes at every step (the recall window)

The label is the cue's index ``y``, balanced over the ``K`` classes, so chance is ``1/K``. Nothing after the cue
depends on ``y``: a network that answers in the recall window must carry the cue across ``delay`` noisy steps.

``seq_digits`` (the spiking analogue of sequential / permuted MNIST): scikit-learn's bundled 1797 handwritten digits
(8x8, 16 grey levels) fed one pixel per step, row by row, as a one-channel input current ``I_t = pixel / 16``
(direct encoding, as the static datasets are fed); ``permute=True`` reorders the 64 pixels by one fixed permutation
drawn from ``data_seed``; ``upsample=u`` holds each pixel for ``u`` steps (``T = 64 u``). The answer is read over the
last ``readout_steps`` steps.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from fsnn.checks import check_int, check_number, check_ratio
from fsnn.data.cache import cached_tensor
from fsnn.data.common import DatasetInfo, stratified_split
from fsnn.data.events import SPLIT_SEED, TEST_FRACTION

log = logging.getLogger(__name__)

#: every option of ``delayed_cue`` and its default (``conf/dataset/delayed_cue.yaml`` states the same)
CUE_DEFAULTS = {"delay": 128, "num_cues": 4, "channels": 16, "cue_steps": 8, "cue_rate": 0.5, "noise_rate": 0.05,
                "recall_steps": 4, "num_samples": 1000, "data_seed": 0}
#: every option of ``seq_digits`` and its default
DIGITS_DEFAULTS = {"permute": False, "upsample": 1, "readout_steps": 8, "data_seed": 0}
DIGIT_PIXELS = 64
# samples drawn per block of background noise: bounds the float32 scratch of long sequences
_CHUNK = 256


def delayed_cue(num_samples: int, delay: int, *, num_cues: int = 4, channels: int = 16, cue_steps: int = 8,
                cue_rate: float = 0.5, noise_rate: float = 0.05, recall_steps: int = 4, seed: int = 0):
    """``(x, y, templates)`` of the delayed-cue task (module docstring): ``x`` uint8 spikes ``[N, T, channels + 1]``
    (the last channel is "go"), ``y`` int64 ``[N]`` balanced over ``num_cues`` classes, ``templates`` uint8
    ``[num_cues, cue_steps, channels]``. The templates and labels depend only on ``seed`` and the shapes, so every
    ``delay`` uses the same cues; deterministic for given arguments."""
    n, delay, K, C, L, cue_rate, noise_rate, R, seed = _check_cue(
        num_samples, delay, num_cues, channels, cue_steps, cue_rate, noise_rate, recall_steps, seed).values()
    rng = np.random.default_rng(seed)
    templates = rng.random((K, L, C)) < cue_rate
    while len({t.tobytes() for t in templates}) < K or not templates.reshape(K, -1).any(1).all():
        templates = rng.random((K, L, C)) < cue_rate  # distinct, non-empty cues (redrawn at tiny C * L)
    y = rng.permutation(np.arange(n) % K)
    T = L + delay + R
    x = np.empty((n, T, C + 1), np.uint8)
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        x[start:stop, :, :C] = rng.random((stop - start, T, C), dtype=np.float32) < noise_rate
    x[:, :L, :C] |= templates[y].astype(np.uint8)
    x[:, :, C] = 0
    x[:, T - R:, C] = 1
    return x, y.astype(np.int64), templates.astype(np.uint8)


def _check_cue(num_samples, delay, num_cues, channels, cue_steps, cue_rate, noise_rate, recall_steps, data_seed):
    """The options of :func:`delayed_cue`, checked (one ``ValueError`` naming the first bad one), in that order."""
    K = check_int("num_cues", num_cues, minimum=2)
    checked = {"num_samples": check_int("num_samples", num_samples), "delay": check_int("delay", delay, minimum=0),
               "num_cues": K, "channels": check_int("channels", channels),
               "cue_steps": check_int("cue_steps", cue_steps),
               "cue_rate": check_number("cue_rate", cue_rate, above=0.0, allowed="in (0, 1]"),
               "noise_rate": check_ratio("noise_rate", noise_rate, below_one=True),
               "recall_steps": check_int("recall_steps", recall_steps),
               "data_seed": check_int("data_seed", data_seed, minimum=0)}
    if checked["cue_rate"] > 1.0:
        raise ValueError(f"cue_rate must be in (0, 1], got {cue_rate!r}")
    if checked["num_samples"] < K:
        raise ValueError(f"num_samples must be >= num_cues ({K}) so that every cue occurs, got {num_samples}")
    return checked


def _check_digits(permute, upsample, data_seed) -> tuple[bool, int, int]:
    if not isinstance(permute, (bool, np.bool_)):
        raise ValueError(f"permute must be true or false, got {permute!r}")
    return bool(permute), check_int("upsample", upsample), check_int("data_seed", data_seed, minimum=0)


def seq_digits(permute: bool = False, upsample: int = 1, seed: int = 0):
    """``(x, y)``: the 1797 sklearn digits as float32 ``[N, 64 * upsample, 1]`` pixel currents in [0, 1] (row by
    row, or in one fixed ``seed``-drawn order with ``permute``, each pixel held ``upsample`` steps) and int64 labels."""
    from sklearn.datasets import load_digits

    permute, u, seed = _check_digits(permute, upsample, seed)
    digits = load_digits()
    pixels = digits.data.astype(np.float32) / 16.0  # [N, 64], row-major
    if permute:
        pixels = pixels[:, np.random.default_rng(seed).permutation(DIGIT_PIXELS)]
    return np.repeat(pixels, u, axis=1)[:, :, None], np.asarray(digits.target, dtype=np.int64)


class SequenceDataset(Dataset):
    """Subset ``indices`` of generated sequences ``x`` (``[N, T, C]``, any dtype) with labels ``y``: item ``i`` is
    ``(float32 [T, C], int)``. ``readout_steps``: the last steps the answer is read from; ``num_classes``;
    ``targets``: the subset's labels."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, indices, num_classes: int, readout_steps: int,
                 info: DatasetInfo | None = None):
        self.x, self.y = x, y
        self.indices = [int(i) for i in indices]
        self.num_classes, self.readout_steps, self.info = int(num_classes), int(readout_steps), info
        self.targets = [int(y[i]) for i in self.indices]

    @property
    def steps(self) -> int:
        return int(self.x.shape[1])

    @property
    def channels(self) -> int:
        return int(self.x.shape[2])

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int):
        return self.x[self.indices[i]].float(), self.targets[i]


def _options(name: str, defaults: dict, options: dict) -> dict:
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ValueError(f"dataset {name!r} does not take {unknown}; it accepts {sorted(defaults)}")
    return {**defaults, **options}


def _cached(info: DatasetInfo, cache_dir: Path | None, params: dict, compute) -> dict:
    """``compute()`` (a dict of tensors) memoised under ``<cache_dir>/<name>/<hash of params>.pt``."""
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]
    folder = None if cache_dir is None else Path(cache_dir) / info.name

    def generate():
        log.info("fsnn: generating %s %s", info.name, params)
        return {**compute(), "params": json.dumps(params, sort_keys=True)}

    return cached_tensor(folder, digest, generate)


def _splits(info, x, y, num_classes, readout_steps, seed, val_fraction):
    test, pool = stratified_split(y.numpy(), [TEST_FRACTION], SPLIT_SEED)
    val, train = stratified_split(y.numpy()[pool], [val_fraction], seed)
    return tuple(SequenceDataset(x, y, idx, num_classes, readout_steps, info) for idx in (pool[train], pool[val], test))


def build_delayed_cue(info: DatasetInfo, data_dir: Path, seed: int, val_fraction: float, *, cache_dir: Path | None,
                      **options):
    """``(train, val, test)`` of :func:`delayed_cue` with ``options`` (:data:`CUE_DEFAULTS`); read over the recall
    window."""
    p = _check_cue(**_options(info.name, CUE_DEFAULTS, options))  # before anything is written

    def compute():
        x, y, templates = delayed_cue(p["num_samples"], p["delay"], num_cues=p["num_cues"], channels=p["channels"],
                                      cue_steps=p["cue_steps"], cue_rate=p["cue_rate"], noise_rate=p["noise_rate"],
                                      recall_steps=p["recall_steps"], seed=p["data_seed"])
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y), "templates": torch.from_numpy(templates)}

    data = _cached(info, cache_dir, p, compute)
    return _splits(info, data["x"], data["y"], p["num_cues"], p["recall_steps"], seed, val_fraction)


def build_seq_digits(info: DatasetInfo, data_dir: Path, seed: int, val_fraction: float, *, cache_dir: Path | None,
                     **options):
    """``(train, val, test)`` of :func:`seq_digits` with ``options`` (:data:`DIGITS_DEFAULTS`)."""
    p = _options(info.name, DIGITS_DEFAULTS, options)
    p["permute"], p["upsample"], p["data_seed"] = _check_digits(p["permute"], p["upsample"], p["data_seed"])
    readout = check_int("readout_steps", p["readout_steps"])
    if readout > DIGIT_PIXELS * p["upsample"]:
        raise ValueError(f"readout_steps must be <= the sequence length {DIGIT_PIXELS * p['upsample']}, got {readout}")

    def compute():
        x, y = seq_digits(p["permute"], p["upsample"], p["data_seed"])
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y)}

    generated = {k: v for k, v in p.items() if k != "readout_steps"}  # where the answer is read changes no data
    data = _cached(info, cache_dir, generated, compute)
    return _splits(info, data["x"], data["y"], 10, readout, seed, val_fraction)
