"""Event-camera datasets: events -> frames, the on-disk frame cache, and the tonic / SpikingJelly loaders.

Pipeline for every event dataset (N-MNIST, DVS128 Gesture, N-Caltech101, DVS-Lip, HARDVS, digits_dvs):

1. the upstream loader class (tonic, or SpikingJelly for HARDVS) lists and parses the raw files of one official
   split; :class:`EventSource` wraps it with a sorted sample order and integer labels;
2. :func:`events_to_frames` integrates each sample into ``T`` frames split by event count (SpikingJelly's
   ``split_by='number'``), per-pixel per-polarity counts, and bins them onto the output grid;
3. :class:`FrameCache` stores one compressed ``.npz`` per sample under
   ``<data_dir>/fsnn_cache/<name>/T<T>_s<size>/<split>/`` (atomic writes, completion marker written last with the
   content digest of every sample, checked at each read; ``build_dataset(cache_dir=...)`` moves it, e.g. when
   ``data_dir`` is read-only);
4. :class:`FrameDataset` serves ``(float32 [T, 2, H, W], int)`` from the cache, for a subset of indices
   (train / val / test carved with seeded, stratified splits).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch.utils.data import Dataset

from fsnn.atomic import content_digest, file_lock, write_atomic, write_json_atomic
from fsnn.data.cache import read_json
from fsnn.data.common import (
    DatasetInfo,
    DatasetMissingError,
    abspath,
    dataset_missing,
    stratified_split,
)

log = logging.getLogger(__name__)

MARKER = "_COMPLETE.json"
CACHE_FORMAT = 2  # 2: the marker holds each sample's content digest
#: datasets without an official split (N-Caltech101, digits_dvs): a fixed, seeded, stratified 80/20
#: train/test split of the sorted sample list.
TEST_FRACTION = 0.2
#: the seed of fixed train/test splits (independent of the run seed, so every run is tested on the same samples)
SPLIT_SEED = 0


# -- integration -------------------------------------------------------------------------------


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


def events_to_frames(
    x, y, t, p, T: int, sensor_hw: tuple[int, int], out_hw: tuple[int, int] | None = None
) -> np.ndarray:
    """Integrate one event stream into ``T`` frames: ``int64 [T, 2, H_out, W_out]`` event counts.

    Events are put in time order (stable sort on ``t`` when not already sorted) and split into ``T`` slices by
    count (:func:`frame_slices`). Channel 0 counts OFF events (``p <= 0``), channel 1 ON events (``p > 0``),
    SpikingJelly's convention. Coordinates are clipped into the sensor ``(H, W) = sensor_hw``.

    Resizing to ``out_hw``: along an axis that shrinks, each input pixel's events are added to output cell
    ``floor(c * n_out / n_in)`` (sum pooling), so ``frames.sum() == len(t)`` exactly, at any size that does not
    exceed the sensor; along an axis that grows, each output cell repeats its nearest input pixel's count
    (nearest-neighbour zoom, counts per pixel kept, total multiplied). Without resizing the sum always equals the
    number of events.
    """
    H, W = int(sensor_hw[0]), int(sensor_hw[1])
    Ho, Wo = (H, W) if out_hw is None else (int(out_hw[0]), int(out_hw[1]))
    x = np.asarray(x).astype(np.int64, copy=False)
    y = np.asarray(y).astype(np.int64, copy=False)
    t = np.asarray(t)
    p = np.asarray(p)
    n = len(t)
    if not (len(x) == len(y) == len(p) == n):
        raise ValueError("x, y, t, p must have the same length")
    if n > 1 and np.any(t[1:] < t[:-1]):
        order = np.argsort(t, kind="stable")
        x, y, p = x[order], y[order], p[order]
    x = np.clip(x, 0, W - 1)
    y = np.clip(y, 0, H - 1)
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


# -- sources: one official split, as the upstream loader sees it --------------------------------


class EventSource:
    """One official split of an event dataset: ``keys`` (sample identities, e.g. paths relative to the dataset
    folder, sorted), ``labels`` (int class per key), ``sensor_hw`` and ``read(i) -> (x, y, t, p)`` parsing sample
    ``i`` through the upstream loader; ``location``: the folder the keys are relative to. ``fingerprint`` hashes
    keys, labels and sensor so that a cache built from a different file list is never reused."""

    def __init__(
        self,
        dataset: str,
        split: str,
        sensor_hw: tuple[int, int],
        keys: list[str],
        labels,
        read: Callable[[int], tuple],
        location: Path | None = None,
    ):
        self.dataset = dataset
        self.location = location
        self.split = split
        self.sensor_hw = (int(sensor_hw[0]), int(sensor_hw[1]))
        self.keys = list(keys)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.read = read
        if len(self.keys) != len(self.labels):
            raise ValueError("keys and labels differ in length")

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def fingerprint(self) -> str:
        h = hashlib.sha256()
        h.update(f"{self.dataset}|{self.split}|{self.sensor_hw}|{len(self.keys)}\n".encode())
        for key, label in zip(self.keys, self.labels.tolist()):
            h.update(f"{key}\t{label}\n".encode())
        return h.hexdigest()


class EventReader:
    """Picklable ``read(i)``: ``dataset[order[i]]`` -> ``(x, y, t, p)``; the events may be a tonic structured
    array or a SpikingJelly ``data_type='event'`` dict (both index by field name)."""

    def __init__(self, dataset, order):
        self.dataset = dataset
        self.order = [int(i) for i in order]

    def __call__(self, i: int):
        events, _ = self.dataset[self.order[i]]
        return events["x"], events["y"], events["t"], events["p"]


# -- frame cache -------------------------------------------------------------------------------


def size_tag(hw: tuple[int, int]) -> str:
    """``128`` for square sizes, ``180x240`` otherwise (cache folder names)."""
    return str(hw[0]) if hw[0] == hw[1] else f"{hw[0]}x{hw[1]}"


class FrameCache:
    """Integrated frames of one :class:`EventSource` at ``(T, out_hw)``, one file per sample.

    Folder: ``<cache_root>/<dataset>/T<T>_s<size>/<split>/`` (``cache_root`` defaults to ``<data_dir>/fsnn_cache``)
    with ``0000000.npz`` ... (keys ``frames``: counts in a compact unsigned dtype, ``label``, ``n_events``) and
    ``_COMPLETE.json`` written last: format version, T, size, sensor, the source fingerprint, and per sample its
    label, event count, file size and the digest of its frames (:func:`fsnn.atomic.content_digest`).
    :meth:`ensure` reuses a complete cache, rebuilds missing/truncated sample files of a marked cache, and
    rebuilds everything when the marker is absent, stale or unreadable. :meth:`load` re-integrates, with a warning
    naming the file, a sample whose file cannot be read or whose frames do not match their digest (bit rot).
    """

    def __init__(self, source: EventSource, cache_root: Path, T: int, out_hw: tuple[int, int]):
        self.source = source
        self.T = int(T)
        self.out_hw = (int(out_hw[0]), int(out_hw[1]))
        self.dir = abspath(cache_root) / source.dataset / f"T{self.T}_s{size_tag(self.out_hw)}" / source.split
        self.manifest: dict | None = None

    def sample_path(self, i: int) -> Path:
        return self.dir / f"{i:07d}.npz"

    def _expected(self) -> dict:
        return {
            "format": CACHE_FORMAT,
            "dataset": self.source.dataset,
            "split": self.source.split,
            "T": self.T,
            "size": list(self.out_hw),
            "sensor": list(self.source.sensor_hw),
            "fingerprint": self.source.fingerprint,
            "n": len(self.source),
        }

    def write_sample(self, i: int) -> tuple[int, int, np.ndarray]:
        """Integrate sample ``i`` from the source and write its file atomically -> ``(bytes, n_events, frames)``
        (integration is deterministic: the frames, and so their digest, are the same at every rebuild).
        A raw file the upstream loader cannot parse raises :class:`DatasetMissingError` naming it."""
        try:
            x, y, t, p = self.source.read(i)
        except Exception as err:  # noqa: BLE001 - a damaged raw file is damaged data, reported as such
            src = self.source
            where = Path(src.location) / src.keys[i] if src.location else src.keys[i]
            raise DatasetMissingError(
                f"Dataset {src.dataset!r}: the raw sample {where} could not be read ({type(err).__name__}: {err}). "
                f"The copy in {src.location or 'its folder'} looks damaged; extract it again.",
                dataset=src.dataset,
                directory=src.location or "",
            ) from err
        frames = compact_counts(events_to_frames(x, y, t, p, self.T, self.source.sensor_hw, self.out_hw))
        label = int(self.source.labels[i])
        n_events = int(len(t))
        # not synced: ensure() checks every sample's size against the (synced) manifest and rebuilds the damaged
        nbytes = (
            write_atomic(
                self.sample_path(i),
                lambda f: np.savez_compressed(f, frames=frames, label=np.int64(label), n_events=np.int64(n_events)),
                sync=False,
            )
            .stat()
            .st_size
        )
        return nbytes, n_events, frames

    def _build(self, indices: list[int], num_workers: int, sizes: list, n_events: list, digests: list) -> None:
        from tqdm.auto import tqdm

        H, W = self.out_hw
        desc = f"fsnn {self.source.dataset}/{self.source.split}: events -> {self.T} frames {H}x{W}"
        with tqdm(total=len(indices), desc=desc, unit="sample", mininterval=1.0) as bar:

            def one(i):
                nbytes, count, frames = self.write_sample(i)
                return i, nbytes, count, content_digest(frames)

            if num_workers > 1 and len(indices) > 1:
                with ThreadPoolExecutor(max_workers=num_workers) as pool:
                    results = pool.map(one, indices)
                    for i, nbytes, count, digest in results:
                        sizes[i], n_events[i], digests[i] = nbytes, count, digest
                        bar.update(1)
            else:
                for i in indices:
                    _, sizes[i], n_events[i], digests[i] = one(i)
                    bar.update(1)

    def ensure(self, num_workers: int = 1) -> dict:
        """Make the cache complete and return its manifest (the marker's content); see the class docstring."""
        expected = self._expected()
        n = expected["n"]
        with file_lock(self.dir.parent / f".{self.source.split}.lock"):
            marker = read_json(self.dir / MARKER)
            valid = (
                isinstance(marker, dict)
                and all(marker.get(k) == v for k, v in expected.items())
                and all(len(marker.get(k) or []) == n for k in ("sizes", "n_events", "labels", "digests"))
            )
            if valid:
                on_disk = {e.name: e.stat().st_size for e in os.scandir(self.dir) if e.name.endswith(".npz")}
                bad = [i for i in range(n) if on_disk.get(self.sample_path(i).name) != marker["sizes"][i]]
                if not bad:
                    self.manifest = marker
                    return marker
                log.warning(
                    "fsnn cache %s: %d of %d sample files missing or truncated; rebuilding them", self.dir, len(bad), n
                )
                sizes, n_events, digests = list(marker["sizes"]), list(marker["n_events"]), list(marker["digests"])
                self._build(bad, num_workers, sizes, n_events, digests)
            else:
                if self.dir.exists():
                    log.warning("fsnn cache %s is incomplete or stale (no valid %s); rebuilding it", self.dir, MARKER)
                    shutil.rmtree(self.dir)
                self.dir.mkdir(parents=True)
                log.info(
                    "fsnn: integrating %d %s/%s samples into %s", n, self.source.dataset, self.source.split, self.dir
                )
                sizes, n_events, digests = [0] * n, [0] * n, [""] * n
                self._build(list(range(n)), num_workers, sizes, n_events, digests)
            manifest = {
                **expected,
                "sizes": sizes,
                "n_events": n_events,
                "digests": digests,
                "labels": self.source.labels.tolist(),
            }
            write_json_atomic(self.dir / MARKER, manifest)
            self.manifest = manifest
            return manifest

    def load(self, i: int) -> np.ndarray:
        """Frames of sample ``i`` from its file, checked against the manifest's digest; a file that cannot be read
        (truncated, bit rot in the compressed data) or does not match is re-integrated and rewritten."""
        path = self.sample_path(i)
        try:
            with np.load(path) as z:
                frames = z["frames"]
            problem = (
                None
                if content_digest(frames) == self.manifest["digests"][i]
                else "its frames do not match the digest in " + MARKER
            )
        except Exception as err:  # noqa: BLE001 - zlib, zipfile, numpy or OS errors: any of them means damaged
            problem = f"unreadable: {type(err).__name__}: {err}"
        if problem is None:
            return frames
        log.warning("fsnn cache file %s is damaged (%s); re-integrating it from the raw data", path, problem)
        return self.write_sample(i)[2]


class FrameDataset(Dataset):
    """Subset ``indices`` of a :class:`FrameCache`: item ``i`` is ``(float32 tensor [T, 2, H, W], int label)``.

    Attributes: ``targets`` (labels of the subset), ``keys`` (source sample identities), ``n_events`` (events per
    sample before integration), ``info``.
    """

    def __init__(self, cache: FrameCache, indices, info: DatasetInfo | None = None):
        if cache.manifest is None:
            cache.ensure()
        self.cache = cache
        self.indices = [int(i) for i in indices]
        self.info = info
        labels = cache.manifest["labels"]
        self.targets = [int(labels[i]) for i in self.indices]
        self.keys = [cache.source.keys[i] for i in self.indices]
        self.n_events = [int(cache.manifest["n_events"][i]) for i in self.indices]

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int):
        frames = self.cache.load(self.indices[i])
        return torch.from_numpy(frames.astype(np.float32)), self.targets[i]


