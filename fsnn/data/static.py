"""Static image datasets (CIFAR-10, CIFAR-100, ImageNet) encoded over ``T`` time steps.

``encoder="direct"``: the normalised image is the input at every time step, ``x = image.repeat(T, 1, 1, 1)`` of
shape ``[T, 3, H, W]``. ``encoder="spike"`` (the paper's "ImageNet (spike encoder)" row): Bernoulli spikes, each
pixel of the un-normalised image (intensity ``p`` in [0, 1]) fires with probability ``p`` at each of the ``T`` steps,
drawn anew at every access. Training augmentation (random crop + horizontal flip) is drawn once per sample, so the
``T`` steps see the same image. Validation is a seeded, stratified ``val_fraction`` of the official training set, served
without augmentation; test is the official test set (CIFAR) or the official validation set (ImageNet).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from fsnn.checks import Count, checked, one_of
from fsnn.data.errors import dataset_missing
from fsnn.data.info import BuilderArgs, DatasetInfo
from fsnn.data.splits import stratified_split

#: per-channel mean/std of the training sets (RGB)
NORMALIZATION = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
}


#: images of each published release, (training, test): CIFAR's 5,000 and 1,000 (CIFAR-100: 500 and 100) per class,
#: ImageNet-1k's (ILSVRC2012) training set and its validation set, the test split here
PUBLISHED_IMAGES = {"cifar10": (50_000, 10_000), "cifar100": (50_000, 10_000), "imagenet": (1_281_167, 50_000)}

ENCODERS = ("direct", "spike")


class EncodedImages(Dataset):
    """Subset ``indices`` of an image dataset ``base`` (items ``(PIL image, label)``), each image transformed once
    and encoded over ``T`` steps (``encoder``, see the module docstring): item ``i`` is
    ``(float32 [T, 3, H, W], int)``; with ``counts`` the spike encoder's spikes stay ``uint8`` (:meth:`as_counts`).
    ``targets``: subset labels."""

    @checked
    def __init__(
        self,
        base,
        indices,
        transform,
        T: Count,
        info: DatasetInfo | None = None,
        encoder: one_of(*ENCODERS) = "direct",
        counts: bool = False,
    ):
        self.base = base
        self.indices = [int(i) for i in indices]
        self.transform = transform
        self.T = T
        self.info = info
        self.encoder = encoder
        self.counts = bool(counts)
        targets = np.asarray(base.targets)
        self.targets = [int(v) for v in targets[self.indices]] if self.indices else []

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int):
        image, label = self.base[self.indices[i]]
        x = self.transform(image)
        if self.encoder == "spike":
            spikes = bernoulli_spikes(x, self.T)
            return (spikes if self.counts else spikes.float()), int(label)
        return x.unsqueeze(0).expand(self.T, -1, -1, -1).contiguous(), int(label)

    def as_counts(self) -> EncodedImages:
        """The spike encoder's items as ``uint8`` spikes, a quarter of the bytes through a data loader (made float32
        on the device, :class:`fsnn.suite.training.SpikingClassifier`); the direct encoder's are floats: itself."""
        if self.encoder != "spike":
            return self
        return EncodedImages(self.base, self.indices, self.transform, self.T, self.info, self.encoder, counts=True)


def bernoulli_spikes(x: torch.Tensor, T: int) -> torch.Tensor:
    """``uint8 [T, *x.shape]`` spikes: each of ``x``'s intensities in ``[0, 1]`` (``ToTensor``'s ``v / 255`` of an
    8-bit pixel ``v``) fires with probability ``v / 255`` at each step, drawn anew per call. Exactly Bernoulli: a
    uniform byte in ``[0, 255)`` is below ``v`` with probability ``v / 255``, one random byte per spike (several
    times faster than ``torch.bernoulli`` on floats)."""
    levels = (x * 255).round_().to(torch.uint8)
    return (torch.randint(0, 255, (T, *x.shape), dtype=torch.uint8) < levels).to(torch.uint8)


