"""Event streams -> frames: the integration step of every event dataset.

:func:`events_to_frames` puts one recording's events in time order, splits them into ``T`` slices by event count
(:func:`frame_slices`, SpikingJelly's ``split_by='number'``), counts them per pixel and polarity, and bins the counts
from the sensor's grid onto the output grid (sum pooling along an axis that shrinks, nearest-neighbour zoom along one
that grows). :func:`compact_counts` stores counts in the smallest unsigned dtype that holds them, as the frame cache
(:mod:`fsnn.data.frame_cache`) writes them.
"""

from __future__ import annotations

import numpy as np


def frame_slices(n_events: int, T: int) -> np.ndarray:
    """Frame index of each of ``n_events`` time-ordered events, SpikingJelly's ``split_by='number'`` rule:
    with ``d = n_events // T``, frame ``j < T-1`` takes events ``[j*d, (j+1)*d)`` and the last frame takes the
    rest ``[(T-1)*d, n_events)`` (so all events land in the last frame when ``n_events < T``)."""
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    d = n_events // T
    if d == 0:
        return np.full(n_events, T - 1, dtype=np.int64)
    return np.minimum(np.arange(n_events, dtype=np.int64) // d, T - 1)


def _axis_map(coord: np.ndarray, n_in: int, n_out: int) -> np.ndarray:
    """Output-grid coordinate of each input coordinate when ``n_out <= n_in``: ``floor(c * n_out / n_in)``, i.e.
    the output cell whose footprint contains the input pixel's left edge (sum pooling with a non-integer factor)."""
    return (coord * n_out) // n_in


def _sensor_axis(c: np.ndarray, name: str, size: int) -> np.ndarray:
    """Coordinates ``c`` of one axis as int64, checked to lie in ``[0, size)``."""
    if c.size and c.dtype.kind == "f" and not np.isfinite(c).all():
        raise ValueError(f"event coordinate {name}: {int((~np.isfinite(c)).sum())} values are not finite numbers")
    c = c.astype(np.int64, copy=False)
    if c.size and (c.min() < 0 or c.max() >= size):
        raise ValueError(
            f"event coordinate {name} must lie in [0, {size}) for this sensor; found {int(c.min())}..{int(c.max())} "
            f"({int(((c < 0) | (c >= size)).sum())} of {c.size} events outside)"
        )
    return c


def events_to_frames(
    x, y, t, p, T: int, sensor_hw: tuple[int, int], out_hw: tuple[int, int] | None = None
) -> np.ndarray:
    """Integrate one event stream into ``T`` frames: ``int64 [T, 2, H_out, W_out]`` event counts.

    Events are put in time order (stable sort on ``t`` when not already sorted) and split into ``T`` slices by
    count (:func:`frame_slices`). Channel 0 counts OFF events (``p <= 0``), channel 1 ON events (``p > 0``),
    SpikingJelly's convention. Coordinates must lie in the sensor ``(H, W) = sensor_hw`` (``0 <= x < W``,
    ``0 <= y < H``): an event outside it, or at a coordinate that is not a finite number, is a ``ValueError`` naming
    the range found, since it means a damaged file or a misread format (swapped axes, a wrong bit field), which
    clipping into an edge pixel would hide.

    Resizing to ``out_hw``: along an axis that shrinks, each input pixel's events are added to output cell
    ``floor(c * n_out / n_in)`` (sum pooling), so ``frames.sum() == len(t)`` exactly, at any size that does not
    exceed the sensor; along an axis that grows, each output cell repeats its nearest input pixel's count
    (nearest-neighbour zoom, counts per pixel kept, total multiplied). Without resizing the sum always equals the
    number of events.
    """
    H, W = int(sensor_hw[0]), int(sensor_hw[1])
    Ho, Wo = (H, W) if out_hw is None else (int(out_hw[0]), int(out_hw[1]))
    x, y = (_sensor_axis(np.asarray(c), name, size) for c, name, size in ((x, "x", W), (y, "y", H)))
    t = np.asarray(t)
    p = np.asarray(p)
    n = len(t)
    if not (len(x) == len(y) == len(p) == n):
        raise ValueError("x, y, t, p must have the same length")
    if n > 1 and np.any(t[1:] < t[:-1]):
        order = np.argsort(t, kind="stable")
        x, y, p = x[order], y[order], p[order]
    # grid the events are counted on: the output size along shrinking axes, the sensor size along growing ones
    Hg, Wg = min(H, Ho), min(W, Wo)
    if Hg != H:
        y = _axis_map(y, H, Hg)
    if Wg != W:
        x = _axis_map(x, W, Wg)
    on = (p > 0).astype(np.int64)
    frame = frame_slices(n, T)
    flat = ((frame * 2 + on) * Hg + y) * Wg + x
    frames = np.bincount(flat, minlength=T * 2 * Hg * Wg).reshape(T, 2, Hg, Wg)
    if Ho > Hg:
        frames = frames[:, :, (np.arange(Ho) * Hg) // Ho, :]
    if Wo > Wg:
        frames = frames[:, :, :, (np.arange(Wo) * Wg) // Wo]
    return frames


def compact_counts(frames: np.ndarray) -> np.ndarray:
    """Counts in the smallest unsigned dtype that holds them (uint8 / uint16 / uint32), for compact caches."""
    top = int(frames.max()) if frames.size else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return frames.astype(dtype)
    return frames.astype(np.int64)