def splits_from_sources(
    info: DatasetInfo,
    sources: dict[str, EventSource],
    cache_root: Path,
    T: int,
    size: tuple[int, int],
    seed: int,
    val_fraction: float,
    num_workers: int,
):
    """``(train, val, test)`` :class:`FrameDataset` s from the official splits in ``sources``.

    ``{"train", "val", "test"}``: used as they are. ``{"train", "test"}``: val is a seeded, stratified
    ``val_fraction`` of train (:func:`stratified_split` with ``seed``). ``{"all"}``: a fixed stratified split
    (``SPLIT_SEED``) gives test = ``TEST_FRACTION`` of all, then val is carved from the rest as above.
    """
    caches = {split: FrameCache(src, cache_root, T, size) for split, src in sources.items()}
    for cache in caches.values():
        cache.ensure(num_workers)
    if set(sources) == {"train", "val", "test"}:
        return tuple(FrameDataset(caches[s], range(len(sources[s])), info) for s in ("train", "val", "test"))
    if set(sources) == {"train", "test"}:
        train_cache, test_cache = caches["train"], caches["test"]
        pool = np.arange(len(sources["train"]))
        test_idx = np.arange(len(sources["test"]))
    elif set(sources) == {"all"}:
        train_cache = test_cache = caches["all"]
        test_idx, pool = stratified_split(sources["all"].labels, [TEST_FRACTION], SPLIT_SEED)
    else:
        raise ValueError(f"unsupported split set {sorted(sources)}")
    val, train = stratified_split(sources[train_cache.source.split].labels[pool], [val_fraction], seed)
    return (
        FrameDataset(train_cache, pool[train], info),
        FrameDataset(train_cache, pool[val], info),
        FrameDataset(test_cache, test_idx, info),
    )


