"""HarDVS and MINI-HARDVS: human actions seen by an event camera, read by SpikingJelly's ``HARDVS`` class.

``hardvs`` is the full HarDVS (Wang et al., "HARDVS: Revisiting Human Activity Recognition with Dynamic Vision
Sensors", AAAI 2024), ``hardvs_mini`` SpikingJelly's MINI-HARDVS subset (``MINI_HARDVS_files.zip``, what the
authors' training script uses). Both are read through ``spikingjelly.datasets.HARDVS`` from its raw layout
``events_np/{train,val,test}/action_<NNN>/<sample>.npz``; they differ in where that layout comes from
(:data:`HARDVS_LAYOUT`): :func:`hardvs_problem` checks a folder, :func:`hardvs_sources` prepares ``events_np/``
where it can and lists the three official splits, and :func:`build_hardvs` serves them as
:class:`fsnn.data.frame_cache.FrameDataset` s of ``(float32 [T, 2, H, W], label)``.

===============  ===========  ==============================  =======  =========  =================
name             dataset      train / val / test              classes  sensor     default T, frames
===============  ===========  ==============================  =======  =========  =================
``hardvs``       HarDVS       64,522 / 10,734 / 32,390        300      260 x 346  8, 128 x 128
``hardvs_mini``  MINI-HARDVS  the counts of its label files   300      260 x 346  8, 128 x 128
===============  ===========  ==============================  =======  =========  =================

Samples: the official split of the full HarDVS, 60 / 10 / 30 % of its 107,646 recordings (:data:`HARDVS_SIZES`,
what ``verify`` checks); MINI-HARDVS is checked against its ``extract/<split>_label.txt`` lists. Classes: the 300
actions, ``action_<k>`` labelled ``k - 1``. Sensor: :data:`HARDVS_SENSOR`; default ``T`` (the paper's 8) and frame size: the
registry's entry (:mod:`fsnn.data.registry`).
"""

from __future__ import annotations

import os
from pathlib import Path

from fsnn.data.environment import abspath
from fsnn.data.errors import count_files, missing_in_folder
from fsnn.data.frame_cache import EventReader, EventSource, splits_from_sources
from fsnn.data.info import BuilderArgs, DatasetInfo

#: the sensor's ``(H, W)`` (events are clipped into it)
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
        if count_files(d, ".npz", 1) == 0:
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
        raise missing_in_folder(
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


def build_hardvs(args: BuilderArgs):
    """``(train, val, test)`` for HarDVS or MINI-HARDVS: the official three splits (``val_fraction`` is not used;
    neither can be downloaded automatically); each split a :class:`fsnn.data.frame_cache.FrameDataset` of
    ``(float32 [T, 2, H, W], label)``.

    Args:
        args: the :class:`fsnn.data.info.BuilderArgs` of the call, its fields read so:

            * ``info``: ``kind="event"``: ``hardvs`` or ``hardvs_mini``.
            * ``data_dir``: the dataset's layout under it is in :data:`HARDVS_LAYOUT`.
            * ``T``: default ``8`` (``info.default_T``, the paper's for HarDVS).
            * ``size``: default ``(128, 128)`` (``info.size``).
            * ``seed``: not used (the splits are official).
            * ``val_fraction``: not used: HarDVS and MINI-HARDVS have an official validation split (``conf/dataset``:
              ``0.1``).
            * ``download``: not used: neither can be downloaded automatically; the error message says where to get the
              files by hand.
            * ``verify``: ``True`` checks every split's sample count (the full HarDVS: 64,522 / 10,734 / 32,390;
              MINI-HARDVS against its label files); ``False`` accepts at least one sample per split.
    """
    return splits_from_sources(args, hardvs_sources(args.info, args.data_dir, verify=args.verify))


#: the datasets this module reads, registered by :mod:`fsnn.data.registry`: HarDVS with its published splits (its
#: validation split is its own), MINI-HARDVS checked against its label lists
INFOS = tuple(
    DatasetInfo(
        name=name,
        kind="event",
        num_classes=300,
        in_channels=2,
        size=(128, 128),
        default_T=8,
        library="spikingjelly.datasets.HARDVS",
        directory=directory,
        builder=build_hardvs,
        published=published,
    )
    for name, directory, published in (("hardvs", "HARDVS", HARDVS_SIZES), ("hardvs_mini", "MINI_HARDVS", {}))
)
