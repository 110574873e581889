"""The paper's test-time corruptions of event frames and graphs, as plain functions behind one registry.

Paper: appendix "Robustness Analysis Setting" (``ssec.robust``) defines five corruptions applied at test time to
the input frames; appendix "Extended Robustness Experiments" (Tables ``tab:noise``, ``tab:discard``,
``tab:temporal_jitter``, ``tab:temporal_truncate``, ``tab:occlude_block``) lists their levels. The levels a study
runs live only in ``conf/robustness/*.yaml``.

Every corruption of frames is a pure function ``fn(x, level, generator=None, **options) -> Tensor``; its arguments
(the functions below refer here):

* ``x``: integrated event frames, a tensor ``[T, C, H, W]`` or a batch ``[B, T, C, H, W]`` (event counts, float);
* ``level``: the corruption level exactly as on the x-axis / first column of the paper's tables;
* ``generator``: where the random draws come from: a ``torch.Generator`` (its state advances), an ``int``
  seed >= 0, or ``None`` (default: seed 0), so every call is reproducible; deterministic corruptions accept and
  ignore it so the registry has one signature;
* the input is never modified; a new tensor of the same shape, dtype (float for noise) and device is returned.

For a batch, random draws are made sample by sample (independent corruption per sample, like evaluating a test
set sample by sample); the noise is drawn element-wise in one go.

Graph corruptions (appendix "Extended Robustness Experiments", "Graph Learning Tasks"): feature masking and
edge dropping change the graph a trained model is tested on (``fn(graph, level, generator=None, **options) ->
graph``, ``generator`` as above); Gaussian spike noise (``spike_noise``, Fig. ``fig:robust_SGCN``) is a probe
inside the model (``spike_noise_std``, :func:`fsnn.models.sgcn.add_spike_noise`). Every corruption is an entry of
:data:`CORRUPTIONS` (:class:`fsnn.registry.Registry`) with its ``family``: ``"vision"`` (frames) or ``"graph"``;
the graph models' probe carries ``probe=True``. :class:`CorruptedDataset` corrupts a test set sample by sample,
reproducibly. ``evaluate.py robustness=...`` (the robustness study of :mod:`fsnn.suite.studies`) runs them on a trained
run; a plan's check and the robustness score are :mod:`fsnn.suite.robustness`.

Counts ``k = round(ratio * n)`` use fsnn's one rounding rule, half up (:func:`fsnn.checks.round_count`), not Python's
banker's rounding.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import Dataset

from fsnn.checks import (
    Ratio,
    as_generator,
    check_number,
    checked,
    one_of,
    round_count,
    round_half_up,
)
from fsnn.data.graph_features import drop_edges, mask_features
from fsnn.registry import Registry, UnknownNameError

__all__ = [
    "CORRUPTIONS",
    "CorruptedDataset",
    "center_occlusion",
    "corrupt",
    "drop_graph_edges",
    "family_corruption",
    "frame_discard",
    "gaussian_noise",
    "mask_graph_features",
    "occlusion_box",
    "sample_seed",
    "spike_noise_std",
    "temporal_jitter",
    "temporal_truncation",
]


# -- helpers ----------------------------------------------------------------------------------


def _check_frames(x) -> tuple[torch.Tensor, bool]:
    """``(x as a [B, T, C, H, W] view, was_batched)``; rejects other ranks."""
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x)
    if x.dim() == 4:
        return x.unsqueeze(0), False
    if x.dim() == 5:
        return x, True
    raise ValueError(f"expected frames [T, C, H, W] or [B, T, C, H, W], got shape {tuple(x.shape)}")


def _check_level(level, what: str) -> float:
    return check_number(what, level, at_least=0.0, allowed="a finite number >= 0")


def _restore(out: torch.Tensor, batched: bool) -> torch.Tensor:
    return out if batched else out.squeeze(0)


# -- 1. noise injection -----------------------------------------------------------------------


def gaussian_noise(x: torch.Tensor, level: float, generator=None, *, clamp_min: float | None = None) -> torch.Tensor:
    """Add i.i.d. Gaussian noise ``N(0, level^2)`` to every entry of the frames.

    Paper (``ssec.robust``): "**Noise Injection:** ... we randomly add Gaussian noise of different intensities to
    the input spike sequences"; Fig. ``fig:robust`` names the level the "Gaussian noise std" (levels 0.1 .. 0.5,
    Table ``tab:noise``). The paper gives the std as a plain number, so ``level`` is the **absolute** standard
    deviation in the units of the input (event counts), **not** relative to the data scale (no normalisation by
    the data's std or max). Values stay real (may become negative) unless ``clamp_min`` is given (e.g. ``0.0``),
    which the paper does not do, hence off by default. An integer input is promoted to float32.

    Args:
        x: the event frames, as in :mod:`fsnn.data.corruptions`; not modified.
        level: the noise's standard deviation, absolute (in event counts), a finite number >= 0; no default
            (``conf/robustness/events.yaml``: 0.1 .. 0.5). ``0`` leaves the frames unchanged.
        generator: as in :mod:`fsnn.data.corruptions`; default ``None``.
        clamp_min: a floor the noisy values are clamped to (e.g. ``0.0`` keeps counts non-negative), any number,
            or ``None`` (default: no clamping, as in the paper).
    """
    std = _check_level(level, "noise std")
    xb, batched = _check_frames(x)
    out = xb if xb.is_floating_point() else xb.to(torch.float32)
    noise_dtype = out.dtype if out.dtype in (torch.float32, torch.float64) else torch.float32
    noise = torch.randn(out.shape, generator=as_generator(generator), dtype=noise_dtype)  # CPU draw: device-independent
    out = out + (std * noise).to(device=out.device, dtype=out.dtype)
    if clamp_min is not None:
        out = out.clamp_min(float(clamp_min))
    return _restore(out, batched)


# -- 2. center occlusion ----------------------------------------------------------------------


@checked
def occlusion_box(height: int, width: int, ratio: Ratio) -> tuple[int, int, int, int]:
    """``(top, left, side_h, side_w)`` of the centered occluding block whose area is ``ratio`` of ``H x W``.

    The block is square with side ``s = round(sqrt(ratio * H * W))`` (round-half-up), so its area ``s^2`` is
    the closest square number of pixels to ``ratio * H * W``; if ``s`` exceeds a frame side it is clipped to that
    side (then the block is a ``min(s, H) x min(s, W)`` rectangle, which only happens for very elongated frames or
    ratios near 1). It is centered with ``top = (H - side_h) // 2`` and ``left = (W - side_w) // 2`` (when
    ``H - side_h`` is odd the extra row goes below the block, likewise the extra column to the right).
    """
    h, w = int(height), int(width)
    s = round_half_up(math.sqrt(ratio * h * w))
    sh, sw = min(s, h), min(s, w)
    return (h - sh) // 2, (w - sw) // 2, sh, sw


@checked
def center_occlusion(x: torch.Tensor, level: Ratio, generator=None, *, fill: float = 0.0) -> torch.Tensor:
    """Zero (``fill``) a centered square block covering ``level`` of the frame area, in every step and channel.

    Paper (``ssec.robust``): "**Occlude Block:** ... we place square blocks of different sizes at the center of
    input frames to assess the model's robustness to local information loss"; Fig. ``fig:robust``: "x-axis: area
    ratio of the center block" (levels 0.1 .. 0.5, Table ``tab:occlude_block``). Block geometry and rounding:
    :func:`occlusion_box`. Deterministic; ``generator`` is ignored.

    Args:
        x: the event frames, as in :mod:`fsnn.data.corruptions`; not modified.
        level: the area ratio of the centred square block, a number in ``[0, 1]``; no default
            (``conf/robustness/events.yaml``: 0.1 .. 0.5). ``0`` occludes nothing, ``1`` the whole frame.
        generator: ignored (the corruption is deterministic); default ``None``.
        fill: the value written into the block, any number; default ``0.0`` (no events).
    """
    xb, batched = _check_frames(x)
    top, left, sh, sw = occlusion_box(xb.shape[-2], xb.shape[-1], level)
    out = xb.clone()
    out[..., top : top + sh, left : left + sw] = fill
    return _restore(out, batched)


# -- 3. temporal truncation -------------------------------------------------------------------


@checked
def temporal_truncation(
    x: torch.Tensor, level: Ratio, generator=None, *, mode: one_of("tail", "head", "random") = "tail"
) -> torch.Tensor:
    """Truncate ``k = round(level * T)`` time steps, zeroing them (the tensor keeps its ``T`` steps).

    Paper (``ssec.robust``): "**Temporal Truncate:** Practical data collection often results in incomplete
    temporal information ... we randomly truncate a portion of temporal data by proportion to evaluate the
    model's adaptability to incomplete sequences" (levels 0.1 .. 0.5, Table ``tab:temporal_truncate``).
    The paper does not say which end is cut, so:

    * ``mode="tail"`` (default, deterministic): the recording stops early, the **last** ``k`` steps are zeroed;
    * ``mode="head"``: the first ``k`` steps are zeroed (recording starts late);
    * ``mode="random"``: a random crop, i.e. a contiguous window of ``T - k`` steps starting at an offset drawn
      uniformly from ``0..k`` is kept and the ``offset`` leading and ``k - offset`` trailing steps are zeroed
      (one draw per sample) - a literal reading of "randomly truncate".

    Steps are zeroed rather than removed so the model sees the same ``T`` (its time axis and readout stay
    unchanged), which is how a truncated recording integrated into ``T`` fixed-length bins looks.

    Args:
        x: the event frames, as in :mod:`fsnn.data.corruptions`; not modified.
        level: the fraction of the ``T`` steps zeroed, a number in ``[0, 1]`` (``k = round(level * T)``, half up);
            no default (``conf/robustness/events.yaml``: 0.1 .. 0.5).
        generator: as in :mod:`fsnn.data.corruptions`, the draw of the kept window's offset with ``mode="random"``;
            ignored by ``"tail"`` and ``"head"``; default ``None``.
        mode: which steps are zeroed, ``"tail"`` (default), ``"head"`` or ``"random"`` (see above).
    """
    xb, batched = _check_frames(x)
    t = xb.shape[1]
    k = round_count(level, t)
    out = xb.clone()
    if k == 0:
        return _restore(out, batched)
    if mode == "tail":
        out[:, t - k :] = 0
    elif mode == "head":
        out[:, :k] = 0
    else:
        g = as_generator(generator)
        for b in range(out.shape[0]):
            start = int(torch.randint(0, k + 1, (1,), generator=g))
            out[b, :start] = 0
            out[b, start + t - k :] = 0
    return _restore(out, batched)


# -- 4. temporal jitter -----------------------------------------------------------------------


@checked
def temporal_jitter(
    x: torch.Tensor, level: float, generator=None, *, boundary: one_of("clamp", "wrap") = "clamp"
) -> torch.Tensor:
    """Move events in time by random integer offsets of at most ``m = round(level * T)`` steps; counts preserved.

    Paper (``ssec.robust``): "**Temporal Jitter:** Real systems often suffer from temporal synchronization
    errors and clock drift, affecting the precise timing of spike events. To simulate these timing
    uncertainties, we add random temporal offsets to spike events in the time dimension" (levels 0.1 .. 0.9,
    Table ``tab:temporal_jitter``). The paper does not give the unit of the level; here it is the **maximum
    offset as a fraction of the sequence length** ``T``: ``m = round(level * T)`` (e.g. ``T = 16``: 0.1 -> 2
    steps, 0.5 -> 8, 0.9 -> 14).

    On integrated frames an "event" is the count in one bin ``(t, c, h, w)``: every bin of every sample draws its
    own offset ``d`` uniformly from ``{-m, ..., m}`` and its whole count is added to bin ``(t + d, c, h, w)``
    (for 0/1 or small counts this is per-event jitter; fractional counts from resized frames move as a unit).
    Events pushed outside ``[0, T)`` are kept: ``boundary="clamp"`` (default) puts them in the first / last step
    (the recording window is fixed), ``boundary="wrap"`` wraps them around (``(t + d) mod T``). Either way no
    event is created or lost: the sum over the tensor, and over time for every pixel and channel, is unchanged
    (exactly for integer-valued counts; up to float rounding of the summation otherwise). ``m = 0`` is identity.

    Args:
        x: the event frames, as in :mod:`fsnn.data.corruptions`; not modified.
        level: the maximum offset as a fraction of ``T`` (``m = round(level * T)``, half up), a finite
            number >= 0 (above 1 is allowed: offsets then reach past the window and are clamped or wrapped); no default
            (``conf/robustness/events.yaml``: 0.1 .. 0.9).
        generator: as in :mod:`fsnn.data.corruptions`; default ``None``.
        boundary: where events pushed outside ``[0, T)`` go: ``"clamp"`` (default: the first / last step) or
            ``"wrap"`` (modulo ``T``).
    """
    lv = _check_level(level, "jitter level")
    xb, batched = _check_frames(x)
    t = xb.shape[1]
    m = round_count(lv, t)
    if m == 0:
        return _restore(xb.clone(), batched)
    g = as_generator(generator)
    offsets = torch.randint(-m, m + 1, xb.shape, generator=g).to(xb.device)
    steps = torch.arange(t, device=xb.device).view(1, t, *([1] * (xb.dim() - 2)))
    target = steps + offsets
    target = target.clamp(0, t - 1) if boundary == "clamp" else target.remainder(t)
    out = torch.zeros_like(xb)
    out.scatter_add_(1, target, xb)
    return _restore(out, batched)


# -- 5. frame discard -------------------------------------------------------------------------


@checked
def frame_discard(x: torch.Tensor, level: Ratio, generator=None) -> torch.Tensor:
    """Zero ``k = round(level * T)`` whole frames (all channels and pixels) chosen uniformly without replacement.

    Paper (``ssec.robust``): "**Discard Frame:** Data transmission and processing systems frequently experience
    packet loss and intermittent data missing ... we randomly discard partial frames in the temporal sequence to
    evaluate the model's robustness to data loss" (levels 0.1 .. 0.5, Table ``tab:discard``). Discarded frames
    are zeroed (not removed) so ``T`` is unchanged. In a batch each sample draws its own ``k`` frames (in batch
    order from the same generator).

    Args:
        x: the event frames, as in :mod:`fsnn.data.corruptions`; not modified.
        level: the fraction of the ``T`` frames zeroed, a number in ``[0, 1]`` (``k = round(level * T)``, half
            up); no default (``conf/robustness/events.yaml``: 0.1 .. 0.5).
        generator: as in :mod:`fsnn.data.corruptions`; default ``None``.
    """
    xb, batched = _check_frames(x)
    t = xb.shape[1]
    k = round_count(level, t)
    out = xb.clone()
    if k:
        g = as_generator(generator)
        for b in range(out.shape[0]):
            out[b, torch.randperm(t, generator=g)[:k].to(out.device)] = 0
    return _restore(out, batched)


# -- registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorruptionMeta:
    """What a study asks of a corruption, given at its registration.

    Args:
        family: what it corrupts, ``"vision"`` (event frames) or ``"graph"``.
        probe: whether it is a probe of the model (its entry maps a level to the model's ``spike_noise_std``) rather
            than a change of the data; default ``False``.
    """

    family: str
    probe: bool = False

    def __post_init__(self):
        if self.family not in ("vision", "graph"):
            raise ValueError(f"family must be 'vision' or 'graph', got {self.family!r}")


#: every corruption by name, with its :class:`CorruptionMeta`
CORRUPTIONS = Registry("corruption", meta=CorruptionMeta)
for _fn in (gaussian_noise, center_occlusion, temporal_truncation, temporal_jitter, frame_discard):
    CORRUPTIONS.register(_fn.__name__, _fn, family="vision")


def family_corruption(family: str, name: str) -> Callable:
    """The corruption ``name`` of ``family``; :class:`fsnn.registry.UnknownNameError` naming the family's others."""
    names = CORRUPTIONS.names(family=family)
    if CORRUPTIONS.key(name) not in names:
        raise UnknownNameError(f"{family} corruption", name, names)
    return CORRUPTIONS[name]


def corrupt(x: torch.Tensor, name: str, level: float, generator=None, **options) -> torch.Tensor:
    """The vision corruption ``name`` applied: ``fn(x, level, generator, **options)``."""
    return family_corruption("vision", name)(x, level, generator, **options)


def sample_seed(seed: int, index: int) -> int:
    """The seed of sample ``index`` under study seed ``seed`` (both >= 0): the first 32-bit word of numpy's
    ``SeedSequence([seed, index])``, a hash that mixes both. (torch's CPU generator keeps only the low 32 bits
    of a seed, so a plain ``seed * 2**32 + index`` would give every study seed the same draws.)"""
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


class CorruptedDataset(Dataset):
    """``dataset`` (items ``(frames [T, C, H, W], label)``) with ``corrupt(frames, name, level, g, **options)`` applied
    to every item; sample ``i`` draws from a generator seeded with :func:`sample_seed` ``(seed, i)``.

    Per-sample seeds make the corrupted test set the same whatever the batch size, the number of loader workers or
    the order of reads. Since the seed does not depend on the level, the draws are shared across levels (common
    random numbers): e.g. the frames discarded at 0.2 include those discarded at 0.1 (``randperm(T)[:k]`` grows
    with ``k``) and the noise at std 0.4 is that at 0.2 scaled by 2, so an accuracy-vs-level curve measures the
    level, not a fresh random draw at each point.
    """

    def __init__(self, dataset, name: str, level: float, seed: int = 0, options: Mapping | None = None):
        family_corruption("vision", name)
        self.dataset, self.name, self.level, self.seed = dataset, name, float(level), int(seed)
        self.options = dict(options or {})

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int):
        x, y = self.dataset[index]
        generator = torch.Generator().manual_seed(sample_seed(self.seed, index))
        return corrupt(x, self.name, self.level, generator, **self.options), y


