r"""Generated sequence tasks (kind ``"sequence"``): what a network must remember, with the horizon as a knob.

Both are generated offline in seconds, deterministically from ``data_seed``, and cached once under
``<data_dir>/fsnn_cache/<name>/`` (:func:`fsnn.data.cache.cached_tensor`, keyed by every generation parameter).
Items are ``(float32 [T, C], int)``; a batch is ``[B, T, C]``. Splits follow ``digits_dvs``: a fixed stratified
20 % test set (seed :data:`fsnn.data.frame_cache.SPLIT_SEED`), then a seeded stratified ``val_fraction`` of the rest.
Each split carries ``readout_steps``: the last steps a model reads its answer from.

``delayed_cue`` (a delayed match-to-sample task): ``C`` input channels and one "go" channel, ``T = cue_steps + delay +
recall_steps`` steps::

    steps [0, cue_steps)            cue: template y (one of K frozen Poisson spike patterns [cue_steps, C], rate
                                    cue_rate), OR background
    steps [cue_steps, T - recall)   background only: Poisson spikes at noise_rate on every channel
    steps [T - recall, T)           background, and the go channel spikes at every step (the recall window)

(``delay_noise=False``: no background in the delay; ``go_channel=False``: no go channel, the readout time is fixed.)

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
import inspect
import json
import logging
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from fsnn.checks import (
    Count,
    Flag,
    NonNegativeInt,
    Probability,
    check_arguments,
    checked,
    integer,
    number,
)
from fsnn.data.cache import cached_tensor
from fsnn.data.frame_cache import SPLIT_SEED, TEST_FRACTION
from fsnn.data.info import BuilderArgs, DatasetInfo
from fsnn.data.splits import stratified_split
from fsnn.registry import did_you_mean

log = logging.getLogger(__name__)

DIGIT_PIXELS = 64
# samples drawn per block of background noise: bounds the float32 scratch of long sequences
_CHUNK = 256


@checked
def delayed_cue(
    num_samples: Count = 1000,
    delay: NonNegativeInt = 128,
    *,
    num_cues: integer("an integer >= 2", lambda v: v >= 2) = 4,
    channels: Count = 16,
    cue_steps: Count = 8,
    cue_rate: number("a number in (0, 1]", lambda v: 0 < v <= 1) = 0.5,
    noise_rate: Probability = 0.05,
    recall_steps: Count = 4,
    delay_noise: Flag = True,
    go_channel: Flag = True,
    data_seed: NonNegativeInt = 0,
):
    """``(x, y, templates)`` of the delayed-cue task (module docstring): ``x`` uint8 spikes ``[N, T, channels + 1]``
    (the last channel is "go"), ``y`` int64 ``[N]`` balanced over ``num_cues`` classes, ``templates`` uint8
    ``[num_cues, cue_steps, channels]``. The templates and labels depend only on ``data_seed`` and the shapes, so every
    ``delay`` uses the same cues; deterministic for given arguments. Its arguments are the options of
    ``dataset=delayed_cue``. Two variants take a cue away from the default task: ``delay_noise=False`` silences the
    background between the cue and the recall window, ``go_channel=False`` drops the "go" channel (``x`` is ``[N, T,
    channels]`` and the network must answer at a fixed time); both leave the cues, labels and remaining noise as
    they are."""
    if num_samples < num_cues:
        raise ValueError(f"num_samples must be >= num_cues ({num_cues}) so that every cue occurs, got {num_samples}")
    K, C, L, R = num_cues, channels, cue_steps, recall_steps
    rng = np.random.default_rng(data_seed)
    templates = rng.random((K, L, C)) < cue_rate
    while len({t.tobytes() for t in templates}) < K or not templates.reshape(K, -1).any(1).all():
        templates = rng.random((K, L, C)) < cue_rate  # distinct, non-empty cues (redrawn at tiny C * L)
    y = rng.permutation(np.arange(num_samples) % K)
    T = L + delay + R
    x = np.empty((num_samples, T, C + 1), np.uint8)
    for start in range(0, num_samples, _CHUNK):
        stop = min(num_samples, start + _CHUNK)
        x[start:stop, :, :C] = rng.random((stop - start, T, C), dtype=np.float32) < noise_rate
    x[:, :L, :C] |= templates[y].astype(np.uint8)
    if not delay_noise:
        x[:, L : T - R, :C] = 0
    x[:, :, C] = 0
    x[:, T - R :, C] = 1
    return (x if go_channel else x[:, :, :C]), y.astype(np.int64), templates.astype(np.uint8)


@checked
def seq_digits(permute: Flag = False, upsample: Count = 1, data_seed: NonNegativeInt = 0):
    """``(x, y)``: the 1797 sklearn digits as float32 ``[N, 64 * upsample, 1]`` pixel currents in [0, 1] (row by
    row, or in one fixed ``data_seed``-drawn order with ``permute``, each pixel held ``upsample`` steps) and int64
    labels. Its arguments are options of ``dataset=seq_digits``."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels = digits.data.astype(np.float32) / 16.0  # [N, 64], row-major
    if permute:
        pixels = pixels[:, np.random.default_rng(data_seed).permutation(DIGIT_PIXELS)]
    return np.repeat(pixels, upsample, axis=1)[:, :, None], np.asarray(digits.target, dtype=np.int64)