def _splits(args: BuilderArgs, base_train, base_test, transforms):
    train_tf, eval_tf = transforms
    val, train = stratified_split(np.asarray(base_train.targets), [args.val_fraction], args.seed)
    T, info, encoder = args.T, args.info, args.encoder
    return (
        EncodedImages(base_train, train, train_tf, T, info, encoder),
        EncodedImages(base_train, val, eval_tf, T, info, encoder),
        EncodedImages(base_test, range(len(base_test)), eval_tf, T, info, encoder),
    )


# -- CIFAR -------------------------------------------------------------------------------------

CIFAR = {
    "cifar10": (
        "CIFAR10",
        "cifar-10-batches-py",
        ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch", "batches.meta"],
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
    ),
    "cifar100": (
        "CIFAR100",
        "cifar-100-python",
        ["train", "test", "meta"],
        "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
    ),
}


def _presence_only(cls, root: str, train: bool):
    """``cls(root, train=train)`` (torchvision's CIFAR10 or CIFAR100) checking only that its files are there.

    Built through a subclass whose md5 sums are ``None``: torchvision's ``check_integrity(path, None)`` then only
    checks that the file exists, and the pickles are parsed by torchvision unchanged."""
    presence_only = type(
        cls.__name__,
        (cls,),
        {
            "train_list": [[name, None] for name, _ in cls.train_list],
            "test_list": [[name, None] for name, _ in cls.test_list],
            "meta": {**cls.meta, "md5": None},
        },
    )
    dataset = presence_only(root, train=train)
    dataset.__class__ = cls  # torchvision's own class again: a class made here cannot be pickled for spawned workers
    return dataset


def _to_tensor(name: str, encoder: str) -> list:
    """To tensor, then normalised for direct encoding; spike encoding keeps the intensities in [0, 1]."""
    from torchvision import transforms as tv

    return [tv.ToTensor()] + ([tv.Normalize(*NORMALIZATION[name])] if encoder == "direct" else [])


def cifar_transforms(name: str, size: tuple[int, int], encoder: str = "direct"):
    """(train, eval) transforms: [resize to ``size`` if not 32x32], random crop with 4/32 padding + flip (train),
    to tensor, normalise (direct encoding only)."""
    from torchvision import transforms as tv

    head = [] if tuple(size) == (32, 32) else [tv.Resize(size)]
    tail = _to_tensor(name, encoder)
    pad = max(1, round(size[0] * 4 / 32))
    train = tv.Compose(head + [tv.RandomCrop(size, padding=pad), tv.RandomHorizontalFlip()] + tail)
    return train, tv.Compose(head + tail)


