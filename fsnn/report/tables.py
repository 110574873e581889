"""The paper's tables next to ours: collect ``results/**/metrics.json`` and fill the paper's transcribed tables
(``paper_tables.yaml``, package data of fsnn).

``fsnn-report tables [--results DIR] [--out DIR]`` (or ``fsnn-report tables``) prints every table and writes it
as Markdown and LaTeX (booktabs) under ``<results>/tables/``; the results folder defaults to ``$FSNN_RESULTS``, else ``./results`` of the current
directory (:func:`fsnn.runs.records.results_root`). A cell is mean ± std (sample std, ddof=1) over the
complete runs that match it, in percent, with n, the paper's value and the difference (ours - paper);
a cell without runs shows ``—``. Corrupt or unreadable ``metrics.json`` files are reported and skipped.
A table never mixes recipes (a run's ``recipe``: ``matched``, the default, or ``authors``, see ``conf/recipe/``):
runs of another recipe fill their own copy of the table, ``<id>_<recipe>``. Nor does it mix protocols: where runs
at the paper's epochs (``protocol`` in the YAML) and runs at other epochs fill one table, the latter fill their own
copy, ``<id>_<E>ep``. A table with neither paper values nor runs (the suite's own studies before they are run) is
not written, and a table file this command wrote before and no longer writes is removed (``tables.json`` lists what
it wrote), so the folder always matches the runs.
Every table's claims (the fractional neuron against each first-order one, :mod:`fsnn.report.claims`) are decided
and written together to ``claims.md``, followed by the paper's graph robustness claims
(:mod:`fsnn.report.robustness_claims`).
A run's ``robustness.json`` (``evaluate.py robustness=...``) and ``energy.json`` (``evaluate.py study=energy``),
beside its ``metrics.json``, are merged into its record under ``robustness`` and ``energy``, where the robustness
and energy tables read them with list paths (see the YAML header).
"""

from __future__ import annotations

import json
import math
import statistics
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from fsnn.atomic import RunFileError, write_text_atomic
from fsnn.neurons.registry import neuron_label
from fsnn.report.claims import claims, claims_markdown, welch
from fsnn.report.collect import (
    ALIASES,
    DEFAULT_RECIPE,
    Collection,
    commit_of,
    content_key,
    epochs_of,
    experiment_of,
    recipe_of,
    scan_runs,
)
from fsnn.report.outputs import listed_files, output_folder
from fsnn.report.robustness_claims import graph_records, graph_robustness_claims, robustness_markdown
from fsnn.report.selection import select_on_validation
from fsnn.report.table_formats import to_latex, to_markdown
from fsnn.runs.configs import config_root
from fsnn.runs.records import results_root

SPEC = "paper_tables.yaml"  # package data of fsnn: the paper's numbers, transcribed
# config fields that do not make two runs different experiments (for the mixed-config flag): force only trains a run
# again in its folder; a study (robustness, energy) runs on the trained run and writes its own file, so it changes
# none of the run's metrics
INCIDENTAL = ("seed", "run_name", "force", "paths", "logger", "hydra", "study", "robustness")
PAPER_EPOCHS = "paper"  # build_table(epochs=...): only the runs trained for the paper's number of epochs
MANIFEST = "tables.json"  # what make_tables wrote last, so that a table it no longer writes is removed
CLAIMS = "claims"  # <out>/claims.md: every table's claims, decided (fsnn.report.claims)


def load_spec(path: str | Path | None = None) -> list[dict]:
    """The paper tables of ``path``, by default the ones fsnn ships (:data:`SPEC`). A column that matches one neuron
    and gives no ``label`` is headed by the neuron's registered label (:func:`fsnn.neurons.registry.neuron_label`);
    any other column without one is a ``ValueError`` naming the file, the table and the column."""
    text = resources.files("fsnn.report").joinpath(SPEC).read_text() if path is None else Path(path).read_text()
    tables = yaml.safe_load(text)["tables"]
    for table in tables:
        for column in table["columns"]:
            if "label" in column:
                continue
            neuron = (column.get("match") or {}).get("neuron")
            if not isinstance(neuron, str):
                raise ValueError(
                    f"{path or SPEC}: table {table.get('id')!r}, column {column.get('key')!r}: a label is needed where "
                    "a column matches no one neuron"
                )
            column["label"] = neuron_label(neuron)
    return tables