def defaults(generator) -> dict:
    """``{option: default}`` of a generator's signature."""
    return {name: p.default for name, p in inspect.signature(generator).parameters.items()}


GENERATORS = {"delayed_cue": delayed_cue, "seq_digits": seq_digits}  # whose signatures declare the options


class SequenceDataset(Dataset):
    """Subset ``indices`` of generated sequences ``x`` (``[N, T, C]``, any dtype) with labels ``y``: item ``i`` is
    ``(float32 [T, C], int)``. ``readout_steps``: the last steps the answer is read from; ``num_classes``;
    ``targets``: the subset's labels."""

    def __init__(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        indices,
        num_classes: int,
        readout_steps: int,
        info: DatasetInfo | None = None,
    ):
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


def _options(info: DatasetInfo, options: dict) -> dict:
    """``options`` completed with the defaults of the dataset's generator and checked by its option types, before
    anything is written; a key it does not take is a ``ValueError`` naming it."""
    generator = GENERATORS[info.name]
    known = defaults(generator)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"dataset {info.name!r} does not take {unknown}{did_you_mean(unknown[0], known)}; it takes {sorted(known)}"
        )
    return check_arguments(generator, {**known, **options})


def _cached(info: DatasetInfo, cache_dir: Path | None, params: dict, compute) -> dict:
    """``compute()`` (a dict of tensors) memoised under ``<cache_dir>/<name>/<hash of params>.pt``."""
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]
    folder = None if cache_dir is None else Path(cache_dir) / info.name

    def generate():
        log.info("fsnn: generating %s %s", info.name, params)
        return {**compute(), "params": json.dumps(params, sort_keys=True)}

    return cached_tensor(folder, digest, generate)


def _splits(args: BuilderArgs, x, y, num_classes, readout_steps):
    test, pool = stratified_split(y.numpy(), [TEST_FRACTION], SPLIT_SEED)
    val, train = stratified_split(y.numpy()[pool], [args.val_fraction], args.seed)
    return tuple(
        SequenceDataset(x, y, idx, num_classes, readout_steps, args.info) for idx in (pool[train], pool[val], test)
    )


