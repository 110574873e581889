"""The frame cache of the event datasets and the datasets served from it.

Every event dataset (N-MNIST, DVS128 Gesture, N-Caltech101, DVS-Lip: :mod:`fsnn.data.tonic_datasets`; HarDVS:
:mod:`fsnn.data.hardvs`; digits_dvs: :mod:`fsnn.data.digits_dvs`) goes through the same steps:

1. its loader lists and parses the raw files of one official split; :class:`EventSource` wraps it with a sorted
   sample order and integer labels (:class:`EventReader` reads a sample through the upstream dataset class);
2. :class:`FrameCache` integrates each sample into ``T`` frames (:func:`fsnn.data.event_frames.events_to_frames`) and
   stores one file of raw counts per sample under ``<data_dir>/fsnn_cache/<name>/T<T>_s<size>/<split>/`` (atomic
   writes, completion marker written last with the CRC-32 of every sample, checked at each read;
   ``build_dataset(cache_dir=...)`` moves it, e.g. when ``data_dir`` is read-only);
3. :class:`FrameDataset` serves ``(float32 [T, 2, H, W], int)`` from the cache, for a subset of indices (or, through
   :meth:`FrameDataset.as_counts`, the integer counts themselves, what the suite's data loaders carry);
   :func:`splits_from_sources` carves train / val / test with seeded, stratified splits (:data:`TEST_FRACTION`,
   :data:`SPLIT_SEED` for datasets without an official test split).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch.utils.data import Dataset

from fsnn.atomic import file_lock, write_atomic, write_json_atomic
from fsnn.data.cache import read_json
from fsnn.data.environment import abspath
from fsnn.data.errors import DatasetMissingError
from fsnn.data.event_frames import compact_counts, events_to_frames
from fsnn.data.info import BuilderArgs, DatasetInfo
from fsnn.data.splits import stratified_split

log = logging.getLogger(__name__)

#: a sample's count dtype by its bytes per count: :func:`fsnn.data.event_frames.compact_counts`' choices
COUNT_DTYPES = {np.dtype(t).itemsize: np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.int64)}
MARKER = "_COMPLETE.json"
SAMPLE_SUFFIX = ".frames"
# 2: the marker holds each sample's content digest; 3: raw counts, their CRC-32 and the split's dtype; 4: each raw
# file's size and modification time, and the marker's own digest
CACHE_FORMAT = 4
#: datasets without an official split (N-Caltech101, digits_dvs): a fixed, seeded, stratified 80/20
#: train/test split of the sorted sample list.
TEST_FRACTION = 0.2
#: the seed of fixed train/test splits (independent of the run seed, so every run is tested on the same samples)
SPLIT_SEED = 0

# -- sources: one official split, as the upstream loader sees it --------------------------------


class EventSource:
    """One official split of an event dataset: ``keys`` (sample identities, e.g. paths relative to the dataset
    folder, sorted), ``labels`` (int class per key), ``sensor_hw`` and ``read(i) -> (x, y, t, p)`` parsing sample
    ``i`` through the upstream loader; ``location``: the folder the keys are relative to. ``fingerprint`` hashes
    keys, labels and sensor so that a cache built from a different file list is never reused; :meth:`raw_stats`
    says what each sample's raw file is now, so that a cached sample whose file changed is integrated again."""

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

    def raw_stats(self) -> list[list[int] | None]:
        """``[size, mtime_ns]`` of each sample's raw file (``location / key``), ``None`` where the key names no file
        (a generated dataset's samples): what a sample's frames depend on besides its key and label."""
        stats = []
        for key in self.keys:
            try:
                found = os.stat(Path(self.location) / key) if self.location is not None else None
            except OSError:
                found = None
            stats.append([found.st_size, found.st_mtime_ns] if found is not None and found.st_size else None)
        return stats

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