def _lookup(run: dict, key: str | list) -> tuple[bool, Any]:
    """(found, value) of a match key in a run record.

    A string is a match key (an alias or a dotted path into the run's config); a list is a path from the top of
    the record, one element per level: a string or number is an object key (a number as its shortest text,
    0.1 -> "0.1", so robustness levels can be addressed), an int also indexes a list.
    """
    if isinstance(key, list):
        path = key
    else:
        path = ALIASES.get(key, key if key.startswith("config.") else f"config.{key}").split(".")
    node: Any = run
    for part in path:
        if isinstance(node, list) and type(part) is int:  # not bool, a subclass of int
            if not -len(node) <= part < len(node):
                return False, None
            node = node[part]
            continue
        name = part if isinstance(part, str) else f"{part:g}"
        if not isinstance(node, dict) or name not in node:
            return False, None
        node = node[name]
    return True, node


def _equal(actual: Any, expected: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-9)
    return actual == expected


def matches(run: dict, match: dict) -> bool:
    """Whether ``run`` (a ``metrics.json``) has every ``dotted.key: value`` of a cell's ``match`` (``null``: absent or
    null)."""
    for key, expected in (match or {}).items():
        found, actual = _lookup(run, key)
        if expected is None:
            if found and actual is not None:
                return False
        elif not found or not _equal(actual, expected):
            return False
    return True


def _value(run: dict, source: str | list) -> float | None:
    """A run's number: ``test`` is ``test_<metric>`` (at the best-validation checkpoint), else a path (a dotted
    path into the config or a list path from the top of the record, see :func:`_lookup`). NaN and inf (a learned
    parameter that diverged) count as no number: the cell's n says how many runs had one."""
    if source == "test":
        value = run.get(f"test_{run.get('metric', 'acc')}")
    else:
        value = _lookup(run, source)[1]
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _paper(value: Any) -> tuple[float | None, float | None]:
    if isinstance(value, (list, tuple)):
        return float(value[0]), (float(value[1]) if len(value) > 1 and value[1] is not None else None)
    if isinstance(value, dict):
        return value.get("mean"), value.get("std")
    return (None if value is None else float(value)), None


def _fingerprint(run: dict) -> str:
    # a group switched off ({} or null: early_stopping=none) is what a run recorded before the group existed did
    config = {k: v for k, v in (run.get("config") or {}).items() if k not in INCIDENTAL and v not in ({}, None)}
    return json.dumps(config, sort_keys=True, default=str)


def suite_experiments() -> set[str]:
    """The suite's experiments: one per ``conf/experiment/<name>.yaml`` (whose ``task_name`` is ``<name>``), smoke
    variants counted as their experiment; without the configs, the experiments the paper tables name."""
    files = sorted((config_root() / "experiment").glob("*.yaml"))
    if files:
        return {f.stem.removesuffix("_smoke") for f in files}
    return {name for spec in load_spec() for name in spec.get("experiments") or ()}


def suite_runs(runs) -> tuple[list[dict], list[dict]]:
    """``(runs of the suite's experiments, the others)``: what a user ran by hand (``python train.py``, a task_name
    of their own) is not a result of the suite and stays out of its tables and figures."""
    names = suite_experiments()
    ours = [r for r in runs if experiment_of(r) in names]
    return ours, [r for r in runs if experiment_of(r) not in names]


def _own_runs(spec: dict, runs) -> list[dict]:
    """The runs a table may read: those of its ``experiments`` (and their ``_smoke`` variants') when it names some,
    since ablations share datasets and neurons with Table 1 and an alpha-0.2 ablation run must not land in Table 1's
    f-LIF cell."""
    return [r for r in runs if not spec.get("experiments") or experiment_of(r) in spec["experiments"]]


