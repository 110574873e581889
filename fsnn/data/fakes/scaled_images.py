"""Fake static image datasets at a chosen fraction of their published size, in the on-disk formats torchvision reads:
CIFAR-10 and CIFAR-100 (latin1 pickles, one file per batch) and ImageNet-1k (a JPEG per image and ``meta.bin``).

:mod:`.scaled_fixtures` plans, seeds and registers them (``write_scaled_fixtures(root, scale, ["cifar10"])`` or
``fsnn-fixtures DIR --scale FRACTION --only cifar10``); this module holds what is particular to them: their
published counts and class names (:func:`image_counts`, :func:`image_path`), the images (:func:`cifar_images`,
:func:`imagenet_image`, statistics tabled in their docstrings) and the writers. As for the event fakes, every image
draws from its own seed, so it is the same at every scale, and carries a class-dependent colour and pattern (so a
model can learn above chance).

Verification (``verify=True``): torchvision's CIFAR classes compare md5 sums, which no fake can match, so a CIFAR
fake loads without verification (as a marked fake does by default, :mod:`fsnn.data.fakes`) at every scale, full
size included (fsnn then checks only that the files are there and torchvision parses them unchanged:
:func:`fsnn.data.static.build_cifar`). An ImageNet fake passes verification at every scale: fsnn checks that
``train/`` and ``val/`` hold all 1000 class folders (:func:`fsnn.data.static.imagenet_problem`), and every scale keeps
at least one image per class and split.
"""

from __future__ import annotations

import functools
import io
import pickle
import struct
from pathlib import Path

import numpy as np

from fsnn.data.static import CIFAR, IMAGENET_FOLDER, NORMALIZATION, PUBLISHED_IMAGES

IMAGE_NAMES = ("cifar10", "cifar100", "imagenet")
#: base seed of each dataset's samples (a sample's seed is ``(base, split, class, index)``)
IMAGE_SEEDS = {"cifar10": 1006, "cifar100": 1007, "imagenet": 1008}

# -- CIFAR-10 / CIFAR-100 ----------------------------------------------------------------------

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
#: CIFAR-100's 20 superclasses (coarse labels, in label order) and the five classes of each, as listed on the
#: dataset's page (Krizhevsky, "Learning Multiple Layers of Features from Tiny Images", 2009; cs.toronto.edu/~kriz/
#: cifar.html), named as in the release's ``meta`` file
CIFAR100_SUPERCLASSES = {
    "aquatic_mammals": ("beaver", "dolphin", "otter", "seal", "whale"),
    "fish": ("aquarium_fish", "flatfish", "ray", "shark", "trout"),
    "flowers": ("orchid", "poppy", "rose", "sunflower", "tulip"),
    "food_containers": ("bottle", "bowl", "can", "cup", "plate"),
    "fruit_and_vegetables": ("apple", "mushroom", "orange", "pear", "sweet_pepper"),
    "household_electrical_devices": ("clock", "keyboard", "lamp", "telephone", "television"),
    "household_furniture": ("bed", "chair", "couch", "table", "wardrobe"),
    "insects": ("bee", "beetle", "butterfly", "caterpillar", "cockroach"),
    "large_carnivores": ("bear", "leopard", "lion", "tiger", "wolf"),
    "large_man-made_outdoor_things": ("bridge", "castle", "house", "road", "skyscraper"),
    "large_natural_outdoor_scenes": ("cloud", "forest", "mountain", "plain", "sea"),
    "large_omnivores_and_herbivores": ("camel", "cattle", "chimpanzee", "elephant", "kangaroo"),
    "medium_mammals": ("fox", "porcupine", "possum", "raccoon", "skunk"),
    "non-insect_invertebrates": ("crab", "lobster", "snail", "spider", "worm"),
    "people": ("baby", "boy", "girl", "man", "woman"),
    "reptiles": ("crocodile", "dinosaur", "lizard", "snake", "turtle"),
    "small_mammals": ("hamster", "mouse", "rabbit", "shrew", "squirrel"),
    "trees": ("maple_tree", "oak_tree", "palm_tree", "pine_tree", "willow_tree"),
    "vehicles_1": ("bicycle", "bus", "motorcycle", "pickup_truck", "train"),
    "vehicles_2": ("lawn_mower", "rocket", "streetcar", "tank", "tractor"),
}
#: CIFAR-100's fine class names in label order (alphabetical, as in the release's ``meta``)
CIFAR100_CLASSES = tuple(sorted(fine for group in CIFAR100_SUPERCLASSES.values() for fine in group))
#: the coarse label of each fine label
CIFAR100_COARSE = tuple(
    next(c for c, group in enumerate(CIFAR100_SUPERCLASSES.values()) if fine in group) for fine in CIFAR100_CLASSES
)
#: each split's files (torchvision's ``train_list`` / ``test_list``) and images per class: CIFAR-10's 6,000 per class
#: (5,000 training, in five batches of 10,000, and 1,000 test), CIFAR-100's 600 (500 and 100), as published
CIFAR_SPLITS = {
    "cifar10": {"train": ([f"data_batch_{i}" for i in range(1, 6)], 5000), "test": (["test_batch"], 1000)},
    "cifar100": {"train": (["train"], 500), "test": (["test"], 100)},
}