def read_frames(path: Path, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """The counts of shape ``shape`` in the cache file ``path`` (their bytes in C order, nothing else: a read is one
    copy) and the CRC-32 of those bytes. Their dtype is the one whose size divides the file into ``prod(shape)``
    counts (:data:`COUNT_DTYPES`); a file of another size raises ``ValueError``."""
    raw = np.fromfile(path, np.uint8)
    itemsize, rest = divmod(raw.size, math.prod(shape))
    if rest or itemsize not in COUNT_DTYPES:
        raise ValueError(f"{raw.size} bytes are not {math.prod(shape)} counts of shape {shape}")
    return raw.view(COUNT_DTYPES[itemsize]).reshape(shape), zlib.crc32(raw)


def _digest(manifest: dict) -> str:
    """SHA-256 of a cache marker's content less its ``digest``: a marker edited or damaged since it was written (a
    wrong CRC-32 in it would have every read re-integrate a healthy sample) fails it."""
    content = {k: v for k, v in manifest.items() if k != "digest"} if isinstance(manifest, dict) else manifest
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


class FrameCache:
    """Integrated frames of one :class:`EventSource` at ``(T, out_hw)``, one file per sample.

    Folder: ``<cache_root>/<dataset>/T<T>_s<size>/<split>/`` (``cache_root`` defaults to ``<data_dir>/fsnn_cache``)
    with ``0000000.frames`` ... (the counts in a compact unsigned dtype, uncompressed: a read is one copy, fast
    enough to feed a GPU from a few loader workers; label and event count are in the marker) and
    ``_COMPLETE.json`` written last: format version, T, size, sensor, the source fingerprint, the split's count
    dtype (``dtype``: the widest of its samples', so that a batch of any of them has one dtype), per sample its
    label, event count, file size, the CRC-32 of its bytes (``checksums``) and its raw file's size and modification
    time (``raw``, :meth:`EventSource.raw_stats`), and the SHA-256 of all that (``digest``).
    :meth:`ensure` reuses a complete cache, rebuilds the sample files of a marked cache that are missing, truncated
    or older than a change of their raw file, and rebuilds everything when the marker is absent, stale, unreadable
    or not what its digest says. :meth:`load` re-integrates, with a warning naming the file, a sample whose file
    cannot be read or whose bytes do not match their CRC-32 (bit rot). Labels are always the source's.
    """

    def __init__(self, source: EventSource, cache_root: Path, T: int, out_hw: tuple[int, int]):
        self.source = source
        self.T = int(T)
        self.out_hw = (int(out_hw[0]), int(out_hw[1]))
        self.dir = abspath(cache_root) / source.dataset / f"T{self.T}_s{size_tag(self.out_hw)}" / source.split
        self.manifest: dict | None = None

    def sample_path(self, i: int) -> Path:
        return self.dir / f"{i:07d}{SAMPLE_SUFFIX}"

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

    def _clear(self) -> None:
        """Remove what this cache writes in its folder (sample files, the marker, their unfinished temporaries) and
        nothing else: a folder that is a link (the cache on another disk) stays a link, and a file the cache did not
        write stays where it is."""
        for entry in os.scandir(self.dir):
            name = entry.name.split(".tmp-")[0].lstrip(".")
            if entry.is_file(follow_symlinks=False) and (name.endswith(SAMPLE_SUFFIX) or name == MARKER):
                os.unlink(entry.path)

    def write_sample(self, i: int) -> tuple[int, int, np.ndarray]:
        """Integrate sample ``i`` from the source and write its file atomically -> ``(bytes, n_events, frames)``
        (integration is deterministic: the frames, and so their checksum, are the same at every rebuild).
        A raw file the upstream loader cannot parse raises :class:`DatasetMissingError` naming it."""
        try:
            x, y, t, p = self.source.read(i)
            frames = compact_counts(events_to_frames(x, y, t, p, self.T, self.source.sensor_hw, self.out_hw))
        except Exception as err:  # noqa: BLE001 - a damaged raw file is damaged data, reported as such
            src = self.source
            where = Path(src.location) / src.keys[i] if src.location else src.keys[i]
            raise DatasetMissingError(
                f"Dataset {src.dataset!r}: the raw sample {where} could not be read ({type(err).__name__}: {err}). "
                f"The copy in {src.location or 'its folder'} looks damaged; extract it again.",
                dataset=src.dataset,
                directory=src.location or "",
            ) from err
        data = np.ascontiguousarray(frames).tobytes()
        # not synced: ensure() checks every sample's size against the (synced) manifest and rebuilds the damaged
        write_atomic(self.sample_path(i), lambda f: f.write(data), sync=False)
        return len(data), int(len(t)), frames

    def _build(
        self, indices: list[int], num_workers: int, sizes: list, n_events: list, checksums: list
    ) -> np.dtype | None:
        """Write the samples ``indices`` (filling their entries of ``sizes``, ``n_events`` and ``checksums``) ->
        the widest dtype of their counts (``None`` when ``indices`` is empty)."""
        from tqdm.auto import tqdm

        H, W = self.out_hw
        desc = f"fsnn {self.source.dataset}/{self.source.split}: events -> {self.T} frames {H}x{W}"
        with tqdm(total=len(indices), desc=desc, unit="sample", mininterval=1.0) as bar:

            def one(i):
                nbytes, count, frames = self.write_sample(i)
                return i, nbytes, count, zlib.crc32(np.ascontiguousarray(frames)), frames.dtype

            widest = None
            threads = num_workers > 1 and len(indices) > 1
            with ThreadPoolExecutor(max_workers=num_workers) if threads else contextlib.nullcontext() as pool:
                for i, nbytes, count, checksum, dtype in (pool.map if threads else map)(one, indices):
                    sizes[i], n_events[i], checksums[i] = nbytes, count, checksum
                    widest = dtype if widest is None else np.promote_types(widest, dtype)
                    bar.update(1)
            return widest

    def ensure(self, num_workers: int = 1) -> dict:
        """Make the cache complete and return its manifest (the marker's content); see the class docstring."""
        expected = self._expected()
        n = expected["n"]
        raw = self.source.raw_stats()
        with file_lock(self.dir.parent / f".{self.source.split}.lock"):
            marker = read_json(self.dir / MARKER)
            valid = (
                isinstance(marker, dict)
                and marker.get("digest") == _digest(marker)
                and all(marker.get(k) == v for k, v in expected.items())
                and all(len(marker.get(k) or []) == n for k in ("sizes", "n_events", "labels", "checksums", "raw"))
                and marker.get("dtype") in {t.name for t in COUNT_DTYPES.values()}
            )
            if valid:
                on_disk = {e.name: e.stat().st_size for e in os.scandir(self.dir) if e.name.endswith(SAMPLE_SUFFIX)}
                bad = [i for i in range(n) if on_disk.get(self.sample_path(i).name) != marker["sizes"][i]]
                missing = set(bad)
                changed = [i for i in range(n) if marker["raw"][i] != raw[i] and i not in missing]
                if not bad and not changed:
                    self.manifest = marker
                    return marker
                log.warning(
                    "fsnn cache %s: of %d samples, %d files missing or truncated, %d raw files changed since they "
                    "were integrated; integrating those again",
                    self.dir,
                    n,
                    len(bad),
                    len(changed),
                )
                bad = sorted(bad + changed)
                sizes, n_events, checksums = (list(marker[k]) for k in ("sizes", "n_events", "checksums"))
                self._build(bad, num_workers, sizes, n_events, checksums)  # the frames, so the dtype, are the same
                dtype = np.dtype(marker["dtype"])
            else:
                if self.dir.exists():
                    log.warning("fsnn cache %s is incomplete or stale (no valid %s); rebuilding it", self.dir, MARKER)
                    self._clear()
                self.dir.mkdir(parents=True, exist_ok=True)
                log.info(
                    "fsnn: integrating %d %s/%s samples into %s", n, self.source.dataset, self.source.split, self.dir
                )
                sizes, n_events, checksums = [0] * n, [0] * n, [0] * n
                dtype = self._build(list(range(n)), num_workers, sizes, n_events, checksums) or np.dtype(np.uint8)
            manifest = {
                **expected,
                "sizes": sizes,
                "n_events": n_events,
                "checksums": checksums,
                "labels": self.source.labels.tolist(),
                "raw": raw,
                "dtype": dtype.name,
            }
            manifest["digest"] = _digest(manifest)
            write_json_atomic(self.dir / MARKER, manifest)
            self.manifest = manifest
            return manifest

    def load(self, i: int) -> np.ndarray:
        """Frames of sample ``i`` from its file, checked against the manifest's CRC-32; a file that cannot be read
        (truncated, of another size) or does not match its CRC-32 (bit rot) is re-integrated and rewritten."""
        path = self.sample_path(i)
        try:
            frames, checksum = read_frames(path, (self.T, 2, *self.out_hw))
            problem = (
                None if checksum == self.manifest["checksums"][i] else "its bytes do not match the CRC-32 in " + MARKER
            )
        except Exception as err:  # noqa: BLE001 - numpy or OS errors: either means damaged
            problem = f"unreadable: {type(err).__name__}: {err}"
        if problem is None:
            return frames
        log.warning("fsnn cache file %s is damaged (%s); re-integrating it from the raw data", path, problem)
        return self.write_sample(i)[2]


class FrameDataset(Dataset):
    """Subset ``indices`` of a :class:`FrameCache`: item ``i`` is ``(float32 tensor [T, 2, H, W], int label)``, or
    with ``counts`` the event counts themselves in the split's dtype (``uint8`` mostly: the cache's ``dtype``), a
    quarter of the bytes for a data loader's workers to collate and send (:meth:`as_counts`).

    Attributes: ``targets`` (labels of the subset), ``keys`` (source sample identities), ``n_events`` (events per
    sample before integration), ``info``, ``counts``.
    """

    def __init__(self, cache: FrameCache, indices, info: DatasetInfo | None = None, counts: bool = False):
        if cache.manifest is None:
            cache.ensure()
        self.cache = cache
        self.counts = bool(counts)
        self.dtype = np.dtype(cache.manifest["dtype"]) if self.counts else np.dtype(np.float32)
        self.indices = [int(i) for i in indices]
        self.info = info
        labels = cache.source.labels  # the source's, never the marker's copy
        self.targets = [int(labels[i]) for i in self.indices]
        self.keys = [cache.source.keys[i] for i in self.indices]
        self.n_events = [int(cache.manifest["n_events"][i]) for i in self.indices]

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int):
        frames = self.cache.load(self.indices[i])
        return torch.from_numpy(frames.astype(self.dtype, copy=False)), self.targets[i]

    def as_counts(self) -> FrameDataset:
        """The same samples with items ``(integer counts [T, 2, H, W], int label)``: what the suite's loaders carry,
        turned into float32 on the device (:class:`fsnn.suite.training.SpikingClassifier`)."""
        return FrameDataset(self.cache, self.indices, self.info, counts=True)


def splits_from_sources(args: BuilderArgs, sources: dict[str, EventSource]):
    """``(train, val, test)`` :class:`FrameDataset` s of the dataset ``args.info`` from the official splits in
    ``sources``, integrated at ``args.T`` and ``args.size`` into the cache under ``args.cache_dir`` by
    ``args.num_workers`` threads (:class:`fsnn.data.info.BuilderArgs`).

    ``{"train", "val", "test"}``: used as they are. ``{"train", "test"}``: val is a seeded, stratified
    ``val_fraction`` of train (:func:`stratified_split` with ``seed``). ``{"all"}``: a fixed stratified split
    (``SPLIT_SEED``) gives test = ``TEST_FRACTION`` of all, then val is carved from the rest as above.
    """
    info, seed, val_fraction = args.info, args.seed, args.val_fraction
    caches = {split: FrameCache(src, args.cache_dir, args.T, args.size) for split, src in sources.items()}
    for cache in caches.values():
        cache.ensure(args.num_workers)
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