# -- graph corruptions ------------------------------------------------------------------------


def mask_graph_features(graph, level: float, generator=None, *, mode: str = "entry"):
    """A shallow copy of ``graph`` (a PyG ``Data``) whose node features ``x`` have a fraction ``level`` zeroed.

    Paper ("Robustness to Feature Masking Ratios in Graph Learning"): "a proportion of features in the graph
    feature matrix are zeroed out according to predefined ratios"; the masked matrix is then fed to the model.
    ``mode="entry"`` zeroes ``round(level * N * F)`` entries, ``mode="column"`` whole feature columns
    (:func:`fsnn.data.graph_features.mask_features`). The masked graph goes through the model's own preprocessing
    (SGC propagation and z-scoring for SGCN/DRSGNN), as the raw feature matrix does in training.

    Args:
        graph: a PyG ``Data`` with node features ``x`` ``[N, F]``; not modified (its other fields are shared).
        level: the fraction of the features zeroed, a number in ``[0, 1]``; no default
            (``conf/robustness/graph.yaml``: 0.1 .. 0.5).
        generator: as in :mod:`fsnn.data.corruptions`; default ``None``.
        mode: what is zeroed, ``"entry"`` (default: single entries of the matrix) or ``"column"`` (whole features).
    """
    out = copy.copy(graph)
    out.x = mask_features(graph.x, level, generator, mode=mode)
    return out