# -- tonic datasets ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TonicSpec:
    """Where and how a tonic dataset lives under ``<data_dir>/<folder>`` (tonic's ``save_to/<ClassName>``)."""

    name: str
    cls_name: str
    folder: str
    splits: dict  # our split -> (sub-folder inside <folder>, value of tonic's ``train`` argument or None)
    ext: str
    published: dict  # our split -> files of ``ext`` in the sub-folder of the published release
    sensor_hw: tuple[int, int]
    layout: tuple[str, ...]  # lines relative to <folder>
    downloadable: bool
    get_it: str


TONIC_SPECS = {
    "nmnist": TonicSpec(
        "nmnist",
        "NMNIST",
        "NMNIST",
        {"train": ("Train", True), "test": ("Test", False)},
        ".bin",
        {"train": 60000, "test": 10000},
        (34, 34),
        (
            "Train/<digit 0-9>/<id>.bin   (60,000 files of 5-byte ATIS events)",
            "Test/<digit 0-9>/<id>.bin    (10,000 files)",
            "train.zip, test.zip          (archives; optional once extracted)",
        ),
        True,
        "tonic downloads it automatically when online (train.zip/test.zip from "
        "https://data.mendeley.com/datasets/468j46mzdv); offline, fetch both archives from "
        "https://www.garrickorchard.com/datasets/n-mnist and extract them into {dir}",
    ),
    "dvsgesture": TonicSpec(
        "dvsgesture",
        "DVSGesture",
        "DVSGesture",
        {"train": ("ibmGestureTrain", True), "test": ("ibmGestureTest", False)},
        ".npy",
        {"train": 1077, "test": 264},
        (128, 128),  # tonic's release; the paper's 1,342 counts both splits
        (
            "ibmGestureTrain/user<NN>_<lighting>/<label 0-10>.npy   (1,077 files; int rows x, y, p, t[ms])",
            "ibmGestureTest/user<NN>_<lighting>/<label 0-10>.npy    (264 files)",
            "ibmGestureTrain.tar.gz, ibmGestureTest.tar.gz          (archives; optional once extracted)",
        ),
        True,
        "tonic downloads it automatically when online (tonic's preprocessed release: "
        "https://figshare.com/ndownloader/files/38022171 -> ibmGestureTrain.tar.gz, "
        "https://figshare.com/ndownloader/files/38020584 -> ibmGestureTest.tar.gz); offline, fetch both archives "
        "elsewhere and extract them into {dir}",
    ),
    "ncaltech101": TonicSpec(
        "ncaltech101",
        "NCALTECH101",
        "NCALTECH101",
        {"all": ("Caltech101", None)},
        ".bin",
        {"all": 8709},
        (180, 240),
        (
            "Caltech101/<class>/image_<NNNN>.bin   (101 class folders incl. BACKGROUND_Google, 8,709 files)",
            "N-Caltech101-archive.zip              (archive; optional once extracted)",
        ),
        True,
        "tonic downloads it automatically when online (N-Caltech101-archive.zip from "
        "https://data.mendeley.com/datasets/cy6cvx3ryv, see https://www.garrickorchard.com/datasets/n-caltech101); "
        "offline, extract that archive and the Caltech101.zip inside it into {dir}",
    ),
    "dvslip": TonicSpec(
        "dvslip",
        "DVSLip",
        "DVSLip",
        {"train": ("DVS-Lip/train", True), "test": ("DVS-Lip/test", False)},
        ".npy",
        {"train": 14896, "test": 4975},
        (128, 128),  # the DVS-Lip paper's split (Tan et al., CVPR 2022)
        (
            "DVS-Lip/train/<word>/<n>.npy   (100 word folders; structured arrays t, x, y, p)",
            "DVS-Lip/test/<word>/<n>.npy",
            "DVS-Lip.zip                    (alternative: fsnn extracts it when the folders are missing)",
        ),
        False,
        "manual download only (Google Drive): get DVS-Lip.zip from "
        "https://drive.google.com/file/d/1dBEgtmctTTWJlWnuWxFtk8gfOdVVpkQ0/view "
        "(project page https://sites.google.com/view/event-based-lipreading) and put it in {dir}",
    ),
}


