"""fsnn.data: every dataset through its real loader class on tiny fixtures, frame integration, splits, caches,
missing-data errors, and the simulated digits_dvs dataset."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import ROOT, run_app

from fsnn.data import (
    DATASETS,
    DatasetMissingError,
    build_dataset,
    build_sequences,
    dataset_info,
    digits_dvs,
    events_to_frames,
    frame_cache,
    frame_slices,
    hardvs,
    is_fake_dataset,
    tonic_datasets,
)
from fsnn.data.fakes import FAKE_MARKER, fake_marker
from fsnn.data.fakes.fixtures import (
    DVSLIP_WORDS,
    FIXTURE_NAMES,
    NCALTECH_CLASSES,
    write_fixtures,
)
from fsnn.data.info import BuilderArgs
from fsnn.data.splits import stratified_split
from fsnn.data.static import NORMALIZATION
from fsnn.data.tonic_datasets import NCALTECH101_CLASSES

# the faked frame datasets, by kind: a dataset with a fake is tested here without a list of its own
EVENT_FIXTURES = [name for name in FIXTURE_NAMES if DATASETS[name].kind == "event"]
STATIC_FIXTURES = [name for name in FIXTURE_NAMES if DATASETS[name].kind == "static"]
OFFLINE = {"download": False, "verify": False}


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fixtures")
    write_fixtures(root)
    return root


@pytest.fixture(scope="session")
def digits_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("digits")
    build_dataset("digits_dvs", root)
    return root


@pytest.fixture
def count_integrations(monkeypatch):
    """Counts calls of the integration step of the frame cache."""
    calls = []
    real = frame_cache.events_to_frames

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(frame_cache, "events_to_frames", counting)
    return calls


def raw_event_count(root: Path, name: str, key: str) -> int:
    """Number of events in a raw fixture file, read without the loaders."""
    folder = {
        "nmnist": "NMNIST",
        "dvsgesture": "DVSGesture",
        "ncaltech101": "NCALTECH101",
        "dvslip": "DVSLip",
        "hardvs": "HARDVS/events_np",
        "hardvs_mini": "MINI_HARDVS/events_np",
    }[name]
    path = root / folder / key
    if path.suffix == ".bin":
        return path.stat().st_size // 5  # fixtures have no timestamp-overflow markers
    if path.suffix == ".npz":
        with np.load(path) as z:
            return len(z["t"])
    return len(np.load(path))


def expected_label(name: str, key: str) -> int:
    parts = Path(key).parts
    if name == "nmnist":
        return int(parts[-2])
    if name == "dvsgesture":
        return int(Path(key).stem)
    if name == "ncaltech101":
        return NCALTECH101_CLASSES.index(parts[-2])
    if name == "dvslip":
        import tonic.datasets

        return tonic.datasets.DVSLip.classes.index(parts[-2])
    if name in ("hardvs", "hardvs_mini"):
        return int(parts[-2].split("_")[1]) - 1
    raise ValueError(name)


# -- registry and fixtures -----------------------------------------------------------------------


def test_registry_lists_every_dataset_with_its_info():
    frames = {name: info for name, info in DATASETS.items() if info.kind in ("event", "static")}
    assert set(frames) == {"digits_dvs", *(n for n in FIXTURE_NAMES if DATASETS[n].kind != "graph")}
    assert {n for n, info in DATASETS.items() if info.kind == "sequence"} == {"delayed_cue", "seq_digits"}
    for name, info in DATASETS.items():
        assert info.name == name and info.kind in ("event", "static", "graph", "sequence") and callable(info.builder)
    for info in frames.values():
        assert info.in_channels == (2 if info.kind == "event" else 3)
    assert dataset_info("dvsgesture").num_classes == 11 and dataset_info("dvsgesture").size == (128, 128)
    assert dataset_info("nmnist").size == (34, 34) and dataset_info("hardvs").default_T == 8
    assert dataset_info("ncaltech101").default_T == 16 and dataset_info("imagenet").size == (160, 160)
    assert dataset_info("cifar100").default_T == 4 and dataset_info("hardvs").num_classes == 300
    with pytest.raises(KeyError, match="dvsgesture"):
        dataset_info("nosuch")


def test_every_loader_gives_its_builder_one_builder_args_resolved(tmp_path, monkeypatch):
    """build_dataset and build_sequences fill one BuilderArgs: the dataset's default T, the size as a pair, the data
    folder absolute, the cache under it, the switches resolved; a builder's own options come beside it."""
    from fsnn.data import registry

    calls = []

    def capture(args, **options):
        calls.append((args, options))
        return "built"

    def builder_of(name):
        monkeypatch.setattr(registry, "dataset_info", lambda _: replace(DATASETS[name], builder=capture))

    monkeypatch.chdir(tmp_path)
    builder_of("nmnist")
    assert build_dataset("nmnist", "data", size=20, seed=3, download=False, verify=False, num_workers=2) == "built"
    args, options = calls.pop()
    assert isinstance(args, BuilderArgs) and options == {}
    assert (args.info.name, args.T, args.size, args.seed, args.val_fraction) == ("nmnist", 16, (20, 20), 3, 0.1)
    assert (args.data_dir, args.cache_dir) == (tmp_path / "data", tmp_path / "data" / "fsnn_cache")
    assert (args.download, args.verify, args.num_workers, args.encoder) == (False, False, 2, "direct")
    builder_of("cifar10")
    build_dataset("cifar10", tmp_path, T=2, encoder="spike")
    assert (calls[-1][0].T, calls[-1][0].size, calls[-1][0].encoder) == (2, (32, 32), "spike")
    builder_of("delayed_cue")
    build_sequences("delayed_cue", tmp_path, seed=1, delay=4)
    args, options = calls.pop()
    assert (args.info.name, args.seed, args.cache_dir, options) == (
        "delayed_cue",
        1,
        tmp_path / "fsnn_cache",
        {"delay": 4},
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        args.seed = 2


def test_fixtures_are_fast_and_deterministic(tmp_path):
    start = time.perf_counter()
    written = write_fixtures(tmp_path / "a")
    assert time.perf_counter() - start < 5
    assert set(written) == set(FIXTURE_NAMES) and all(p.is_dir() for p in written.values())
    write_fixtures(tmp_path / "b", ["nmnist", "cifar10"])
    for rel in ("NMNIST/Train/3/03001.bin", "cifar-10-batches-py/data_batch_2"):
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()


def test_make_fixtures_cli(tmp_path):
    proc = run_app(
        "fsnn/data/fakes/make_fixtures.py", str(tmp_path), "--only", "dvsgesture", "cifar100", cwd=tmp_path, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "DVSGesture" / "ibmGestureTrain").rglob("*.npy"))) == 110
    assert (tmp_path / "cifar-100-python" / "meta").is_file() and not (tmp_path / "NMNIST").exists()