def drop_graph_edges(graph, level: float, generator=None):
    """A shallow copy of ``graph`` with ``round(level * U)`` of its ``U`` undirected edges removed (both directions).

    Paper ("Structural Robustness Under Edge Dropping Scenarios"): "a predefined proportion of edges in the graph
    adjacency matrix are randomly zeroed out"; the modified adjacency is then used for prediction
    (:func:`fsnn.data.graph_features.drop_edges`; the result is symmetric and coalesced, as the loaders' graphs are).

    Args:
        graph: a PyG ``Data`` with an ``edge_index`` ``[2, E]``; not modified (its other fields are shared).
        level: the fraction of the undirected edges removed, a number in ``[0, 1]`` (self loops count as edges);
            no default (``conf/robustness/graph.yaml``: 0.1 .. 0.5).
        generator: as in :mod:`fsnn.data.corruptions`; default ``None``.
    """
    out = copy.copy(graph)
    out.edge_index = drop_edges(graph.edge_index, level, generator)
    return out


def spike_noise_std(level: float) -> float:
    """The ``spike_noise_std`` of the graph models' noise probe at ``level``: Gaussian noise of standard deviation
    ``level`` added to the encoded input spikes (paper, "Robustness Test", Fig. ``fig:robust_SGCN``: "we randomly
    add Gaussian noise of varying intensities to the spike signals input to the network").

    Args:
        level: the noise's standard deviation, a finite number >= 0 (the spikes are 0 or 1); no default
            (``conf/robustness/graph.yaml``: 0.1 .. 0.5). ``0`` turns the probe off.
    """
    return _check_level(level, "spike noise std")


CORRUPTIONS.register("feature_masking", mask_graph_features, family="graph")
CORRUPTIONS.register("edge_dropping", drop_graph_edges, family="graph")
# a model probe, not a change of the graph: the entry maps a level to the model's spike_noise_std
CORRUPTIONS.register("spike_noise", spike_noise_std, family="graph", probe=True)