def _count_files(folder: Path, ext: str, limit: int | None = None) -> int:
    """Number of ``*ext`` files under ``folder`` (recursively), counting no further than ``limit`` when given."""
    if not folder.is_dir():
        return 0
    return sum(1 for _ in islice(folder.rglob(f"*{ext}"), limit))


def tonic_problem(spec: TonicSpec, location: Path, verify: bool) -> str | None:
    """What is wrong with ``location`` (= ``<data_dir>/<folder>``) for ``spec``, or ``None`` when usable.

    A split is missing when its folder holds no sample file; with ``verify`` it must hold exactly the published
    number of files (``spec.published``; tonic's own check only asks for a minimum, e.g. 100 of DVS128 Gesture's
    1,077 training files). Archives are not required (they may be deleted after extraction)."""
    for split in spec.splits:
        problem = tonic_split_problem(spec, location, split, verify)
        if problem:
            return problem
    return None


def tonic_split_problem(spec: TonicSpec, location: Path, split: str, verify: bool) -> str | None:
    """:func:`tonic_problem` for one split."""
    sub = spec.splits[split][0]
    found = _count_files(location / sub, spec.ext, None if verify else 1)
    if found == 0:
        return f"no {spec.ext} files in {sub}/"
    published = spec.published[split]
    if verify and found != published:
        return (
            f"{'incomplete' if found < published else 'unexpected files'}: {sub}/ holds {found:,} {spec.ext} "
            f"files, the published release has {published:,} (set FSNN_DATA_VERIFY=0 or verify=False to accept "
            "a partial or modified copy)"
        )
    return None