def test_make_fixtures_on_a_file_or_an_unwritable_folder_is_one_line(tmp_path, monkeypatch, capsys):
    from fsnn.data.fakes import make_fixtures

    (afile := tmp_path / "afile").write_text("mine")
    with pytest.raises(SystemExit) as exit_:
        make_fixtures.main([str(afile), "--only", "nmnist"])
    assert exit_.value.code == 2 and afile.read_text() == "mine"
    assert f"argument DIR: expected a folder to write into, got '{afile}' (a file)" in capsys.readouterr().err
    target = tmp_path / "ro" / "NMNIST" / "Train"

    def read_only(root, names):  # root passes every permission check: the OS's answer on a read-only mount
        raise OSError(errno.EROFS, "Read-only file system", str(target))

    monkeypatch.setattr(make_fixtures, "write_fixtures", read_only)
    assert make_fixtures.main([str(tmp_path / "ro"), "--only", "nmnist"]) == 2
    err = capsys.readouterr().err
    assert err == f"fsnn-fixtures: error: cannot write {target}: Read-only file system\n"


def test_fixtures_refuse_a_real_dataset_and_leave_it_as_it_was(tmp_path, capsys):
    from fsnn.data.fakes import make_fixtures

    shutil.copytree(
        ROOT / "tests" / "data" / "planetoid" / "Cora", tmp_path / "Cora"
    )  # the real Cora, as a user's data folder holds it
    before = {p: p.read_bytes() for p in (tmp_path / "Cora").rglob("*") if p.is_file()}
    assert make_fixtures.main([str(tmp_path), "--only", "nmnist", "cora"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("fsnn-fixtures: error: ") and str(tmp_path / "Cora") in err[0]
    assert {p: p.read_bytes() for p in (tmp_path / "Cora").rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Cora"]  # refused before anything was written
    (linked := tmp_path / "linked").mkdir()
    (linked / "Cora").symlink_to(tmp_path / "Cora")  # what a link points to is not the writer's
    with pytest.raises(ValueError, match="is a link"):
        write_fixtures(linked, ["cora"])


def test_a_fake_replaces_an_earlier_fake_whole_and_says_so(tmp_path, capsys):
    from fsnn.data.fakes import make_fixtures
    from fsnn.data.fakes.scaled_fixtures import scaled_plan

    assert make_fixtures.main([str(tmp_path), "--scale", "0.004", "--only", "nmnist"]) == 0
    capsys.readouterr()
    (tmp_path / "NMNIST" / "processed").mkdir()  # what a loader derived from the earlier fake goes with it
    assert make_fixtures.main([str(tmp_path), "--scale", "0.001", "--only", "nmnist"]) == 0
    assert "replaced an earlier fake, scale 0.004" in capsys.readouterr().out
    files = {p.relative_to(tmp_path).as_posix() for p in (tmp_path / "NMNIST").rglob("*") if p.is_file()}
    assert files == {s.path for s in scaled_plan("nmnist", 0.001)} | {f"NMNIST/{FAKE_MARKER}"}
    assert fake_marker(tmp_path / "NMNIST") == {"fake": True, "dataset": "nmnist", "scale": 0.001, "files": 70}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["NMNIST"]  # no staging folder left


def test_a_write_that_fails_leaves_the_earlier_fake_and_no_part_of_the_new_one(tmp_path):
    """A full disk (here: a file-size limit, which fails a write the same way) part-way through a fake: one line
    naming where, the earlier fake whole, nothing of the new one."""
    write_fixtures(tmp_path, ["cora"])
    before = {p: p.read_bytes() for p in (tmp_path / "Cora").rglob("*") if p.is_file()}
    limit = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (30000, 30000)); "
        "from fsnn.data.fakes.make_fixtures import main; sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", limit, str(tmp_path), "--only", "cora", "nmnist"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert errors[0].startswith(f"fsnn-fixtures: error: cannot write {tmp_path / 'Cora'}"), errors
    assert {p: p.read_bytes() for p in (tmp_path / "Cora").rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Cora"]


def test_the_route_fsnn_fixtures_prints_trains_a_graph_and_records_the_fake(tmp_path):
    """``fsnn-fixtures DIR``, then a Table 2 run with ``paths.data_dir=DIR``, as printed: no switch to set (the Cora
    fake has 550 of the release's 2,708 nodes), and the run's record says it trained on a fake."""
    proc = run_app("fsnn/data/fakes/make_fixtures.py", str(tmp_path / "fake"), "--only", "cora", cwd=tmp_path)
    assert proc.returncode == 0 and f"paths.data_dir={tmp_path / 'fake'}" in proc.stdout, proc.stderr
    proc = run_app(
        "train.py",
        "experiment=table2_node_classification",
        "hydra.mode=RUN",
        "dataset=cora",
        "backbone=sgcn",
        "neuron=flif",
        "+smoke=graph",
        f"paths.data_dir={tmp_path / 'fake'}",
        cwd=tmp_path,
        env={"FSNN_DATA_VERIFY": "", "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads(next((tmp_path / "runs").rglob("metrics.json")).read_text())
    assert run["status"] == "complete" and run["fake_data"] is True


# -- every dataset through its real loader -------------------------------------------------------------


@pytest.mark.parametrize("name", EVENT_FIXTURES + STATIC_FIXTURES)
def test_dataset_loads_from_fixture(fixture_root, name):
    info = dataset_info(name)
    T = 4
    splits = build_dataset(name, fixture_root, T=T, seed=0, val_fraction=0.1, **OFFLINE)
    assert len(splits) == 3 and all(len(s) > 0 for s in splits)
    for split in splits:
        for i in (0, len(split) - 1):
            x, y = split[i]
            assert isinstance(x, torch.Tensor) and x.dtype == torch.float32
            assert tuple(x.shape) == (T, info.in_channels, *info.size)
            assert isinstance(y, int) and 0 <= y < info.num_classes and y == split.targets[i]
            if info.kind == "event":
                assert torch.all(x >= 0) and torch.equal(x, x.round())
                assert y == expected_label(name, split.keys[i])
            else:
                assert all(torch.equal(x[0], x[t]) for t in range(1, T))  # direct encoding
                mean, std = (torch.tensor(v)[:, None, None] for v in NORMALIZATION[name])
                pixels = x[0] * std + mean  # normalised: undoing it gives intensities in [0, 1]
                assert x.min() < 0 and -1e-5 <= pixels.min() and pixels.max() <= 1 + 1e-5


@pytest.mark.parametrize("name", EVENT_FIXTURES)
def test_frames_conserve_event_counts(fixture_root, name):
    # native size for N-MNIST / DVS128 Gesture / DVS-Lip; N-Caltech101 and HARDVS are sum-pooled to 128x128
    train, val, test = build_dataset(name, fixture_root, T=5, **OFFLINE)
    for split in (train, test):
        for i in range(min(len(split), 6)):
            x, _ = split[i]
            n = raw_event_count(fixture_root, name, split.keys[i])
            assert n > 0 and split.n_events[i] == n
            assert int(x.sum()) == n
            assert int(x[-1].sum()) == n - 4 * (n // 5)  # the last of the T slices takes the remainder


def test_static_train_augmentation_and_eval_determinism(fixture_root):
    train, val, test = build_dataset("cifar10", fixture_root, T=3, seed=0, **OFFLINE)
    assert len(train) + len(val) == 40 and len(test) == 10 and len(val) == 4
    torch.manual_seed(0)
    draws = [train[0][0] for _ in range(8)]
    assert any(not torch.equal(draws[0], d) for d in draws[1:])  # random crop/flip per draw
    assert torch.equal(val[0][0], val[0][0]) and torch.equal(test[1][0], test[1][0])
    with open(fixture_root / "cifar-10-batches-py" / "test_batch", "rb") as f:
        assert test.targets == pickle.load(f, encoding="latin1")["labels"]


def test_unverified_loaders_keep_the_libraries_classes_and_pickle(fixture_root):
    """Without verify, torchvision's md5 checks and tonic's _check_exists are skipped through a subclass made at run
    time; the datasets kept are the libraries' own classes (spawned DataLoader workers unpickle them by name), and
    the libraries' classes are left as they were."""
    import tonic.datasets
    import torchvision.datasets

    for name, cls in (("cifar10", torchvision.datasets.CIFAR10), ("cifar100", torchvision.datasets.CIFAR100)):
        test = build_dataset(name, fixture_root, T=2, seed=0, **OFFLINE)[2]
        assert type(test.base) is cls and cls.test_list[0][1] is not None  # md5 sums still torchvision's
        again = pickle.loads(pickle.dumps(test))
        assert type(again.base) is cls and torch.equal(again[3][0], test[3][0]) and again.targets == test.targets
    for name, cls in (("nmnist", tonic.datasets.NMNIST), ("dvslip", tonic.datasets.DVSLip)):
        sources = tonic_datasets.tonic_sources(
            tonic_datasets.TONIC_SPECS[name], fixture_root, download=False, verify=False
        )
        reader = sources["train"].read
        # tonic's folder is <save_to>/<class name>: the subclass was named like its class
        assert type(reader.dataset) is cls and Path(reader.dataset.location_on_system).name == cls.__name__
        again = pickle.loads(pickle.dumps(reader))
        assert type(again.dataset) is cls and all(np.array_equal(a, b) for a, b in zip(again(0), reader(0)))


def test_static_spike_encoder_fires_with_the_pixel_intensity(fixture_root):
    direct = build_dataset("cifar10", fixture_root, T=2, seed=0, **OFFLINE)[2]
    spikes = build_dataset("cifar10", fixture_root, T=400, seed=0, encoder="spike", **OFFLINE)[2]
    mean, std = (torch.tensor(v)[:, None, None] for v in NORMALIZATION["cifar10"])
    torch.manual_seed(0)
    x, y = spikes[3]
    intensity = direct[3][0][0] * std + mean  # the same test image, un-normalised
    assert x.shape == (400, 3, 32, 32) and y == direct[3][1] and set(x.unique().tolist()) <= {0.0, 1.0}
    assert not torch.equal(x[0], x[1])  # a fresh draw at every step
    sigma = (intensity * (1 - intensity) / 400).sqrt()
    assert ((x.mean(0) - intensity).abs() <= 5 * sigma + 1e-4).all()
    counts, _ = spikes.as_counts()[3]  # what the suite's loader carries: the same spikes as bytes
    assert counts.dtype == torch.uint8 and set(counts.unique().tolist()) <= {0, 1}
    assert ((counts.float().mean(0) - intensity).abs() <= 5 * sigma + 1e-4).all()
    assert direct.as_counts() is direct  # normalised intensities are no counts
    with pytest.raises(ValueError, match="encoder='spike' encodes static images; dataset 'nmnist' is event data"):
        build_dataset("nmnist", fixture_root, encoder="spike", **OFFLINE)
    with pytest.raises(ValueError, match="encoder must be one of"):
        build_dataset("cifar10", fixture_root, encoder="poisson", **OFFLINE)


# -- integration -------------------------------------------------------------------------------------


def test_frame_slices_follow_spikingjelly_split_by_number():
    assert np.bincount(frame_slices(10, 3), minlength=3).tolist() == [3, 3, 4]
    assert np.bincount(frame_slices(2, 4), minlength=4).tolist() == [0, 0, 0, 2]
    assert np.bincount(frame_slices(16, 4), minlength=4).tolist() == [4, 4, 4, 4]


def test_events_to_frames_matches_spikingjelly():
    from spikingjelly.datasets.utils import integrate_events_by_fixed_frames_number

    rng = np.random.default_rng(0)
    for n, T, (H, W) in ((1000, 16, (34, 34)), (37, 8, (20, 30)), (5, 8, (4, 4))):
        ev = {
            "t": np.sort(rng.integers(0, 10_000, n)),
            "x": rng.integers(0, W, n),
            "y": rng.integers(0, H, n),
            "p": rng.integers(0, 2, n),
        }
        ours = events_to_frames(ev["x"], ev["y"], ev["t"], ev["p"], T, (H, W))
        ref = integrate_events_by_fixed_frames_number(ev, "number", T, H, W)
        np.testing.assert_array_equal(ours, ref)
        assert ours.sum() == n


def test_events_to_frames_polarity_order_and_resizing():
    x, y, t, p = np.array([0, 5, 9]), np.array([1, 2, 3]), np.array([30, 10, 20]), np.array([1, 0, 1])
    f = events_to_frames(x, y, t, p, 3, (4, 10))  # unsorted t is put in time order first
    assert f[0, 0, 2, 5] == 1 and f[1, 1, 3, 9] == 1 and f[2, 1, 1, 0] == 1 and f.sum() == 3
    rng = np.random.default_rng(1)
    n = 5000
    ev = (rng.integers(0, 240, n), rng.integers(0, 180, n), np.arange(n), rng.integers(0, 2, n))
    down = events_to_frames(*ev, 4, (180, 240), (128, 128))
    assert down.shape == (4, 2, 128, 128) and down.sum() == n  # sum pooling keeps every event
    small = events_to_frames(*ev, 4, (180, 240), (90, 120))
    native = events_to_frames(*ev, 4, (180, 240))
    np.testing.assert_array_equal(small, native.reshape(4, 2, 90, 2, 120, 2).sum(axis=(3, 5)))
    up = events_to_frames(*ev, 4, (180, 240), (360, 480))
    np.testing.assert_array_equal(up, native.repeat(2, axis=2).repeat(2, axis=3))  # nearest zoom
    two = np.array([0, 1])
    with pytest.raises(ValueError, match=r"x must lie in \[0, 8\) for this sensor; found -3\.\.50 \(2 of 2"):
        events_to_frames(np.array([-3, 50]), np.array([0, 7]), two, two, 1, (8, 8))  # never clipped to an edge
    with pytest.raises(ValueError, match=r"y must lie in \[0, 4\).*found 0\.\.4 \(1 of 2"):
        events_to_frames(two, np.array([0, 4]), two, two, 1, (4, 8))  # H = 4: a swapped axis shows
    with pytest.raises(ValueError, match="coordinate x: 1 values are not finite"):
        events_to_frames(np.array([1.0, np.nan]), two, two, two, 1, (8, 8))


def test_an_event_outside_the_sensor_names_its_raw_file(tmp_path):
    root = _gesture_root(tmp_path)
    victim = root / "DVSGesture" / "ibmGestureTrain" / "user03_led" / "5.npy"
    np.save(victim, np.array([[1, 2, 1, 5], [300, 4, 0, 9]], dtype=np.int64))  # x = 300 on a 128 x 128 sensor
    with pytest.raises(DatasetMissingError, match=r"user03_led/5\.npy could not be read \(ValueError: event coord"):
        build_dataset("dvsgesture", root, T=2, size=16)


# -- splits ----------------------------------------------------------------------------------------


def test_stratified_split_is_seeded_sized_and_stratified():
    labels = np.repeat(np.arange(10), [50, 60, 70, 80, 90, 100, 110, 120, 130, 140])
    take, keep = stratified_split(labels, [0.1], seed=3)
    assert len(take) == 95 and len(keep) == len(labels) - 95
    assert set(keep).isdisjoint(take) and set(keep) | set(take) == set(range(len(labels)))
    assert np.all(np.abs(np.bincount(labels[take]) - 0.1 * np.bincount(labels)) < 1)
    again = stratified_split(labels, [0.1], seed=3)
    assert np.array_equal(again[0], take) and not np.array_equal(stratified_split(labels, [0.1], seed=4)[0], take)
    assert len(stratified_split(np.arange(10), [0.01], 0)[0]) == 1  # never an empty validation set
    assert len(stratified_split(np.arange(21), [0.5], 0)[0]) == 11  # 10.5 rounds half up, as every count in fsnn
    for bad in ([1.0], [0.6, 0.5], [-0.1]):
        with pytest.raises(ValueError, match="fractions"):
            stratified_split(labels, bad, 0)


def test_stratified_split_into_three_parts():
    labels = np.repeat(np.arange(4), [10, 23, 7, 41])
    val, test, train = stratified_split(labels, [0.2, 0.1], seed=0)
    assert sorted(np.concatenate([val, test, train]).tolist()) == list(range(len(labels)))
    assert (len(val), len(val) + len(test)) == (round(0.2 * 81), round(0.3 * 81))
    counts = np.bincount(labels)
    for part, share in ((val, 0.2), (train, 0.7)):  # the first part and the rest: within one sample per class
        assert np.all(np.abs(np.bincount(labels[part], minlength=4) - share * counts) < 1)
    again = stratified_split(labels, [0.2, 0.1], seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(again, (val, test, train)))


@pytest.mark.parametrize("name", ["nmnist", "ncaltech101"])
def test_splits_are_deterministic_and_disjoint(fixture_root, name):
    def keys(seed):
        splits = build_dataset(name, fixture_root, T=2, seed=seed, **OFFLINE)
        return [list(s.keys) if name == "ncaltech101" else [(s.cache.source.split, k) for k in s.keys] for s in splits]

    a, b, c = keys(0), keys(0), keys(1)
    assert a == b
    train, val, test = (set(map(str, s)) for s in a)
    assert train.isdisjoint(val) and train.isdisjoint(test) and val.isdisjoint(test)
    assert a[1] != c[1] and a[2] == c[2]  # val follows the seed, test is fixed
    if name == "ncaltech101":  # 80/20 of the sorted list, stratified: every class in test
        assert len(test) == 4 and len(train | val | test) == 20
        assert {Path(k).parts[-2] for k in a[2]} == set(NCALTECH_CLASSES)
    else:
        assert len(train | val) == 30 and len(test) == 20


def test_ncaltech101_labels_are_the_releases_whichever_folders_a_copy_holds(tmp_path):
    """Label k is the release's k-th class: a copy without a class folder (read with checks off) labels every other
    folder as the full release does, and a folder the release does not have is refused by name."""
    base = write_fixtures(tmp_path, ["ncaltech101"])["ncaltech101"]

    def labels():
        source = tonic_datasets.tonic_sources(tonic_datasets.TONIC_SPECS["ncaltech101"], tmp_path, **OFFLINE)["all"]
        return {Path(k).parts[-2]: int(y) for k, y in zip(source.keys, source.labels)}

    full = labels()
    assert full == {name: NCALTECH101_CLASSES.index(name) for name in NCALTECH_CLASSES}
    assert full["airplanes"] == 5 and full["yin_yang"] == 100
    shutil.rmtree(base / "Caltech101" / "Faces_easy")
    assert labels() == {k: v for k, v in full.items() if k != "Faces_easy"}  # no later class shifts down
    (base / "Caltech101" / "yin_yang").rename(base / "Caltech101" / "yinyang")
    with pytest.raises(DatasetMissingError, match="class folder.s. 'yinyang' not among the release's 101 classes"):
        labels()


@pytest.mark.parametrize("name", ["hardvs", "hardvs_mini"])
def test_hardvs_uses_its_official_val_split(fixture_root, name):
    train, val, test = build_dataset(name, fixture_root, T=2, val_fraction=0.5, **OFFLINE)
    assert (len(train), len(val), len(test)) == (9, 6, 6)
    assert all(k.startswith("val/") for k in val.keys) and sorted(set(train.targets)) == [0, 1, 2]


def test_full_hardvs_release_is_linked_from_its_split_lists(tmp_path, monkeypatch):
    write_fixtures(tmp_path, ["hardvs"])
    root = tmp_path / "HARDVS"
    lists = {split: (root / "extract" / f"{split}_label.txt").read_text().split() for split in ("train", "val", "test")}
    assert not (root / "events_np").exists()  # the release has no events_np/: fsnn builds it from the lists
    train, val, test = build_dataset("hardvs", tmp_path, T=2, **OFFLINE)
    for split, data in zip(("train", "val", "test"), (train, val, test)):
        assert sorted(data.keys) == sorted(f"{split}/{line}.npz" for line in lists[split][::2])
        linked = root / "events_np" / data.keys[0]
        assert linked.is_symlink() and linked.resolve().parent.parent == (root / "extract").resolve()
    # checked against the full HarDVS's size: a small copy is not taken for it
    monkeypatch.setenv("FSNN_DATA_VERIFY", "1")
    with pytest.raises(DatasetMissingError, match=r"9 samples, the full HarDVS has 64522.*dataset=hardvs_mini"):
        build_dataset("hardvs", tmp_path, T=2, download=False)


@pytest.mark.parametrize(
    "name, layout",
    [
        (
            "hardvs",
            [
                "HARDVS/events_np/{train,val,test}/action_<001-300>/<sample>.npz",
                "64,522 / 10,734 / 32,390",
                "HARDVS/extract/action_<001-300>/<sample>.npz",
                "HARDVS/extract/{train,val,test}_label.txt",
                "dataset=hardvs_mini",
            ],
        ),
        (
            "hardvs_mini",
            [
                "MINI_HARDVS/events_np/{train,val,test}/action_<001-300>/<sample>.npz",
                "MINI_HARDVS/download/{MINI_HARDVS_files.zip, train_label.txt",
            ],
        ),
    ],
)
def test_hardvs_missing_data_message_gives_the_layout(tmp_path, name, layout):
    with pytest.raises(DatasetMissingError) as err:
        build_dataset(name, tmp_path, download=False)
    for line in layout:
        assert line in str(err.value).replace(str(tmp_path) + "/", ""), line


# -- caches ----------------------------------------------------------------------------------------


def _gesture_root(tmp_path) -> Path:
    write_fixtures(tmp_path, ["dvsgesture"])
    return tmp_path


def test_cache_is_reused(tmp_path, count_integrations):
    root = _gesture_root(tmp_path)
    train, val, test = build_dataset("dvsgesture", root, T=4, size=32, num_workers=2)
    assert len(count_integrations) == 220
    cache_dir = root / "fsnn_cache" / "dvsgesture" / "T4_s32"
    files = sorted(cache_dir.rglob(f"*{frame_cache.SAMPLE_SUFFIX}"))
    assert len(files) == 220 and (cache_dir / "train" / "_COMPLETE.json").is_file()
    mtimes = [f.stat().st_mtime_ns for f in files]
    first = train[3][0]
    count_integrations.clear()
    train2, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    assert count_integrations == [] and [f.stat().st_mtime_ns for f in files] == mtimes
    assert torch.equal(train2[3][0], first)
    build_dataset("dvsgesture", root, T=3, size=32)  # another T is another cache
    assert len(count_integrations) == 220 and (root / "fsnn_cache" / "dvsgesture" / "T3_s32").is_dir()


def test_cache_without_marker_is_rebuilt(tmp_path, count_integrations):
    root = _gesture_root(tmp_path)
    build_dataset("dvsgesture", root, T=4, size=32)
    marker = root / "fsnn_cache" / "dvsgesture" / "T4_s32" / "train" / "_COMPLETE.json"
    marker.unlink()
    count_integrations.clear()
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    assert len(count_integrations) == 110 and marker.is_file()  # the whole split again, test split reused
    assert int(train[0][0].sum()) == train.n_events[0]


def test_truncated_or_missing_sample_file_is_rebuilt(tmp_path, count_integrations):
    root = _gesture_root(tmp_path)
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    reference = [train[i][0] for i in range(len(train))]
    victim = train.cache.sample_path(train.indices[0])
    victim.write_bytes(victim.read_bytes()[:50])
    train.cache.sample_path(train.indices[1]).unlink()
    count_integrations.clear()
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    assert len(count_integrations) == 2
    assert all(torch.equal(train[i][0], reference[i]) for i in range(len(train)))


def test_corrupt_sample_file_is_repaired_on_load(tmp_path, count_integrations):
    root = _gesture_root(tmp_path)
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    reference = train[0][0]
    victim = train.cache.sample_path(train.indices[0])
    victim.write_bytes(b"\0" * victim.stat().st_size)  # same size: passes the build-time check
    count_integrations.clear()
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    assert count_integrations == []
    assert torch.equal(train[0][0], reference) and len(count_integrations) == 1
    assert torch.equal(train[0][0], reference) and len(count_integrations) == 1  # rewritten once


def test_bit_rot_in_a_sample_file_is_named_and_repaired(tmp_path, count_integrations, caplog):
    # flipped bytes inside the frames: the file keeps its size, its CRC-32 changes
    root = _gesture_root(tmp_path)
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    reference = train[0][0]
    victim = train.cache.sample_path(train.indices[0])
    data = bytearray(victim.read_bytes())  # the file is the frames' counts
    for offset in range(len(data) // 4, len(data) - 4, max(len(data) // 12, 1)):
        data[offset] ^= 0x5A
    victim.write_bytes(bytes(data))
    count_integrations.clear()
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    with caplog.at_level("WARNING", logger="fsnn.data.frame_cache"):
        assert torch.equal(train[0][0], reference)
    assert len(count_integrations) == 1 and str(victim) in caplog.text and "damaged" in caplog.text


def test_a_marker_edited_since_it_was_written_is_rebuilt_once(tmp_path, count_integrations, caplog):
    """A wrong CRC-32 in the marker (or any edit) fails the marker's digest: the split is integrated again once,
    then read without re-integrating a healthy sample at every read."""
    root = _gesture_root(tmp_path)
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    reference = train[1][0]
    manifest = json.loads((marker := train.cache.dir / frame_cache.MARKER).read_text())
    assert manifest["format"] == frame_cache.CACHE_FORMAT and len(manifest["checksums"]) == len(manifest["sizes"])
    manifest["checksums"][train.indices[1]] += 1
    marker.write_text(json.dumps(manifest))
    count_integrations.clear()
    with caplog.at_level("WARNING", logger="fsnn.data.frame_cache"):
        train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
        assert len(count_integrations) == 110 and "stale" in caplog.text
        count_integrations.clear()
        caplog.clear()
        assert all(torch.equal(train[1][0], reference) for _ in range(3))
    assert count_integrations == [] and "CRC-32" not in caplog.text


def test_a_stale_cache_folder_that_is_a_link_is_rebuilt_through_it(tmp_path, count_integrations):
    """A split's cache folder linked to another disk stays a link when it is rebuilt, and a file the cache did not
    write there is kept."""
    root = _gesture_root(tmp_path / "data")
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    elsewhere = tmp_path / "scratch" / "train"
    shutil.copytree(train.cache.dir, elsewhere)
    shutil.rmtree(train.cache.dir)
    train.cache.dir.symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / frame_cache.MARKER).unlink()  # stale
    (elsewhere / "notes.txt").write_text("mine")
    count_integrations.clear()
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    assert len(count_integrations) == 110 and train.cache.dir.is_symlink()
    assert (elsewhere / frame_cache.MARKER).is_file() and (elsewhere / "notes.txt").read_text() == "mine"
    assert int(train[0][0].sum()) == train.n_events[0]


def test_labels_are_the_sources_not_the_markers(tmp_path):
    root = _gesture_root(tmp_path)
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    manifest = json.loads((marker := train.cache.dir / frame_cache.MARKER).read_text())
    manifest["labels"] = [(label + 1) % 11 for label in manifest["labels"]]
    manifest["digest"] = frame_cache._digest(manifest)  # an edit that passes the digest
    marker.write_text(json.dumps(manifest))
    again, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    source = again.cache.source.labels
    assert again.targets == [int(source[i]) for i in again.indices] and again.targets == train.targets


def test_a_sample_whose_raw_file_changed_is_integrated_again(tmp_path, count_integrations):
    """The cache is keyed on what the frames depend on: a raw file edited or extracted again (same name, new bytes
    or time) is integrated again, alone; its frames are the new file's."""
    root = _gesture_root(tmp_path)
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    i = next(k for k, key in enumerate(train.keys) if key.endswith("3.npy"))
    raw = root / "DVSGesture" / train.cache.source.keys[train.indices[i]]
    np.save(raw, np.array([[1, 2, 1, 5], [3, 4, 0, 9], [5, 6, 1, 12]], dtype=np.int64))
    count_integrations.clear()
    train, _, _ = build_dataset("dvsgesture", root, T=4, size=32)
    assert len(count_integrations) == 1 and int(train[i][0].sum()) == 3 == train.n_events[i]
    os.utime(raw, ns=(raw.stat().st_atime_ns, raw.stat().st_mtime_ns + 10**9))  # touched: extracted again
    count_integrations.clear()
    build_dataset("dvsgesture", root, T=4, size=32)
    assert len(count_integrations) == 1


def test_cache_is_rebuilt_when_the_raw_files_change(tmp_path, count_integrations):
    root = _gesture_root(tmp_path)
    build_dataset("dvsgesture", root, T=4, size=32)
    extra = root / "DVSGesture" / "ibmGestureTest" / "user40_led"
    extra.mkdir()
    np.save(extra / "3.npy", np.array([[1, 2, 1, 5], [3, 4, 0, 9]], dtype=np.int64))
    count_integrations.clear()
    _, _, test = build_dataset("dvsgesture", root, T=4, size=32)
    assert len(count_integrations) == 111 and len(test) == 111


def test_cache_dir_can_be_moved_out_of_data_dir(tmp_path, count_integrations):
    root = _gesture_root(tmp_path / "data")
    train, _, _ = build_dataset("dvsgesture", root, T=2, size=16, cache_dir=tmp_path / "cache")
    assert (tmp_path / "cache" / "dvsgesture" / "T2_s16" / "train" / "_COMPLETE.json").is_file()
    assert not (root / "fsnn_cache").exists() and len(count_integrations) == 220


def test_damaged_raw_file_is_reported_by_name(tmp_path):
    root = _gesture_root(tmp_path)
    victim = root / "DVSGesture" / "ibmGestureTrain" / "user03_led" / "5.npy"
    victim.write_bytes(victim.read_bytes()[:60])
    with pytest.raises(DatasetMissingError, match=r"user03_led/5\.npy.*could not be read"):
        build_dataset("dvsgesture", root, T=2, size=16)


# -- missing or incomplete data ---------------------------------------------------------------------


# every dataset read from files (graphs have their own test; digits_dvs and the sequence tasks are generated)
@pytest.mark.parametrize(
    "name", sorted(n for n, i in DATASETS.items() if i.kind in ("event", "static") and n != "digits_dvs")
)
def test_missing_data_is_one_clear_error(tmp_path, name):
    with pytest.raises(DatasetMissingError) as err:
        build_dataset(name, tmp_path / "nodata", download=False)
    message = str(err.value)
    expected_dir = tmp_path / "nodata" / dataset_info(name).directory
    assert isinstance(err.value, FileNotFoundError)
    assert repr(name) in message and str(expected_dir) in message and "How to get it" in message
    assert err.value.dataset == name and err.value.directory == str(expected_dir)


@pytest.mark.parametrize("name", ["nmnist", "ncaltech101", "dvsgesture", "dvslip", "cifar10", "imagenet"])
def test_a_fake_loads_without_the_checks_and_the_same_files_unmarked_are_incomplete(tmp_path, name, monkeypatch):
    """A fake carries its marker: read without the completeness checks it cannot pass, with no switch; the same
    files without the marker are a partial copy of the release, refused unless the checks are switched off."""
    monkeypatch.delenv("FSNN_DATA_VERIFY", raising=False)
    folder = write_fixtures(tmp_path, [name])[name]
    assert is_fake_dataset(name, tmp_path)
    assert len(build_dataset(name, tmp_path, T=2, download=False)[0]) > 0
    with pytest.raises(DatasetMissingError, match="incomplete|corrupted"):
        build_dataset(name, tmp_path, T=2, download=False, verify=True)
    (folder / FAKE_MARKER).unlink()
    assert not is_fake_dataset(name, tmp_path)
    with pytest.raises(DatasetMissingError, match="incomplete|corrupted"):
        build_dataset(name, tmp_path, T=2, download=False)
    monkeypatch.setenv("FSNN_DATA_VERIFY", "0")
    assert len(build_dataset(name, tmp_path, T=2, download=False)[0]) > 0


def test_verification_compares_file_counts_with_the_published_release(fixture_root, monkeypatch):
    # 110 of DVS128 Gesture's 1,077 training files pass tonic's own check (at least 100), not fsnn's
    with pytest.raises(
        DatasetMissingError,
        match=r"ibmGestureTrain/ holds 110 \.npy files, the published release "
        r"has 1,077",
    ):
        build_dataset("dvsgesture", fixture_root, download=False, verify=True)
    spec = tonic_datasets.TONIC_SPECS["dvsgesture"]
    location = fixture_root / spec.folder
    assert tonic_datasets.tonic_split_problem(spec, location, "train", verify=True).startswith("incomplete")
    assert (
        tonic_datasets.tonic_problem(replace(spec, published={"train": 110, "test": 110}), location, verify=True)
        is None
    )
    more = replace(spec, published={"train": 100, "test": 110})
    assert tonic_datasets.tonic_split_problem(more, location, "train", verify=True).startswith(
        "unexpected files: ibmGestureTrain/ holds 110"
    )


def statistics_rows(module) -> dict[str, list[str]]:
    """``{name: [dataset, samples, classes, sensor, "T, frames"]}``: the rows of a loader module's statistics table
    (between its second and third ``===`` rules, columns two or more spaces apart)."""
    lines = module.__doc__.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("===")]
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[rules[1] + 1 : rules[2]]]
    return {row[0].strip("`"): row[1:] for row in rows}


def hw(pair) -> str:
    return f"{pair[0]} x {pair[1]}"


@pytest.mark.parametrize("module", [tonic_datasets, hardvs])
def test_the_statistics_tables_give_what_the_code_holds(module):
    rows = statistics_rows(module)
    names = list(tonic_datasets.TONIC_SPECS) if module is tonic_datasets else ["hardvs", "hardvs_mini"]
    assert list(rows) == names
    for name, (_, samples, classes, sensor, t_frames) in rows.items():
        info = dataset_info(name)
        assert (int(classes), t_frames) == (info.num_classes, f"{info.default_T}, {hw(info.size)}"), name
        if module is tonic_datasets:
            spec = tonic_datasets.TONIC_SPECS[name]
            counts = " / ".join(f"{n:,}" for n in spec.published.values())
            assert (samples, sensor) == (counts + (" in all" if "all" in spec.published else ""), hw(spec.sensor_hw))
        else:
            assert sensor == hw(hardvs.HARDVS_SENSOR)
            if name == "hardvs":
                assert samples == " / ".join(f"{hardvs.HARDVS_SIZES[s]:,}" for s in hardvs.HARDVS_SPLITS)


def test_mini_hardvs_fixture_passes_verification(fixture_root, monkeypatch):
    # its label files list exactly its samples (the full HarDVS is checked against its published sizes)
    monkeypatch.delenv("FSNN_DATA_VERIFY", raising=False)
    assert len(build_dataset("hardvs_mini", fixture_root, T=2, size=16, download=False)[0]) > 0


def test_a_missing_split_is_reported(tmp_path):
    root = _gesture_root(tmp_path)
    for f in (root / "DVSGesture" / "ibmGestureTest").rglob("*.npy"):
        f.unlink()
    with pytest.raises(DatasetMissingError, match="ibmGestureTest"):
        build_dataset("dvsgesture", root, download=False)


def test_failed_download_is_reported_as_missing(tmp_path, monkeypatch):
    import tonic.dataset
    import torchvision.datasets

    def offline(*args, **kwargs):
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(tonic.dataset.Dataset, "download", offline)
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "download", offline)
    for name in ("dvsgesture", "nmnist", "cifar10"):
        with pytest.raises(DatasetMissingError, match="automatic download failed"):
            build_dataset(name, tmp_path, download=True)


def test_download_is_tried_only_for_the_missing_split_then_rechecked(tmp_path, monkeypatch):
    import tonic.dataset

    root = _gesture_root(tmp_path)
    test_dir = root / "DVSGesture" / "ibmGestureTest"
    shutil.rmtree(test_dir)
    tried = []

    def fake_download(self):  # "downloads" by writing the fixture's test split again
        tried.append(self.folder_name)
        write_fixtures(tmp_path / "fresh", ["dvsgesture"])
        (tmp_path / "fresh" / "DVSGesture" / "ibmGestureTest").replace(test_dir)

    monkeypatch.setattr(tonic.dataset.Dataset, "download", fake_download)
    train, val, test = build_dataset("dvsgesture", root, T=2, size=16, download=True)
    assert tried == ["ibmGestureTest"] and len(test) == 110


def test_dvslip_archive_is_extracted_and_kept(tmp_path):
    write_fixtures(tmp_path / "src", ["dvslip"])
    target = tmp_path / "data" / "DVSLip"
    target.mkdir(parents=True)
    with zipfile.ZipFile(target / "DVS-Lip.zip", "w") as zf:
        for f in sorted((tmp_path / "src" / "DVSLip").rglob("*.npy")):
            zf.write(f, f.relative_to(tmp_path / "src" / "DVSLip"))
    train, val, test = build_dataset("dvslip", tmp_path / "data", T=2, size=16, download=False)
    assert len(train) + len(val) == 100 and (target / "DVS-Lip.zip").is_file()
    assert set(train.targets) <= {expected_label("dvslip", f"train/{w}/0.npy") for w in DVSLIP_WORDS}


def test_interrupted_spikingjelly_preparation_is_reported(tmp_path):
    write_fixtures(tmp_path, ["hardvs"])
    (tmp_path / "HARDVS" / "events_np.building").touch()
    with pytest.raises(DatasetMissingError, match="events_np.building"):
        build_dataset("hardvs", tmp_path, download=False)


# -- digits_dvs ------------------------------------------------------------------------------------


def test_digits_simulation_is_deterministic_and_nontrivial():
    from sklearn.datasets import load_digits

    images = load_digits().images[:40].astype(np.float32) / 16
    a, b = digits_dvs.simulate_dvs(images), digits_dvs.simulate_dvs(images)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    counts = np.diff(a["offsets"])
    assert len(counts) == 40 and counts.min() > 500
    for i in range(40):
        s = slice(a["offsets"][i], a["offsets"][i + 1])
        assert set(np.unique(a["p"][s])) == {0, 1} and np.all(np.diff(a["t"][s]) >= 0)
    assert a["x"].max() < 32 and a["y"].max() < 32 and a["t"].max() < 3 * digits_dvs.PARAMS["saccade_us"]


def test_digits_dvs_builds_splits_and_frames(digits_root):
    info = dataset_info("digits_dvs")
    train, val, test = build_dataset("digits_dvs", digits_root, T=info.default_T, seed=0)
    assert len(train) + len(val) + len(test) == 1797 and len(test) == 359
    assert set(train.targets) == set(range(10)) and set(test.targets) == set(range(10))
    assert set(train.keys).isdisjoint(val.keys) and set(train.keys).isdisjoint(test.keys)
    for i in range(0, len(train), 97):
        x, y = train[i]
        assert tuple(x.shape) == (info.default_T, 2, 32, 32) and x.dtype == torch.float32
        assert int(x.sum()) == train.n_events[i] > 0
        assert x[:, 0].sum() > 0 and x[:, 1].sum() > 0  # both polarities
        assert all(x[t].sum() > 0 for t in range(info.default_T))
    on_disk = sum(f.stat().st_size for f in (digits_root / "digits_dvs").iterdir())
    assert on_disk < 20e6


def test_digits_dvs_is_generated_once(digits_root, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("regenerated")

    monkeypatch.setattr(digits_dvs, "simulate_dvs", fail)
    a = build_dataset("digits_dvs", digits_root, T=4)
    b = build_dataset("digits_dvs", digits_root, T=4)
    assert a[1].keys == b[1].keys and torch.equal(a[0][5][0], b[0][5][0])


def test_digits_dvs_damaged_copy_is_regenerated(tmp_path, monkeypatch):
    import sklearn.datasets
    from sklearn.utils import Bunch

    full = sklearn.datasets.load_digits()
    small = Bunch(images=full.images[:30], target=full.target[:30])
    monkeypatch.setattr(sklearn.datasets, "load_digits", lambda: small)
    events_a, labels = digits_dvs.load_events(tmp_path)
    path = tmp_path / "digits_dvs" / digits_dvs.EVENTS_FILE
    path.write_bytes(path.read_bytes()[:1000])
    events_b, _ = digits_dvs.load_events(tmp_path)
    assert len(labels) == 30 and all(np.array_equal(events_a[k], events_b[k]) for k in events_a)
    (tmp_path / "digits_dvs" / digits_dvs.MARKER).unlink()
    assert np.array_equal(digits_dvs.load_events(tmp_path)[0]["t"], events_a["t"])
    assert os.path.getsize(path) > 1000
