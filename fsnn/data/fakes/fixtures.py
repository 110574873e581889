"""Tiny fake copies of every downloadable dataset, in the exact on-disk formats their real loaders parse.

``write_fixtures(root)`` makes ``root`` usable as ``data_dir`` for :func:`fsnn.data.build_dataset` in a second or
so: a few samples per class and split, a few classes, events/pixels drawn from a fixed seed with a class-dependent
location (so a model can fit them). Formats (what tonic / SpikingJelly / torchvision read):

==============  =============================================================================================
nmnist          ``NMNIST/{Train,Test}/<digit>/<id>.bin``: 5-byte ATIS events (x, y, p|t[22:16], t[15:8], t[7:0])
dvsgesture      ``DVSGesture/ibmGesture{Train,Test}/user<NN>_<lighting>/<label>.npy``: int64 rows x, y, p, t[ms]
ncaltech101     ``NCALTECH101/Caltech101/<class>/image_<NNNN>.bin``: 5-byte ATIS events
dvslip          ``DVSLip/DVS-Lip/{train,test}/<word>/<n>.npy``: structured t<i4, x i1, y i1, p i1
hardvs          the full HarDVS as released: ``HARDVS/extract/action_<NNN>/<sample>.npz`` (keys t, x, y, p) and
                ``HARDVS/extract/{train,val,test}_label.txt`` (``action_<NNN>/<sample> <label>``)
hardvs_mini     ``MINI_HARDVS/events_np/{train,val,test}/action_<NNN>/<sample>.npz`` (SpikingJelly's raw layout)
cifar10         ``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``: latin1 pickles
cifar100        ``cifar-100-python/{train,test,meta}``: latin1 pickles (fine and coarse labels)
imagenet        ``imagenet/meta.bin`` (torch.save((wnid_to_classes, val_wnids))) + ``{train,val}/<wnid>/*.JPEG``
==============  =============================================================================================

Every fixture but HARDVS's (whose label files list exactly its samples) is smaller than the published release
that ``verify`` compares it with; each folder carries the fake marker (:mod:`fsnn.data.fakes`), so the loaders read
it without those checks (DVS128 Gesture's
1,077 / 264 files, N-MNIST's 60,000 / 10,000, N-Caltech101's 8,709, DVS-Lip's 14,896 / 4,975, CIFAR's md5 sums,
ImageNet's 1000 classes); DVSGesture has as many files as tonic's own minimum (110 per split). Fakes at a chosen
fraction of the published size, up to all of it, are :mod:`fsnn.data.fakes.scaled_fixtures`'s. ``digits_dvs`` needs no
fixture: it generates itself. The graphs' fixtures (Planetoid / Amazon / Coauthor / OGB formats) are written by
:mod:`fsnn.data.fakes.graph_fixtures`.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from fsnn.data.fakes import write_fakes
from fsnn.data.fakes.graph_fixtures import GRAPH_WRITERS
from fsnn.data.registry import dataset_info

NCALTECH_CLASSES = ("BACKGROUND_Google", "Faces_easy", "airplanes", "yin_yang")
DVSLIP_WORDS = ("accused", "action", "allow", "young")
HARDVS_CLASSES = ("action_001", "action_002", "action_003")
IMAGENET_WNIDS = {
    "n01440764": ("tench", "Tinca tinca"),
    "n01443537": ("goldfish", "Carassius auratus"),
    "n01484850": ("great white shark", "white shark", "man-eater"),
}
GESTURE_LIGHTING = ("fluorescent", "fluorescent_led", "lab", "led", "natural")


def fake_events(
    rng: np.random.Generator, n: int, H: int, W: int, label: int, num_labels: int, duration_us: int = 300_000
):
    """``n`` time-sorted events ``(x, y, t, p)`` on an ``H x W`` sensor: a blob whose centre moves over time and
    whose horizontal position depends on ``label``, ``t`` in ``[0, duration_us)``, random polarities."""
    t = np.sort(rng.integers(0, duration_us, n))
    cx = (label + 1) * W / (num_labels + 1) + 0.1 * W * np.sin(2 * np.pi * t / duration_us)
    cy = H / 2 + 0.2 * H * np.cos(2 * np.pi * t / duration_us)
    x = np.clip(np.round(cx + rng.normal(0, W / 12, n)), 0, W - 1).astype(np.int64)
    y = np.clip(np.round(cy + rng.normal(0, H / 12, n)), 0, H - 1).astype(np.int64)
    p = rng.integers(0, 2, n)
    return x, y, t, p


def encode_atis_bin(x, y, t, p) -> bytes:
    """N-MNIST / N-Caltech101 ``.bin`` bytes: per event x, y, then polarity in bit 7 and the 23-bit timestamp
    (microseconds) big-endian over bits 0-6 and two bytes. Needs ``x, y < 256``, ``y != 240``, ``t < 2**23``."""
    x, y, t, p = (np.asarray(a, dtype=np.int64) for a in (x, y, t, p))
    if np.any(y == 240) or np.any(t >= 2**23) or np.any((x > 255) | (y > 255)):
        raise ValueError("event not representable without overflow markers")
    out = np.empty((len(t), 5), np.uint8)
    out[:, 0] = x
    out[:, 1] = y
    out[:, 2] = ((p > 0).astype(np.int64) << 7) | ((t >> 16) & 0x7F)
    out[:, 3] = (t >> 8) & 0xFF
    out[:, 4] = t & 0xFF
    return out.tobytes()


def _nmnist(root: Path, rng) -> Path:
    base = root / "NMNIST"
    for split, per_digit in (("Train", 3), ("Test", 2)):
        for digit in range(10):
            folder = base / split / str(digit)
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(per_digit):
                ev = fake_events(rng, int(rng.integers(80, 160)), 34, 34, digit, 10)
                (folder / f"{digit * 1000 + k:05d}.bin").write_bytes(encode_atis_bin(*ev))
    return base


def _dvsgesture(root: Path, rng) -> Path:
    base = root / "DVSGesture"
    for split, users in (("ibmGestureTrain", range(1, 11)), ("ibmGestureTest", range(24, 34))):
        for u in users:
            folder = base / split / f"user{u:02d}_{GESTURE_LIGHTING[u % len(GESTURE_LIGHTING)]}"
            folder.mkdir(parents=True, exist_ok=True)
            for label in range(11):
                x, y, t, p = fake_events(rng, int(rng.integers(60, 120)), 128, 128, label, 11, 1_500_000)
                np.save(folder / f"{label}.npy", np.stack([x, y, p, t // 1000], axis=1).astype(np.int64))
    return base


def _ncaltech101(root: Path, rng) -> Path:
    base = root / "NCALTECH101"
    for c, name in enumerate(NCALTECH_CLASSES):
        folder = base / "Caltech101" / name
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(5):
            x, y, t, p = fake_events(rng, int(rng.integers(100, 200)), 170, 230, c, len(NCALTECH_CLASSES))
            (folder / f"image_{k + 1:04d}.bin").write_bytes(encode_atis_bin(x + 3, y + 2, t, p))
    return base


def _dvslip(root: Path, rng) -> Path:
    base = root / "DVSLip"
    dtype = np.dtype([("t", "<i4"), ("x", "i1"), ("y", "i1"), ("p", "i1")])
    for split in ("train", "test"):
        for w, word in enumerate(DVSLIP_WORDS):
            folder = base / "DVS-Lip" / split / word
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(25):
                x, y, t, p = fake_events(rng, int(rng.integers(40, 80)), 128, 128, w, len(DVSLIP_WORDS))
                arr = np.empty(len(t), dtype)
                arr["t"], arr["x"], arr["y"], arr["p"] = t, x, y, p
                np.save(folder / f"{k}.npy", arr)
    return base


def _hardvs_samples(rng):
    """``(split, action folder, sample name, events)`` of every fake HarDVS recording."""
    for split, per_class in (("train", 3), ("val", 2), ("test", 2)):
        for c, name in enumerate(HARDVS_CLASSES):
            for k in range(per_class):
                events = fake_events(rng, int(rng.integers(100, 200)), 260, 346, c, len(HARDVS_CLASSES))
                yield split, name, f"dvSave-2021_10_{15 + c:02d}_19_18_{split}{k:02d}", events


def _save_events(path: Path, x, y, t, p) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, t=t, x=x, y=y, p=p)


def _hardvs(root: Path, rng) -> Path:
    """The full HarDVS as its release unpacks: one folder per action and the three split lists."""
    base = root / "HARDVS" / "extract"
    lists = {split: [] for split in ("train", "val", "test")}
    for split, action, sample, events in _hardvs_samples(rng):
        _save_events(base / action / f"{sample}.npz", *events)
        lists[split].append(f"{action}/{sample} {int(action.split('_')[1]) - 1}")
    for split, lines in lists.items():
        (base / f"{split}_label.txt").write_text("\n".join(lines) + "\n")
    return base.parent


def _hardvs_mini(root: Path, rng) -> Path:
    """MINI-HARDVS in SpikingJelly's raw layout (its download/ archives are md5-checked: a fake cannot pass)."""
    base = root / "MINI_HARDVS"
    for split, action, sample, events in _hardvs_samples(rng):
        _save_events(base / "events_np" / split / action / f"{sample}.npz", *events)
    return base