def _missing(spec_name: str, location: Path, problem: str, layout, get_it: str, library: str) -> DatasetMissingError:
    """The layout lines of a spec are relative to ``location`` unless they place ``{dir}`` themselves."""
    lines = [line.format(dir=location) if "{dir}" in line else f"{location}/{line}" for line in layout]
    return dataset_missing(spec_name, location, problem, lines + [f"(read by {library})"], get_it.format(dir=location))


def _extract_nested_caltech(location: Path) -> None:
    """After tonic's download of N-Caltech101 only the outer archive is extracted; extract the inner
    ``Caltech101.zip`` (searched up to two levels down) into ``location`` when ``Caltech101/`` is absent."""
    if (location / "Caltech101").is_dir():
        return
    from tonic.download_utils import extract_archive

    for inner in sorted(location.glob("Caltech101.zip")) + sorted(location.glob("*/Caltech101.zip")):
        extract_archive(str(inner), str(location))
        return


def _listed(cls, save_to: str, train: bool | None):
    """``cls(save_to, train=train)`` (a tonic dataset; ``train=None``: no such argument) without tonic's own
    ``_check_exists``: a subclass that answers yes constructs it, named like ``cls`` because tonic's folder is
    ``<save_to>/<class name>``."""
    trusting = type(cls.__name__, (cls,), {"_check_exists": lambda self: True})
    dataset = trusting(save_to=save_to, **({} if train is None else {"train": train}))
    dataset.__class__ = cls  # tonic's own class again: a class made here cannot be pickled (EventReader is)
    return dataset


def tonic_sources(spec: TonicSpec, data_dir: Path, *, download: bool, verify: bool) -> dict[str, EventSource]:
    """Check the layout (downloading through tonic where it can), then list each split through tonic's class.

    tonic's own ``_check_exists`` (archive present + file count) is skipped while constructing (a subclass overrides
    it), because the layout was checked here already (archives may be gone after extraction); tonic's parsing is
    used unchanged.
    Raises :class:`DatasetMissingError` when the data is missing/incomplete and cannot be downloaded."""
    import tonic.datasets

    cls = getattr(tonic.datasets, spec.cls_name)
    location = abspath(data_dir) / spec.folder
    problem = tonic_problem(spec, location, verify)
    library = f"tonic.datasets.{spec.cls_name}(save_to=<data_dir>)"
    if problem and spec.name == "dvslip" and (location / "DVS-Lip.zip").is_file():
        from tonic.download_utils import extract_archive

        log.info("fsnn: extracting %s", location / "DVS-Lip.zip")
        try:
            extract_archive(str(location / "DVS-Lip.zip"), str(location))
        except Exception as err:  # noqa: BLE001 - a corrupt archive is reported as missing data
            problem = f"{problem}; extracting DVS-Lip.zip failed ({type(err).__name__}: {err})"
        else:
            problem = tonic_problem(spec, location, verify)
    if problem and spec.downloadable and download:
        try:  # tonic's own class downloads and extracts what its check finds missing
            for split, (_, train) in spec.splits.items():
                if tonic_split_problem(spec, location, split, verify):
                    cls(save_to=str(abspath(data_dir)), **({} if train is None else {"train": train}))
            if spec.name == "ncaltech101":
                _extract_nested_caltech(location)
        except Exception as err:  # noqa: BLE001 - any download failure means: data missing
            problem = f"{problem}; automatic download failed ({type(err).__name__}: {err})"
        else:
            problem = tonic_problem(spec, location, verify)
    elif problem and spec.downloadable:
        problem = f"{problem}; automatic download disabled (download=False or FSNN_DATA_DOWNLOAD=0)"
    if problem:
        raise _missing(spec.name, location, problem, spec.layout, spec.get_it, library)

    sources = {}
    for split, (_, train) in spec.splits.items():
        ds = _listed(cls, str(abspath(data_dir)), train)
        paths = [os.path.relpath(p, ds.location_on_system) for p in ds.data]
        order = sorted(range(len(paths)), key=paths.__getitem__)
        keys = [paths[i] for i in order]
        targets = [ds.targets[i] for i in order]
        if spec.name == "ncaltech101":  # tonic gives the class folder name; index it in the sorted folder list
            classes = sorted(set(targets))
            targets = [classes.index(c) for c in targets]
        sources[split] = EventSource(spec.name, split, spec.sensor_hw, keys, targets, EventReader(ds, order), location)
    return sources