class Python2Pickler(pickle._Pickler):
    """Protocol-2 pickles with ``bytes`` stored as Python 2 stored its strings (``BINSTRING``: one byte each), as in
    the CIFAR release (written by Python 2); Python 3 reads them back with ``encoding="latin1"``, as torchvision does
    (numpy's arrays accept the decoded string). Python 3's own protocol 2 stores ``bytes`` as latin1 text encoded in
    UTF-8, half as large again for image data."""

    dispatch = pickle._Pickler.dispatch.copy()

    def save_bytes(self, obj: bytes) -> None:
        size = len(obj)
        head = pickle.SHORT_BINSTRING + bytes([size]) if size < 256 else pickle.BINSTRING + struct.pack("<i", size)
        self.write(head + obj)
        self.memoize(obj)

    dispatch[bytes] = save_bytes


def _pickle(path: Path, obj) -> None:
    with open(path, "wb") as f:
        Python2Pickler(f, protocol=2).dump(obj)


def cifar_classes(name: str) -> tuple[str, ...]:
    """The class names of ``cifar10`` or ``cifar100`` (fine labels) in label order."""
    return CIFAR10_CLASSES if name == "cifar10" else CIFAR100_CLASSES


def cifar_file(name: str, split: str, k: int) -> str:
    """The file (relative to ``root``) that holds sample ``k`` of a class: CIFAR-10's training batch ``k // 1000 + 1``
    (so each batch holds 1,000 images per class; assumed, the release's batches only sum to 5,000 per class), else
    the split's one file."""
    files, per_class = CIFAR_SPLITS[name][split]
    return f"{CIFAR[name][1]}/{files[k * len(files) // per_class]}"


