"""The tonic datasets: N-MNIST, DVS128 Gesture, N-Caltech101 and DVS-Lip, read by tonic's own dataset classes.

:data:`TONIC_SPECS` says where each lives under ``data_dir`` (tonic's ``<save_to>/<ClassName>``), its splits, the file
count of each split in the published release and how to get it; :func:`tonic_problem` checks a folder against it,
:func:`tonic_sources` lists the splits through tonic (downloading what tonic can), and :func:`build_tonic` serves
them as :class:`fsnn.data.frame_cache.FrameDataset` s of ``(float32 [T, 2, H, W], label)``.

===============  ==============  ===============  =======  =========  =================
name             dataset         train / test     classes  sensor     default T, frames
===============  ==============  ===============  =======  =========  =================
``nmnist``       N-MNIST         60,000 / 10,000  10       34 x 34    16, 34 x 34
``dvsgesture``   DVS128 Gesture  1,077 / 264      11       128 x 128  16, 128 x 128
``ncaltech101``  N-Caltech101    8,709 in all     101      180 x 240  16, 128 x 128
``dvslip``       DVS-Lip         14,896 / 4,975   100      128 x 128  16, 128 x 128
===============  ==============  ===============  =======  =========  =================

Samples: the files of each split in the published release (``TONIC_SPECS[name].published``, what ``verify``
checks); validation is a seeded, stratified ``val_fraction`` of the training files. N-Caltech101 has no official
split: a fixed, stratified 20 % of its 8,709 recordings is the test set
(:data:`fsnn.data.frame_cache.TEST_FRACTION`). DVS128 Gesture is tonic's preprocessed release (the paper counts
1,342 samples in all). Labels are the release's: N-Caltech101's are the places of its class folders in
:data:`NCALTECH101_CLASSES`, so a copy without some folders labels the others as the full release does. Sensor: the ``(H, W)`` the events are clipped into (``TONIC_SPECS[name].sensor_hw``); classes,
default ``T`` and frame size: the registry's entry (:mod:`fsnn.data.registry`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from fsnn.data.environment import abspath
from fsnn.data.errors import count_files, missing_in_folder
from fsnn.data.frame_cache import EventReader, EventSource, splits_from_sources
from fsnn.data.info import BuilderArgs, DatasetInfo

log = logging.getLogger(__name__)


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
    classes: tuple[str, ...] = ()  # the release's class folders, in label order, where tonic labels by folder name


#: N-Caltech101's 101 class folders (Caltech101's categories without ``Faces``, with ``BACKGROUND_Google``), sorted as
#: the release lists them: label ``k`` is the ``k``-th, whichever folders a partial copy holds
NCALTECH101_CLASSES = (
    "BACKGROUND_Google", "Faces_easy", "Leopards", "Motorbikes", "accordion", "airplanes", "anchor", "ant", "barrel",
    "bass", "beaver", "binocular", "bonsai", "brain", "brontosaurus", "buddha", "butterfly", "camera", "cannon",
    "car_side", "ceiling_fan", "cellphone", "chair", "chandelier", "cougar_body", "cougar_face", "crab", "crayfish",
    "crocodile", "crocodile_head", "cup", "dalmatian", "dollar_bill", "dolphin", "dragonfly", "electric_guitar",
    "elephant", "emu", "euphonium", "ewer", "ferry", "flamingo", "flamingo_head", "garfield", "gerenuk", "gramophone",
    "grand_piano", "hawksbill", "headphone", "hedgehog", "helicopter", "ibis", "inline_skate", "joshua_tree",
    "kangaroo", "ketch", "lamp", "laptop", "llama", "lobster", "lotus", "mandolin", "mayfly", "menorah", "metronome",
    "minaret", "nautilus", "octopus", "okapi", "pagoda", "panda", "pigeon", "pizza", "platypus", "pyramid", "revolver",
    "rhino", "rooster", "saxophone", "schooner", "scissors", "scorpion", "sea_horse", "snoopy", "soccer_ball",
    "stapler", "starfish", "stegosaurus", "stop_sign", "strawberry", "sunflower", "tick", "trilobite", "umbrella",
    "watch", "water_lilly", "wheelchair", "wild_cat", "windsor_chair", "wrench", "yin_yang",
)  # fmt: skip


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
        NCALTECH101_CLASSES,
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
    found = count_files(location / sub, spec.ext, None if verify else 1)
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
    used unchanged. Raises :class:`fsnn.data.errors.DatasetMissingError` when the data is missing/incomplete and
    cannot be downloaded."""
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
        raise missing_in_folder(spec.name, location, problem, spec.layout, spec.get_it, library)

    sources = {}
    for split, (_, train) in spec.splits.items():
        ds = _listed(cls, str(abspath(data_dir)), train)
        paths = [os.path.relpath(p, ds.location_on_system) for p in ds.data]
        order = sorted(range(len(paths)), key=paths.__getitem__)
        keys = [paths[i] for i in order]
        targets = [ds.targets[i] for i in order]
        if spec.classes:  # tonic gives the class folder's name: its label is its place in the release's list
            targets = release_labels(spec, location, targets)
        sources[split] = EventSource(spec.name, split, spec.sensor_hw, keys, targets, EventReader(ds, order), location)
    return sources


