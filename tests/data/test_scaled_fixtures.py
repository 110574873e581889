"""fsnn.data.scaled_fixtures and ``fsnn-fixtures --scale``: fakes at a fraction of the published size, file counts
per split and class, events inside the sensor, spread statistics, balanced polarity, determinism, a class signal,
and the suite's loader (tonic's classes) reading them, with verification at the published counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers import run_app

from fsnn.data import build_dataset, make_fixtures, scaled_fixtures as sf, tonic_datasets
from fsnn.data.common import DatasetMissingError
from fsnn.data.fixtures import FIXTURE_NAMES

SCALE = 0.01
#: (height, width) each fake's events lie in
SENSORS = {"dvsgesture": (128, 128), "nmnist": (34, 34), "ncaltech101": (180, 240), "dvslip": (128, 128)}


@pytest.fixture(scope="module")
def scaled_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scaled")
    sf.write_scaled_fixtures(root, SCALE)
    return root


def read_events(root: Path, name: str, path: str):
    """``(x, y, t[us], p)`` of a written fake file, read without the loaders."""
    if name == "dvsgesture":
        rows = np.load(root / path)
        return rows[:, 0], rows[:, 1], rows[:, 3] * 1000, rows[:, 2]
    if name == "dvslip":
        events = np.load(root / path)
        return tuple(events[key].astype(np.int64) for key in ("x", "y", "t", "p"))
    raw = np.frombuffer((root / path).read_bytes(), np.uint8).reshape(-1, 5).astype(np.int64)
    t = ((raw[:, 2] & 0x7F) << 16) | (raw[:, 3] << 8) | raw[:, 4]
    return raw[:, 0], raw[:, 1], t, raw[:, 2] >> 7


def test_scale_one_has_the_published_files():
    """At 1.0 each split has the file count ``verify`` compares; DVS128 Gesture's trials are the release's."""
    for name in sf.SCALED_NAMES:
        plan = sf.scaled_plan(name, 1.0)
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
    for split, counts in sf.MNIST_COUNTS.items():
        assert Counter(s.label for s in nmnist if s.split == split) == dict(enumerate(counts))
    caltech = sf.scaled_plan("ncaltech101", 1.0)
    folders = Counter(Path(s.path).parent.name for s in caltech)
    assert len(folders) == 101 and folders == sf.NCALTECH_COUNTS and "Faces" not in folders
    assert folders["BACKGROUND_Google"] == 467 and sum(folders.values()) + 435 == 9144  # Caltech101 with Faces
    assert min(folders.values()) == 31 and max(folders.values()) == 800
    assert list(sf.NCALTECH_CLASSES) == sorted(folders)  # labels: the loader's sorted folder names
    assert all(sf.NCALTECH_CLASSES[s.label] == Path(s.path).parent.name for s in caltech)
    assert {Path(s.path).name for s in caltech if s.label == 0} == {f"image_{k:04d}.bin" for k in range(1, 468)}
    import tonic.datasets

    lip = sf.scaled_plan("dvslip", 1.0)
    assert list(sf.DVSLIP_WORDS) == tonic.datasets.DVSLip.classes  # the loader's labels
    assert all(sf.DVSLIP_WORDS[s.label] == Path(s.path).parent.name for s in lip)
    for split, (most, fewest) in {"train": (149, 148), "test": (50, 49)}.items():
        per_word = Counter(s.label for s in lip if s.split == split)
        assert len(per_word) == 100 and set(per_word.values()) == {most, fewest}


@pytest.mark.parametrize("scale", [0.01, 0.1, 0.5])
def test_counts_per_split_and_class_follow_the_rounding_rule(scale):
    """Each (split, class) keeps ``max(1, floor(scale * n + 0.5))`` of its ``n`` full-scale samples, a subset of them."""
    for name in sf.SCALED_NAMES:
        full = Counter((s.split, s.label) for s in sf.scaled_plan(name, 1.0))
        plan = sf.scaled_plan(name, scale)
        assert Counter((s.split, s.label) for s in plan) == {k: max(1, int(scale * n + 0.5)) for k, n in full.items()}
        assert {s.path for s in plan} <= {s.path for s in sf.scaled_plan(name, 1.0)}
    assert sf.scaled_count(98, 0.01) == 1 and sf.scaled_count(5923, 0.01) == 59 and sf.scaled_count(10, 0.25) == 3


def test_written_files_match_the_plan(scaled_root):
    for name in sf.SCALED_NAMES:
        plan = sf.scaled_plan(name, SCALE)
        ext = "*.npy" if name in ("dvsgesture", "dvslip") else "*.bin"
        assert sorted(
            p.relative_to(scaled_root).as_posix() for p in scaled_root.rglob(ext) if name in str(p).lower()
        ) == (sorted(s.path for s in plan))


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
    gestures = [sf.gesture_events(rng, label) for label in range(11) for _ in range(4)]
    assert 1.5e5 < np.median([len(g) for g in gestures]) < 2.7e5
    assert 6.0 < np.mean([g[:, 3].max() / 1e3 for g in gestures]) < 7.6
    digits = [sf.nmnist_events(rng, d) for d in range(10) for _ in range(30)]
    assert 3500 < np.median([len(d[0]) for d in digits]) < 4600
    images = [sf.ncaltech_events(rng, c) for c in range(0, 101, 5) for _ in range(2)]
    assert 8e4 < np.median([len(i[0]) for i in images]) < 1.25e5
    assert all(0.27 < i[2].max() / 1e6 < 0.33 for i in images)
    lips = [sf.dvslip_events(rng, w) for w in range(100) for _ in range(2)]
    assert 2.4e4 < np.median([len(w) for w in lips]) < 3.6e4
    assert 0.9 < np.mean([w["t"].max() / 1e6 for w in lips]) < 1.1


def features(root: Path, name: str, sample) -> np.ndarray:
    """A normalised 8 x 8 event histogram of each third of the sample: where and when its events fall."""
    x, y, t, _ = read_events(root, name, sample.path)
    height, width = SENSORS[name]
    third = np.minimum(3 * t // (t.max() + 1), 2)
    hist = np.zeros((3, 8, 8))
    np.add.at(hist, (third, 8 * y // height, 8 * x // width), 1)
    return (hist / hist.sum()).ravel()


@pytest.mark.parametrize("name", sf.SCALED_NAMES)
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
    again = sf.gesture_events(np.random.default_rng(sample.seed), sample.label)
    assert np.array_equal(np.load(scaled_root / sample.path), again)


@pytest.mark.parametrize("name", sf.SCALED_NAMES)
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
        target = sf.NCALTECH_CLASSES.index(target)
        x, y = x - x.min(), y - y.min()
    assert target == sample.label and np.array_equal(events["x"], x) and np.array_equal(events["t"], t)
    assert np.array_equal(events["y"], y)
    assert np.array_equal(events["p"].astype(int), p)

    monkeypatch.delenv("FSNN_DATA_VERIFY", raising=False)
    with pytest.raises(DatasetMissingError, match="incomplete"):
        build_dataset(name, scaled_root, download=False)
    scaled = dict(Counter(s.split for s in sf.scaled_plan(name, SCALE)))
    monkeypatch.setitem(tonic_datasets.TONIC_SPECS, name, replace(spec, published=scaled))
    train, val, test = build_dataset(name, scaled_root, T=2, size=8, download=False, verify=True)
    if name == "ncaltech101":  # no official split: the test set is a stratified share of all files
        assert len(train) + len(val) + len(test) == scaled["all"] and 0 < len(test) < scaled["all"]
    else:
        assert len(train) + len(val) == scaled["train"] and len(test) == scaled["test"]


def test_scaled_names_are_fixture_names_and_bad_arguments_are_refused(tmp_path):
    assert set(sf.SCALED_NAMES) <= set(FIXTURE_NAMES)
    for bad in (0, -0.5, 1.5, float("nan"), "x", None):
        with pytest.raises(ValueError, match=r"number in \(0, 1\]"):
            sf.write_scaled_fixtures(tmp_path / "out", bad)
    with pytest.raises(ValueError, match="no scaled fixture"):
        sf.write_scaled_fixtures(tmp_path / "out", 0.5, ["cifar10"])
    assert not (tmp_path / "out").exists()


def test_cli_scale(tmp_path, capsys):
    proc = run_app("fsnn/data/make_fixtures.py", "out", "--scale", "0.01", "--only", "dvsgesture", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        len(list((tmp_path / "out" / "DVSGesture").rglob("*.npy"))) == 22 and not (tmp_path / "out" / "NMNIST").exists()
    )
    for bad in (["--scale", "0"], ["--scale", "1.01"], ["--scale", "-1"], ["--scale", "nan"], ["--scale", "half"]):
        errors = refused(capsys, [str(tmp_path / "bad"), *bad])
        assert len(errors) == 1 and "--scale" in errors[0] and bad[1] in errors[0]
    errors = refused(capsys, [str(tmp_path / "bad"), "--scale", "0.5", "--only", "nmnist", "cifar10"])
    assert len(errors) == 1 and "--scale" in errors[0] and "cifar10" in errors[0]
    assert not (tmp_path / "bad").exists()


def refused(capsys, argv) -> list[str]:
    """The error lines of an ``fsnn-fixtures`` command line that must exit with status 2."""
    with pytest.raises(SystemExit) as exit_:
        make_fixtures.main(argv)
    assert exit_.value.code == 2
    return [line for line in capsys.readouterr().err.splitlines() if "error" in line]