def build_tonic(
    info: DatasetInfo,
    data_dir: Path,
    T: int,
    size,
    seed: int,
    val_fraction: float,
    *,
    download: bool,
    verify: bool,
    num_workers: int,
    cache_dir: Path,
):
    """``(train, val, test)`` for a tonic dataset (``info.name`` in :data:`TONIC_SPECS`): ``nmnist``,
    ``dvsgesture``, ``ncaltech101`` and ``dvslip``; each split a :class:`FrameDataset` of ``(float32 [T, 2, H, W],
    label)``.

    Args:
        info: the dataset's registry entry (:class:`fsnn.data.common.DatasetInfo`, ``kind="event"``): its name,
            classes, sensor folder and default ``T`` / size.
        data_dir: the root folder of the datasets (the config's ``paths.data_dir``, default ``$FSNN_DATA`` or
            ``./data``); the dataset's layout under it is in :data:`TONIC_SPECS` / :data:`HARDVS_LAYOUT`, and a
            missing or incomplete one raises :class:`fsnn.data.common.DatasetMissingError` naming it.
        T: the number of frames each recording is integrated into (split by event count), an integer >= 1;
            :func:`fsnn.data.build_dataset` passes ``info.default_T`` when not given (the paper's: 16 for N-MNIST,
            DVS128 Gesture, N-Caltech101 and DVS-Lip, 8 for HarDVS).
        size: the frames' ``(H, W)``, a pair of integers >= 1 (events are binned from the sensor's grid onto it);
            :func:`fsnn.data.build_dataset` turns an int or ``None`` (``info.size``, e.g. 128 x 128) into the pair.
        seed: the seed of the validation split carved from the training set, an integer >= 0 (the run's seed).
        val_fraction: the share of the training recordings held out for validation, stratified by class, a
            number in ``(0, 1)`` (default ``0.1``, ``conf/dataset/*.yaml``). N-Caltech101 has no official split:
            a fixed 20 % (:data:`TEST_FRACTION`, seed :data:`SPLIT_SEED`) is its test set and validation is carved
            from the rest.
        download: whether tonic may download missing files (``True`` or ``False``; resolved from
            ``$FSNN_DATA_DOWNLOAD``, default on); DVS-Lip cannot be downloaded automatically.
        verify: ``True`` checks that every split holds the published number of files (e.g. DVS128 Gesture
            1,077 / 264); ``False`` accepts the expected layout with at least one sample per split (subsets, tiny
            fixtures). Resolved from ``$FSNN_DATA_VERIFY``, default on.
        num_workers: the threads integrating recordings into frames when the cache is first built, an integer >= 1
            (:func:`fsnn.data.build_dataset`'s default: ``min(8, cpu_count)``); not the data loader's workers.
        cache_dir: the root of the frame cache, a path (default ``<data_dir>/fsnn_cache``); the frames of one
            ``T`` and size live in ``<cache_dir>/<name>/T<T>_s<size>/<split>/``.
    """
    sources = tonic_sources(TONIC_SPECS[info.name], data_dir, download=download, verify=verify)
    return splits_from_sources(info, sources, cache_dir, T, size, seed, val_fraction, num_workers)


# -- HARDVS (SpikingJelly) ---------------------------------------------------------------------
# ``hardvs`` is the full HarDVS (107,646 recordings, 300 actions), ``hardvs_mini`` SpikingJelly's MINI-HARDVS subset
# (MINI_HARDVS_files.zip). Both are read through ``spikingjelly.datasets.HARDVS`` from its raw layout
# ``events_np/{train,val,test}/action_<NNN>/<sample>.npz``; they differ in where that layout comes from.