def release_labels(spec: TonicSpec, location: Path, folders: list[str]) -> list[int]:
    """The labels of samples in the class ``folders`` named: their places in ``spec.classes``, the release's list,
    so that a copy missing a class folder labels the others as the full release does. A folder the release does not
    have is a :class:`fsnn.data.errors.DatasetMissingError` naming it."""
    index = {name: k for k, name in enumerate(spec.classes)}
    if unknown := sorted(set(folders) - set(index)):
        raise missing_in_folder(
            spec.name,
            location,
            f"class folder(s) {', '.join(map(repr, unknown[:5]))} not among the release's {len(spec.classes)} classes",
            spec.layout,
            spec.get_it,
            f"tonic.datasets.{spec.cls_name}(save_to=<data_dir>)",
        )
    return [index[name] for name in folders]


def build_tonic(args: BuilderArgs):
    """``(train, val, test)`` for a tonic dataset (``info.name`` in :data:`TONIC_SPECS`): ``nmnist``,
    ``dvsgesture``, ``ncaltech101`` and ``dvslip``; each split a :class:`fsnn.data.frame_cache.FrameDataset` of
    ``(float32 [T, 2, H, W], label)``.

    Args:
        args: the :class:`fsnn.data.info.BuilderArgs` of the call, its fields read so:

            * ``info``: ``kind="event"``, a dataset of :data:`TONIC_SPECS`.
            * ``data_dir``: the dataset's layout under it is in :data:`TONIC_SPECS`.
            * ``T``: default ``info.default_T``, the paper's ``16``.
            * ``size``: default ``info.size``: ``(34, 34)`` for N-MNIST, ``(128, 128)`` for the others.
            * ``val_fraction``: N-Caltech101 has no official split: a fixed 20 %
              (:data:`fsnn.data.frame_cache.TEST_FRACTION`, seed :data:`fsnn.data.frame_cache.SPLIT_SEED`) is its test
              set and validation is carved from the rest.
            * ``download``: whether tonic may download missing files; DVS-Lip cannot be downloaded automatically.
            * ``verify``: ``True`` checks that every split holds the published number of files (e.g. DVS128 Gesture
              1,077 / 264); ``False`` accepts the expected layout with at least one sample per split (subsets, tiny
              fixtures).
    """
    sources = tonic_sources(TONIC_SPECS[args.info.name], args.data_dir, download=args.download, verify=args.verify)
    return splits_from_sources(args, sources)


def _info(name: str, num_classes: int, size: tuple[int, int], default_T: int) -> DatasetInfo:
    """The registry entry of the tonic dataset ``name``: its folder, reader class and published splits are
    :data:`TONIC_SPECS`'s."""
    spec = TONIC_SPECS[name]
    return DatasetInfo(
        name=name,
        kind="event",
        num_classes=num_classes,
        in_channels=2,
        size=size,
        default_T=default_T,
        library=f"tonic.datasets.{spec.cls_name}",
        directory=spec.folder,
        builder=build_tonic,
        published=spec.published,
    )


#: the datasets this module reads, registered by :mod:`fsnn.data.registry`
INFOS = (
    _info("nmnist", 10, (34, 34), 16),
    _info("dvsgesture", 11, (128, 128), 16),
    _info("ncaltech101", 101, (128, 128), 16),
    _info("dvslip", 100, (128, 128), 16),
)