def table_recipes(spec: dict, runs) -> list[str]:
    """The recipes of the runs that fill a row of ``spec``, the matched one always first (its table is written even
    empty); one table for all of them where the spec compares recipes itself (``all_recipes: true``)."""
    if spec.get("all_recipes"):
        return [DEFAULT_RECIPE]
    # a table naming no experiments reads every run: Table 2's authors-recipe runs must not give Table 1's
    # robustness tables an empty authors copy
    others = {recipe_of(r) for r in _own_runs(spec, runs) if _row_of(spec, r) is not None} - {DEFAULT_RECIPE}
    return [DEFAULT_RECIPE, *sorted(others)]


def welch_p(a: list[float], b: list[float]) -> float | None:
    """Two-sided p-value of Welch's t-test (unequal variances) that ``a`` and ``b`` have the same mean; ``None``
    with fewer than 2 values on a side, ``1.0`` when both are constant and equal."""
    if len(a) < 2 or len(b) < 2:
        return None
    from scipy.stats import ttest_ind

    if statistics.pvariance(a) == statistics.pvariance(b) == 0.0:
        return 1.0 if a[0] == b[0] else 0.0
    with warnings.catch_warnings():  # a constant side (every seed at chance) warns of precision, harmlessly
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(ttest_ind(a, b, equal_var=False).pvalue)


def _stand_in_for_same_computations(spec: dict, rows: list[dict], recipe: str) -> None:
    """Cells that are the same computation as another row's (a row's ``same_as: {row: <key>, columns: [...]}``, e.g.
    fsnn's alpha = 1 LIF and SpikingJelly's on SGCN; in the matched recipe unless ``recipes`` lists others) show that
    row's runs, and ``same_as`` says whether the seeds run in both are identical, value for value (``identical``:
    ``None`` where no seed was run in both)."""
    keys = [c["key"] for c in spec["columns"]]
    by_key = {row.get("key"): row for row in rows}
    for row_spec, row in zip(spec["rows"], rows):
        same = row_spec.get("same_as")
        if not same or recipe not in same.get("recipes", [DEFAULT_RECIPE]):
            continue
        if same["row"] not in by_key:
            raise ValueError(f"{spec['id']}: same_as row {same['row']!r} is not the key of a row")
        other = by_key[same["row"]]
        for column in same["columns"]:
            i = keys.index(column)
            own, theirs = row["cells"][i], other["cells"][i]
            if not theirs["n"]:
                continue
            seeds = sorted(set(own.get("by_seed", {})) & set(theirs.get("by_seed", {})))
            identical = all(own["by_seed"][s] == theirs["by_seed"][s] for s in seeds) if seeds else None
            row["cells"][i] = {
                **theirs,
                "match": own["match"],  # the cell's own setting, its neighbour's runs
                "paper_mean": own["paper_mean"],
                "paper_std": own["paper_std"],
                "diff": None
                if own["paper_mean"] is None or theirs["mean"] is None
                else theirs["mean"] - own["paper_mean"],
                "same_as": {"label": other["label"], "seeds": seeds, "identical": identical},
            }


def _compare_to_reference(rows: list[dict], reference: str) -> None:
    """``diff`` of every judged cell against the same column of the row keyed ``reference`` (instead of a paper
    value), ``moved``: whether the :data:`~fsnn.report.claims.LEVEL` Welch interval of ``diff`` over the two cells'
    seeds excludes 0 (:func:`fsnn.report.claims.welch`, the interval every claim is decided on; never with fewer
    than two seeds on a side), and ``p``: Welch's t-test of the two cells' seeds (:func:`welch_p`)."""
    ref = next((row for row in rows if row.get("key") == reference), None)
    if ref is None:
        raise ValueError(f"reference_row {reference!r} is not the key of a row")
    for row in rows:
        for cell, base in zip(row["cells"], ref["cells"]):
            if row is ref or cell["mean"] is None or base["mean"] is None or not cell["judge"]:
                continue
            cell["diff"] = cell["mean"] - base["mean"]
            interval = welch(cell["values"], base["values"])
            cell["moved"] = interval is not None and not interval[1] <= 0.0 <= interval[2]
            cell["p"] = welch_p(cell["values"], base["values"])


def paper_protocol(spec: dict, row: dict | None = None) -> dict:
    """How the paper trained the runs behind ``spec`` (its row ``row``, where the row says otherwise): ``epochs``
    and ``runs`` per cell (``None``: not stated) and ``source``; ``{}`` for a table that is not in the paper."""
    protocol = dict(spec.get("protocol") or {})
    protocol.update((row or {}).get("protocol") or {})
    return protocol