def _images(rng, n: int, labels, num_labels: int, H: int = 32, W: int = 32) -> np.ndarray:
    """``[n, H, W, 3]`` uint8 noise images with a bright square whose position encodes the label."""
    images = rng.integers(0, 60, (n, H, W, 3), dtype=np.uint8)
    for i, label in enumerate(labels):
        cx = int((label % num_labels + 0.5) * (W - 8) / num_labels)
        images[i, H // 3 : H // 3 + 8, cx : cx + 8, label % 3] = 255
    return images


def _pickle(path: Path, obj) -> None:
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)


def _cifar10(root: Path, rng) -> Path:
    base = root / "cifar-10-batches-py"
    base.mkdir(parents=True, exist_ok=True)
    for name, n in [(f"data_batch_{i}", 8) for i in range(1, 6)] + [("test_batch", 10)]:
        labels = [int(v) for v in rng.integers(0, 10, n)]
        data = _images(rng, n, labels, 10).transpose(0, 3, 1, 2).reshape(n, 3072)
        _pickle(
            base / name,
            {"batch_label": name, "labels": labels, "data": data, "filenames": [f"img_{i}.png" for i in range(n)]},
        )
    _pickle(
        base / "batches.meta",
        {
            "label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"],
            "num_cases_per_batch": 8,
            "num_vis": 3072,
        },
    )
    return base


