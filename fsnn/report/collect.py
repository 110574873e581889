"""The one reader of run records: every ``metrics.json`` under a results folder (with the ``robustness.json``
and ``energy.json`` beside it), checked when read (a metric outside its documented range, a recipe that is not
the suite's, an unreadable file set aside by name), and what a record says of itself (experiment, recipe,
epochs, neuron, how it was trained).

A results tree may be damaged or hostile, and every report reads it: a file that is not a record (a folder, a fifo,
a link out of the tree, a name that is not UTF-8, JSON nested past any record's depth, a value of the wrong type
where a report reads it, :data:`RECORD`) is set aside with its reason, never met by a report as a traceback."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from fsnn.neurons.registry import is_fractional
from fsnn.runs.configs import config_root
from fsnn.runs.records import is_earlier_generation
from fsnn.runs.renames import current_config

# match keys that are not dotted paths into a run's resolved config
ALIASES = {
    "dataset": "config.dataset.name",
    "backbone": "config.backbone.name",
    "neuron": "config.neuron.name",
    "alpha": "config.neuron.alpha",
    "task_name": "task",
    "metric": "metric",
    "neuron_variant": "choices.neuron_variant",
}  # the conf/neuron_variant/ option a sequence run used


# studies written beside a run's metrics.json by later commands, merged into its record under these names
SIBLINGS = ("robustness", "energy")


DEFAULT_RECIPE = "matched"

# what a record says of itself rather than what its run measured: two records that differ only in these are one run
# (a copied run folder, with its seed edited or not; its studies beside it are copied with it)
IDENTITY = ("_path", "run", "seed", "overrides", "config", "choices", "versions", "status", "task", "recipe")


# -- what a record must look like where the reports read it ------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A value's type as a message names it (``text``, ``a number``...), and its test."""

    name: str
    test: Any

    def problem(self, value: Any, where: str) -> str | None:
        return None if self.test(value) else f"{where}: expected {self.name}, got {_kind(value)}"


@dataclass(frozen=True)
class Each:
    """A list whose every item has ``shape``."""

    shape: Any


@dataclass(frozen=True)
class Values:
    """An object whose every value has ``shape``."""

    shape: Any


@dataclass(frozen=True)
class Required:
    """A key that must be present (the others of a shape are checked where they are present)."""

    shape: Any


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


TEXT = Kind("text", lambda value: isinstance(value, str))
NUMBER = Kind("a number", _number)
INTEGER = Kind("an integer", lambda value: isinstance(value, int) and not isinstance(value, bool))
OBJECT = Kind("an object", lambda value: isinstance(value, dict))


def _kind(value: Any) -> str:
    name = {
        str: "text",
        bool: "true or false",
        int: "a number",
        float: "a number",
        dict: "an object",
        list: "a list",
        type(None): "null",
    }.get(type(value), type(value).__name__)
    return f"{name} ({printable(json.dumps(value))[:40]})" if isinstance(value, (str, int, float)) else name


def shape_problem(value: Any, shape: Any, where: str = "") -> str | None:
    """What in ``value`` does not have ``shape`` (``key.key: expected ..., got ...``), or ``None``. A shape is a
    :class:`Kind`, an :class:`Each`, a :class:`Values` or an object ``{key: shape}`` whose keys are checked where
    present (:class:`Required` ones always); keys it does not name may hold anything."""
    if isinstance(shape, Kind):
        return shape.problem(value, where or "the record")
    if isinstance(shape, (Each, Values)):
        container = list if isinstance(shape, Each) else dict
        if not isinstance(value, container):
            return f"{where or 'the record'}: expected {'a list' if container is list else 'an object'}, got {_kind(value)}"
        items = enumerate(value) if container is list else value.items()
        for key, item in items:
            inner = f"{where}[{key}]" if container is list else f"{where}.{key}" if where else key
            if problem := shape_problem(item, shape.shape, inner):
                return problem
        return None
    if not isinstance(value, dict):
        return f"{where or 'the record'}: expected an object, got {_kind(value)}"
    for key, inner in shape.items():
        required = isinstance(inner, Required)
        here = f"{where}.{key}" if where else key
        if key not in value:
            if required:
                return f"{here}: missing"
            continue
        if problem := shape_problem(value[key], inner.shape if required else inner, here):
            return problem
    return None


#: a run's resolved config where the reports read it: names that group runs, numbers that place them on an axis
CONFIG = {
    "dataset": {"name": TEXT, "delay": INTEGER, "num_cues": INTEGER},
    "backbone": {"name": TEXT},
    "neuron": {"name": TEXT, "alpha": NUMBER},
    "trainer": OBJECT,
    "paths": OBJECT,
    "alpha_per_dataset": Values(OBJECT),
}

