"""The event datasets' fakes at a chosen fraction of their published size (:mod:`.scaled_fixtures` writes them):
how a scaled fake picks and seeds its samples (:class:`ScaledSample`, :func:`scaled_count`, :func:`class_plan`) and,
for DVS128 Gesture, N-MNIST, N-Caltech101, DVS-Lip and HarDVS, the published counts, the file names and the events.

Events are drawn with numpy in whole arrays per sample (no loop per event): a class-dependent moving blob or stroke
pattern (so a model can learn above chance), per-sample duration and event count drawn from the distributions tabled
in :func:`gesture_events`, :func:`nmnist_events`, :func:`ncaltech_events`, :func:`dvslip_events` and
:func:`hardvs_events`, polarities balanced (each event ON with probability 1/2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path

import numpy as np

from fsnn.data.fakes.fixtures import _save_events, encode_atis_bin
from fsnn.data.fakes.scaled_images import IMAGE_SEEDS
from fsnn.data.hardvs import HARDVS_SENSOR, HARDVS_SIZES, HARDVS_SPLITS
from fsnn.data.tonic_datasets import NCALTECH101_CLASSES

#: base seed of each dataset's samples (a sample's seed is ``(base, split, class, index)``)
SEEDS = {"dvsgesture": 1001, "nmnist": 1002, "ncaltech101": 1003, "dvslip": 1004, "hardvs": 1005, **IMAGE_SEEDS}


def scaled_count(full: int, scale: float) -> int:
    """How many of a (split, class)'s ``full`` published samples a fake at ``scale`` holds: ``scale * full`` rounded
    half up, at least 1 (``full`` itself at 1.0)."""
    return max(1, math.floor(scale * full + 0.5))


def spread(n: int, k: int) -> np.ndarray:
    """``k`` distinct indices in ``range(n)`` spaced as evenly as possible (all of them when ``k == n``)."""
    if k >= n:
        return np.arange(n)
    return np.floor(np.linspace(0, n - 1, k) + 0.5).astype(np.int64)


@dataclass(frozen=True)
class ScaledSample:
    """One file of a scaled fake: where it goes (relative to ``root``), its class, and its seed."""

    split: str
    label: int
    path: str
    seed: tuple[int, ...]


def class_plan(name: str, counts: dict, path, scale: float) -> list[ScaledSample]:
    """The plan of a dataset whose files are numbered within each (split, class): ``counts`` maps each split, in
    order, to its published count per class (in label order); sample ``k`` of a (split, class) keeps its seed
    ``(SEEDS[name], split's position, label, k)`` at every scale, and goes to ``path(split, label, k)``."""
    samples = []
    for s, (split, per_class) in enumerate(counts.items()):
        for label, full in enumerate(per_class):
            for k in spread(full, scaled_count(full, scale)):
                samples.append(ScaledSample(split, label, path(split, label, int(k)), (SEEDS[name], s, label, int(k))))
    return samples


def even_counts(total: int, classes: int) -> list[int]:
    """``total`` files spread as evenly as possible over ``classes`` classes, the last classes one fewer."""
    base, extra = divmod(total, classes)
    return [base + (c < extra) for c in range(classes)]


def strokes(key: tuple, count: int, points: int, box: tuple[float, float]) -> np.ndarray:
    """``float [points, 2]`` points (x, y) on ``count`` line strokes whose ends lie in ``box`` (low, high) along both
    axes, fixed per ``key`` (``(dataset, label)``): a class's shape."""
    rng = np.random.default_rng((SEEDS[key[0]], 99, *key[1:]))
    ends = rng.uniform(box[0], box[1], (count, 2, 2))
    u = rng.random(points)
    stroke = rng.integers(0, count, points)
    return ends[stroke, 0] + u[:, None] * (ends[stroke, 1] - ends[stroke, 0])


# -- DVS128 Gesture ----------------------------------------------------------------------------

#: the trials of the release's ``trials_to_train.txt`` / ``trials_to_test.txt`` (user: lighting conditions)
GESTURE_TRIALS = {
    "train": {
        1: "fluorescent fluorescent_led lab led natural",
        2: "fluorescent fluorescent_led lab led natural",
        3: "fluorescent fluorescent_led led natural",
        4: "fluorescent fluorescent_led led natural",
        5: "fluorescent fluorescent_led lab led natural",
        6: "fluorescent fluorescent_led lab led natural",
        7: "fluorescent fluorescent_led lab led",
        8: "fluorescent fluorescent_led lab led",
        9: "fluorescent fluorescent_led lab led natural",
        10: "fluorescent fluorescent_led lab led",
        11: "fluorescent fluorescent_led natural",
        12: "fluorescent_led led",
        13: "fluorescent fluorescent_led lab led natural",
        14: "fluorescent fluorescent_led led natural",
        15: "fluorescent fluorescent_led lab led natural",
        16: "fluorescent lab led natural",
        17: "fluorescent fluorescent_led lab led natural",
        18: "fluorescent fluorescent_led lab led",
        19: "fluorescent fluorescent_led lab led natural",
        20: "fluorescent fluorescent_led led",
        21: "fluorescent fluorescent_led lab natural",
        22: "fluorescent fluorescent_led lab led natural",
        23: "fluorescent fluorescent_led lab led",
    },
    "test": {
        24: "fluorescent fluorescent_led led",
        25: "fluorescent led",
        26: "fluorescent fluorescent_led lab led natural",
        27: "fluorescent fluorescent_led led natural",
        28: "fluorescent fluorescent_led lab led natural",
        29: "fluorescent fluorescent_led lab led natural",
    },
}
GESTURE_FOLDERS = {"train": "ibmGestureTrain", "test": "ibmGestureTest"}
GESTURE_CLASSES = 11
#: the (trial, label) the fake leaves out so that the training split has tonic's 1,077 files, not 98 x 11 = 1,078
GESTURE_ABSENT = ("user23_led", 10)


def gesture_trials(split: str) -> list[str]:
    """The ``user<NN>_<lighting>`` folders of a DVS128 Gesture split, in the release's order."""
    return [f"user{u:02d}_{light}" for u, lights in GESTURE_TRIALS[split].items() for light in lights.split()]


def _gesture_plan(scale: float) -> list[ScaledSample]:
    samples = []
    for s, split in enumerate(("train", "test")):
        trials = gesture_trials(split)
        for label in range(GESTURE_CLASSES):
            have = [i for i, trial in enumerate(trials) if (trial, label) != GESTURE_ABSENT]
            for j in spread(len(have), scaled_count(len(have), scale)):
                i = have[j]
                path = f"DVSGesture/{GESTURE_FOLDERS[split]}/{trials[i]}/{label}.npy"
                samples.append(ScaledSample(split, label, path, (SEEDS["dvsgesture"], s, label, i)))
    return samples


def gesture_events(rng: np.random.Generator, label: int) -> np.ndarray:
    """One fake DVS128 Gesture sample of class ``label``: ``int64 [N, 4]`` rows ``x, y, p, t`` (t in ms, sorted from
    0), as tonic's preprocessed release stores it.

    A blob (Gaussian, sd 6 px) circles a class-dependent centre on the 128 x 128 sensor, at a class-dependent speed
    and direction; 10 % of the events are uniform background. Statistics:

    ======================  ==========================  ==========================================================
    quantity                value                       source
    ======================  ==========================  ==========================================================
    sensor                  128 x 128, 2 polarities     Amir et al., CVPR 2017 (DVS128); tonic ``DVSGesture``
    classes                 11 (10 gestures + other)    Amir et al. 2017; release ``gesture_mapping.csv``
    trials                  98 train (users 1-23),      release ``trials_to_train.txt`` / ``trials_to_test.txt``
                            24 test (users 24-29)       (122 trials, 29 subjects, as in Amir et al. 2017)
    lighting                fluorescent, fluorescent_   the trial names of the release (3 illuminations and
                            led, lab, led, natural      their combinations)
    files                   1,077 train / 264 test      tonic's preprocessed release (tonic issue #270: one of
                                                        the 1,078 training gestures is absent; which one is not
                                                        documented, assumed here: ``user23_led``, label 10)
    duration                normal, mean 6.8 s, sd      the 12 gestures of the release's
                            0.95 s, clipped to          ``user01_fluorescent_labels.csv`` (5.0-8.7 s, quoted in
                            [4.5, 9.5] s                SpikingJelly's ``DVS128Gesture`` docs); the normal shape
                                                        and the clip are assumed
    events per sample       log-normal, median 2e5,     assumed: no published distribution. Bound: the release
                            sigma 0.6 (mean about       README gives 5 GB of extracted AEDAT 3.1 polarity events
                            2.4e5), clipped to          (8 bytes each), about 6e8 events over 1,342 gestures and
                            [2e4, 1.5e6]                the gaps between them, at most about 4.7e5 per gesture
    polarity                ON with probability 1/2     assumed (balanced)
    ======================  ==========================  ==========================================================
    """
    duration_us = int(np.clip(rng.normal(6.8e6, 0.95e6), 4.5e6, 9.5e6))
    n = int(np.clip(rng.lognormal(np.log(2e5), 0.6), 2e4, 1.5e6))
    t = np.sort(rng.integers(0, duration_us, n))
    angle = 2 * np.pi * label / GESTURE_CLASSES
    cx0, cy0 = 64 + 30 * np.cos(angle) + rng.normal(0, 3), 64 + 30 * np.sin(angle) + rng.normal(0, 3)
    turns = (1 + label % 3) * (1 if label % 2 == 0 else -1)  # circles per second, signed: the temporal signal
    phase = 2 * np.pi * (turns * t / 1e6) + rng.uniform(0, 2 * np.pi)
    x = cx0 + 15 * np.cos(phase) + rng.normal(0, 6, n)
    y = cy0 + 15 * np.sin(phase) + rng.normal(0, 6, n)
    background = rng.random(n) < 0.1
    x[background] = rng.uniform(0, 128, int(background.sum()))
    y[background] = rng.uniform(0, 128, int(background.sum()))
    out = np.empty((n, 4), np.int64)
    out[:, 0] = np.clip(x, 0, 127)
    out[:, 1] = np.clip(y, 0, 127)
    out[:, 2] = rng.integers(0, 2, n)
    out[:, 3] = t // 1000
    return out


def _write_gesture(root: Path, sample: ScaledSample) -> None:
    np.save(root / sample.path, gesture_events(np.random.default_rng(sample.seed), sample.label))


# -- N-MNIST -----------------------------------------------------------------------------------

#: samples per digit of MNIST (= N-MNIST) training and test sets
MNIST_COUNTS = {
    "train": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
    "test": (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009),
}
NMNIST_FOLDERS = {"train": "Train", "test": "Test"}
#: the sensor's position (x, y offset of the 28 x 28 digit in the 34 x 34 frame) at the start of each saccade
SACCADE_VERTICES = np.array([(1.0, 1.0), (5.0, 5.0), (5.0, 1.0), (1.0, 1.0)])


def _nmnist_plan(scale: float) -> list[ScaledSample]:
    def path(split: str, digit: int, k: int) -> str:
        first = sum(MNIST_COUNTS[split][:digit])
        return f"NMNIST/{NMNIST_FOLDERS[split]}/{digit}/{first + k + 1:05d}.bin"

    return class_plan("nmnist", MNIST_COUNTS, path, scale)


def digit_strokes(digit: int) -> np.ndarray:
    """``float [200, 2]`` points (x, y) on three line strokes inside a 28 x 28 box, fixed per ``digit``: the
    class-dependent shape of the fake N-MNIST samples."""
    return strokes(("nmnist", digit), 3, 200, (4, 24))


def saccades(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The sensor's motion behind ``n`` events of an N-MNIST or N-Caltech101 recording: three saccades along
    :data:`SACCADE_VERTICES`, 100 ms each (sd 2 ms), the events placed by Beta(2, 2) within their saccade (mostly
    mid-saccade, where the motion is fastest) -> ``(t``, sorted, in microseconds, ``offset [n, 2]`` in pixels``)``."""
    saccade_us = rng.normal(100_000, 2_000, 3).clip(90_000, 110_000)
    which = np.sort(rng.integers(0, 3, n))
    u = rng.beta(2, 2, n)
    starts = np.concatenate([[0.0], np.cumsum(saccade_us)[:2]])
    t = np.sort((starts[which] + u * saccade_us[which]).astype(np.int64))
    return t, SACCADE_VERTICES[which] + u[:, None] * (SACCADE_VERTICES[which + 1] - SACCADE_VERTICES[which])


def nmnist_events(rng: np.random.Generator, digit: int):
    """One fake N-MNIST sample of class ``digit``: ``(x, y, t, p)`` with ``t`` in microseconds, sorted.

    The digit's strokes (:func:`digit_strokes`, shifted by up to 1 px per sample) seen by a sensor that moves
    along three saccades (a triangle, :data:`SACCADE_VERTICES`); events fall mostly mid-saccade, where the motion is
    fastest. Statistics:

    ======================  ==========================  ==========================================================
    quantity                value                       source
    ======================  ==========================  ==========================================================
    sensor                  34 x 34, 2 polarities       Orchard et al., Front. Neurosci. 2015; tonic ``NMNIST``
    samples                 60,000 / 10,000, per digit  the MNIST sets N-MNIST converts (Orchard et al. 2015);
                            as MNIST's                  per-digit counts of MNIST (:data:`MNIST_COUNTS`)
    saccades                3 per sample, a triangle,   Orchard et al. 2015 (three saccades, about 300 ms per
                            100 ms each (sd 2 ms)       recording); the sd is assumed
    event times             Beta(2, 2) within each      assumed (events follow the motion, fastest mid-saccade)
                            saccade
    saccade path            (1,1)->(5,5)->(5,1)->(1,1)  assumed: a triangle that keeps the 28 x 28 digit inside
                            px offset                   the 34 x 34 frame
    events per sample       log-normal, median 4,000,   assumed: no published distribution. Bound: the release
                            sigma 0.35 (mean about      is 1.1 GB compressed (neuromorphicsystems.github.io/land)
                            4,250), clipped to          for 70,000 files of 5-byte events, so at least about
                            [800, 15,000]               3,100 events per sample on average
    polarity                ON with probability 1/2     assumed (balanced)
    ======================  ==========================  ==========================================================
    """
    n = int(np.clip(rng.lognormal(np.log(4000), 0.35), 800, 15000))
    t, offset = saccades(rng, n)
    strokes = digit_strokes(digit) + rng.uniform(-1, 1, 2)
    xy = strokes[rng.integers(0, len(strokes), n)] + offset + rng.normal(0, 0.7, (n, 2))
    x = np.clip(np.round(xy[:, 0]), 0, 33).astype(np.int64)
    y = np.clip(np.round(xy[:, 1]), 0, 33).astype(np.int64)
    return x, y, t, rng.integers(0, 2, n)


def _write_nmnist(root: Path, sample: ScaledSample) -> None:
    (root / sample.path).write_bytes(encode_atis_bin(*nmnist_events(np.random.default_rng(sample.seed), sample.label)))


# -- N-Caltech101 ------------------------------------------------------------------------------

#: files per class folder of N-Caltech101: Caltech101's images per category without ``Faces`` (Orchard et al. 2015
#: convert every Caltech101 image but that category's), in the release's label order
#: (:data:`fsnn.data.tonic_datasets.NCALTECH101_CLASSES`)
NCALTECH_COUNTS = dict(
    sorted(
        {
            "BACKGROUND_Google": 467, "Faces_easy": 435, "Leopards": 200, "Motorbikes": 798, "accordion": 55,
            "airplanes": 800, "anchor": 42, "ant": 42, "barrel": 47, "bass": 54, "beaver": 46, "binocular": 33,
            "bonsai": 128, "brain": 98, "brontosaurus": 43, "buddha": 85, "butterfly": 91, "camera": 50,
            "cannon": 43, "car_side": 123, "ceiling_fan": 47, "cellphone": 59, "chair": 62, "chandelier": 107,
            "cougar_body": 47, "cougar_face": 69, "crab": 73, "crayfish": 70, "crocodile": 50, "crocodile_head": 51,
            "cup": 57, "dalmatian": 67, "dollar_bill": 52, "dolphin": 65, "dragonfly": 68, "electric_guitar": 75,
            "elephant": 64, "emu": 53, "euphonium": 64, "ewer": 85, "ferry": 67, "flamingo": 67, "flamingo_head": 45,
            "garfield": 34, "gerenuk": 34, "gramophone": 51, "grand_piano": 99, "hawksbill": 100, "headphone": 42,
            "hedgehog": 54, "helicopter": 88, "ibis": 80, "inline_skate": 31, "joshua_tree": 64, "kangaroo": 86,
            "ketch": 114, "lamp": 61, "laptop": 81, "llama": 78, "lobster": 41, "lotus": 66, "mandolin": 43,
            "mayfly": 40, "menorah": 87, "metronome": 32, "minaret": 76, "nautilus": 55, "octopus": 35, "okapi": 39,
            "pagoda": 47, "panda": 38, "pigeon": 45, "pizza": 53, "platypus": 34, "pyramid": 57, "revolver": 82,
            "rhino": 59, "rooster": 49, "saxophone": 40, "schooner": 63, "scissors": 39, "scorpion": 84,
            "sea_horse": 57, "snoopy": 35, "soccer_ball": 64, "stapler": 45, "starfish": 86, "stegosaurus": 59,
            "stop_sign": 64, "strawberry": 35, "sunflower": 85, "tick": 49, "trilobite": 86, "umbrella": 75,
            "watch": 239, "water_lilly": 37, "wheelchair": 59, "wild_cat": 34, "windsor_chair": 56, "wrench": 39,
            "yin_yang": 60,
        }.items()
    )
)  # fmt: skip
#: the largest image box (width, height) of a fake sample: the sensor's 240 x 180 less the saccades' 6 px reach
NCALTECH_BOX = (232.0, 172.0)


def _ncaltech_plan(scale: float) -> list[ScaledSample]:
    def path(split: str, label: int, k: int) -> str:
        return f"NCALTECH101/Caltech101/{NCALTECH101_CLASSES[label]}/image_{k + 1:04d}.bin"

    return class_plan("ncaltech101", {"all": tuple(NCALTECH_COUNTS.values())}, path, scale)


def class_strokes(label: int) -> np.ndarray:
    """``float [400, 2]`` points (x, y) in the unit square on four line strokes, fixed per N-Caltech101 class
    ``label``: the class-dependent shape of the fake N-Caltech101 samples (scaled to each sample's image box)."""
    return strokes(("ncaltech101", label), 4, 400, (0.1, 0.9))


def ncaltech_events(rng: np.random.Generator, label: int):
    """One fake N-Caltech101 sample of class ``label``: ``(x, y, t, p)`` with ``t`` in microseconds, sorted.

    An image box of a per-sample aspect ratio, as large as fits in :data:`NCALTECH_BOX`, holds the class's strokes
    (:func:`class_strokes`, shifted by up to 2 % of the box per sample) and 10 % uniform texture; the sensor moves
    along N-MNIST's three saccades (:data:`SACCADE_VERTICES`), events mostly mid-saccade. Statistics:

    ======================  ==========================  ==========================================================
    quantity                value                       source
    ======================  ==========================  ==========================================================
    sensor                  ATIS, 2 polarities; each    Orchard et al., Front. Neurosci. 2015 (each image resized
                            image within 240 x 180      to the largest size within 240 x 180 keeping its aspect
                                                        ratio); the loader's ``sensor_hw`` (180, 240)
    files                   8,709 in 101 folders: 100   Orchard et al. 2015 and the release (Caltech101's 101
                            categories and              categories and ``BACKGROUND_Google``, 9,144 images,
                            ``BACKGROUND_Google``       without ``Faces``' 435); per class: Caltech101's image
                                                        counts (:data:`NCALTECH_COUNTS`, 31-800), checked only
                                                        against the two published totals (a test sums them)
    saccades                3 per sample, a triangle,   Orchard et al. 2015 (the N-MNIST procedure, about 300 ms
                            100 ms each (sd 2 ms)       per recording); the sd and path are assumed as N-MNIST's
    image aspect ratio      width / height normal,      assumed: Caltech101's images are roughly 300 x 200 px
                            mean 1.4, sd 0.25,          (its README); the spread is assumed
                            clipped to [0.7, 2.2]
    events per sample       log-normal, median 1e5,     assumed: no published distribution; about N-MNIST's
                            sigma 0.5 (mean about       median (4,000 per 28 x 28 digit) over an image area
                            1.1e5), clipped to          about 40 times larger, scaled down for the smaller
                            [1e4, 6e5]                  share of edges in a photograph
    polarity                ON with probability 1/2     assumed (balanced)
    ======================  ==========================  ==========================================================
    """
    n = int(np.clip(rng.lognormal(np.log(1e5), 0.5), 1e4, 6e5))
    aspect = float(np.clip(rng.normal(1.4, 0.25), 0.7, 2.2))
    fit = min(NCALTECH_BOX[0] / aspect, NCALTECH_BOX[1])
    box = np.array([aspect * fit, fit])
    t, offset = saccades(rng, n)
    strokes = class_strokes(label) + rng.uniform(-0.02, 0.02, 2)
    points = strokes[rng.integers(0, len(strokes), n)]
    texture = rng.random(n) < 0.1
    points[texture] = rng.random((int(texture.sum()), 2))
    xy = points * box + offset + rng.normal(0, 1.0, (n, 2))
    x = np.clip(np.round(xy[:, 0]), 0, 239).astype(np.int64)
    y = np.clip(np.round(xy[:, 1]), 0, 179).astype(np.int64)
    return x, y, t, rng.integers(0, 2, n)


def _write_ncaltech(root: Path, sample: ScaledSample) -> None:
    events = ncaltech_events(np.random.default_rng(sample.seed), sample.label)
    (root / sample.path).write_bytes(encode_atis_bin(*events))


# -- DVS-Lip -----------------------------------------------------------------------------------

#: the 100 words of DVS-Lip in label order (tonic's ``DVSLip.classes``; Tan et al., CVPR 2022, from LRW's vocabulary)
DVSLIP_WORDS = (
    "accused action allow allowed america american another around attacks banks become being benefit benefits "
    "between billion called capital challenge change chief couple court death described difference different during "
    "economic education election england evening everything exactly general germany giving ground happen happened "
    "having heavy house hundreds immigration judge labour leaders legal little london majority meeting military "
    "million minutes missing needs number numbers paying perhaps point potential press price question really right "
    "russia russian saying security several should significant spend spent started still support syria syrian taken "
    "taking terms these thing think times tomorrow under warning water welcome words worst years young"
).split()
#: files of each split of DVS-Lip (Tan et al. 2022; :data:`fsnn.data.tonic_datasets.TONIC_SPECS`)
DVSLIP_SPLITS = {"train": 14896, "test": 4975}
DVSLIP_DTYPE = np.dtype([("t", "<i4"), ("x", "i1"), ("y", "i1"), ("p", "i1")])


def dvslip_counts(split: str) -> list[int]:
    """Files per word of a DVS-Lip split: its total spread as evenly as possible over the 100 words, the last words
    one fewer (assumed: the per-word counts are not published)."""
    return even_counts(DVSLIP_SPLITS[split], len(DVSLIP_WORDS))


def _dvslip_plan(scale: float) -> list[ScaledSample]:
    def path(split: str, label: int, k: int) -> str:
        return f"DVSLip/DVS-Lip/{split}/{DVSLIP_WORDS[label]}/{k}.npy"

    return class_plan("dvslip", {split: dvslip_counts(split) for split in DVSLIP_SPLITS}, path, scale)


def word_strokes(label: int) -> np.ndarray:
    """``float [300, 2]`` points (x, y) on three line strokes around the centre of the 128 x 128 frame, fixed per
    DVS-Lip word ``label``: the class-dependent shape of the fake DVS-Lip samples."""
    return strokes(("dvslip", label), 3, 300, (24, 104))


def dvslip_events(rng: np.random.Generator, label: int) -> np.ndarray:
    """One fake DVS-Lip sample of word ``label``: a structured array (``t`` in microseconds, sorted from 0, ``x``,
    ``y``, ``p``; :data:`DVSLIP_DTYPE`), as the release stores it.

    The word's strokes (:func:`word_strokes`, shifted by up to 2 px per sample) open and close about the frame's
    centre at a word-dependent rate (1.5-4.5 cycles per second), as lips do; 10 % of the events are uniform
    background. Statistics:

    ======================  ==========================  ==========================================================
    quantity                value                       source
    ======================  ==========================  ==========================================================
    sensor                  128 x 128 (mouth crop),     Tan et al., CVPR 2022 (DAVIS346 recordings cropped to the
                            2 polarities                mouth); tonic ``DVSLip`` (sensor_size 128 x 128)
    words                   100 (:data:`DVSLIP_WORDS`)  Tan et al. 2022; tonic ``DVSLip.classes``
    files                   14,896 train / 4,975 test,  Tan et al. 2022 (split totals); per word: assumed, even
                            149 or 148 / 50 or 49 per   (:func:`dvslip_counts`: not published)
                            word
    duration                normal, mean 1.0 s, sd      assumed: one spoken word, about the 1.16 s of the LRW
                            0.15 s, clipped to          clips (29 frames at 25 fps; Chung and Zisserman, ACCV
                            [0.6, 1.5] s                2016) whose vocabulary DVS-Lip uses
    events per sample       log-normal, median 3e4,     assumed: no published distribution
                            sigma 0.5 (mean about
                            3.4e4), clipped to
                            [3e3, 2e5]
    polarity                ON with probability 1/2     assumed (balanced)
    ======================  ==========================  ==========================================================
    """
    duration_us = int(np.clip(rng.normal(1.0e6, 0.15e6), 0.6e6, 1.5e6))
    n = int(np.clip(rng.lognormal(np.log(3e4), 0.5), 3e3, 2e5))
    t = np.sort(rng.integers(0, duration_us, n))
    rate = 1.5 + 3.0 * (label % 7) / 6  # cycles per second: the temporal signal
    opening = 1 + 0.25 * np.sin(2 * np.pi * rate * t / 1e6 + rng.uniform(0, 2 * np.pi))
    points = word_strokes(label)[rng.integers(0, 300, n)] + rng.uniform(-2, 2, 2)
    xy = 64 + (points - 64) * opening[:, None] + rng.normal(0, 1.5, (n, 2))
    background = rng.random(n) < 0.1
    xy[background] = rng.uniform(0, 128, (int(background.sum()), 2))
    out = np.empty(n, DVSLIP_DTYPE)
    out["t"] = t
    out["x"] = np.clip(np.round(xy[:, 0]), 0, 127)
    out["y"] = np.clip(np.round(xy[:, 1]), 0, 127)
    out["p"] = rng.integers(0, 2, n)
    return out


def _write_dvslip(root: Path, sample: ScaledSample) -> None:
    np.save(root / sample.path, dvslip_events(np.random.default_rng(sample.seed), sample.label))


# -- HarDVS ------------------------------------------------------------------------------------

HARDVS_CLASSES = 300
#: events per fake HarDVS sample: the log-normal's median and sigma, and the range it is clipped to
HARDVS_EVENTS = (5e4, 0.6, (5e3, 5e5))
#: the first fake recording's timestamp (each action's recordings follow 15 s apart, the actions 2 h apart)
HARDVS_FIRST_RECORDING = datetime(2021, 10, 15, 9, 0, 0)


@cache
def hardvs_counts(split: str) -> tuple[int, ...]:
    """Recordings per action of a HarDVS split: its published total (:data:`fsnn.data.hardvs.HARDVS_SIZES`) spread
    as evenly as possible over the 300 actions (assumed: the per-action counts are not published)."""
    return tuple(even_counts(HARDVS_SIZES[split], HARDVS_CLASSES))


def hardvs_path(split: str, label: int, k: int) -> str:
    """``HARDVS/extract/action_<label + 1>/dvSave-<date>_<time>.npz``: recording ``k`` of a split of an action, named
    as the DV software names a recording (the release's names, e.g. ``dvSave-2021_10_15_19_18_02``), with a fake
    timestamp unique within the action (its recordings numbered over train, val, test)."""
    before = sum(hardvs_counts(previous)[label] for previous in HARDVS_SPLITS[: HARDVS_SPLITS.index(split)])
    when = HARDVS_FIRST_RECORDING + timedelta(hours=2 * label, seconds=15 * (before + k))
    return f"HARDVS/extract/action_{label + 1:03d}/dvSave-{when:%Y_%m_%d_%H_%M_%S}.npz"


def _hardvs_plan(scale: float) -> list[ScaledSample]:
    return class_plan("hardvs", {split: hardvs_counts(split) for split in HARDVS_SPLITS}, hardvs_path, scale)


def hardvs_events(rng: np.random.Generator, label: int):
    """One fake HarDVS recording of action ``label``: ``(x, y, t, p)``, int64 (as :mod:`fsnn.data.fakes.fixtures` writes
    them), ``t`` in microseconds, sorted from 0.

    A person mid-frame (a Gaussian body, 30 % of the events) swings the action's limbs (three strokes,
    :func:`strokes`, 60 %) about the body's centre by up to 0.5 rad at an action-dependent rate (0.4-2.4 swings per
    second); 10 % of the events are uniform background. Statistics:

    ======================  ==========================  ==========================================================
    quantity                value                       source
    ======================  ==========================  ==========================================================
    sensor                  346 x 260 (width x height,  Wang et al., "HARDVS: Revisiting Human Activity
                            DAVIS346), 2 polarities     Recognition with Dynamic Vision Sensors", AAAI 2024;
                                                        SpikingJelly's ``HARDVS.get_H_W`` (260, 346)
    actions                 300 (``action_001`` ...     Wang et al. 2024; the release's ``HARDVS_300_class.txt``
                            ``action_300``, label k-1)
    recordings              64,522 / 10,734 / 32,390    Wang et al. 2024 (the official split,
                            (107,646), 215 or 216 /     :data:`fsnn.data.hardvs.HARDVS_SIZES`); per action:
                            35 or 36 / 107 or 108 per   assumed, even (:func:`hardvs_counts`: not published)
                            action
    names                   ``dvSave-<date>_<time>``    the release's label files (SpikingJelly's example
                                                        ``action_001/dvSave-2021_10_15_19_18_02``); the
                                                        timestamps are fake (:func:`hardvs_path`)
    file                    npz of int64 arrays t, x,   the keys SpikingJelly's ``HARDVS`` reads; the dtypes as
                            y, p (32 bytes per event)   :mod:`fsnn.data.fakes.fixtures` writes them (the release's are
                                                        not documented)
    duration                normal, mean 5 s, sd 0.8    assumed: one action of a few seconds per recording (no
                            s, clipped to [3, 8] s      published distribution)
    events per sample       log-normal, median 5e4,     assumed: no published distribution (:data:`HARDVS_EVENTS`;
                            sigma 0.6 (mean about       kept moderate for disk: about 1.9 MB per file, 4 GB at
                            6e4), clipped to [5e3,      scale 0.02)
                            5e5]
    polarity                ON with probability 1/2     assumed (balanced)
    ======================  ==========================  ==========================================================
    """
    median, sigma, (low, high) = HARDVS_EVENTS
    duration_us = int(np.clip(rng.normal(5.0e6, 0.8e6), 3.0e6, 8.0e6))
    n = int(np.clip(rng.lognormal(np.log(median), sigma), low, high))
    t = np.sort(rng.integers(0, duration_us, n))
    height, width = HARDVS_SENSOR
    centre = np.array([width / 2, height / 2 + 10]) + rng.normal(0, (20, 8))
    rate = 0.4 + 2.0 * (label % 13) / 12  # swings per second: the temporal signal
    swing = 0.5 * np.sin(2 * np.pi * rate * t / 1e6 + rng.uniform(0, 2 * np.pi))
    limbs = strokes(("hardvs", label), 3, 300, (-70, 70))[rng.integers(0, 300, n)]
    cos, sin = np.cos(swing), np.sin(swing)
    xy = centre + np.stack([cos * limbs[:, 0] - sin * limbs[:, 1], sin * limbs[:, 0] + cos * limbs[:, 1]], axis=1)
    xy += rng.normal(0, 2.0, (n, 2))
    part = rng.random(n)
    body, background = part < 0.3, part >= 0.9
    xy[body] = centre + rng.normal(0, (18, 45), (int(body.sum()), 2))
    xy[background] = rng.uniform(0, (width, height), (int(background.sum()), 2))
    x = np.clip(np.round(xy[:, 0]), 0, width - 1).astype(np.int64)
    y = np.clip(np.round(xy[:, 1]), 0, height - 1).astype(np.int64)
    return x, y, t, rng.integers(0, 2, n)


def _write_hardvs(root: Path, sample: ScaledSample) -> None:
    _save_events(root / sample.path, *hardvs_events(np.random.default_rng(sample.seed), sample.label))


def write_hardvs_lists(root: Path, plan: list[ScaledSample]) -> None:
    """The release's ``extract/{train,val,test}_label.txt``: a line ``action_<NNN>/<sample> <label>`` per recording."""
    for split in HARDVS_SPLITS:
        lines = [f"{Path(s.path).parent.name}/{Path(s.path).stem} {s.label}" for s in plan if s.split == split]
        (root / "HARDVS" / "extract" / f"{split}_label.txt").write_text("".join(f"{line}\n" for line in lines))


#: ``plan(scale)`` of each event dataset
EVENT_PLANS = {
    "dvsgesture": _gesture_plan,
    "nmnist": _nmnist_plan,
    "ncaltech101": _ncaltech_plan,
    "dvslip": _dvslip_plan,
    "hardvs": _hardvs_plan,
}
#: ``writer(root, sample)`` of each event dataset
EVENT_WRITERS = {
    "dvsgesture": _write_gesture,
    "nmnist": _write_nmnist,
    "ncaltech101": _write_ncaltech,
    "dvslip": _write_dvslip,
    "hardvs": _write_hardvs,
}