def _row_of(spec: dict, run: dict) -> dict | None:
    """The first row of ``spec`` whose cells ``run`` may fill (``None``: it fills none)."""
    return next(
        (row for row in spec["rows"] if matches(run, {**(spec.get("match") or {}), **(row.get("match") or {})})), None
    )


def protocol_key(spec: dict, run: dict) -> int | None:
    """``None`` where ``run`` trained for the paper's epochs of its row of ``spec`` (or either number is unknown, or it
    fills no row), else its epochs."""
    row, epochs = _row_of(spec, run), epochs_of(run)
    paper = None if row is None else paper_protocol(spec, row).get("epochs")
    return None if paper is None or epochs is None or epochs == paper else epochs


def table_variants(spec: dict, runs) -> list[tuple[str, int | str | None]]:
    """``(recipe, epochs)`` of every copy of ``spec`` to build (the ``build_table`` arguments), one per recipe of its
    runs (:func:`table_recipes`); where runs at the paper's epochs and at others both exist, one per epoch count:
    ``(recipe, PAPER_EPOCHS)`` and ``(recipe, E)`` for each other ``E``. ``epochs=None``: every run of the recipe."""
    variants: list[tuple[str, int | str | None]] = []
    for recipe in table_recipes(spec, runs):
        keys = {
            protocol_key(spec, r)
            for r in _own_runs(spec, runs)
            if (spec.get("all_recipes") or recipe_of(r) == recipe) and _row_of(spec, r) is not None
        }
        if len(keys) <= 1:
            variants.append((recipe, None))
        else:
            variants += [(recipe, PAPER_EPOCHS)] + [(recipe, e) for e in sorted(k for k in keys if k is not None)]
    return variants