#: a ``robustness.json``: the clean metric and, per corruption, its levels (the metric's list per level is checked
#: by :func:`record_problem`, its key being the study's ``metric``)
ROBUSTNESS = {
    "metric": Required(TEXT),
    "clean": Required(NUMBER),
    "config": CONFIG,
    "corruptions": Required(Values({"levels": Required(Each(NUMBER)), "score": NUMBER})),
}

#: a ``metrics.json`` where the tables, figures and page read it (``val_*`` / ``test_*`` numbers: :func:`record_problem`)
RECORD = {
    "status": TEXT,
    "task": TEXT,
    "run": TEXT,
    "metric": TEXT,
    "device": TEXT,
    "seed": INTEGER,
    "wall_time_s": NUMBER,
    "train_epoch_s": NUMBER,
    "overrides": Each(TEXT),
    "versions": OBJECT,
    "config": CONFIG,
    "choices": {"neuron_variant": TEXT},
    "test_metrics": OBJECT,
    "firing_rates": Values(NUMBER),
    "layer_order": Each(TEXT),
    "neurons_by_epoch": Each({"epoch": Required(NUMBER), "neurons": Required(Values(Values(NUMBER)))}),
    "robustness": ROBUSTNESS,
    "energy": OBJECT,
}

#: the sibling studies' shapes, by name (:data:`SIBLINGS`)
STUDIES = {"robustness": ROBUSTNESS, "energy": OBJECT}


def record_problem(record: dict, shape: Any = RECORD) -> str | None:
    """Why ``record`` cannot be read as a run record (or a sibling study, ``shape``), or ``None``: a value of another
    type than :data:`RECORD` (or ``shape``) says where a report reads it, a ``val_*`` / ``test_*`` metric that is
    not a number, a corruption without its list of the study's metric."""
    if problem := shape_problem(record, shape):
        return problem
    for key, value in record.items() if shape is RECORD else ():
        if key.startswith(("val_", "test_")) and key != "test_metrics" and value is not None and not _number(value):
            return f"{key}: expected a number, got {_kind(value)}"
    studies = [record] if shape is ROBUSTNESS else [record["robustness"]] if "robustness" in record else []
    for study in studies:
        for name, entry in study["corruptions"].items():
            if problem := shape_problem(
                entry.get(study["metric"]), Each(NUMBER), f"corruptions.{name}.{study['metric']}"
            ):
                return problem
    return None


@dataclass
class Collection:
    """Every ``metrics.json`` under a results folder, sorted by status."""

    complete: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    running: list[dict] = field(default_factory=list)
    corrupt: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    # (path, what is wrong): complete, but a metric no run can give (NaN, inf, a fraction outside [0, 1]...)
    impossible: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        bad = f", {len(self.impossible)} with impossible metrics" if self.impossible else ""
        return (
            f"{len(self.complete)} complete, {len(self.failed)} failed, "
            f"{len(self.running)} running/unfinished, {len(self.corrupt)} corrupt{bad}"
        )


# the documented range of a run record's metrics, by name: fractions (accuracy, AUC, average precision, firing
# rates) in [0, 1]; losses, spreads, energies and speeds >= 0; any other metric only finite
FRACTION_METRIC = re.compile(r"(?:^|[/_])(?:acc|auc|ap)(?:_best|_last)?$|/rate/")


NON_NEGATIVE_METRIC = re.compile(r"loss|_std$|energy|per_s$")


def impossible_metrics(record: dict) -> list[str]:
    """The metrics of a run record (``val_*``, ``test_*`` and ``test_metrics.*``) outside their documented range
    (NaN or infinite; a fraction outside [0, 1], :data:`FRACTION_METRIC`; a negative loss, std, energy or speed,
    :data:`NON_NEGATIVE_METRIC`), each as ``key`` for a non-finite value, else ``key=value (expected ...)``; a
    complete run without its test metric (``test_<metric>``) gives ``test_<metric> (not recorded)``."""
    found = {
        **{k: v for k, v in record.items() if k.startswith(("val_", "test_"))},
        **{f"test_metrics.{k}": v for k, v in (record.get("test_metrics") or {}).items()},
    }
    test = f"test_{record.get('metric', 'acc')}"
    bad = [f"{test} (not recorded)"] if record.get("status") == "complete" and not _number(record.get(test)) else []
    for key, value in found.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        name = key.removeprefix("test_metrics.")
        if not math.isfinite(value):
            bad.append(key)
        elif FRACTION_METRIC.search(name) and not 0.0 <= value <= 1.0:
            bad.append(f"{key}={value:g} (expected a fraction in [0, 1])")
        elif NON_NEGATIVE_METRIC.search(name) and value < 0:
            bad.append(f"{key}={value:g} (expected >= 0)")
    return bad


SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def recipe_problem(recipe: Any, known: list[str]) -> str | None:
    """Why a run record's ``recipe`` cannot be tabulated, or ``None``: a table of a recipe is written to a file
    named after it (``<id>_<recipe>.md``), so it must be one of the suite's recipes ``known`` (``conf/recipe/``;
    without the configs, any plain name: letters, digits, ``_ . -``)."""
    if recipe is None or (recipe in known if known else isinstance(recipe, str) and SAFE_NAME.fullmatch(recipe)):
        return None
    return f"recipe {str(recipe)[:80]!r} is not one of the suite's recipes ({', '.join(known) or 'plain names'})"


def scan_runs(results_dir: str | Path) -> Collection:
    """Read every ``results_dir/**/metrics.json`` but an earlier generation's (``<run>/previous.<n>/``, kept by
    ``force=true``), with its sibling ``robustness.json`` / ``energy.json`` under ``robustness`` / ``energy``; a
    corrupt file is recorded (and warned about), never fatal: a run with a corrupt sibling still counts. A complete
    run whose metrics are outside their range (:func:`impossible_metrics`) is warned about and set aside
    (``impossible``), never counted among the complete ones; a record whose ``recipe`` is not one of the suite's
    (:func:`recipe_problem`: it would name a table file) counts as corrupt, as does one that does not have the
    shape the reports read (:func:`record_problem`), and what the walk of the tree cannot read
    (:func:`record_files`)."""
    found = Collection()
    known_recipes = sorted(p.stem for p in (config_root() / "recipe").glob("*.yaml"))
    root = Path(results_dir)

    def skip(path: Path, reason: str) -> None:
        found.corrupt.append((printable(path), printable(reason)))
        warnings.warn(f"skipping {printable(path)}: {printable(reason)}", stacklevel=3)

    def read(path: Path, shape: Any) -> dict | None:
        try:
            if not inside(path, root):
                raise ValueError(f"a link to {printable(os.path.realpath(path))}, outside {printable(root)}")
            record = read_record(path)
        except (OSError, ValueError) as error:
            skip(path, f"{type(error).__name__}: {error}")
            return None
        if reason := record_problem(record, shape):
            skip(path, reason)
            return None
        return record

    for path in record_files(root, skip):
        record = read(path, RECORD)
        if record is None:
            continue
        if reason := recipe_problem(record.get("recipe"), known_recipes):
            skip(path, reason)
            continue
        record["_path"] = str(path)
        if isinstance(record.get("config"), dict):
            record["config"] = current_config(record["config"])
        for name in SIBLINGS:
            sibling = path.with_name(f"{name}.json")
            if os.path.lexists(sibling) and (study := read(sibling, STUDIES[name])) is not None:
                record[name] = study
        status = record.get("status")
        if status == "complete" and (bad := impossible_metrics(record)):
            found.impossible.append((str(path), ", ".join(bad)))
            warnings.warn(f"skipping {path}: its metrics are impossible ({', '.join(bad)})", stacklevel=2)
        elif status == "complete":
            found.complete.append(record)
        elif status == "failed":
            found.failed.append(record)
        else:
            found.running.append(record)
    return found


def record_files(results_dir: Path, skip) -> list[Path]:
    """Every ``metrics.json`` under ``results_dir``, sorted, but an earlier generation's; ``skip(path, reason)`` is
    told of what cannot be a run's: a link to a folder (never followed: a link back up the tree would loop, one
    across it would count its runs twice), a folder that cannot be listed, a path that is not UTF-8 (no page or
    table can name it). The walk keeps its own stack: no tree is too deep for it."""
    found, folders = [], [Path(results_dir)]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            skip(folder, f"the folder cannot be listed ({error.strerror or error})")
            continue
        for entry in entries:
            path = folder / entry.name
            if entry.name == "metrics.json":
                found.append(path)
            elif entry.is_dir(follow_symlinks=False):
                folders.append(path)
            elif entry.is_symlink() and os.path.isdir(path):
                skip(path, "a link to a folder, not followed: runs are read from the folders of the results tree")
    records = []
    for path in sorted(found):
        if not _utf8(str(path.relative_to(results_dir))):
            skip(path, "its path is not valid UTF-8: rename the folder")
        elif not is_earlier_generation(path):
            records.append(path)
    return records


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def printable(text: Any) -> str:
    """``text`` as a console line or a page shows it: the bytes of a file name that are not UTF-8 and the control
    characters escaped (``\\xff``, ``\\n``), so that writing it never fails and never starts a line of its own."""
    text = str(text)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that no file name gave
        text = text.encode("utf-8", "backslashreplace").decode()
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def inside(path: str | Path, root: str | Path) -> bool:
    """Whether ``path``, its links followed, is ``root`` or in it (with ``root``'s own links followed)."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


#: the largest run record read: a record is some kilobytes; a huge file in its place is not one
MAX_RECORD_BYTES = 64 * 2**20
#: the deepest nesting of a record's JSON: a record is 7 levels deep; every report may walk it recursively
MAX_DEPTH = 32


def read_record(path: str | Path) -> dict:
    """The JSON object in ``path``; ``ValueError`` if it cannot be a record: not a regular file (a fifo would block
    the reader), larger than :data:`MAX_RECORD_BYTES`, not UTF-8 JSON, nested deeper than :data:`MAX_DEPTH`, text
    that is not Unicode (a lone surrogate), or not an object."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise ValueError(f"not a file but a {'folder' if stat.S_ISDIR(mode) else 'special file'}")
    with open(path, "rb") as handle:
        data = handle.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"larger than {MAX_RECORD_BYTES // 2**20} MiB, which no record is")
    try:
        record = json.loads(data.decode())
    except RecursionError:
        raise ValueError(f"nested deeper than a record's {MAX_DEPTH} levels") from None
    if not isinstance(record, dict):
        raise ValueError(f"top level is {type(record).__name__}, not an object")
    if problem := _plain_problem(record):
        raise ValueError(problem)
    return record