@functools.cache
def cifar_patterns(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(colour [C, 3], axis [C, 3], wave [C, 2])`` of each class: the mean colour (each channel uniform over a range
    of 150, centred so that the classes average to the training set's mean, :data:`fsnn.data.static.NORMALIZATION`;
    CIFAR-100's fine classes share their superclass's colour, moved by up to 16), the colour direction of its
    grating, and the grating's wave vector (radians per pixel)."""
    classes = len(cifar_classes(name))
    rng = np.random.default_rng((IMAGE_SEEDS[name], 99))
    mean = 255 * np.array(NORMALIZATION[name][0])
    colour = rng.uniform(-75, 75, (classes, 3))
    if name == "cifar100":
        colour = colour[list(CIFAR100_COARSE)] + rng.uniform(-16, 16, (classes, 3))
    colour += mean - colour.mean(axis=0)
    axis = rng.normal(0, 1, (classes, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = np.pi * (np.arange(classes) + rng.uniform(0, 1, classes)) / classes
    cycles = rng.uniform(1.5, 4.5, classes)  # per 32 pixels
    wave = 2 * np.pi * cycles[:, None] / 32 * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return colour.astype(np.float32), axis.astype(np.float32), wave.astype(np.float32)


def cifar_images(name: str, samples) -> tuple[np.ndarray, np.ndarray]:
    """``(uint8 [n, 32, 32, 3], order keys [n])`` of the fake CIFAR ``samples`` (plan entries: ``label``, ``seed``).

    Each image is its class's colour (:func:`cifar_patterns`) plus a sinusoidal grating along the class's wave
    vector and colour direction, with a per-sample phase, contrast, colour shift and pixel noise, drawn from the
    sample's seed (so the image is the same in any batch, at any scale); the arithmetic runs over the whole batch.
    The order key (the seed's first draw) places the sample in its file. Statistics:

    ======================  ==========================  ==========================================================
    quantity                value                       source
    ======================  ==========================  ==========================================================
    image                   32 x 32 x 3, uint8, stored  Krizhevsky 2009 and the release: rows of 3,072 bytes, the
                            as the red, green, blue     1,024 red values first (row-major), then green and blue
                            planes
    images                  CIFAR-10: 50,000 / 10,000,  Krizhevsky 2009 (:data:`CIFAR_SPLITS`)
                            5,000 / 1,000 per class;
                            CIFAR-100: 50,000 /
                            10,000, 500 / 100 per
                            class, 20 superclasses
    pixel mean, sd          the training set's per      :data:`fsnn.data.static.NORMALIZATION` (mean 0.45-0.51 of
                            channel mean; sd about      255, sd 0.24-0.28); the sd's parts are assumed: class
                            0.22-0.25 of 255            colours (uniform, +-75), grating (amplitude 90 x
                                                        U(0.6, 1.2)), colour shift (sd 10), noise (sd 28)
    order in a file         random                      Krizhevsky 2009 ("in random order"); here sorted by a
                                                        per-sample key
    ======================  ==========================  ==========================================================
    """
    colour, axis, wave = cifar_patterns(name)
    n = len(samples)
    labels = np.array([s.label for s in samples], dtype=np.int64)
    keys, phase, contrast = np.empty(n), np.empty(n, np.float32), np.empty(n, np.float32)
    shift = np.empty((n, 3), np.float32)
    noise = np.empty((n, 32, 32, 3), np.float32)
    for i, sample in enumerate(samples):
        rng = np.random.default_rng(sample.seed)
        keys[i], phase[i], contrast[i] = rng.random(), rng.uniform(0, 2 * np.pi), rng.uniform(0.6, 1.2)
        shift[i] = rng.normal(0, 10, 3)
        noise[i] = rng.normal(0, 28, (32, 32, 3))
    yy, xx = np.mgrid[0:32, 0:32].astype(np.float32)
    grating = np.sin(wave[labels, 0, None, None] * xx + wave[labels, 1, None, None] * yy + phase[:, None, None])
    images = (colour[labels] + shift)[:, None, None, :] + noise
    images += (90 * contrast)[:, None, None, None] * grating[..., None] * axis[labels][:, None, None, :]
    return np.clip(np.round(images), 0, 255).astype(np.uint8), keys


def write_cifar_file(name: str, root: Path, path: str, samples) -> None:
    """Write the CIFAR pickle ``root / path`` holding ``samples`` (all of one file), in the release's layout:
    ``data`` uint8 ``[n, 3072]``, ``labels`` (CIFAR-10) or ``fine_labels`` and ``coarse_labels`` (CIFAR-100),
    ``batch_label`` and ``filenames``, the samples in random order."""
    images, keys = [], []
    for start in range(0, len(samples), 10_000):  # at most 10,000 images in memory as floats
        chunk_images, chunk_keys = cifar_images(name, samples[start : start + 10_000])
        images.append(chunk_images)
        keys.append(chunk_keys)
    order = np.argsort(np.concatenate(keys), kind="stable")
    ordered = [samples[i] for i in order]
    data = np.concatenate(images)[order].transpose(0, 3, 1, 2).reshape(len(samples), 3072)
    split = ordered[0].split
    files = CIFAR_SPLITS[name][split][0]
    file = Path(path).name
    entry = {
        "batch_label": f"{'training' if split == 'train' else 'testing'} batch {files.index(file) + 1} of {len(files)}",
        "data": data,
        "filenames": [f"{cifar_classes(name)[s.label]}_{split}_{s.seed[3] + 1:06d}.png" for s in ordered],
    }
    labels = [s.label for s in ordered]
    if name == "cifar10":
        entry["labels"] = labels
    else:
        entry["fine_labels"], entry["coarse_labels"] = labels, [CIFAR100_COARSE[label] for label in labels]
    _pickle(root / path, entry)


def write_cifar_meta(name: str, root: Path, plan=None) -> None:
    """Write the class names (``batches.meta`` of CIFAR-10, ``meta`` of CIFAR-100) under ``root``; the ``plan`` is not
    needed (the same at every scale)."""
    folder = root / CIFAR[name][1]
    if name == "cifar10":
        meta = {"label_names": list(CIFAR10_CLASSES), "num_cases_per_batch": 10000, "num_vis": 3072}
        _pickle(folder / "batches.meta", meta)
    else:
        meta = {"fine_label_names": list(CIFAR100_CLASSES), "coarse_label_names": list(CIFAR100_SUPERCLASSES)}
        _pickle(folder / "meta", meta)


# -- ImageNet-1k -------------------------------------------------------------------------------

#: ImageNet-1k's (ILSVRC2012) published counts: training images in all, the fewest and most of a class, and
#: validation images per class (Russakovsky et al., "ImageNet Large Scale Visual Recognition Challenge", IJCV 2015)
IMAGENET_TRAIN = PUBLISHED_IMAGES["imagenet"][0]
IMAGENET_TRAIN_RANGE = (732, 1300)
IMAGENET_VAL_PER_CLASS = 50
#: the JPEG quality of the fakes (assumed: the release's files vary)
IMAGENET_QUALITY = 90
#: the long side of a fake image: log-normal median (px) and sigma, clipped to the range (see :func:`imagenet_image`)
IMAGENET_LONG_SIDE = (410.0, 0.3, (80, 2500))
#: the sd of the pixel noise, which sets the JPEG's size (see :func:`imagenet_image`)
IMAGENET_NOISE = 42.0


@functools.cache
def imagenet_classes() -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """``(wnids, names)`` of ImageNet-1k's 1000 classes in label order (the wnids sorted): the real list, as timm
    ships it (``timm.data.ImageNetInfo``, installed with fsnn's ``vision`` extra, as torchvision); each class's names
    split at ", " as torchvision splits the devkit's (``("tench", "Tinca tinca")``)."""
    from timm.data import ImageNetInfo

    info = ImageNetInfo()
    wnids = tuple(info.label_names())
    names = tuple(tuple(words.split(", ")) for words in info.label_descriptions())
    return wnids, names


@functools.cache
def imagenet_counts() -> tuple[int, ...]:
    """Training images of each ImageNet-1k class: 1,300 for most, 66 classes (drawn with a fixed seed) fewer, their
    counts spread evenly from 732 to 1,299, so that the total is the published 1,281,167. Assumed: the published
    total, minimum and maximum are kept, the per-class counts are not sourced."""
    low, high = IMAGENET_TRAIN_RANGE
    short = 66
    counts = np.full(1000, high)
    fewer = np.round(np.linspace(low, high - 1, short)).astype(np.int64)
    excess = int(fewer.sum()) + high * (1000 - short) - IMAGENET_TRAIN
    fewer[len(fewer) - excess :] -= 1  # the largest of them one fewer, to hit the total
    rng = np.random.default_rng((IMAGE_SEEDS["imagenet"], 98))
    counts[np.sort(rng.choice(1000, short, replace=False))] = fewer
    return tuple(int(c) for c in counts)


def image_counts(name: str) -> dict[str, list[int]]:
    """Each split's published images per class (in label order) of ``cifar10``, ``cifar100`` or ``imagenet``."""
    if name == "imagenet":
        return {"train": list(imagenet_counts()), "val": [IMAGENET_VAL_PER_CLASS] * 1000}
    classes = len(cifar_classes(name))
    return {split: [per_class] * classes for split, (_, per_class) in CIFAR_SPLITS[name].items()}


def image_path(name: str, split: str, label: int, k: int) -> str:
    """Where sample ``k`` of class ``label`` goes (relative to ``root``): the CIFAR file that holds it
    (:func:`cifar_file`), or its ImageNet JPEG: ``imagenet/train/<wnid>/<wnid>_<k + 1>.JPEG``, or
    ``imagenet/val/<wnid>/ILSVRC2012_val_<NNNNNNNN>.JPEG`` numbered so that the classes alternate (as the release's
    validation images are numbered in no class order)."""
    if name != "imagenet":
        return cifar_file(name, split, k)
    wnid = imagenet_classes()[0][label]
    if split == "train":
        return f"{IMAGENET_FOLDER}/train/{wnid}/{wnid}_{k + 1}.JPEG"
    return f"{IMAGENET_FOLDER}/val/{wnid}/ILSVRC2012_val_{k * 1000 + label + 1:08d}.JPEG"


@functools.cache
def imagenet_pattern(label: int) -> dict[str, np.ndarray]:
    """The class's look, fixed per ``label``: background colours at the top and bottom, the colour, centre and radii
    (fractions of the image) of an ellipse, and a texture's colour direction, orientation and cycles per image."""
    rng = np.random.default_rng((IMAGE_SEEDS["imagenet"], 99, label))
    axis = rng.normal(0, 1, 3)
    return {
        "top": rng.uniform(30, 225, 3),
        "bottom": rng.uniform(30, 225, 3),
        "object": rng.uniform(20, 235, 3),
        "centre": rng.uniform(0.3, 0.7, 2),
        "radii": rng.uniform(0.12, 0.35, 2),
        "axis": axis / np.linalg.norm(axis),
        "angle": rng.uniform(0, np.pi, 1),
        "cycles": rng.uniform(3, 14, 1),
    }


def imagenet_size(rng: np.random.Generator) -> tuple[int, int]:
    """A fake image's ``(height, width)``: the long side log-normal (:data:`IMAGENET_LONG_SIDE`), the aspect ratio
    log-normal about 4:3 (sigma 0.12, clipped to [1, 2.5]), landscape with probability 3/4."""
    median, sigma, (low, high) = IMAGENET_LONG_SIDE
    long_side = float(np.clip(rng.lognormal(np.log(median), sigma), low, high))
    aspect = float(np.clip(rng.lognormal(np.log(4 / 3), 0.12), 1.0, 2.5))
    short_side = max(16.0, long_side / aspect)
    sides = (int(round(short_side)), int(round(long_side)))
    return sides if rng.random() < 0.75 else sides[::-1]


def imagenet_image(rng: np.random.Generator, label: int) -> np.ndarray:
    """One fake ImageNet image of class ``label``: ``uint8 [H, W, 3]``.

    The class's look (:func:`imagenet_pattern`: a vertical colour gradient, an ellipse, a sinusoidal texture), moved
    and scaled a little per sample (the ellipse's centre by up to 0.08 of the image, its radii by 0.8-1.2, the
    texture's phase, a colour shift of sd 10), plus pixel noise (sd :data:`IMAGENET_NOISE`) that gives the JPEGs
    (quality :data:`IMAGENET_QUALITY`) about the release's bytes per image. Statistics:

    ======================  ==========================  ==========================================================
    quantity                value                       source
    ======================  ==========================  ==========================================================
    classes                 1000, the real wnids and    ILSVRC2012; the list timm ships (:func:`imagenet_classes`)
                            names
    training images         1,281,167, 732-1,300 per    Russakovsky et al., IJCV 2015 (total, fewest, most); the
                            class                       per-class counts assumed (:func:`imagenet_counts`)
    validation images       50,000, 50 per class        Russakovsky et al. 2015
    image size              mean about 400 x 350 px     assumed, the commonly quoted average of ImageNet's images
                            (width x height), widely    (not checked offline); the long side log-normal, median
                            varying (long side: 5-95 %  410 px, sigma 0.3, clipped to [80, 2500], aspect about
                            about 250-670 px)           4:3, landscape 3 times in 4 (:func:`imagenet_size`)
    JPEG bytes              about 110 KB per image      ILSVRC2012's archives: 138 GB for the 1,281,167 training
                            (mean), growing with the    images (image-net.org's download page), about 108 KB each;
                            pixel count                 here the noise level and quality 90 give it (a test
                                                        checks the mean)
    content                 class-dependent colours,    assumed (a model must be able to learn above chance)
                            ellipse and texture
    ======================  ==========================  ==========================================================
    """
    height, width = imagenet_size(rng)
    look = imagenet_pattern(label)
    centre = look["centre"] + rng.uniform(-0.08, 0.08, 2)
    radii = look["radii"] * rng.uniform(0.8, 1.2, 2)
    phase = rng.uniform(0, 2 * np.pi)
    shift = rng.normal(0, 10, 3).astype(np.float32)
    noise = rng.standard_normal((height, width, 3), dtype=np.float32)
    yy = ((np.arange(height, dtype=np.float32) + 0.5) / height)[:, None]
    xx = ((np.arange(width, dtype=np.float32) + 0.5) / width)[None, :]
    inside = ((xx - centre[0]) / radii[0]) ** 2 + ((yy - centre[1]) / radii[1]) ** 2 < 1
    background = look["top"] + (look["bottom"] - look["top"]) * yy[..., None]
    image = np.where(inside[..., None], look["object"].astype(np.float32), background.astype(np.float32))
    wave = 2 * np.pi * look["cycles"][0] * (np.cos(look["angle"][0]) * xx + np.sin(look["angle"][0]) * yy) + phase
    image += 30 * np.sin(wave)[..., None] * look["axis"].astype(np.float32)
    image += shift
    image += IMAGENET_NOISE * noise
    return np.clip(image, 0, 255).astype(np.uint8)


def imagenet_jpeg(rng: np.random.Generator, label: int) -> bytes:
    """:func:`imagenet_image` encoded as a JPEG (PIL, quality :data:`IMAGENET_QUALITY`)."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(imagenet_image(rng, label)).save(out, "JPEG", quality=IMAGENET_QUALITY)
    return out.getvalue()


def write_imagenet_sample(root: Path, sample) -> None:
    """Write one fake ImageNet JPEG (a plan entry ``sample``: ``path``, ``label``, ``seed``) under ``root``."""
    (root / sample.path).write_bytes(imagenet_jpeg(np.random.default_rng(sample.seed), sample.label))


def write_imagenet_meta(root: Path, plan=None) -> None:
    """Write ``imagenet/meta.bin`` as torchvision writes it from the devkit: ``torch.save((wnid_to_classes,
    val_wnids))``, the 1000 classes' names and the wnid of each of the 50,000 validation images in their numbering
    (:func:`image_path`); the same at every scale, so the ``plan`` is not needed."""
    import torch

    wnids, names = imagenet_classes()
    val_wnids = [wnids[i % 1000] for i in range(1000 * IMAGENET_VAL_PER_CLASS)]
    torch.save((dict(zip(wnids, names)), val_wnids), root / IMAGENET_FOLDER / "meta.bin")
