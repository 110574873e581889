"""``digits_dvs``: an offline, N-MNIST-like event dataset simulated from scikit-learn's bundled digits.

N-MNIST was recorded by moving an ATIS camera along three saccades in front of MNIST digits. Here the 1797
``sklearn.datasets.load_digits`` images (8x8, 16 grey levels) go through the same kind of recording in simulation:

* each image is upsampled to 24x24 (bicubic, clipped to [0, 1]) and placed at offset 1 on a 32x32 sensor;
* the image moves along three straight saccades through the triangle (0, 0) -> (3, 6) -> (6, 0) -> (0, 0)
  pixels (N-MNIST's pattern, scaled to the digit), 100 ms each, 16 simulated time steps per saccade; at each step
  the shifted image is resampled bilinearly (sub-pixel translation);
* every pixel keeps a reference log intensity ``R`` (initially the log intensity of the static first view);
  when the log intensity ``L = log(I + 0.2)`` moves ``k`` thresholds away from ``R`` during a step, the pixel emits
  ``k`` ON (up) or OFF (down) events and ``R`` moves by ``k`` thresholds (the reset at each event); each event's
  timestamp is the instant the linearly interpolated ``L`` crosses its level, in microseconds;
* thresholds are 0.5 per pixel and polarity with a fixed, seeded 0.03 mismatch (as in real DVS pixels).

The events (``x, y, t, p`` per digit, about 2,250 per digit, 12 MB compressed for all 1797) are generated once, in a
few seconds, deterministically (fixed seed, dataset order), and stored under ``<data_dir>/digits_dvs/`` with an
atomic write and a completion marker. Frames are integrated like the real event datasets (frame cache, split by
event count). Splits: a fixed stratified 20 % test set, then ``val_fraction`` of the rest as validation (seeded).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np

from fsnn.atomic import file_lock, write_atomic, write_json_atomic
from fsnn.data.cache import read_json
from fsnn.data.environment import abspath
from fsnn.data.frame_cache import EventSource, splits_from_sources
from fsnn.data.info import BuilderArgs, DatasetInfo

log = logging.getLogger(__name__)

FOLDER = "digits_dvs"
EVENTS_FILE = "events.npz"
MARKER = "COMPLETE.json"
#: every parameter of the simulation; a cached copy made with other parameters is regenerated
PARAMS = {
    "version": 1,
    "sensor": 32,  # square sensor side (pixels)
    "digit": 24,  # side of the upsampled digit (pixels)
    "offset": 1,  # top-left corner of the digit at rest
    "amplitude": 6.0,  # saccade triangle size (pixels)
    "steps": 16,  # simulated steps per saccade
    "saccade_us": 100_000,  # duration of one saccade (microseconds)
    "eps": 0.2,  # L = log(I + eps)
    "threshold": 0.5,  # contrast threshold (log units)
    "threshold_sigma": 0.03,  # per-pixel threshold mismatch (std)
    "seed": 0,
}


def _shift_int(img: np.ndarray, ix: int, iy: int) -> np.ndarray:
    """``img[..., v, u] -> out[..., v + iy, u + ix]`` with zeros shifted in."""
    out = np.zeros_like(img)
    H, W = img.shape[-2:]
    out[..., max(iy, 0) : H + min(iy, 0), max(ix, 0) : W + min(ix, 0)] = img[
        ..., max(-iy, 0) : H + min(-iy, 0), max(-ix, 0) : W + min(-ix, 0)
    ]
    return out


def shift_bilinear(img: np.ndarray, dx: float, dy: float) -> np.ndarray:
    """``img`` translated by ``(dx, dy)`` pixels (sub-pixel, bilinear interpolation, zeros outside)."""
    ix, iy = int(np.floor(dx)), int(np.floor(dy))
    fx, fy = dx - ix, dy - iy
    return (
        (1 - fx) * (1 - fy) * _shift_int(img, ix, iy)
        + fx * (1 - fy) * _shift_int(img, ix + 1, iy)
        + (1 - fx) * fy * _shift_int(img, ix, iy + 1)
        + fx * fy * _shift_int(img, ix + 1, iy + 1)
    )


def saccade_path(params: dict = PARAMS) -> np.ndarray:
    """``[3 * steps, 2]`` image displacements ``(dx, dy)`` at the end of each simulated step."""
    a = float(params["amplitude"])
    vertices = np.array([[0.0, 0.0], [a / 2, a], [a, 0.0], [0.0, 0.0]])
    steps = int(params["steps"])
    f = (np.arange(steps) + 1.0) / steps
    return np.concatenate([vertices[s] + (vertices[s + 1] - vertices[s]) * f[:, None] for s in range(3)])


def simulate_dvs(images: np.ndarray, params: dict = PARAMS) -> dict[str, np.ndarray]:
    """Simulated DVS recording of ``images`` (``[N, h, w]`` intensities in [0, 1]) moved along the saccades.

    Returns ``x, y`` (uint8), ``t`` (int64 microseconds), ``p`` (uint8, 1 = ON) of all events, grouped by image and
    time-ordered within each image (ties by pixel index), and ``offsets`` (``[N + 1]``): image ``i``'s events are
    ``offsets[i]:offsets[i+1]``. See the module docstring for the model. Deterministic for given inputs/params.
    """
    import torch
    import torch.nn.functional as F

    S, D, off = int(params["sensor"]), int(params["digit"]), int(params["offset"])
    images = np.asarray(images, dtype=np.float32)
    N = len(images)
    up = F.interpolate(torch.from_numpy(images)[:, None], size=(D, D), mode="bicubic", align_corners=False)
    canvas = np.zeros((N, S, S), np.float32)
    canvas[:, off : off + D, off : off + D] = up[:, 0].clamp(0, 1).numpy()

    rng = np.random.default_rng(params["seed"])
    C, sigma = float(params["threshold"]), float(params["threshold_sigma"])
    thresholds = {
        pol: np.clip(rng.normal(C, sigma, (N, S, S)), 0.05 * C, None).astype(np.float32).ravel() for pol in (1, 0)
    }
    eps = np.float32(params["eps"])
    level_prev = np.log(canvas + eps).ravel()
    reference = level_prev.copy()
    step_us = float(params["saccade_us"]) / int(params["steps"])
    chunks = []
    for step, (dx, dy) in enumerate(saccade_path(params)):
        level = np.log(shift_bilinear(canvas, float(dx), float(dy)) + eps).ravel()
        span = level - level_prev
        safe_span = np.where(span != 0, span, 1.0)
        for pol, sign in ((1, 1.0), (0, -1.0)):
            th = thresholds[pol]
            crossings = np.floor(sign * (level - reference) / th).astype(np.int64)
            idx = np.flatnonzero(crossings > 0)
            if idx.size == 0:
                continue
            count = crossings[idx]
            pix = np.repeat(idx, count)
            k = np.arange(pix.size) - np.repeat(np.cumsum(count) - count, count) + 1  # 1..count per pixel
            crossed = reference[pix] + sign * k * th[pix]
            frac = np.clip((crossed - level_prev[pix]) / safe_span[pix], 0.0, 1.0)
            t = np.floor((step + frac) * step_us).astype(np.int64)
            reference[idx] += sign * count * th[idx]
            chunks.append((pix, t, np.full(pix.size, pol, np.uint8)))
        level_prev = level
    # sort by (image, t, pixel, p) through one packed integer key: [image | t | pixel | p]
    pix = np.concatenate([c[0] for c in chunks])
    t = np.concatenate([c[1] for c in chunks])
    p = np.concatenate([c[2] for c in chunks]).astype(np.int64)
    sample, pixel = np.divmod(pix, S * S)
    t_bits = int(t.max()).bit_length()
    pix_bits = int(S * S - 1).bit_length()
    if int(N).bit_length() + t_bits + pix_bits + 1 > 62:
        raise ValueError("too many images / too long a recording for the packed sort key")
    key = np.sort((((sample << t_bits | t) << pix_bits | pixel) << 1) | p)
    p = (key & 1).astype(np.uint8)
    pixel = (key >> 1) & ((1 << pix_bits) - 1)
    t = (key >> (1 + pix_bits)) & ((1 << t_bits) - 1)
    sample = key >> (1 + pix_bits + t_bits)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(sample, minlength=N))]).astype(np.int64)
    y, x = np.divmod(pixel, S)
    return {"x": x.astype(np.uint8), "y": y.astype(np.uint8), "t": t, "p": p, "offsets": offsets}


def _encode(events: dict, labels: np.ndarray) -> dict:
    """Compact on-disk form: timestamps difference-coded within each sample (uint32)."""
    t, offsets = events["t"], events["offsets"]
    dt = np.diff(t, prepend=0)
    starts = offsets[:-1][offsets[:-1] < offsets[1:]]
    dt[starts] = t[starts]
    return {
        "x": events["x"],
        "y": events["y"],
        "p": events["p"],
        "dt": dt.astype(np.uint32),
        "offsets": offsets,
        "labels": labels.astype(np.int64),
    }


def _decode(z) -> tuple[dict, np.ndarray]:
    offsets = z["offsets"]
    dt = z["dt"].astype(np.int64)
    csum = np.cumsum(dt)
    counts = np.diff(offsets)
    base = np.zeros(len(counts), np.int64)
    nonempty = counts > 0
    base[nonempty] = csum[offsets[:-1][nonempty]] - dt[offsets[:-1][nonempty]]
    t = csum - np.repeat(base, counts)
    if t.size and t.max() < 2**32:
        t = t.astype(np.uint32)
    return {"x": z["x"], "y": z["y"], "t": t, "p": z["p"], "offsets": offsets}, z["labels"]


def _savez_fast(fileobj, arrays: dict) -> None:
    """``np.savez_compressed`` at zlib level 1 (several times faster, about 10 % larger); ``np.load`` reads it."""
    import zipfile

    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, array in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.asarray(array), allow_pickle=False)


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def generate(data_dir: Path, params: dict = PARAMS) -> Path:
    """Simulate all 1797 digits and store them in ``<data_dir>/digits_dvs/events.npz`` (atomic), then write
    ``COMPLETE.json`` (params, counts, size, sha256). Returns the folder."""
    from sklearn.datasets import load_digits

    folder = abspath(data_dir) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    digits = load_digits()
    images = digits.images.astype(np.float32) / 16.0
    log.info("fsnn: simulating DVS recordings of %d digits into %s", len(images), folder)
    events = simulate_dvs(images, params)
    encoded = _encode(events, np.asarray(digits.target))
    nbytes = write_atomic(folder / EVENTS_FILE, lambda f: _savez_fast(f, encoded)).stat().st_size
    write_json_atomic(
        folder / MARKER,
        {
            "params": params,
            "n_samples": int(len(images)),
            "n_events": int(len(events["t"])),
            "bytes": nbytes,
            "sha256": _sha256(folder / EVENTS_FILE),
        },
    )
    return folder


def load_events(data_dir: Path, params: dict = PARAMS) -> tuple[dict, np.ndarray]:
    """The simulated events and labels, generating (or regenerating) them when the stored copy is absent,
    unmarked, made with other parameters, or fails its size/sha256 check."""
    folder = abspath(data_dir) / FOLDER
    path = folder / EVENTS_FILE
    with file_lock(folder / ".lock"):
        marker = read_json(folder / MARKER)
        ok = (
            isinstance(marker, dict)
            and marker.get("params") == params
            and path.is_file()
            and path.stat().st_size == marker.get("bytes")
            and _sha256(path) == marker.get("sha256")
        )
        if not ok:
            if marker is not None or path.exists():
                log.warning("fsnn: %s is incomplete or stale; regenerating it", folder)
            (folder / MARKER).unlink(missing_ok=True)
            generate(data_dir, params)
        with np.load(path) as z:
            return _decode(z)


class ArrayReader:
    """Picklable ``read(i)`` over the stored events (concatenated arrays + offsets), held in memory once read.

    Pickling (e.g. for spawned DataLoader workers) drops the arrays; they are re-read from ``path`` on first use."""

    def __init__(self, path: Path, events: dict | None = None):
        self.path = Path(path)
        self.events = events

    def __getstate__(self):
        return {"path": self.path, "events": None}

    def __call__(self, i: int):
        if self.events is None:
            with np.load(self.path) as z:
                self.events = _decode(z)[0]
        e = self.events
        a, b = int(e["offsets"][i]), int(e["offsets"][i + 1])
        return e["x"][a:b], e["y"][a:b], e["t"][a:b], e["p"][a:b]


def digits_source(data_dir: Path) -> EventSource:
    """All 1797 simulated recordings as one split ``"all"`` (keys ``digit_0000`` ... in dataset order)."""
    events, labels = load_events(data_dir)
    keys = [f"digit_{i:04d}" for i in range(len(labels))]
    S = int(PARAMS["sensor"])
    reader = ArrayReader(abspath(data_dir) / FOLDER / EVENTS_FILE, events)
    return EventSource(FOLDER, "all", (S, S), keys, labels, reader, abspath(data_dir) / FOLDER)


def build_digits_dvs(args: BuilderArgs):
    """``(train, val, test)``: fixed stratified 20 % test, ``val_fraction`` of the rest as validation.

    Args:
        args: the :class:`fsnn.data.info.BuilderArgs` of the call, its fields read so:

            * ``info``: ``kind="event"``, 10 classes.
            * ``data_dir``: the simulated events are generated once into ``<data_dir>/digits_dvs/`` (and again when that
              copy is missing, stale or fails its checksum).
            * ``T``: default ``8`` (``info.default_T``, ``conf/dataset/digits_dvs.yaml``).
            * ``size``: binned from the simulated sensor's grid; default ``(32, 32)``.
            * ``seed``: the test split is fixed whatever the seed.
            * ``val_fraction``: a share of the non-test recordings.
            * ``download``: not used (the data is generated in code, nothing is downloaded).
            * ``verify``: not used (the stored events carry their own checksum).
            * ``cache_dir``: the recordings are one split, ``all``: ``<cache_dir>/digits_dvs/T<T>_s<size>/all/``.
    """
    return splits_from_sources(args, {"all": digits_source(args.data_dir)})


#: the dataset this module reads, registered by :mod:`fsnn.data.registry`
INFOS = (
    DatasetInfo(
        name="digits_dvs",
        kind="event",
        num_classes=10,
        in_channels=2,
        size=(32, 32),
        default_T=8,
        library="fsnn (simulated from sklearn digits)",
        directory="digits_dvs",
        builder=build_digits_dvs,
    ),
)