def _plain_problem(record: dict) -> str | None:
    """Why ``record`` is not plain data every report can walk and write: nested deeper than :data:`MAX_DEPTH`, or
    text that no UTF-8 file can hold; walked with its own stack."""
    stack = [(record, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than a record's {MAX_DEPTH} levels"
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if not all(_utf8(text) for text in (key, value) if isinstance(text, str)):
                return "holds text that is not valid Unicode (a lone surrogate)"
            if isinstance(value, (dict, list)):
                stack.append((value, depth + 1))
    return None


def collect_runs(results_dir: str | Path) -> list[dict]:
    """The complete runs under ``results_dir`` (corrupt files are warned about and skipped)."""
    return scan_runs(results_dir).complete


def recipe_of(run: dict) -> str:
    """The recipe a run used; runs from before the recipe switch used the matched one."""
    return str(run.get("recipe") or DEFAULT_RECIPE)


def experiment_of(run: dict) -> str:
    """The experiment a run belongs to: its ``task_name``, with a ``_smoke`` variant counted as its experiment."""
    return str(run.get("task") or "").removesuffix("_smoke")


def epochs_of(run: dict) -> int | None:
    """The epochs a run was configured to train (``trainer.max_epochs``), ``None`` where not recorded."""
    value = ((run.get("config") or {}).get("trainer") or {}).get("max_epochs")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def dataset_backbone(record: dict) -> str:
    """``<dataset>_<backbone>`` of a run record (``metrics.json`` or ``robustness.json``): the runs that one figure or
    robustness decision compares across neurons."""
    config = record.get("config") or {}
    return "_".join((config.get(group) or {}).get("name", "unknown") for group in ("dataset", "backbone"))


def neuron_name(record: dict) -> str:
    """A run's neuron as its config names it (``neuron.name``; ``"unknown"`` where the record has none)."""
    return ((record.get("config") or {}).get("neuron") or {}).get("name", "unknown")


def content_key(record: dict) -> str:
    """What a run measured (its record less :data:`IDENTITY`), as text: equal for copies of one run folder, whatever
    their place or seed, and different for two runs (their wall times alone differ)."""
    return json.dumps({k: v for k, v in record.items() if k not in IDENTITY}, sort_keys=True, default=str)


def commit_of(record: dict) -> str:
    """The fsnn commit a run was made from, as its record says (``"unknown"`` where it does not)."""
    return str((record.get("versions") or {}).get("fsnn_commit") or "unknown")


def by_neuron(records: Iterable[dict]) -> dict[str, list[dict]]:
    """Records by neuron name, fractional neurons first, then by name."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups[neuron_name(record)].append(record)
    return dict(sorted(groups.items(), key=lambda item: (not is_fractional(item[0]), item[0])))


def test_percent(run: dict) -> float:
    """A run's test value of its own metric (``metric``, default ``acc``), in percent."""
    return 100.0 * run[f"test_{run.get('metric', 'acc')}"]


def on_cpu(run: dict) -> bool:
    """Whether a run trained on a CPU (its ``device``; a record without one did)."""
    return str(run.get("device", "cpu")).startswith("cpu")


def training_setting(run: dict) -> tuple:
    """How a run was trained, less its neuron and seed: setting, recipe, epochs and Poisson steps; equal for runs
    that one curve may compare."""
    config = run.get("config") or {}
    return (
        dataset_backbone(run),
        recipe_of(run),
        (config.get("trainer") or {}).get("max_epochs"),
        (config.get("dataset") or {}).get("T"),
    )
