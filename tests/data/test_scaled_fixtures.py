"""fsnn.data.fakes.scaled_fixtures, .scaled_events, .scaled_images and ``fsnn-fixtures --scale``: fakes at a
fraction of the published size, file counts per split and class, events inside the sensor, spread statistics,
balanced polarity, determinism, a class signal, and the suite's loaders (tonic's, SpikingJelly's and torchvision's
classes) reading them, with verification at the published counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from helpers import run_app

from fsnn.data import build_dataset, dataset_info, tonic_datasets
from fsnn.data.errors import DatasetMissingError
from fsnn.data.fakes import make_fixtures, scaled_events as se, scaled_fixtures as sf, scaled_images as si
from fsnn.data.fakes.fixtures import FIXTURE_NAMES
from fsnn.data.hardvs import HARDVS_SIZES
from fsnn.data.static import NORMALIZATION
from fsnn.data.tonic_datasets import NCALTECH101_CLASSES

SCALE = 0.01
#: the smallest scale: one file per split and class
SMALLEST = 1e-6
#: (height, width) each fake's events lie in
SENSORS = {
    "dvsgesture": (128, 128),
    "nmnist": (34, 34),
    "ncaltech101": (180, 240),
    "dvslip": (128, 128),
    "hardvs": (260, 346),
}
#: small HarDVS recordings and ImageNet images, for fakes the tests can write in seconds
SMALL_FILES = {(se, "HARDVS_EVENTS"): (300, 0.5, (100, 1000)), (si, "IMAGENET_LONG_SIDE"): (48.0, 0.2, (32, 64))}


@cache
def full_plan(name: str) -> list:
    """The plan at 1.0, built once per test process (several tests compare with it)."""
    return sf.scaled_plan(name, 1.0)


@pytest.fixture(scope="module")
def scaled_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scaled")
    sf.write_scaled_fixtures(root, SCALE, sf.TONIC_NAMES)
    return root


def small_files(patch) -> None:
    for (module, name), value in SMALL_FILES.items():
        patch.setattr(module, name, value)


@pytest.fixture(scope="module")
def image_root(tmp_path_factory) -> Path:
    """CIFAR-10 and CIFAR-100 at :data:`SCALE`; HarDVS and ImageNet at :data:`SMALLEST` with small files."""
    root = tmp_path_factory.mktemp("images")
    sf.write_scaled_fixtures(root, SCALE, ["cifar10", "cifar100"])
    with pytest.MonkeyPatch.context() as patch:
        small_files(patch)
        sf.write_scaled_fixtures(root, SMALLEST, ["hardvs", "imagenet"])
    return root


def read_events(root: Path, name: str, path: str):
    """``(x, y, t[us], p)`` of a written fake file, read without the loaders."""
    if name == "dvsgesture":
        rows = np.load(root / path)
        return rows[:, 0], rows[:, 1], rows[:, 3] * 1000, rows[:, 2]
    if name in ("dvslip", "hardvs"):
        events = np.load(root / path)
        return tuple(events[key].astype(np.int64) for key in ("x", "y", "t", "p"))
    raw = np.frombuffer((root / path).read_bytes(), np.uint8).reshape(-1, 5).astype(np.int64)
    t = ((raw[:, 2] & 0x7F) << 16) | (raw[:, 3] << 8) | raw[:, 4]
    return raw[:, 0], raw[:, 1], t, raw[:, 2] >> 7


def test_scale_one_has_the_published_files():
    """At 1.0 each split has the file count ``verify`` compares; DVS128 Gesture's trials are the release's."""
    for name in sf.TONIC_NAMES:
        plan = full_plan(name)
        assert Counter(s.split for s in plan) == tonic_datasets.TONIC_SPECS[name].published
        assert len({s.path for s in plan}) == len(plan) and len({s.seed for s in plan}) == len(plan)
    gesture = sf.scaled_plan("dvsgesture", 1.0)
    trials = {split: {Path(s.path).parent.name for s in gesture if s.split == split} for split in ("train", "test")}
    assert len(trials["train"]) == 98 and len(trials["test"]) == 24
    users = {split: {int(t[4:6]) for t in trials[split]} for split in trials}
    assert users == {"train": set(range(1, 24)), "test": set(range(24, 30))}
    assert {t.split("_", 1)[1] for t in trials["train"] | trials["test"]} == {
        "fluorescent",
        "fluorescent_led",
        "lab",
        "led",
        "natural",
    }
    assert Counter(s.label for s in gesture) == {**{c: 122 for c in range(10)}, 10: 121}
    nmnist = sf.scaled_plan("nmnist", 1.0)
    for split, counts in se.MNIST_COUNTS.items():
        assert Counter(s.label for s in nmnist if s.split == split) == dict(enumerate(counts))
    caltech = sf.scaled_plan("ncaltech101", 1.0)
    folders = Counter(Path(s.path).parent.name for s in caltech)
    assert len(folders) == 101 and folders == se.NCALTECH_COUNTS and "Faces" not in folders
    assert folders["BACKGROUND_Google"] == 467 and sum(folders.values()) + 435 == 9144  # Caltech101 with Faces
    assert min(folders.values()) == 31 and max(folders.values()) == 800
    assert list(NCALTECH101_CLASSES) == sorted(folders) == list(se.NCALTECH_COUNTS)  # the release, in label order
    assert all(NCALTECH101_CLASSES[s.label] == Path(s.path).parent.name for s in caltech)
    assert {Path(s.path).name for s in caltech if s.label == 0} == {f"image_{k:04d}.bin" for k in range(1, 468)}
    import tonic.datasets

    lip = sf.scaled_plan("dvslip", 1.0)
    assert list(se.DVSLIP_WORDS) == tonic.datasets.DVSLip.classes  # the loader's labels
    assert all(se.DVSLIP_WORDS[s.label] == Path(s.path).parent.name for s in lip)
    for split, (most, fewest) in {"train": (149, 148), "test": (50, 49)}.items():
        per_word = Counter(s.label for s in lip if s.split == split)
        assert len(per_word) == 100 and set(per_word.values()) == {most, fewest}


def test_image_and_hardvs_plans_at_full_size():
    """CIFAR-10 / CIFAR-100 at 1.0: the published 50,000 / 10,000 images, per class and per file, CIFAR-100's real
    superclasses; HarDVS: the official split over 300 actions; ImageNet: the published counts and the real wnids
    (its full plan, 1.3 million entries, is not built: its counts are)."""
    cifar10 = full_plan("cifar10")
    assert Counter(s.split for s in cifar10) == {"train": 50_000, "test": 10_000}
    assert set(Counter((s.split, s.label) for s in cifar10).values()) == {5000, 1000}
    files = Counter(s.path for s in cifar10)
    assert files == {
        f"cifar-10-batches-py/{f}": 10_000 for f in [*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"]
    }
    assert all(n == 1000 for n in Counter((s.path, s.label) for s in cifar10).values())
    cifar100 = full_plan("cifar100")
    assert Counter(s.split for s in cifar100) == {"train": 50_000, "test": 10_000}
    assert set(Counter((s.split, s.label) for s in cifar100).values()) == {500, 100}
    assert Counter(s.path for s in cifar100) == {"cifar-100-python/train": 50_000, "cifar-100-python/test": 10_000}
    assert len(set(si.CIFAR100_CLASSES)) == 100 and len(si.CIFAR100_SUPERCLASSES) == 20
    assert list(si.CIFAR100_SUPERCLASSES) == sorted(si.CIFAR100_SUPERCLASSES)
    # the fine -> coarse labels in common use (e.g. sparse2coarse of the cifar100coarse projects)
    assert si.CIFAR100_COARSE == (
        4, 1, 14, 8, 0, 6, 7, 7, 18, 3, 3, 14, 9, 18, 7, 11, 3, 9, 7, 11, 6, 11, 5, 10, 7, 6, 13, 15, 3, 15,
        0, 11, 1, 10, 12, 14, 16, 9, 11, 5, 5, 19, 8, 8, 15, 13, 14, 17, 18, 10, 16, 4, 17, 4, 2, 0, 17, 4, 18, 17,
        10, 3, 2, 12, 12, 16, 12, 1, 9, 19, 2, 10, 0, 1, 16, 12, 9, 13, 15, 13, 16, 19, 2, 4, 6, 19, 5, 5, 8, 19,
        18, 1, 2, 15, 6, 0, 17, 8, 14, 13,
    )  # fmt: skip
    hardvs = full_plan("hardvs")
    assert Counter(s.split for s in hardvs) == HARDVS_SIZES and len({s.path for s in hardvs}) == 107_646
    assert {Path(s.path).parent.name for s in hardvs} == {f"action_{k:03d}" for k in range(1, 301)}
    assert all(Path(s.path).parent.name == f"action_{s.label + 1:03d}" for s in hardvs)
    per_action = Counter((s.split, s.label) for s in hardvs)
    assert {split: {n for (sp, _), n in per_action.items() if sp == split} for split in HARDVS_SIZES} == {
        "train": {215, 216},
        "val": {35, 36},
        "test": {107, 108},
    }
    counts = si.image_counts("imagenet")
    assert sum(counts["train"]) == 1_281_167 and (min(counts["train"]), max(counts["train"])) == (732, 1300)
    assert counts["val"] == [50] * 1000
    wnids, names = si.imagenet_classes()
    assert len(set(wnids)) == 1000 and list(wnids) == sorted(wnids) and wnids[0] == "n01440764"
    assert names[0] == ("tench", "Tinca tinca")
    imagenet = sf.scaled_plan("imagenet", 0.01)
    per_class = Counter((s.split, s.label) for s in imagenet)
    assert [per_class[("train", c)] for c in range(1000)] == [se.scaled_count(n, 0.01) for n in counts["train"]]
    assert counts["train"].count(1300) == 934 and {per_class[("val", c)] for c in range(1000)} == {1}
    val = [Path(s.path).name for s in imagenet if s.split == "val"]
    assert len(set(val)) == 1000 and max(val) <= "ILSVRC2012_val_00050000.JPEG"


@pytest.mark.parametrize("scale", [0.01, 0.1, 0.5])
def test_counts_per_split_and_class_follow_the_rounding_rule(scale):
    """Each (split, class) keeps ``max(1, floor(scale * n + 0.5))`` of its ``n`` full-scale samples, a subset of them
    (ImageNet at 0.01 only, compared with its published counts: its larger plans take seconds)."""
    for name in sf.SCALED_NAMES if scale == 0.01 else [n for n in sf.SCALED_NAMES if n != "imagenet"]:
        if name == "imagenet":
            full = {(split, c): n for split, per in si.image_counts(name).items() for c, n in enumerate(per)}
        else:
            full = Counter((s.split, s.label) for s in full_plan(name))
        plan = sf.scaled_plan(name, scale)
        assert Counter((s.split, s.label) for s in plan) == {k: max(1, int(scale * n + 0.5)) for k, n in full.items()}
        if name != "imagenet":
            assert {s.path for s in plan} <= {s.path for s in full_plan(name)}
    assert se.scaled_count(98, 0.01) == 1 and se.scaled_count(5923, 0.01) == 59 and se.scaled_count(10, 0.25) == 3


def test_written_files_match_the_plan(scaled_root, image_root):
    for name in sf.TONIC_NAMES:
        plan = sf.scaled_plan(name, SCALE)
        ext = "*.npy" if name in ("dvsgesture", "dvslip") else "*.bin"
        assert sorted(
            p.relative_to(scaled_root).as_posix() for p in scaled_root.rglob(ext) if name in str(p).lower()
        ) == (sorted(s.path for s in plan))
    for name, scale in (("hardvs", SMALLEST), ("imagenet", SMALLEST), ("cifar10", SCALE), ("cifar100", SCALE)):
        plan = sf.scaled_plan(name, scale)
        folder = image_root / ("HARDVS/extract" if name == "hardvs" else dataset_info(name).directory)
        ext = {"hardvs": "*.npz", "imagenet": "*.JPEG"}.get(name, "*_batch*" if name == "cifar10" else "t*")
        assert sorted(p.relative_to(image_root).as_posix() for p in folder.rglob(ext)) == sorted({s.path for s in plan})
    lists = image_root / "HARDVS" / "extract"
    hardvs = sf.scaled_plan("hardvs", SMALLEST)
    for split in HARDVS_SIZES:
        lines = (lists / f"{split}_label.txt").read_text().splitlines()
        assert lines == [f"{s.path[15:-4]} {s.label}" for s in hardvs if s.split == split] and len(lines) == 300
    assert (image_root / "imagenet" / "meta.bin").is_file() and (image_root / "cifar-100-python" / "meta").is_file()


@pytest.mark.parametrize(
    ("name", "hw", "duration_s"),
    [
        ("dvsgesture", (128, 128), (4.5, 9.5)),
        ("nmnist", (34, 34), (0.27, 0.33)),
        ("ncaltech101", (180, 240), (0.27, 0.33)),
        ("dvslip", (128, 128), (0.55, 1.5)),
    ],
)
def test_events_statistics(scaled_root, name, hw, duration_s):
    """Events inside the sensor, time-sorted from 0; durations and event counts spread; polarities balanced."""
    counts, durations, on = [], [], []
    for sample in sf.scaled_plan(name, SCALE):
        x, y, t, p = read_events(scaled_root, name, sample.path)
        assert x.min() >= 0 and x.max() < hw[1] and y.min() >= 0 and y.max() < hw[0]
        assert t.min() >= 0 and np.all(np.diff(t) >= 0) and set(np.unique(p)) <= {0, 1}
        counts.append(len(t))
        durations.append(t.max() / 1e6)
        on.append(p.mean())
    assert duration_s[0] <= min(durations) and max(durations) <= duration_s[1]
    assert np.std(durations) > 0.01 * np.mean(durations) and np.std(counts) > 0.1 * np.mean(counts)
    assert abs(np.mean(on) - 0.5) < 0.01


def test_event_counts_follow_the_tabled_distributions():
    """Medians of the drawn event counts and durations near the tabled ones (generated without writing)."""
    rng = np.random.default_rng(0)
    gestures = [se.gesture_events(rng, label) for label in range(11) for _ in range(4)]
    assert 1.5e5 < np.median([len(g) for g in gestures]) < 2.7e5
    assert 6.0 < np.mean([g[:, 3].max() / 1e3 for g in gestures]) < 7.6
    digits = [se.nmnist_events(rng, d) for d in range(10) for _ in range(30)]
    assert 3500 < np.median([len(d[0]) for d in digits]) < 4600
    images = [se.ncaltech_events(rng, c) for c in range(0, 101, 5) for _ in range(2)]
    assert 8e4 < np.median([len(i[0]) for i in images]) < 1.25e5
    assert all(0.27 < i[2].max() / 1e6 < 0.33 for i in images)
    lips = [se.dvslip_events(rng, w) for w in range(100) for _ in range(2)]
    assert 2.4e4 < np.median([len(w) for w in lips]) < 3.6e4
    assert 0.9 < np.mean([w["t"].max() / 1e6 for w in lips]) < 1.1
    actions = [se.hardvs_events(rng, c) for c in range(0, 300, 10)]
    assert 3.5e4 < np.median([len(a[0]) for a in actions]) < 7e4
    assert 4.6 < np.mean([a[2].max() / 1e6 for a in actions]) < 5.4 and all(3 <= a[2].max() / 1e6 < 8 for a in actions)
    assert all(a[0].max() < 346 and a[1].max() < 260 and a[0].min() >= 0 and a[1].min() >= 0 for a in actions)
    assert abs(np.mean([a[3].mean() for a in actions]) - 0.5) < 0.01 and len({len(a[0]) for a in actions}) > 20


def test_image_statistics(image_root):
    """ImageNet fakes: about 400 x 350 pixels on average and widely varying, about 110 KB per JPEG (generated without
    writing); CIFAR fakes: the training set's per-channel mean, an sd near its."""
    rng = np.random.default_rng(0)
    sizes = np.array([si.imagenet_size(rng) for _ in range(4000)])
    assert 380 < sizes[:, 1].mean() < 420 and 330 < sizes[:, 0].mean() < 370
    assert (
        np.percentile(sizes.max(axis=1), 95) > 1.5 * np.median(sizes.max(axis=1)) and (sizes[:, 0] > sizes[:, 1]).any()
    )
    jpegs = [si.imagenet_jpeg(rng, label) for label in range(0, 1000, 25)]
    assert 85e3 < np.mean([len(j) for j in jpegs]) < 135e3
    for name in ("cifar10", "cifar100"):
        data = load_cifar(image_root, name, "train")["data"].reshape(-1, 3, 1024) / 255
        mean, std = NORMALIZATION[name]
        assert np.allclose(data.mean(axis=(0, 2)), mean, atol=0.02)
        assert np.all(np.abs(data.std(axis=(0, 2)) - np.array(std)) < 0.06)