def _cifar100(root: Path, rng) -> Path:
    base = root / "cifar-100-python"
    base.mkdir(parents=True, exist_ok=True)
    for name, n in (("train", 40), ("test", 10)):
        fine = [int(v) for v in rng.integers(0, 5, n)]
        data = _images(rng, n, fine, 5).transpose(0, 3, 1, 2).reshape(n, 3072)
        _pickle(
            base / name,
            {
                "batch_label": name,
                "fine_labels": fine,
                "coarse_labels": [f // 5 for f in fine],
                "data": data,
                "filenames": [f"img_{i}.png" for i in range(n)],
            },
        )
    _pickle(
        base / "meta",
        {
            "fine_label_names": [f"class_{i:03d}" for i in range(100)],
            "coarse_label_names": [f"super_{i:02d}" for i in range(20)],
        },
    )
    return base


def _imagenet(root: Path, rng) -> Path:
    import torch
    from PIL import Image

    base = root / "imagenet"
    wnids = sorted(IMAGENET_WNIDS)
    val_wnids = []
    for split, per_class in (("train", 4), ("val", 2)):
        for c, wnid in enumerate(wnids):
            folder = base / split / wnid
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(per_class):
                image = _images(rng, 1, [c], len(wnids), 40, 48)[0]
                name = f"{wnid}_{k}.JPEG" if split == "train" else f"ILSVRC2012_val_{len(val_wnids) + 1:08d}.JPEG"
                if split == "val":
                    val_wnids.append(wnid)
                Image.fromarray(image).save(folder / name, "JPEG")
    torch.save(({w: IMAGENET_WNIDS[w] for w in wnids}, val_wnids), base / "meta.bin")
    return base


WRITERS = {
    "nmnist": _nmnist,
    "dvsgesture": _dvsgesture,
    "ncaltech101": _ncaltech101,
    "dvslip": _dvslip,
    "hardvs": _hardvs,
    "hardvs_mini": _hardvs_mini,
    "cifar10": _cifar10,
    "cifar100": _cifar100,
    "imagenet": _imagenet,
    **GRAPH_WRITERS,
}
#: every dataset with a fake, in the order that seeds their writers (a fake's seed is its index)
FIXTURE_NAMES = tuple(WRITERS)


def write_fixtures(root: Path, names=None) -> dict[str, Path]:
    """Write tiny fakes of ``names`` (default: all of :data:`FIXTURE_NAMES`) under ``root`` (usable as
    ``data_dir``); returns ``{name: dataset folder}``. Each dataset draws from its own fixed seed, so the output
    is identical on every call. Each folder is written whole and marked as a fake, over nothing but an earlier fake
    (:func:`fsnn.data.fakes.write_fakes`)."""
    names = FIXTURE_NAMES if names is None else tuple(names)
    unknown = sorted(set(names) - set(WRITERS))
    if unknown:
        raise ValueError(f"no fixture for {unknown}; available: {sorted(WRITERS)}")

    def write(staging: Path, name: str) -> None:
        WRITERS[name](staging, np.random.default_rng(FIXTURE_NAMES.index(name)))

    return write_fakes(root, {name: dataset_info(name).directory for name in names}, write)