HARDVS_SENSOR = (260, 346)
HARDVS_SPLITS = ("train", "val", "test")
#: the official split of the full HarDVS (Wang et al., "HARDVS: Revisiting Human Activity Recognition with Dynamic
#: Vision Sensors", AAAI 2024): 60 / 10 / 30 % of 107,646 recordings
HARDVS_SIZES = {"train": 64_522, "val": 10_734, "test": 32_390}
HARDVS_LISTS = tuple(f"{split}_label.txt" for split in HARDVS_SPLITS)
HARDVS_MINI_DOWNLOADS = ("MINI_HARDVS_files.zip", *HARDVS_LISTS)
HARDVS_RAW = (
    "events_np/{train,val,test}/action_<001-300>/<sample>.npz   (SpikingJelly's raw layout; numpy "
    "archives with keys t, x, y, p)"
)
HARDVS_LAYOUT = {
    "hardvs": (
        HARDVS_RAW + "; the full HarDVS: 64,522 / 10,734 / 32,390 samples",
        "or the official release unpacked: {dir}/extract/action_<001-300>/<sample>.npz (one folder per action) and "
        "{dir}/extract/{{train,val,test}}_label.txt (lines 'action_<NNN>/<sample> <label>'); fsnn links events_np/ "
        "from the lists (SpikingJelly's HARDVS.create_raw_from_extracted)",
    ),
    "hardvs_mini": (
        HARDVS_RAW + "; MINI-HARDVS",
        "or, for SpikingJelly to build events_np/ on first use: {dir}/download/{{MINI_HARDVS_files.zip, "
        "train_label.txt, val_label.txt, test_label.txt}}",
    ),
}
HARDVS_GET = {
    "hardvs": "manual download only: the event files and the train/val/test_label.txt lists of the full HarDVS "
    "from https://github.com/Event-AHU/HARDVS (links in its README); unpack the per-action archives into "
    "{dir}/extract/ and put the three lists beside them. For SpikingJelly's MINI-HARDVS subset use "
    "dataset=hardvs_mini",
    "hardvs_mini": "manual download only: get MINI_HARDVS_files.zip and the train/val/test_label.txt files from "
    "https://github.com/Event-AHU/HARDVS (links in its README) and put them in {dir}/download/",
}


def hardvs_problem(root: Path, verify: bool, sizes: dict[str, int] | None = None) -> str | None:
    """What is wrong with a HarDVS folder ``root`` for SpikingJelly's ``HARDVS`` loader, or ``None``.

    Needs ``events_np/<split>/`` with ``.npz`` samples for train, val and test and no ``events_np.building``
    marker (left by an interrupted preparation); with ``verify``, each split's sample count must match ``sizes``
    (the full HarDVS) or else ``extract/<split>_label.txt`` when that file exists."""
    raw = root / "events_np"
    if (root / "events_np.building").exists():
        return (
            f"an interrupted preparation left {root / 'events_np.building'}; delete it together "
            f"with {raw} (and {root / 'extract'} if damaged) and retry"
        )
    for split in HARDVS_SPLITS:
        d = raw / split
        if _count_files(d, ".npz", 1) == 0:
            return f"no .npz samples in events_np/{split}/"
        if not verify:
            continue
        labels = root / "extract" / f"{split}_label.txt"
        if sizes is not None:
            want, source = sizes[split], "the full HarDVS has"
        elif labels.is_file():
            want, source = sum(1 for line in labels.read_text().splitlines() if line.strip()), f"{labels.name} lists"
        else:
            continue
        have = sum(1 for _ in d.rglob("*.npz"))
        if have != want:
            return f"incomplete: events_np/{split}/ holds {have} samples, {source} {want}" + (
                " (MINI-HARDVS is dataset=hardvs_mini)" if sizes is not None else ""
            )
    return None


def _prepare_hardvs(name: str, root: Path, verify: bool) -> str | None:
    """Build ``events_np/`` where it is missing and its sources are there (``extract/`` with the three lists for the
    full HarDVS, ``download/`` for MINI-HARDVS, both through SpikingJelly), then :func:`hardvs_problem`."""
    from spikingjelly.datasets.hardvs import HARDVS

    sizes = HARDVS_SIZES if name == "hardvs" else None
    problem = hardvs_problem(root, verify, sizes)
    if not problem or (root / "events_np").exists() or (root / "events_np.building").exists():
        return problem
    extract, downloads = root / "extract", root / "download"
    try:
        if name == "hardvs" and all((extract / f).is_file() for f in HARDVS_LISTS):
            marker = root / "events_np.building"  # SpikingJelly's marker of a half-built events_np/
            marker.touch(exist_ok=False)
            (root / "events_np").mkdir()
            HARDVS.create_raw_from_extracted(extract, root / "events_np")
            for empty in (root / "events_np").glob("*/action_*"):  # it makes all 300; a partial copy has fewer
                if not any(empty.iterdir()):
                    empty.rmdir()
            marker.unlink()
        elif name == "hardvs_mini" and all((downloads / f).is_file() for f in HARDVS_MINI_DOWNLOADS):
            # SpikingJelly md5-checks download/, extracts to extract/ and links events_np/
            HARDVS(str(root), train_test_val="train", data_type="event")
        else:
            return problem
    except Exception as err:  # noqa: BLE001 - a failed preparation is reported as missing data
        return f"{problem}; preparing events_np/ failed ({type(err).__name__}: {err})"
    return hardvs_problem(root, verify, sizes)


