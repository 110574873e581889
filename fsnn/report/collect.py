"""The one reader of run records: every ``metrics.json`` under a results folder (with the ``robustness.json``
and ``energy.json`` beside it), checked when read (a metric outside its documented range, a recipe that is not
the suite's, an unreadable file set aside by name), and what a record says of itself (experiment, recipe,
epochs)."""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsnn.records import config_root, is_earlier_generation

# match keys that are not dotted paths into a run's resolved config
ALIASES = {"dataset": "config.dataset.name", "backbone": "config.backbone.name",
           "neuron": "config.neuron.name", "alpha": "config.neuron.alpha",
           "task_name": "task", "metric": "metric",
           "neuron_variant": "choices.neuron_variant"}  # the conf/neuron_variant/ option a sequence run used


# studies written beside a run's metrics.json by later commands, merged into its record under these names
SIBLINGS = ("robustness", "energy")


DEFAULT_RECIPE = "matched"


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
        return (f"{len(self.complete)} complete, {len(self.failed)} failed, "
                f"{len(self.running)} running/unfinished, {len(self.corrupt)} corrupt{bad}")


# the documented range of a run record's metrics, by name: fractions (accuracy, AUC, average precision, firing
# rates) in [0, 1]; losses, spreads, energies and speeds >= 0; any other metric only finite
FRACTION_METRIC = re.compile(r"(?:^|[/_])(?:acc|auc|ap)(?:_best|_last)?$|/rate/")


NON_NEGATIVE_METRIC = re.compile(r"loss|_std$|energy|per_s$")


def impossible_metrics(record: dict) -> list[str]:
    """The metrics of a run record (``val_*``, ``test_*`` and ``test_metrics.*``) outside their documented range
    (NaN or infinite; a fraction outside [0, 1], :data:`FRACTION_METRIC`; a negative loss, std, energy or speed,
    :data:`NON_NEGATIVE_METRIC`), each as ``key`` for a non-finite value, else ``key=value (expected ...)``."""
    found = {**{k: v for k, v in record.items() if k.startswith(("val_", "test_"))},
             **{f"test_metrics.{k}": v for k, v in (record.get("test_metrics") or {}).items()}}
    bad = []
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
    (:func:`recipe_problem`: it would name a table file) counts as corrupt."""
    found = Collection()
    known_recipes = sorted(p.stem for p in (config_root() / "recipe").glob("*.yaml"))

    def read(path: Path) -> dict | None:
        try:
            return read_record(path)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            reason = f"{type(error).__name__}: {error}"
            found.corrupt.append((str(path), reason))
            warnings.warn(f"skipping unreadable {path}: {reason}", stacklevel=3)
            return None

    for path in sorted(p for p in Path(results_dir).rglob("metrics.json") if not is_earlier_generation(p)):
        record = read(path)
        if record is None:
            continue
        if reason := recipe_problem(record.get("recipe"), known_recipes):
            found.corrupt.append((str(path), reason))
            warnings.warn(f"skipping {path}: {reason}", stacklevel=2)
            continue
        record["_path"] = str(path)
        for name in SIBLINGS:
            sibling = path.with_name(f"{name}.json")
            if sibling.exists() and (study := read(sibling)) is not None:
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


def read_record(path: str | Path) -> dict:
    """The JSON object in ``path``; ``ValueError`` if it is not valid JSON or not an object."""
    record = json.loads(Path(path).read_text())
    if not isinstance(record, dict):
        raise ValueError(f"top level is {type(record).__name__}, not an object")
    return record


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
