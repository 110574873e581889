"""Fake datasets at a chosen fraction of their published size, in the on-disk formats their loaders read (those of
:mod:`.fixtures`): ``write_scaled_fixtures(root, scale, names)``, or ``fsnn-fixtures DIR --scale FRACTION [--only NAME
...]``. The event datasets' samples are :mod:`.scaled_events`'s, the static images' (CIFAR-10, CIFAR-100, ImageNet)
:mod:`.scaled_images`'s; they are planned and written here.

At ``scale=1.0`` every split holds exactly the published number of files or images (for the tonic datasets the
counts ``verify`` compares, :data:`fsnn.data.tonic_datasets.TONIC_SPECS`; for HarDVS
:data:`fsnn.data.hardvs.HARDVS_SIZES`). Below 1.0 each (split, class) keeps ``max(1, floor(scale * n + 0.5))`` of its
``n`` published samples (:func:`.scaled_events.scaled_count`), picked evenly over the full-scale list
(:func:`scaled_plan`). Every sample draws from its own seed, derived from the dataset, split, class and its index in
the full-scale list, so a sample is identical at every scale and on every call, whatever ``--only`` selects. The
events' statistics are tabled in :mod:`.scaled_events`, the images' in :func:`.scaled_images.cifar_images` and
:func:`.scaled_images.imagenet_image`. N-Caltech101 has one split, ``"all"`` (the loader draws its test set).

Verification (:func:`passes_verification`): the fakes pass the completeness checks (``verify=True``) at 1.0, and
ImageNet's at every scale (fsnn checks its 1000 class folders); CIFAR's never do (torchvision compares md5 sums). Each
fake folder carries the fake marker (:mod:`fsnn.data.fakes`), with which the loaders skip those checks by default.

===============  =================================================================  ==============================
name             layout (relative to ``root``)                                      published files, classes; disk
                                                                                    at 1.0 (about)
===============  =================================================================  ==============================
``dvsgesture``   ``DVSGesture/ibmGesture{Train,Test}/user<NN>_<lighting>/``         1,077 / 264, 11
                 ``<label>.npy``
``nmnist``       ``NMNIST/{Train,Test}/<digit>/<id>.bin``                           60,000 / 10,000, 10
``ncaltech101``  ``NCALTECH101/Caltech101/<class>/image_<NNNN>.bin``                8,709 in all, 101
``dvslip``       ``DVSLip/DVS-Lip/{train,test}/<word>/<n>.npy``                     14,896 / 4,975, 100
``hardvs``       ``HARDVS/extract/action_<NNN>/dvSave-<date>_<time>.npz`` (keys t,  64,522 / 10,734 / 32,390,
                 x, y, p) and ``HARDVS/extract/{train,val,test}_label.txt``         300; 200 GB
``cifar10``      ``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``  50,000 / 10,000 in 6 files,
                 (latin1 pickles)                                                   10; 186 MB
``cifar100``     ``cifar-100-python/{train,test,meta}`` (latin1 pickles, fine and   50,000 / 10,000 in 2 files,
                 coarse labels)                                                     100 (20 superclasses); 186 MB
``imagenet``     ``imagenet/meta.bin`` and ``imagenet/{train,val}/<wnid>/*.JPEG``   1,281,167 / 50,000, 1000;
                                                                                    145 GB
===============  =================================================================  ==============================
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from fsnn.data.fakes import write_fakes
from fsnn.data.fakes.scaled_events import (
    EVENT_PLANS,
    EVENT_WRITERS,
    ScaledSample,
    class_plan,
    write_hardvs_lists,
)
from fsnn.data.fakes.scaled_images import (
    IMAGE_NAMES,
    image_counts,
    image_path,
    write_cifar_file,
    write_cifar_meta,
    write_imagenet_meta,
    write_imagenet_sample,
)
from fsnn.data.registry import dataset_info

#: the fakes read by tonic, whose file counts ``verify`` compares (:data:`fsnn.data.tonic_datasets.TONIC_SPECS`)
TONIC_NAMES = ("dvsgesture", "nmnist", "ncaltech101", "dvslip")
SCALED_NAMES = (*TONIC_NAMES, "hardvs", *IMAGE_NAMES)

# -- all ---------------------------------------------------------------------------------------


def _image_plan(name: str, scale: float) -> list[ScaledSample]:
    return class_plan(name, image_counts(name), partial(image_path, name), scale)


PLANS = {
    **EVENT_PLANS,
    **{name: partial(_image_plan, name) for name in IMAGE_NAMES},
}
#: ``writer(root, sample)`` of the datasets with a file per sample
SAMPLE_WRITERS = {
    **EVENT_WRITERS,
    "imagenet": write_imagenet_sample,
}
#: ``writer(root, path, samples)`` of the datasets whose files hold many samples (CIFAR's batches)
FILE_WRITERS = {name: partial(write_cifar_file, name) for name in ("cifar10", "cifar100")}
#: ``finish(root, plan)``, run after the samples: the files that list or describe them
FINISHERS = {
    "hardvs": write_hardvs_lists,
    "cifar10": partial(write_cifar_meta, "cifar10"),
    "cifar100": partial(write_cifar_meta, "cifar100"),
    "imagenet": write_imagenet_meta,
}


def check_scale(scale) -> float:
    """``scale`` as a float when it is a number in ``(0, 1]``; raises ``ValueError`` otherwise."""
    try:
        value = float(scale)
    except (TypeError, ValueError):
        raise ValueError(f"must be a number in (0, 1], got {scale!r}") from None
    if not 0 < value <= 1:  # also false for nan
        raise ValueError(f"must be a number in (0, 1], got {scale!r}")
    return value


def passes_verification(name: str, scale: float) -> bool:
    """Whether a fake of ``name`` at ``scale`` passes the completeness checks (``verify=True``), as a real copy of
    that size would: at full size, except CIFAR's (torchvision compares md5 sums), and ImageNet's at every scale (fsnn
    checks its 1000 class folders, which every scale keeps)."""
    if name in ("cifar10", "cifar100"):
        return False
    return name == "imagenet" or check_scale(scale) == 1


def scaled_plan(name: str, scale: float) -> list[ScaledSample]:
    """The files a fake of ``name`` (one of :data:`SCALED_NAMES`) at ``scale`` holds, without writing them."""
    if name not in PLANS:
        raise ValueError(f"no scaled fixture for {name!r}; available: {', '.join(SCALED_NAMES)}")
    return PLANS[name](check_scale(scale))


def write_scaled_fixtures(root: Path, scale: float, names=None, *, progress: bool = False) -> dict[str, Path]:
    """Write fakes of ``names`` (default: all of :data:`SCALED_NAMES`) at ``scale`` (a number in ``(0, 1]``) under
    ``root`` (usable as ``data_dir``); returns ``{name: dataset folder}``. ``progress`` shows a bar per dataset
    (tqdm, on stderr). Raises ``ValueError`` for a bad ``scale`` or name before writing anything."""
    scale = check_scale(scale)
    names = SCALED_NAMES if names is None else tuple(names)
    unknown = sorted(set(names) - set(PLANS))
    if unknown:
        raise ValueError(f"no scaled fixture for {unknown}; available: {', '.join(SCALED_NAMES)}")
    from tqdm import tqdm

    def write(staging: Path, name: str) -> None:
        plan = PLANS[name](scale)
        for folder in sorted({str(Path(s.path).parent) for s in plan}):
            (staging / folder).mkdir(parents=True, exist_ok=True)
        if name in FILE_WRITERS:
            files = {}
            for sample in plan:
                files.setdefault(sample.path, []).append(sample)
            for path, samples in tqdm(files.items(), desc=name, unit="file", disable=not progress):
                FILE_WRITERS[name](staging, path, samples)
        else:
            for sample in tqdm(plan, desc=name, unit="file", disable=not progress):
                SAMPLE_WRITERS[name](staging, sample)
        if name in FINISHERS:
            FINISHERS[name](staging, plan)

    return write_fakes(root, {name: dataset_info(name).directory for name in names}, write, scale)