def build_cifar(args: BuilderArgs):
    """``(train, val, test)`` for CIFAR-10/100 through ``torchvision.datasets.CIFAR10/100(root=<data_dir>)``.

    With ``verify`` torchvision's md5 checks run as usual; without, only the files' presence is checked (a subclass
    without md5 sums constructs the dataset; the pickles are parsed by torchvision unchanged).

    Args:
        args: the :class:`fsnn.data.info.BuilderArgs` of the call, its fields read so:

            * ``info``: ``kind="static"``: ``cifar10`` or ``cifar100``, 10 or 100 classes.
            * ``data_dir``: torchvision's ``root``: the pickles are in ``<data_dir>/cifar-10-batches-py/`` (or
              ``cifar-100-python/``).
            * ``T``: default ``4`` (``info.default_T``, the paper's, ``conf/dataset/*.yaml``).
            * ``size``: resized from 32 x 32 when different (the random crop's padding scales with it); default
              ``(32, 32)``.
            * ``seed``: validation is carved from the official training set.
            * ``val_fraction``: a share of the official training set.
            * ``download``: whether torchvision may download missing files.
            * ``verify``: ``True`` runs torchvision's md5 checks; ``False`` only checks that the files are there.
            * ``num_workers``: not used by static images.
            * ``cache_dir``: not used by static images.
            * ``encoder``: default ``"direct"``.
    """
    import torchvision.datasets as tvd

    info, verify = args.info, args.verify
    cls_name, folder, files, url = CIFAR[info.name]
    cls = getattr(tvd, cls_name)
    root = args.data_dir
    location = root / folder
    missing = [f for f in files if not (location / f).is_file()]
    problem = f"missing {', '.join(missing)}" if missing else None
    if problem and args.download:
        try:
            cls(str(root), train=True, download=True)
            missing = [f for f in files if not (location / f).is_file()]
            problem = f"missing {', '.join(missing)}" if missing else None
        except Exception as err:  # noqa: BLE001 - any download failure means: data missing
            problem = f"{problem}; automatic download failed ({type(err).__name__}: {err})"
    elif problem:
        problem = f"{problem}; automatic download disabled (download=False or FSNN_DATA_DOWNLOAD=0)"

    def load(train: bool):
        if verify:
            return cls(str(root), train=train)
        return _presence_only(cls, str(root), train)

    if not problem:
        try:
            base_train, base_test = load(True), load(False)
        except (RuntimeError, OSError, EOFError, ValueError, KeyError) as err:
            problem = f"the files are corrupted or incomplete ({type(err).__name__}: {err})"
    if problem:
        layout = [
            f"{location}/{{{', '.join(files)}}}",
            f"(python pickles read by torchvision.datasets.{cls_name}(root=<data_dir>))",
        ]
        raise dataset_missing(
            info.name,
            location,
            problem,
            layout,
            f"torchvision downloads it automatically when online; offline, download {url} and extract it into {root}",
        )
    return _splits(args, base_train, base_test, cifar_transforms(info.name, args.size, args.encoder))


# -- ImageNet ----------------------------------------------------------------------------------

IMAGENET_FOLDER = "imagenet"
IMAGENET_ARCHIVES = {
    "train": "ILSVRC2012_img_train.tar",
    "val": "ILSVRC2012_img_val.tar",
    "devkit": "ILSVRC2012_devkit_t12.tar.gz",
}


def imagenet_transforms(size: tuple[int, int], encoder: str = "direct"):
    """(train, eval) transforms at ``size`` (paper: 160x160): RandomResizedCrop + flip for training; resize the
    short side to ``size / 0.875`` and centre-crop for evaluation; then normalise (direct encoding only)."""
    from torchvision import transforms as tv

    tail = _to_tensor("imagenet", encoder)
    train = tv.Compose([tv.RandomResizedCrop(size), tv.RandomHorizontalFlip()] + tail)
    resize = tuple(int(round(s / 0.875)) for s in size)
    return train, tv.Compose([tv.Resize(resize[0] if size[0] == size[1] else resize), tv.CenterCrop(size)] + tail)


def imagenet_problem(location: Path, verify: bool) -> str | None:
    """What is missing in ``<data_dir>/imagenet`` for ``torchvision.datasets.ImageNet``, or ``None``.

    Needs ``meta.bin`` (or the devkit archive, which torchvision parses into it) and, per split, the extracted
    ``<split>/<wnid>/`` folders (or the split's archive, which torchvision extracts); with ``verify`` the extracted
    folders must hold all 1000 classes."""
    if not (location / "meta.bin").is_file() and not (location / IMAGENET_ARCHIVES["devkit"]).is_file():
        return f"neither meta.bin nor {IMAGENET_ARCHIVES['devkit']}"
    for split in ("train", "val"):
        folder = location / split
        if folder.is_dir():
            classes = [e for e in os.scandir(folder) if e.is_dir()]
            if not classes:
                return f"{split}/ holds no class folders"
            if verify and len(classes) != 1000:
                return (
                    f"incomplete: {split}/ holds {len(classes)} class folders, expected 1000 "
                    f"(set FSNN_DATA_VERIFY=0 or verify=False to accept a subset)"
                )
        elif not (location / IMAGENET_ARCHIVES[split]).is_file():
            return f"neither {split}/ nor {IMAGENET_ARCHIVES[split]}"
    return None