def build_table(
    spec: dict, runs: list[dict], failed: list[dict] = (), recipe: str = DEFAULT_RECIPE, epochs: int | str | None = None
) -> dict:
    """Fill one paper table from the runs of one ``recipe``: per cell mean/std/n over matching runs, the paper's
    value and the difference; ``duplicates``: the runs left out as copies of another (:func:`distinct_runs`),
    ``commits``: the fsnn commits its runs were made from, ``fake``: how many ran on fake data. A table of another recipe than the matched one gets the id ``<id>_<recipe>``.
    ``epochs``: ``None`` takes every run; :data:`PAPER_EPOCHS` only the runs trained for the paper's epochs, a
    number only those trained for that many epochs where the paper's differ (id ``<id>[_<recipe>]_<E>ep``)."""

    def chosen(pool):  # a table comparing recipes itself (all_recipes) takes every recipe
        pool = [r for r in _own_runs(spec, pool) if spec.get("all_recipes") or recipe_of(r) == recipe]
        if epochs is None:
            return pool
        want = None if epochs == PAPER_EPOCHS else epochs
        return [r for r in pool if protocol_key(spec, r) == want]

    runs, failed = chosen(runs), chosen(failed)
    rows = []
    table_source = spec.get("value", "test")
    for row in spec["rows"]:
        cells = []
        for col in spec["columns"]:
            # a column's value/percent wins over its row's, the row's over the table's
            source = col.get("value", row.get("value", table_source))
            percent = col.get("percent", row.get("percent", spec.get("percent", True)))
            scale = col.get("scale", row.get("scale", spec.get("scale", 100.0 if percent else 1.0)))
            match = {**(spec.get("match") or {}), **(row.get("match") or {}), **(col.get("match") or {})}
            paper_mean, paper_std = _paper((row.get("paper") or {}).get(col["key"]))
            cell = {
                "mean": None,
                "std": None,
                "n": 0,
                "paper_mean": paper_mean,
                "paper_std": paper_std,
                "diff": None,
                "failed": 0,
                "mixed": False,
                "runs": [],
                "measured": source is not None,
                "match": match,
                "percent": bool(percent),
                "judge": col.get("judge", True),
                "paper_epochs": paper_protocol(spec, row).get("epochs"),
                "epochs": [],
                "seeds": [],
                "values": [],
                "duplicates": [],
                "commits": [],
                "fake": 0,
            }
            if source is not None:
                pool, failed_pool = [r for r in runs if matches(r, match)], [r for r in failed if matches(r, match)]
                if select := row.get("select"):  # the runs of the value chosen on validation (fsnn.report.selection)
                    selection, pool = select_on_validation(pool, select["key"], _lookup)
                    if selection is not None:
                        cell["selection"] = selection.text(select.get("label", select["key"]), bool(percent))
                        failed_pool = [r for r in failed_pool if _lookup(r, select["key"]) == (True, selection.value)]
                found = [(r, v) for r in pool if (v := _value(r, source)) is not None]
                values, cell["duplicates"] = distinct_runs(found)
                cell["commits"] = sorted({commit_of(r) for r, _ in values})
                cell["fake"] = sum(r.get("fake_data") is True for r, _ in values)  # smoke runs on fsnn-fixtures
                numbers = [v * scale for _, v in values]
                cell["n"] = len(numbers)
                cell["values"] = numbers
                cell["runs"] = [r["_path"] for r, _ in values if "_path" in r]
                cell["epochs"] = sorted({e for r, _ in values if (e := epochs_of(r)) is not None})
                cell["seeds"] = sorted({r["seed"] for r, _ in values if isinstance(r.get("seed"), int)})
                cell["by_seed"] = {r["seed"]: v * scale for r, v in values if isinstance(r.get("seed"), int)}
                cell["failed"] = len(failed_pool)
                cell["epochs_trained"] = sorted(
                    r["epochs"] for r, _ in values if r.get("early_stopping") and isinstance(r.get("epochs"), int)
                )
                cell["mixed"] = len({_fingerprint(r) for r, _ in values}) > 1
                if numbers:
                    cell["mean"] = statistics.fmean(numbers)
                    cell["std"] = statistics.stdev(numbers) if len(numbers) > 1 else None
                    if paper_mean is not None:
                        cell["diff"] = cell["mean"] - paper_mean
            cells.append(cell)
        rows.append({"key": row.get("key"), "label": row["label"], "cells": cells})
    _stand_in_for_same_computations(spec, rows, recipe)
    if spec.get("reference_row"):
        _compare_to_reference(rows, spec["reference_row"])
    suffix = "" if recipe == DEFAULT_RECIPE else f"_{recipe}"
    caption = spec.get("caption", "") + (f" Recipe: {recipe}." if suffix else "")
    if isinstance(epochs, int):
        suffix += f"_{epochs}ep"
        paper = paper_protocol(spec).get("epochs")
        caption += f" Runs trained for {epochs} epochs" + (f" (paper: {paper})." if paper else ".")
    return {
        "id": spec["id"] + suffix,
        "label": spec.get("label"),
        "recipe": recipe,
        "epochs": epochs,
        "in_paper": has_paper_values(spec),
        "recipes": sorted({recipe_of(r) for r in runs}),
        "caption": caption,
        "section": spec.get("section", ""),
        "notes": spec.get("notes"),
        "reference_row": spec.get("reference_row"),
        "columns": [c["label"] for c in spec["columns"]],
        "rows": rows,
    }


def distinct_runs(found: list[tuple[dict, float]]) -> tuple[list[tuple[dict, float]], list[str]]:
    """``(runs, left out)`` of one cell's ``(run, value)`` pairs: a run whose content (:func:`content_key`), or whose
    seed and configuration, another run of the cell already has is one run counted twice (a copied run folder, its
    seed edited or written ``-0``), and is left out, by path (the first by path stays), so that copies cannot raise a
    cell's n."""
    kept, left_out, seen = [], [], set()
    for run, value in sorted(found, key=lambda pair: str(pair[0].get("_path", ""))):
        seed = run.get("seed")
        keys = {("content", content_key(run))}
        if isinstance(seed, int):
            keys.add(("seed", seed, _fingerprint(run)))
        if keys & seen:
            left_out.append(str(run.get("_path", run.get("run", "?"))))
            continue
        seen |= keys
        kept.append((run, value))
    return kept, left_out