def build_delayed_cue(args: BuilderArgs, **options):
    """``(train, val, test)`` of :func:`delayed_cue` with ``options`` (its arguments); read over the recall window.

    Args:
        args: :class:`fsnn.data.info.BuilderArgs` (``info``: ``kind="sequence"``, ``num_cues`` classes,
            ``channels + 1`` inputs; ``data_dir`` is not read, the task is generated); the tensors are cached as
            ``<cache_dir>/delayed_cue/<hash of the options>.pt``.
        **options: the arguments of :func:`delayed_cue`, each optional, with its range and default:
            ``num_samples`` (an integer >= ``num_cues``; default ``1000``), ``delay`` (the steps between the cue and
            the recall window, the task's horizon, an integer >= 0; default ``128``), ``num_cues`` (the classes, an
            integer >= 2; default ``4``), ``channels`` (input channels besides "go", an integer >= 1; default
            ``16``), ``cue_steps`` (an integer >= 1; default ``8``), ``cue_rate`` (spike probability inside a cue
            pattern, in ``(0, 1]``; default ``0.5``), ``noise_rate`` (background spike probability per step and
            channel, in ``[0, 1)``; default ``0.05``), ``recall_steps`` (the readout window, an integer >= 1;
            default ``4``), ``delay_noise`` and ``go_channel`` (booleans; default ``True``: ``False`` gives the
            ``conf/cue_variant/`` variants) and ``data_seed`` (the cues, labels and noise, an integer >= 0; default
            ``0``). Any other key is a ``ValueError`` naming it.
    """
    p = _options(args.info, options)

    def compute():
        x, y, templates = delayed_cue(**p)
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y), "templates": torch.from_numpy(templates)}

    data = _cached(args.info, args.cache_dir, p, compute)
    return _splits(args, data["x"], data["y"], p["num_cues"], p["recall_steps"])


def build_seq_digits(args: BuilderArgs, *, readout_steps: Count = 8, **options):
    """``(train, val, test)`` of :func:`seq_digits` with ``options`` (its arguments), read over the last
    ``readout_steps`` steps.

    Args:
        args: :class:`fsnn.data.info.BuilderArgs` (``info``: ``kind="sequence"``, 10 classes, 1 input channel;
            ``data_dir`` is not read, the task is generated from sklearn's digits); the tensors are cached as
            ``<cache_dir>/seq_digits/<hash of the options>.pt``.
        readout_steps: the last steps the answer is read from (averaged), an integer from 1 to the sequence length
            ``64 * upsample``; default ``8``. It changes no data.
        **options: the arguments of :func:`seq_digits`, each optional: ``permute`` (a boolean; default ``False``:
            row by row; ``True``: one fixed permutation of the 64 pixels), ``upsample`` (steps each pixel is held, an
            integer >= 1; default ``1``, ``T = 64 * upsample``) and ``data_seed`` (the permutation, an integer >= 0;
            default ``0``). Any other key is a ``ValueError`` naming it.
    """
    p = _options(args.info, options)
    readout = check_arguments(build_seq_digits, {"readout_steps": readout_steps})["readout_steps"]
    if readout > DIGIT_PIXELS * p["upsample"]:
        raise ValueError(f"readout_steps must be <= the sequence length {DIGIT_PIXELS * p['upsample']}, got {readout}")

    def compute():
        x, y = seq_digits(**p)
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y)}

    data = _cached(args.info, args.cache_dir, p, compute)  # where the answer is read changes no data
    return _splits(args, data["x"], data["y"], 10, readout)


_CUE = defaults(delayed_cue)
#: the tasks this module generates, registered by :mod:`fsnn.data.registry`: classes, channels and ``T`` of their
#: default options (the options change them, and are the generators' keyword arguments)
INFOS = (
    DatasetInfo(
        name="delayed_cue",
        kind="sequence",
        num_classes=_CUE["num_cues"],
        in_channels=_CUE["channels"] + 1,
        size=None,
        default_T=_CUE["cue_steps"] + _CUE["delay"] + _CUE["recall_steps"],
        library="fsnn (generated)",
        builder=build_delayed_cue,
        options=(delayed_cue,),
    ),
    DatasetInfo(
        name="seq_digits",
        kind="sequence",
        num_classes=10,
        in_channels=1,
        size=None,
        default_T=DIGIT_PIXELS,
        library="fsnn (from sklearn digits)",
        builder=build_seq_digits,
        options=(seq_digits, build_seq_digits),
    ),
)