def build_imagenet(args: BuilderArgs):
    """``(train, val, test)`` for ImageNet-1k through ``torchvision.datasets.ImageNet(root=<data_dir>/imagenet)``:
    val is carved from the official train split, test is the official val split.

    Args:
        args: the :class:`fsnn.data.info.BuilderArgs` of the call, its fields read so:

            * ``info``: ``kind="static"``, 1000 classes.
            * ``data_dir``: ImageNet lives in ``<data_dir>/imagenet/`` (``meta.bin`` or the devkit, and ``train/``,
              ``val/`` or their archives).
            * ``T``: default ``4`` (``info.default_T``, the paper's).
            * ``size``: random resized crop for training, resize to ``size / 0.875`` and centre crop for evaluation;
              default ``(160, 160)``, the paper's.
            * ``val_fraction``: a share of the official training set; ``conf/dataset/imagenet.yaml``: ``0.01``.
            * ``download``: not used: ImageNet cannot be downloaded automatically (registration required).
            * ``verify``: ``True`` requires all 1000 class folders in ``train/`` and ``val/``; ``False`` accepts a
              subset.
            * ``num_workers``: not used by static images.
            * ``cache_dir``: not used by static images.
            * ``encoder``: default ``"direct"``.
    """
    from torchvision.datasets import ImageNet

    location = args.data_dir / IMAGENET_FOLDER
    problem = imagenet_problem(location, args.verify)
    if not problem:
        try:
            base_train = ImageNet(str(location), split="train")
            base_test = ImageNet(str(location), split="val")
        except (RuntimeError, OSError, ValueError) as err:
            problem = f"torchvision could not read it ({type(err).__name__}: {err})"
    if problem:
        layout = [
            f"{location}/meta.bin                        (torch.save((wnid_to_classes, val_wnids)); "
            "written by torchvision from the devkit)",
            f"{location}/train/<wnid>/<image>.JPEG       (1000 wnid folders, 1,281,167 images)",
            f"{location}/val/<wnid>/<image>.JPEG         (1000 wnid folders, 50,000 images)",
            f"or the archives {', '.join(IMAGENET_ARCHIVES.values())} in {location} "
            "(torchvision.datasets.ImageNet extracts them on first use)",
        ]
        raise dataset_missing(
            "imagenet",
            location,
            problem,
            layout,
            "manual download only (registration required): https://image-net.org/download.php -> ILSVRC2012; put "
            f"the archives (or the extracted train/, val/ and meta.bin) in {location}",
        )
    return _splits(args, base_train, base_test, imagenet_transforms(args.size, args.encoder))


def _info(name: str, num_classes: int, size: tuple[int, int], library: str, directory: str, builder) -> DatasetInfo:
    """The registry entry of the torchvision dataset ``name``, with its published images (:data:`PUBLISHED_IMAGES`)."""
    train, test = PUBLISHED_IMAGES[name]
    return DatasetInfo(
        name=name,
        kind="static",
        num_classes=num_classes,
        in_channels=3,
        size=size,
        default_T=4,
        library=f"torchvision.datasets.{library}",
        directory=directory,
        builder=builder,
        published={"train": train, "test": test},
    )


#: the datasets this module reads, registered by :mod:`fsnn.data.registry`
INFOS = (
    *(
        _info(name, classes, (32, 32), *CIFAR[name][:2], build_cifar)
        for name, classes in (("cifar10", 10), ("cifar100", 100))
    ),
    _info("imagenet", 1000, (160, 160), "ImageNet", IMAGENET_FOLDER, build_imagenet),
)