def has_paper_values(spec: dict) -> bool:
    """Whether the paper prints any number of ``spec`` (the suite's own studies have none)."""
    return any(value is not None for row in spec["rows"] for value in (row.get("paper") or {}).values())


def make_tables(
    results_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    spec_path: str | Path | None = None,
    echo=print,
) -> tuple[Collection, list[dict]]:
    """Build every table (one per recipe its runs used) from ``results_dir``, write ``<id>.md`` / ``<id>.tex`` (and
    ``all.md``) to ``out_dir``."""
    results_dir = Path(results_dir) if results_dir is not None else results_root()
    out_dir = output_folder(out_dir if out_dir is not None else results_dir / "tables", results_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # corrupt files are listed below instead
        found = scan_runs(results_dir)
    echo(f"runs in {results_dir}: {found.summary()}")
    for path, reason in found.corrupt:
        echo(f"  corrupt, skipped: {path} ({reason})")
    for path, keys in found.impossible:
        echo(f"  impossible metrics, skipped: {path} ({keys})")
    for run in found.failed:
        echo(f"  failed (counted as missing): {run['_path']} ({run.get('error', 'no error recorded')})")
    (complete, ad_hoc), (failed, _) = suite_runs(found.complete), suite_runs(found.failed)
    if ad_hoc:
        echo(
            f"  not of a suite experiment (conf/experiment/), not tabulated: {len(ad_hoc)} run(s) of "
            + ", ".join(sorted({experiment_of(r) or "?" for r in ad_hoc}))
        )
    tables, markdown, decided = [], [], []
    specs = load_spec(spec_path)
    for spec in specs:
        for recipe, epochs in table_variants(spec, complete + failed):
            table = build_table(spec, complete, failed, recipe, epochs)
            if not has_paper_values(spec) and not any(c["n"] or c["failed"] for r in table["rows"] for c in r["cells"]):
                continue  # nothing to show: neither the paper's numbers nor a run
            tables.append(table)
            md = to_markdown(table)
            markdown.append(md)
            write_text_atomic(out_dir / f"{table['id']}.md", md)
            write_text_atomic(out_dir / f"{table['id']}.tex", to_latex(table))
            echo("\n" + md)
            if found_claims := claims(spec, table, specs):
                decided.append(claims_markdown(table, found_claims))
    write_text_atomic(out_dir / "all.md", f"Runs: {found.summary()}\n\n" + "\n".join(markdown))
    written = [t["id"] for t in tables]
    if robustness := robustness_markdown(graph_robustness_claims(graph_records(complete))):
        decided.append(robustness)
    if decided:
        write_text_atomic(out_dir / f"{CLAIMS}.md", "\n".join(decided))
        echo("\n" + "\n".join(decided))
        written.append(CLAIMS)
    remove_stale(out_dir, written, (".md", ".tex"))
    echo(f"wrote {len(tables)} tables (Markdown + LaTeX) to {out_dir}")
    return found, tables


def remove_stale(
    out_dir: str | Path,
    names: list[str],
    suffixes: tuple[str, ...],
    manifest: str = MANIFEST,
    extra: dict | None = None,
) -> list[Path]:
    """Remove from ``out_dir`` the files ``<name><suffix>`` of the names that its ``manifest`` listed last time and
    ``names`` no longer holds, then write ``names`` (and ``extra``) as the new manifest. Only files this function
    recorded are ever removed; an unreadable manifest removes nothing, and a listed name that is not a plain file
    name (a path, ``..``) is ignored: nothing outside ``out_dir`` is removed (:func:`listed_files`). Returns the
    removed paths; :class:`RunFileError` naming a file that cannot be removed."""
    before, _ = listed_files(out_dir, manifest)
    removed = []
    for name in sorted(set(before) - set(names)):
        for suffix in suffixes:
            stale = Path(out_dir) / f"{name}{suffix}"
            if stale.is_file():
                try:
                    stale.unlink()
                except OSError as error:
                    raise RunFileError(f"cannot remove {stale}: {error.strerror or error}") from error
                removed.append(stale)
    write_text_atomic(
        Path(out_dir) / manifest, json.dumps({"written": list(names), **(extra or {})}, indent=2, sort_keys=True) + "\n"
    )
    return removed