def load_cifar(root: Path, name: str, split: str) -> dict:
    """The fake's pickled split (CIFAR-10's training batches joined), read as torchvision reads it."""
    import pickle

    files = sorted({s.path for s in sf.scaled_plan(name, SCALE) if s.split == split})
    entries = [pickle.loads((root / f).read_bytes(), encoding="latin1") for f in files]
    joined = {key: [v for e in entries for v in e[key]] for key in entries[0] if key not in ("data", "batch_label")}
    return {**joined, "data": np.concatenate([e["data"] for e in entries])}


def features(root: Path, name: str, sample) -> np.ndarray:
    """A normalised 8 x 8 event histogram of each third of the sample: where and when its events fall."""
    x, y, t, _ = read_events(root, name, sample.path)
    height, width = SENSORS[name]
    third = np.minimum(3 * t // (t.max() + 1), 2)
    hist = np.zeros((3, 8, 8))
    np.add.at(hist, (third, 8 * y // height, 8 * x // width), 1)
    return (hist / hist.sum()).ravel()


@pytest.mark.parametrize("name", sf.TONIC_NAMES)
def test_classes_are_separable(scaled_root, name):
    """Class means differ: a nearest-class-mean classifier fitted on the training fakes beats chance on the test ones
    (N-Caltech101, one split: each class with two or more fakes holds its last one out)."""
    plan = sf.scaled_plan(name, SCALE)
    if name == "ncaltech101":
        by_class = {c: [s for s in plan if s.label == c] for c in {s.label for s in plan}}
        kept = {c: group for c, group in by_class.items() if len(group) >= 2}
        labels = {c: i for i, c in enumerate(sorted(kept))}
        plan = [replace(s, label=labels[c]) for c, group in kept.items() for s in group]
        held_out = {group[-1].path for group in kept.values()}
        plan = [replace(s, split="test" if s.path in held_out else "train") for s in plan]
    train = [s for s in plan if s.split == "train"]
    test = [s for s in plan if s.split == "test"]
    classes = sorted({s.label for s in plan})
    means = np.stack(
        [np.mean([features(scaled_root, name, s) for s in train if s.label == c], axis=0) for c in classes]
    )
    assert min(np.linalg.norm(means[i] - means[j]) for i in classes for j in classes if i < j) > 0.05
    hits = [np.argmin(np.linalg.norm(means - features(scaled_root, name, s), axis=1)) == s.label for s in test]
    assert np.mean(hits) > 3 / len(classes)


def nearest_class_mean(train: dict, test: dict) -> float:
    """Accuracy on ``test`` (``{label: [features]}``) of the class means of ``train``."""
    classes = sorted(train)
    means = np.stack([np.mean(train[c], axis=0) for c in classes])
    hits = [classes[np.argmin(np.linalg.norm(means - f, axis=1))] == c for c in test for f in test[c]]
    return float(np.mean(hits))


def test_image_and_hardvs_classes_are_separable(image_root):
    """Nearest class means beat chance at least 3-fold: CIFAR's pixels, ImageNet's 4 x 4 grid of mean colours,
    HarDVS's event histograms (one training and one test fake per class)."""
    for name in ("cifar10", "cifar100"):
        sets = []
        for split in ("train", "test"):
            entry = load_cifar(image_root, name, split)
            by_class = {}
            for label, row in zip(entry["labels" if name == "cifar10" else "fine_labels"], entry["data"]):
                by_class.setdefault(label, []).append(row.astype(float))
            sets.append(by_class)
        assert nearest_class_mean(*sets) > 3 / len(sets[0])
    from PIL import Image

    sets = {"train": {}, "val": {}}
    for s in sf.scaled_plan("imagenet", SMALLEST):
        if s.label % 4 == 0:  # 250 classes
            image = np.asarray(Image.open(image_root / s.path).resize((4, 4), Image.BOX), dtype=float)
            sets[s.split][s.label] = [image.ravel()]
    assert nearest_class_mean(sets["train"], sets["val"]) > 3 / 250
    sets = {"train": {}, "test": {}}
    for s in sf.scaled_plan("hardvs", SMALLEST):
        if s.split != "val":
            sets[s.split][s.label] = [features(image_root, "hardvs", s)]
    assert nearest_class_mean(sets["train"], sets["test"]) > 3 / 300


def test_fakes_are_deterministic_and_the_same_at_every_scale(tmp_path, scaled_root):
    sf.write_scaled_fixtures(tmp_path / "a", 0.002, ["nmnist"])
    sf.write_scaled_fixtures(tmp_path / "b", 0.002, ["nmnist"])
    files = sorted((tmp_path / "a").rglob("*.bin"))
    assert len(files) == len(sf.scaled_plan("nmnist", 0.002)) == 141
    shared = 0
    for path in files:
        rel = path.relative_to(tmp_path / "a")
        assert path.read_bytes() == (tmp_path / "b" / rel).read_bytes()
        if (scaled_root / rel).is_file():  # the same sample in the 0.01 fake
            assert path.read_bytes() == (scaled_root / rel).read_bytes()
            shared += 1
    assert shared >= 40  # at least each (split, digit)'s first and last sample
    sample = sf.scaled_plan("dvsgesture", SCALE)[5]
    again = se.gesture_events(np.random.default_rng(sample.seed), sample.label)
    assert np.array_equal(np.load(scaled_root / sample.path), again)


def test_image_and_hardvs_fakes_are_the_same_at_every_scale(tmp_path, image_root, monkeypatch):
    """A CIFAR image is the same in a fake at another scale (matched by its file name) and regenerated from its seed;
    an ImageNet JPEG and a HarDVS recording are regenerated from their seeds byte for byte."""
    sf.write_scaled_fixtures(tmp_path, 0.002, ["cifar100"])
    here, there = (load_cifar(root, "cifar100", "train") for root in (tmp_path, image_root))
    rows = dict(zip(there["filenames"], there["data"]))
    shared = [(name, row) for name, row in zip(here["filenames"], here["data"]) if name in rows]
    assert len(here["filenames"]) == 100 and len(shared) >= 100  # each class's first and last of 500 are at 0.01 too
    assert all(np.array_equal(row, rows[name]) for name, row in shared)
    sample = sf.scaled_plan("cifar100", SCALE)[-1]
    image = si.cifar_images("cifar100", [sample])[0][0]
    test = load_cifar(image_root, "cifar100", "test")
    row = test["data"][
        test["filenames"].index(f"{si.CIFAR100_CLASSES[sample.label]}_test_{sample.seed[3] + 1:06d}.png")
    ]
    assert np.array_equal(row, image.transpose(2, 0, 1).ravel())
    small_files(monkeypatch)
    sample = sf.scaled_plan("imagenet", SMALLEST)[-1]
    jpeg = si.imagenet_jpeg(np.random.default_rng(sample.seed), sample.label)
    assert jpeg == (image_root / sample.path).read_bytes()
    sample = sf.scaled_plan("hardvs", SMALLEST)[-1]
    events = se.hardvs_events(np.random.default_rng(sample.seed), sample.label)
    written = np.load(image_root / sample.path)
    assert all(np.array_equal(written[key], value) for key, value in zip("xytp", events))


@pytest.mark.parametrize("name", sf.TONIC_NAMES)
def test_the_loader_reads_them_and_verifies_the_counts(scaled_root, name, monkeypatch):
    """tonic's class (through fsnn's loader) reads a fake sample unchanged; ``verify`` accepts a fake whose counts are
    the published ones (here: a spec whose published counts are the scaled fake's, since 1.0 is too large for a
    test; :func:`test_scale_one_has_the_published_files` checks 1.0's counts) and rejects a partial one."""
    import tonic.datasets

    spec = tonic_datasets.TONIC_SPECS[name]
    split, (_, train_arg) = next(iter(spec.splits.items()))  # the training split ("all" for N-Caltech101)
    sample = [s for s in sf.scaled_plan(name, SCALE) if s.split == split][-1]
    dataset = tonic_datasets._listed(getattr(tonic.datasets, spec.cls_name), str(scaled_root), train_arg)
    index = [Path(p).relative_to(scaled_root).as_posix() for p in dataset.data].index(sample.path)
    events, target = dataset[index]
    x, y, t, p = read_events(scaled_root, name, sample.path)
    if name == "ncaltech101":  # tonic names the class by its folder and shifts x, y to start at 0
        target = NCALTECH101_CLASSES.index(target)
        x, y = x - x.min(), y - y.min()
    assert target == sample.label and np.array_equal(events["x"], x) and np.array_equal(events["t"], t)
    assert np.array_equal(events["y"], y)
    assert np.array_equal(events["p"].astype(int), p)

    with pytest.raises(DatasetMissingError, match="incomplete"):
        build_dataset(name, scaled_root, download=False, verify=True)
    scaled = dict(Counter(s.split for s in sf.scaled_plan(name, SCALE)))
    monkeypatch.setitem(tonic_datasets.TONIC_SPECS, name, replace(spec, published=scaled))
    train, val, test = build_dataset(name, scaled_root, T=2, size=8, download=False, verify=True)
    if name == "ncaltech101":  # no official split: the test set is a stratified share of all files
        assert len(train) + len(val) + len(test) == scaled["all"] and 0 < len(test) < scaled["all"]
    else:
        assert len(train) + len(val) == scaled["train"] and len(test) == scaled["test"]


@pytest.mark.parametrize("name", ["cifar10", "cifar100", "imagenet", "hardvs"])
def test_the_loaders_read_the_image_and_hardvs_fakes(image_root, name):
    """fsnn's loaders (torchvision's CIFAR10, CIFAR100 and ImageNet, SpikingJelly's HARDVS) read each fake with the
    verification :func:`passes_verification` gives: a CIFAR fake fails the md5 sums and a HarDVS below full size the
    counts, an ImageNet fake passes at any scale (its 1000 class folders)."""
    scale = SMALLEST if name in ("hardvs", "imagenet") else SCALE
    plan = Counter(s.split for s in sf.scaled_plan(name, scale))
    verify = sf.passes_verification(name, scale)
    assert verify == (name == "imagenet")
    size = 16 if name == "hardvs" else 32
    if not verify:
        with pytest.raises(DatasetMissingError, match="incomplete" if name == "hardvs" else "corrupted"):
            build_dataset(name, image_root, T=2, size=size, download=False, verify=True)
    train, val, test = build_dataset(name, image_root, T=2, size=size, download=False, verify=verify)
    official = "val" if name in ("hardvs", "imagenet") else "test"
    assert len(test) == plan[official] and len(train) + (name != "hardvs") * len(val) == plan["train"]
    x, label = train[0]
    assert tuple(x.shape) == (2, 2 if name == "hardvs" else 3, size, size) and 0 <= label < 1000
    assert sorted(set(test.targets)) == list(
        range({"cifar10": 10, "hardvs": 300}.get(name, 100 if name == "cifar100" else 1000))
    )


def test_scaled_names_are_fixture_names_and_bad_arguments_are_refused(tmp_path):
    assert set(sf.SCALED_NAMES) <= set(FIXTURE_NAMES)
    for bad in (0, -0.5, 1.5, float("nan"), "x", None):
        with pytest.raises(ValueError, match=r"number in \(0, 1\]"):
            sf.write_scaled_fixtures(tmp_path / "out", bad)
    with pytest.raises(ValueError, match="no scaled fixture"):
        sf.write_scaled_fixtures(tmp_path / "out", 0.5, ["hardvs_mini"])
    assert not (tmp_path / "out").exists()


def test_cli_scale(tmp_path, capsys):
    proc = run_app("fsnn/data/fakes/make_fixtures.py", "out", "--scale", "0.01", "--only", "dvsgesture", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        len(list((tmp_path / "out" / "DVSGesture").rglob("*.npy"))) == 22 and not (tmp_path / "out" / "NMNIST").exists()
    )
    for bad in (["--scale", "0"], ["--scale", "1.01"], ["--scale", "-1"], ["--scale", "nan"], ["--scale", "half"]):
        errors = refused(capsys, [str(tmp_path / "bad"), *bad])
        assert len(errors) == 1 and "--scale" in errors[0] and bad[1] in errors[0]
    errors = refused(capsys, [str(tmp_path / "bad"), "--scale", "0.5", "--only", "nmnist", "hardvs_mini"])
    assert len(errors) == 1 and "--scale" in errors[0] and "hardvs_mini" in errors[0]
    assert not (tmp_path / "bad").exists()
    assert make_fixtures.main([str(tmp_path / "c"), "--scale", "0.001", "--only", "cifar10", "nmnist"]) == 0
    assert len(list((tmp_path / "c" / "cifar-10-batches-py").iterdir())) == 7 + 1  # 7 files and the fake marker


def refused(capsys, argv) -> list[str]:
    """The error lines of an ``fsnn-fixtures`` command line that must exit with status 2."""
    with pytest.raises(SystemExit) as exit_:
        make_fixtures.main(argv)
    assert exit_.value.code == 2
    return [line for line in capsys.readouterr().err.splitlines() if "error" in line]