def hardvs_sources(info: DatasetInfo, data_dir: Path, *, verify: bool) -> dict[str, EventSource]:
    """Check (and where possible prepare) ``<data_dir>/<info.directory>`` and list the official train/val/test
    splits through ``spikingjelly.datasets.HARDVS``. Labels: ``action_<k>`` -> ``k - 1`` (independent of which
    class folders exist)."""
    from spikingjelly.datasets.hardvs import HARDVS

    root = abspath(data_dir) / info.directory
    problem = _prepare_hardvs(info.name, root, verify)
    if problem:
        raise _missing(
            info.name,
            root,
            problem,
            HARDVS_LAYOUT[info.name],
            HARDVS_GET[info.name],
            f"spikingjelly.datasets.HARDVS(root=<data_dir>/{info.directory}, data_type='event')",
        )
    sources = {}
    for split in HARDVS_SPLITS:
        ds = HARDVS(str(root), train_test_val=split, data_type="event")
        base = root / "events_np"
        paths = [os.path.relpath(path, base) for path, _ in ds.samples]
        order = sorted(range(len(paths)), key=paths.__getitem__)
        keys = [paths[i] for i in order]
        labels = [int(ds.classes[ds.samples[i][1]].rsplit("_", 1)[1]) - 1 for i in order]
        sources[split] = EventSource(info.name, split, HARDVS_SENSOR, keys, labels, EventReader(ds, order), base)
    return sources


def build_hardvs(
    info: DatasetInfo,
    data_dir: Path,
    T: int,
    size,
    seed: int,
    val_fraction: float,
    *,
    download: bool,
    verify: bool,
    num_workers: int,
    cache_dir: Path,
):
    """``(train, val, test)`` for HarDVS or MINI-HARDVS: the official three splits (``val_fraction`` is not used;
    neither can be downloaded automatically); each split a :class:`FrameDataset` of ``(float32 [T, 2, H, W],
    label)``.

    Args:
        info: the dataset's registry entry (:class:`fsnn.data.common.DatasetInfo`, ``kind="event"``): its name,
            classes, sensor folder and default ``T`` / size.
        data_dir: the root folder of the datasets (the config's ``paths.data_dir``, default ``$FSNN_DATA`` or
            ``./data``); the dataset's layout under it is in :data:`TONIC_SPECS` / :data:`HARDVS_LAYOUT`, and a
            missing or incomplete one raises :class:`fsnn.data.common.DatasetMissingError` naming it.
        T: the number of frames each recording is integrated into (split by event count), an integer >= 1;
            :func:`fsnn.data.build_dataset` passes ``info.default_T`` when not given (the paper's: 16 for N-MNIST,
            DVS128 Gesture, N-Caltech101 and DVS-Lip, 8 for HarDVS).
        size: the frames' ``(H, W)``, a pair of integers >= 1 (events are binned from the sensor's grid onto it);
            :func:`fsnn.data.build_dataset` turns an int or ``None`` (``info.size``, e.g. 128 x 128) into the pair.
        seed: not used (the splits are official), an integer >= 0 accepted for the builders' one signature.
        val_fraction: not used: HarDVS and MINI-HARDVS have an official validation split; a number in
            ``(0, 1)``, accepted for the builders' one signature (``conf/dataset``: ``0.1``).
        download: not used: neither can be downloaded automatically (``True`` or ``False``); the error message
            says where to get the files by hand.
        verify: ``True`` checks every split's sample count (the full HarDVS: 64,522 / 10,734 / 32,390; MINI-HARDVS
            against its label files); ``False`` accepts at least one sample per split. Resolved from
            ``$FSNN_DATA_VERIFY``, default on.
        num_workers: the threads integrating recordings into frames when the cache is first built, an integer >= 1
            (:func:`fsnn.data.build_dataset`'s default: ``min(8, cpu_count)``); not the data loader's workers.
        cache_dir: the root of the frame cache, a path (default ``<data_dir>/fsnn_cache``); the frames of one
            ``T`` and size live in ``<cache_dir>/<name>/T<T>_s<size>/<split>/``.
    """
    sources = hardvs_sources(info, data_dir, verify=verify)
    return splits_from_sources(info, sources, cache_dir, T, size, seed, val_fraction, num_workers)
