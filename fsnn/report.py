"""The reproduction report: one self-contained HTML page that says, table by table, what reproduces.

``python scripts/report.py [--results DIR] [--out DIR]`` (``make report`` rebuilds the tables and figures first)
reads the runs of the suite's experiments under ``<results>`` (:func:`fsnn.tables.suite_runs`; runs made by hand are
only listed) and writes ``<out>/index.html`` (default ``<results>/report``):

* first, on one screen: every table of the paper in one row (:func:`coverage`): answered, partly or not run, what
  its runs found in a sentence, and its columns as measured or not run with the estimated cost;
* a verdict per table with runs, computed from them (:func:`verdict`): *reproduces*, *partly*, *does not reproduce*
  (or, for a table of settings, whether the runs used the paper's), in a short sentence, with the numbers (ours
  against the paper's, n) folded below it, and both protocols (epochs, runs, recipe); in a list and above the table;
* each such table with only its measured rows and columns; a cell is coloured by where ours lies against the paper
  (:func:`compare_cell`): within two standard deviations (neutral), above, below; sigma is the paper's std where it
  prints one, else the std of our runs;
* the figures that ``make figures`` drew (``figures.json``), embedded with their captions;
* the tables nobody ran here, in one short list: the data each needs and where to get it (the dataset loader's own
  words), the command, and an estimate of the GPU-hours from the per-step costs measured in ``results/bench``
  (:func:`estimate`);
* one provenance line per experiment (runs, seeds, epochs, commit, hardware, wall time), every run in a
  ``<details>`` with its overrides (machine paths made relative) and a link to its ``metrics.json``.

CSS is inline, the page runs no script and holds no timestamp: the same runs give the same page.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import math
import os
import re
import statistics
import tempfile
import warnings
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from fsnn.files import percent, source_commit, write_text_atomic
from fsnn.tables import (CONF, DEFAULT_RECIPE, RESULTS, build_table, epochs_of, experiment_of, has_paper_values,
                         load_spec, paper_protocol, read_record, recipe_of, scan_runs, suite_runs, table_variants)

TEMPLATE = "report.html.j2"  # package data of fsnn
FIGURE_DPI = 150  # fsnn.figures.save writes PNGs at this resolution
SIGMAS = 2.0  # a cell further than this many standard deviations from the paper is above or below it
FRACTIONAL = ("flif", "fif")  # the paper's neurons
BASELINES = ("sj_lif", "snntorch_leaky", "sj_if")  # the integer-order neurons the paper compares them with
# a neuron with no timed train step of its own, timed as the neuron that runs the same kernels
TIMED_AS = {"fif": "flif", "if": "lif", "sj_if": "sj_lif", "sj_plif": "sj_lif"}


# -- cells and verdicts -----------------------------------------------------------------------


def compare_cell(cell: dict) -> dict:
    """Where a cell's mean lies against the paper's: ``{"z", "sigma", "by", "direction"}`` with ``z = (ours - paper)
    / sigma``; sigma is the paper's std where it prints one (``by: "paper"``), else the sample std of our runs
    (``by: "ours"``, n >= 2); ``direction``: ``within`` (``|z| <= SIGMAS``), ``above``, ``below``, or ``None`` where
    nothing can be compared (no run, no paper value, no sigma, or a column marked ``judge: false``)."""
    none = {"z": None, "sigma": None, "by": None, "direction": None}
    if not cell.get("judge", True) or cell["mean"] is None or cell["paper_mean"] is None:
        return none
    sigma, by = (cell["paper_std"], "paper") if cell["paper_std"] else (cell["std"], "ours")
    if not sigma:
        if cell["diff"] is not None and abs(cell["diff"]) < 1e-9:  # equal numbers need no sigma
            return {"z": 0.0, "sigma": None, "by": None, "direction": "within"}
        return none
    z = cell["diff"] / sigma
    return {"z": z, "sigma": sigma, "by": by,
            "direction": "within" if abs(z) <= SIGMAS else ("above" if z > 0 else "below")}


def off_the_paper(cell: dict) -> bool:
    """Whether a cell's mean is more than :data:`SIGMAS` standard deviations from the paper's mean."""
    return compare_cell(cell)["direction"] in ("above", "below")


NEURON_NAMES = {"flif": "f-LIF", "fif": "f-IF", "sj_lif": "LIF (SpikingJelly)", "snntorch_leaky": "LIF (snnTorch)",
                "sj_if": "IF (SpikingJelly)"}


def _neuron(cell: dict) -> str | None:
    return (cell.get("match") or {}).get("neuron")


def rankings(table: dict, spec: dict) -> list[dict]:
    """The paper's claim cell by cell: in every setting (cells that differ only in the neuron) where ours and the
    paper have the fractional neuron and at least one baseline, whether the fractional one is above every baseline,
    here (``ours``, over the baselines we ran) and in the paper (``paper``, over the same baselines). Ours counts as
    above only by more than the seed-to-seed spread (the larger std of the fractional cell and the best baseline's,
    the rule of ``moved`` cells); a smaller difference either way is a ``tie``. Only percent cells that are compared
    (accuracy, AUC)."""
    groups: dict[str, dict[str, dict]] = defaultdict(dict)
    labels: dict[str, str] = {}
    for row_spec, row in zip(spec["rows"], table["rows"]):
        for col_spec, column, cell in zip(spec["columns"], table["columns"], row["cells"]):
            if not cell["percent"] or not cell.get("judge", True) or _neuron(cell) is None:
                continue
            key = json.dumps({k: v for k, v in cell["match"].items() if k != "neuron"}, sort_keys=True, default=str)
            groups[key][_neuron(cell)] = cell
            # the setting is named by the row where the columns are neurons, else by the column and the row's backbone
            if "neuron" in (col_spec.get("match") or {}):
                labels.setdefault(key, row["label"])
            else:
                backbone = (row_spec.get("match") or {}).get("backbone")
                labels.setdefault(key, f"{column}" + (f" / {backbone.upper()}" if backbone else ""))
    out = []
    for key, cells in groups.items():
        name = next((n for n in FRACTIONAL if n in cells and cells[n]["n"] and cells[n]["paper_mean"] is not None), None)
        baselines = [cells[n] for n in BASELINES if n in cells and cells[n]["n"] and cells[n]["paper_mean"] is not None]
        if name is None or not baselines:
            continue
        fractional = cells[name]
        best_cell = max(baselines, key=lambda c: c["mean"])
        best, paper_best = best_cell["mean"], max(c["paper_mean"] for c in baselines)
        spread = max(fractional["std"] or 0.0, best_cell["std"] or 0.0)
        out.append({"setting": labels[key], "neuron": NEURON_NAMES.get(name, name), "ours": fractional["mean"] - best > spread,
                    "tie": abs(fractional["mean"] - best) <= spread,
                    "paper": fractional["paper_mean"] > paper_best, "mean": fractional["mean"], "best": best,
                    "paper_mean": fractional["paper_mean"], "paper_best": paper_best})
    return out


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _seeds(seeds: list[int]) -> str:
    """``0-4`` for a run of consecutive seeds, else ``0, 2, 7``."""
    if not seeds:
        return "seeds not recorded"
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(map(str, seeds))


def _recipe_text(spec: dict, table: dict, in_paper: bool) -> tuple[str, bool]:
    """The recipe part of our protocol, and whether it is not the paper's: a table comparing recipes itself
    (``all_recipes``) names every recipe its rows ran."""
    recipes = table.get("recipes") if spec.get("all_recipes") else None
    if recipes and len(recipes) > 1:
        return f"recipes {' and '.join(recipes)} (by row)", False
    recipe = recipes[0] if recipes else table["recipe"]
    return f"recipe {recipe}", in_paper and recipe != DEFAULT_RECIPE


def protocols(spec: dict, table: dict) -> dict:
    """Ours and the paper's protocol for a built table. ``ours``: ``[(text, differs)]`` for epochs, runs per cell
    and recipe, ``differs`` where it is not the paper's; ``paper``: its text and ``source``."""
    cells = [c for r in table["rows"] for c in r["cells"] if c["n"]]
    epochs = sorted({e for c in cells for e in c["epochs"]})
    counts = sorted({c["n"] for c in cells})
    seeds = sorted({s for c in cells for s in c["seeds"]})
    paper = paper_protocol(spec)
    row_epochs = sorted({c["paper_epochs"] for c in cells if c["paper_epochs"] is not None})
    n_text = "-".join(map(str, [counts[0], counts[-1]] if len(counts) > 1 else counts)) or "0"
    ours = [(f"{'/'.join(map(str, epochs)) or 'unrecorded'} epochs",
             bool(epochs and row_epochs and any(e not in row_epochs for e in epochs))),
            (f"n={n_text} per cell ({_seeds(seeds)})", bool(paper.get("runs") and counts and max(counts) < paper["runs"])),
            _recipe_text(spec, table, bool(paper))]
    if not paper:
        theirs = "not in the paper"
    else:
        stated = row_epochs or ([paper["epochs"]] if paper.get("epochs") else [])
        theirs = (f"{'/'.join(map(str, stated)) if stated else 'unstated'} epochs, "
                  + (f"{paper['runs']} runs per cell" if paper.get("runs") else "one value per cell"))
    return {"ours": ours, "ours_text": ", ".join(text for text, _ in ours), "paper": theirs,
            "source": paper.get("source"), "differs": [text for text, differs in ours if differs], "epochs": epochs,
            "paper_epochs": row_epochs or ([paper["epochs"]] if paper.get("epochs") else [])}


def moved_count(table: dict) -> str:
    """:func:`moved_rows` in a few words: how many rows moved from the reference row."""
    reference = next(row["label"] for row in table["rows"] if row.get("key") == table["reference_row"])
    compared = [row for row in table["rows"] if any(cell["diff"] is not None for cell in row["cells"])]
    moved = [row for row in compared if any(cell.get("moved") for cell in row["cells"])]
    return (f"{len(moved)} of {len(compared)} rows differ from \"{reference}\" by more than the seed spread"
            if compared else f"No row has runs beside \"{reference}\"")


def moved_rows(table: dict) -> str:
    """For a table that compares its rows with one of them (``reference_row``) instead of the paper: which rows moved
    a column from the reference row by more than the seed-to-seed spread (``moved``, :func:`fsnn.tables.build_table`),
    with those cells' Δ, largest first, and the largest shift of the rest."""
    reference = next(row["label"] for row in table["rows"] if row.get("key") == table["reference_row"])
    compared, moved = [], []
    for row in table["rows"]:
        cells = [(NEURON_NAMES.get(_neuron(cell), column), cell) for column, cell in zip(table["columns"], row["cells"])
                 if cell["diff"] is not None]
        if not cells:
            continue
        compared.append((row["label"], cells))
        shifts = [(name, cell["diff"]) for name, cell in cells if cell.get("moved")]
        if shifts:
            moved.append((row["label"], shifts))
    if not compared:
        return f"No row has runs beside the row \"{reference}\" to compare with."
    moved.sort(key=lambda item: -max(abs(d) for _, d in item[1]))
    head = (f"{len(moved)} of {len(compared)} rows differ from the row \"{reference}\" by more than the seed-to-seed "
            "spread (the larger std of the two cells) in a column")
    if moved:
        head += ": " + "; ".join(f"{label} ({', '.join(f'{name} {d:+.2f}' for name, d in shifts)})"
                                 for label, shifts in moved)
    rest = [(label, name, cell["diff"]) for label, cells in compared for name, cell in cells if not cell.get("moved")]
    if rest:
        label, name, diff = max(rest, key=lambda item: abs(item[2]))
        head += f". The {'others' if moved else 'rows'} stay within it (largest shift: {label} / {name} {diff:+.2f})"
    return head + "."


def verdict(spec: dict, table: dict) -> dict:
    """The table's verdict from its runs: ``{"word", "kind", "sentence"}``. ``kind`` is ``reproduces``, ``partly``,
    ``not`` (does not reproduce), ``setting`` (a table of hyperparameters: the word says whether the runs used the
    paper's), ``measured`` (not in the paper) or ``none`` (no runs).

    A table reproduces when every compared cell is within :data:`SIGMAS` sigma of the paper and, where the paper
    ranks its fractional neuron against baselines, our ranking agrees in every setting; it does not when our
    ranking disagrees in every such setting, or, without rankings, when no compared cell is within; else partly."""
    cells = [(row["label"], column, cell) for row in table["rows"] for column, cell in zip(table["columns"], row["cells"])]
    measured = [(r, c, cell) for r, c, cell in cells if cell["n"]]
    proto = protocols(spec, table)
    if not measured:
        return {"word": "not run here", "kind": "none", "sentence": "No run.", "short": "No run.", "protocol": proto}
    epochs_note = ""
    if proto["ours"][0][1]:
        epochs_note = (f"at {'/'.join(map(str, proto['epochs']))} of the paper's "
                       f"{'/'.join(map(str, proto['paper_epochs']))} epochs, ")
    tail = f" Ours: {proto['ours_text']}; paper: {proto['paper']}."
    if spec.get("kind") == "setting":
        same = all(compare_cell(cell)["direction"] == "within" for _, _, cell in measured if cell["paper_mean"] is not None)
        values = "; ".join(f"{r} / {c} {cell['mean']:g} (paper {_num(cell['paper_mean'], 1)})" for r, c, cell in measured)
        short = (f"The runs use the paper's {spec.get('printed_as', 'values')}." if same else
                 f"The runs' {spec.get('printed_as', 'values')} is not the paper's in "
                 f"{sum(compare_cell(c)['direction'] != 'within' for *_, c in measured)} of {len(measured)} cells.")
        return {"word": "the paper's setting" if same else "differs from the paper", "kind": "setting",
                "sentence": f"The runs use {values}.", "short": short, "protocol": proto}
    if not has_paper_values(spec):
        text = f"{len(measured)} cells measured; the paper has no such experiment."
        short = text
        if table.get("reference_row"):
            short = moved_count(table) + f" ({len(measured)} cells; not in the paper)."
            text = moved_rows(table) + " " + text
        return {"word": "measured here", "kind": "measured", "protocol": proto, "sentence": text + tail,
                "short": short}
    papered = [(r, c, cell) for r, c, cell in cells if cell["paper_mean"] is not None and cell.get("judge", True)]
    compared = [(r, c, cell, compare_cell(cell)) for r, c, cell in papered if compare_cell(cell)["direction"]]
    count = {d: sum(1 for *_, v in compared if v["direction"] == d) for d in ("within", "above", "below")}
    ranks = rankings(table, spec)
    agree = sum(1 for k in ranks if k["ours"] == k["paper"])
    if ranks and agree == 0:
        kind = "not"
    elif compared and count["within"] == len(compared) and agree == len(ranks):
        kind = "reproduces"
    elif not ranks and compared and count["within"] == 0:
        kind = "not"
    elif not compared and not ranks:
        kind = "measured"
    else:
        kind = "partly"
    word = {"reproduces": "reproduces", "partly": "partly reproduces", "not": "does not reproduce",
            "measured": "measured, not compared"}[kind]
    sentences, short = [], []
    if ranks:
        shown = "; ".join(f"{k['setting']} {_num(k['mean'])} vs {_num(k['best'])} (paper {_num(k['paper_mean'])} vs "
                          f"{_num(k['paper_best'])})" for k in ranks[:4])
        wins, paper_wins = sum(k["ours"] for k in ranks), sum(k["paper"] for k in ranks)
        ties = sum(k["tie"] for k in ranks)
        tied = f" ({ties} within the seed spread)" if ties else ""
        sentences.append(f"{epochs_note}{ranks[0]['neuron']} beats the best baseline by more than the seed spread in "
                         f"{wins} of {len(ranks)} settings here{tied}, in {paper_wins} of {len(ranks)} in the paper: "
                         f"{shown}"
                         f"{'; …' if len(ranks) > 4 else ''}.")
        short.append(f"{ranks[0]['neuron']} ahead of the best baseline in {wins} of {len(ranks)} settings"
                     f" ({f'{ties} tie{chr(115) * (ties != 1)}; ' if ties else ''}paper: {paper_wins} of {len(ranks)})")
        epochs_note = ""
    if compared:
        r, c, cell, v = max(compared, key=lambda item: abs(item[3]["z"]))
        sentences.append(f"{epochs_note}{count['within']} of {len(compared)} compared cells within {SIGMAS:g}σ of the "
                         f"paper, {count['above']} above, {count['below']} below (largest gap: {r} / {c} "
                         f"{_num(cell['mean'])} vs {_num(cell['paper_mean'])}, {v['z']:+.1f}σ).")
        short.append(f"{count['within']} of {len(compared)} cells within {SIGMAS:g}σ of the paper")
    measured_cells = sum(1 for *_, cell in papered if cell["n"])
    counts_papered = (measured_cells, len(papered))
    sentences.append(f"{measured_cells} of {len(papered)} paper cells measured.")
    short.append(f"{measured_cells} of {len(papered)} cells measured"
                 + (f" at {'/'.join(map(str, proto['epochs']))} of {'/'.join(map(str, proto['paper_epochs']))} epochs"
                    if proto["ours"][0][1] else ""))
    text = " ".join(t if t.startswith("f-") else t[0].upper() + t[1:] for t in sentences)  # f-LIF keeps its f
    short_text = "; ".join(short)
    return {"word": word, "kind": kind, "sentence": text + tail, "protocol": proto, "papered": counts_papered,
            "short": (short_text if short_text.startswith("f-") else short_text[0].upper() + short_text[1:]) + "."}


def _cell(cell: dict, mixed_epochs: bool = False, reference: str | None = None) -> dict:
    """What the template shows of a table cell (its epochs where the table's cells differ in them; Δ against the row
    ``reference`` in a table that compares its rows with one of them)."""
    versus = compare_cell(cell)
    ours = None
    if cell["measured"] and cell["n"]:
        ours = _num(cell["mean"]) + (f" ± {_num(cell['std'])}" if cell["std"] is not None else "")
    paper = None
    if cell["paper_mean"] is not None:
        paper = _num(cell["paper_mean"]) + (f" ± {_num(cell['paper_std'])}" if cell["paper_std"] else "")
    delta = None
    if cell["diff"] is not None and reference is not None:
        delta = f"{cell['diff']:+.2f} vs {reference}" + (", moved" if cell.get("moved") else "")
    elif cell["diff"] is not None:
        delta = f"{cell['diff']:+.2f}" + (f" ({versus['z']:+.1f}σ{'' if versus['by'] == 'paper' else ' ours'})"
                                          if versus["sigma"] else "")
    epochs = "/".join(map(str, cell["epochs"]))
    same = None
    if cell.get("same_as"):
        checked = cell["same_as"]
        seeds = ", ".join(map(str, checked["seeds"]))
        same = (f"the runs of {checked['label']}, the same computation"
                + ("" if checked["identical"] is None else
                   f" ({'identical' if checked['identical'] else 'DIFFERENT'} on seed{'s' * (len(checked['seeds']) > 1)}"
                   f" {seeds})"))
    return {"ours": ours, "n": cell["n"], "paper": paper, "delta": delta, "direction": versus["direction"],
            "failed": cell["failed"], "mixed": cell["mixed"], "moved": bool(cell.get("moved")),
            "epochs": epochs if mixed_epochs and cell["epochs"] else None, "same": same}


def graph_run_minutes(name: str, bench_dir: str | Path = RESULTS / "bench",
                      experiment: str = "table2_node_classification") -> dict | None:
    """Minutes of one run of ``experiment`` (one CPU core) on the graph ``name``: the whole run that
    ``scripts/bench_graph.py runs --experiment <experiment>`` measured on it (the "after" rows of a benchmark file of
    ``bench_dir`` whose setting names that experiment), else the largest graph it measured scaled by the number of
    nodes: ``{"minutes", "basis", "basis_minutes", "backbone", "neuron"}`` (the slowest of the basis' rows);
    ``None`` without either number."""
    from fsnn.data.registry import dataset_info

    rows = []
    for path in sorted(Path(bench_dir).glob("*.json")):
        try:
            record = read_record(path)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if record.get("benchmark") == "graph_runs" and (record.get("setting") or {}).get("experiment") == experiment:
            rows += [r for r in record.get("runs", []) if r.get("version") == "after" and "failed" not in r]
    nodes = dataset_info(name).num_nodes
    measured = [(dataset_info(r["dataset"]).num_nodes, r) for r in rows]
    measured = [(n, r) for n, r in measured if n]
    if not nodes or not measured:
        return None
    own = [item for item in measured if item[1]["dataset"] == name]
    basis_nodes, basis = max(own or measured, key=lambda item: (item[0], item[1]["whole_run_s"]))
    return {"minutes": basis["whole_run_s"] / 60 * nodes / basis_nodes, "basis": basis["dataset"],
            "basis_minutes": basis["whole_run_s"] / 60, "backbone": basis.get("backbone", "?"),
            "neuron": basis.get("neuron", "?")}


def not_run_columns(spec: dict, hidden: list[str], bench_dir: str | Path) -> list[dict]:
    """For a table whose columns are graphs (Table 2), each column nobody ran here: its dataset and where to get it,
    the command that fills it, its runs in the experiment's sweep and their CPU time (:func:`graph_run_minutes`)."""
    from fsnn.data.registry import dataset_info

    experiment = (spec.get("experiments") or [None])[0]
    if experiment is None or not (CONF / "experiment" / f"{experiment}.yaml").is_file():
        return []
    grid = sweep(experiment)
    per_dataset = math.prod(len(values) for key, values in grid.items() if key != "dataset")
    out = []
    for column in spec["columns"]:
        name = (column.get("match") or {}).get("dataset")
        if column["label"] not in hidden or name is None or dataset_info(name).kind != "graph":
            continue
        cost = graph_run_minutes(name, bench_dir, experiment)
        out.append({"label": column["label"], "source": dataset_source(name), "runs": per_dataset,
                    "command": f"python train.py experiment={experiment} dataset={name}", "cost": cost,
                    "cpu_hours": cost["minutes"] * per_dataset / 60 if cost else None})
    return out


def shown_table(table: dict) -> dict:
    """The rows and columns of ``table`` that hold a run, the labels of those left out, and the label of the row its
    cells are compared with (``reference``, ``None`` where they are compared with the paper)."""
    columns = [i for i in range(len(table["columns"])) if any(r["cells"][i]["n"] or r["cells"][i]["failed"]
                                                               for r in table["rows"])]
    rows = [r for r in table["rows"] if any(r["cells"][i]["n"] or r["cells"][i]["failed"] for i in columns)]
    mixed = len({e for r in rows for i in columns for e in r["cells"][i]["epochs"]}) > 1
    reference = table.get("reference_row")
    return {"columns": [table["columns"][i] for i in columns],
            "rows": [{"label": r["label"], "cells": [_cell(r["cells"][i], mixed, reference) for i in columns]}
                     for r in rows],
            "hidden_columns": [c for i, c in enumerate(table["columns"]) if i not in columns],
            "hidden_rows": [r["label"] for r in table["rows"] if r not in rows],
            "reference": next((r["label"] for r in table["rows"] if reference and r.get("key") == reference), None)}


# -- what the tables nobody ran need ------------------------------------------------------------


def _get_it(name: str) -> str | None:
    """The first address of the "How to get it" line of the dataset loader's own missing-data message (the loader is
    asked for ``name`` in an empty folder, downloads off), or ``None`` for generated data."""
    from fsnn.data import DatasetMissingError
    from fsnn.data.registry import dataset_info, load_graph, build_dataset

    kind = dataset_info(name).kind
    if kind not in ("event", "static", "graph"):
        return None
    with tempfile.TemporaryDirectory() as empty, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            (load_graph if kind == "graph" else build_dataset)(name, empty, download=False)
        except DatasetMissingError as missing:
            how = next((line for line in str(missing).splitlines() if line.startswith("How to get it:")), "")
            found = re.search(r"https?://[^\s,;)]+", how)
            return found.group(0) if found else None
    return None


@lru_cache(maxsize=None)
def dataset_source(name: str) -> dict:
    """``{"name", "library", "url"}`` of a registered dataset: what reads it and where to get it."""
    from fsnn.data.registry import dataset_info

    info = dataset_info(name)
    return {"name": info.name, "library": info.library.split(".")[0], "url": _get_it(info.name)}


def sweep(experiment: str) -> dict[str, list[str]]:
    """The sweep of ``conf/experiment/<experiment>.yaml``, ``{override key: [values]}`` (Hydra's own parser reads the
    values: ``a,b``, ``range(0,20)``); ``{}`` for an experiment of one run."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    params = OmegaConf.select(OmegaConf.load(CONF / "experiment" / f"{experiment}.yaml"), "hydra.sweeper.params") or {}
    parser = OverridesParser.create()
    out = {}
    for key, value in params.items():
        override = parser.parse_overrides([f"{key}={value}"])[0]
        out[key] = (list(override.sweep_string_iterator()) if override.is_sweep_override()
                    else [override.get_value_element_as_str()])
    return out


@lru_cache(maxsize=None)
def jobs(experiment: str) -> list[dict]:
    """The jobs of an experiment's sweep, one entry per composed setting: its resolved config, the neurons it runs
    and how many jobs it stands for (neuron options x seeds). Neuron options (``neuron``, ``neuron.*``,
    ``neuron_variant``) and seeds do not change dataset, backbone or epochs, so they are counted, not composed."""
    from hydra import compose, initialize_config_dir

    params = sweep(experiment)
    counted = {k: v for k, v in params.items() if k == "seed" or k.lstrip("+").startswith("neuron")}
    composed = {k: v for k, v in params.items() if k not in counted}
    out = []
    with initialize_config_dir(str(CONF), version_base="1.3"):
        for combination in itertools.product(*composed.values()):
            overrides = [f"experiment={experiment}", *(f"{k}={v}" for k, v in zip(composed, combination))]
            cfg = compose("config", overrides=overrides)
            neurons = counted.get("neuron") or [cfg.neuron.name]
            per_neuron = math.prod(len(v) for k, v in counted.items() if k != "neuron")
            out.append({"cfg": cfg, "neurons": neurons, "jobs_per_neuron": per_neuron})
    return out


def step_costs(bench_dir: str | Path = RESULTS / "bench") -> list[dict]:
    """The measured train steps on a GPU under ``bench_dir`` (``scripts/bench_train.py --device cuda``): per file the
    setting (backbone, channels, T, size), the hardware and ``{neuron: (train samples/s, test samples/s)}``."""
    out = []
    for path in sorted(Path(bench_dir).glob("*.json")):
        try:
            record = read_record(path)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        config = record.get("config") or {}
        if record.get("benchmark") != "dvsnet_train_step" or config.get("device") != "cuda":
            continue
        rates = {r["neuron"]: (r["train_samples_per_s"], r["test_samples_per_s"]) for r in record.get("results", [])
                 if r.get("train_samples_per_s") and r.get("test_samples_per_s")}
        out.append({"file": path.name, "backbone": "dvsnet", "channels": config.get("channels"), "T": config["T"],
                    "size": config["size"], "batch": config.get("batch"), "hardware": record.get("hardware", "GPU"),
                    "rates": rates})
    return out


def train_samples(cfg) -> int | None:
    """Training samples per epoch of a composed config (the published split sizes, less validation), ``None`` where
    fsnn does not know them."""
    from fsnn.data import events

    name = cfg.dataset.name
    if name in events.TONIC_SPECS:
        published = events.TONIC_SPECS[name].published
        train = published.get("train") or round(published["all"] * (1 - events.TEST_FRACTION))
        return round(train * (1 - float(cfg.dataset.get("val_fraction") or 0.0)))
    if name == "hardvs":
        return events.HARDVS_SIZES["train"]
    return None


def _step(cfg, costs: list[dict]) -> tuple[dict, float] | None:
    """The measured step nearest to ``cfg`` (same backbone and width; nearest T x H x W) and the factor scaling its
    time per sample to ``cfg``'s T x H x W (convolutions and neurons cost in proportion to both)."""
    channels = cfg.backbone.get("channels")
    size = cfg.dataset.get("size")
    if not isinstance(size, int):
        return None
    candidates = [c for c in costs if c["backbone"] == cfg.backbone.name and c["channels"] == channels]
    if not candidates:
        return None
    work = cfg.dataset.T * size * size
    best = min(candidates, key=lambda c: abs(math.log(work / (c["T"] * c["size"] ** 2))))
    return best, work / (best["T"] * best["size"] ** 2)


def estimate(experiment: str, costs: list[dict]) -> dict:
    """GPU-hours of an experiment's full sweep from measured train steps (:func:`step_costs`): per job, epochs x
    training samples x the measured seconds per training sample of its neuron, scaled by :func:`_step`; validation,
    data loading and the first epoch's frame integration are not counted. Jobs whose backbone, width or data size has
    no measurement are counted in ``unestimated`` with the reason."""
    hours, estimated, total, basis, notes = 0.0, 0, 0, set(), set()
    unestimated: dict[str, int] = defaultdict(int)
    for job in jobs(experiment):
        cfg = job["cfg"]
        count = len(job["neurons"]) * job["jobs_per_neuron"]
        total += count
        step, samples = _step(cfg, costs), train_samples(cfg)
        if step is None:
            unestimated[f"{cfg.backbone.name}" + (f" ({cfg.backbone.channels} channels)" if cfg.backbone.get("channels")
                                                   else "") + ": no measured step"] += count
            continue
        if samples is None:
            unestimated[f"{cfg.dataset.name}: size unknown"] += count
            continue
        bench, scale = step
        for neuron in job["neurons"]:
            timed = neuron if neuron in bench["rates"] else TIMED_AS.get(neuron)
            if timed not in bench["rates"]:
                unestimated[f"{neuron}: no measured step"] += job["jobs_per_neuron"]
                continue
            if timed != neuron:
                notes.add(f"{neuron} timed as {timed}")
            hours += job["jobs_per_neuron"] * cfg.trainer.max_epochs * samples * scale / bench["rates"][timed][0] / 3600
            estimated += job["jobs_per_neuron"]
        basis.add((bench["file"], bench["hardware"], bench["T"], bench["size"], bench["batch"]))
    return {"jobs": total, "estimated": estimated, "hours": hours, "unestimated": dict(sorted(unestimated.items())),
            "basis": sorted(basis), "notes": sorted(notes)}


def spec_values(spec: dict, key: str) -> list[str]:
    """Every value a table's cells match ``key`` against (table, rows and columns), in order."""
    matches = [spec.get("match") or {}] + [part.get("match") or {} for part in spec["rows"] + spec["columns"]]
    return list(dict.fromkeys(m[key] for m in matches if m.get(key) is not None))


def evaluation_estimate(study: str, experiment: str, spec: dict, costs: list[dict]) -> dict | None:
    """Seconds of the test passes of ``evaluate.py robustness=<study>`` on one run of ``experiment`` in the setting
    of ``spec`` (its dataset and backbone) that has a measured step: 1 clean + one per corruption level passes over
    the published test split, at the slowest measured neuron's test speed."""
    from omegaconf import OmegaConf

    from fsnn.data import events

    corruptions = OmegaConf.load(CONF / "robustness" / f"{study}.yaml").corruptions
    passes = 1 + sum(len(c.levels) for c in corruptions.values())
    out = []
    datasets, backbones = spec_values(spec, "dataset"), spec_values(spec, "backbone")
    for job in jobs(experiment):
        cfg = job["cfg"]
        if cfg.dataset.name not in datasets or cfg.backbone.name not in backbones:
            continue
        step = _step(cfg, costs)
        published = events.TONIC_SPECS.get(cfg.dataset.name)
        if step is None or published is None or "test" not in published.published:
            continue
        bench, scale = step
        rate = min(r[1] for r in bench["rates"].values())
        out.append(passes * published.published["test"] * scale / rate)
    return {"passes": passes, "seconds": max(out)} if out else None


def _titles(titles: list[str]) -> str:
    """``Robustness: noise, jitter (appendix)`` for titles that share their part before the colon."""
    heads = {t.split(": ", 1)[0] for t in titles}
    if len(titles) > 1 and len(heads) == 1 and all(": " in t for t in titles):
        return f"{heads.pop()}: " + ", ".join(t.split(": ", 1)[1] for t in titles)
    return "; ".join(titles)


def not_run(specs_without_runs: list[dict], costs: list[dict]) -> list[dict]:
    """One entry per command that would fill the tables nobody ran here (tables one command fills share it): their
    titles, the datasets they need with where to get them, the command and the estimate."""
    entries: dict[str, dict] = {}
    for spec in specs_without_runs:
        experiment = (spec.get("experiments") or [None])[0]
        command = spec.get("command") or f"python train.py experiment={experiment}"
        entry = entries.setdefault(command, {"titles": [], "command": command, "experiment": experiment,
                                             "after": spec.get("after"), "spec": spec, "datasets": [],
                                             "estimate": None, "evaluation": None})
        entry["titles"].append(spec.get("title") or spec["id"])
        entry.setdefault("specs", []).append(spec)
        entry["datasets"] = list(dict.fromkeys(entry["datasets"] + spec_values(spec, "dataset")))
    for entry in entries.values():
        entry["title"] = _titles(entry["titles"])
        entry["datasets"] = [dataset_source(name) for name in entry["datasets"]]
        source = entry["after"] or entry["experiment"]
        if source is None or not (CONF / "experiment" / f"{source}.yaml").is_file():
            continue
        if entry["after"]:
            study = re.search(r"robustness=(\w+)", entry["command"])
            entry["evaluation"] = evaluation_estimate(study.group(1), source, entry["spec"], costs) if study else None
        else:
            entry["estimate"] = estimate(source, costs)
    return list(entries.values())


# -- the first screen: every paper table, answered or not ------------------------------------------------------


def coverage(specs: list[dict], shown: list[dict], todo: list[dict]) -> list[dict]:
    """One row per table of the paper, in the paper's order (a table's variants, e.g. another recipe, folded into
    it; tables one command fills, e.g. the robustness corruptions, as one row): ``status`` *answered* (every paper
    cell measured), *partly* or *not run*, the verdict's short sentence, and the table's columns split into
    ``measured`` and ``not_run`` (``{"labels", "why"}``: its columns, or the datasets of a table with no run, and
    the estimated cost: CPU-hours of the graph runs (:func:`not_run_columns`), GPU-hours of the rest
    (:func:`estimate`))."""
    rows, done = [], set()
    for spec in specs:
        if not has_paper_values(spec) or spec["id"] in done:
            continue
        built = [t for t in shown if t["spec"] == spec["id"]]
        if built:
            main = next((t for t in built if not t["variant"]), built[0])
            measured = [c["label"] for c in spec["columns"] if any(c["label"] in t["columns"] for t in built)]
            missing = [c["label"] for c in spec["columns"] if c["label"] not in measured and c.get("match") is not None]
            costs = {c["label"]: c for c in main["not_run_columns"]}
            hours = sum(costs[label]["cpu_hours"] or 0 for label in missing if label in costs)
            why = f"≈ {hours:.0f} CPU-hours" if hours else ""
            papered = main["verdict"].get("papered")
            rows.append({"id": main["id"], "title": spec.get("title") or spec["id"], "label": spec.get("label"),
                         "status": "answered" if not missing and papered and papered[0] == papered[1] else "partly",
                         "kind": main["verdict"]["kind"], "word": main["verdict"]["word"],
                         "short": main["verdict"]["short"], "measured": measured,
                         "not_run": {"labels": missing, "why": why} if missing else None})
            done.add(spec["id"])
            continue
        entry = next((e for e in todo if spec in e["specs"]), None)
        if entry is None:
            continue
        done.update(s["id"] for s in entry["specs"])
        why = "GPU work, not estimated"
        if entry["estimate"] and entry["estimate"]["estimated"]:
            why = f"GPU work, ≈ {entry['estimate']['hours']:.0f} GPU-hours ({entry['estimate']['jobs']} runs)"
        elif entry["after"]:
            why = f"after the runs of {entry['after']}"
        rows.append({"id": "not-run", "title": entry["title"], "label": spec.get("label"), "status": "not run",
                     "kind": "none", "word": "not run here", "short": "", "measured": [],
                     "not_run": {"labels": [d["name"] for d in entry["datasets"]],
                                 "why": why}})
    return rows


# -- provenance -------------------------------------------------------------------------------


def _root_of(run: dict) -> str | None:
    """The checkout a run was made in (the folder holding its ``paths.results_dir``), where that path is absolute."""
    results = ((run.get("config") or {}).get("paths") or {}).get("results_dir")
    return str(Path(results).parent) if isinstance(results, str) and os.path.isabs(results) else None


def strip_paths(text: str, run: dict) -> str:
    """``text`` without the machine's paths: one under the run's checkout made relative to it, any other absolute
    path cut to ``…/<last part>``."""
    root = _root_of(run)

    def shorten(match: re.Match) -> str:
        path = match.group(0)
        if root and (path == root or path.startswith(root.rstrip("/") + "/")):
            return os.path.relpath(path, root)
        return "…/" + Path(path).name
    return re.sub(r"(?<![\w.])/(?:[^\s/'\",=]+/)*[^\s/'\",=]*", shorten, text)


def _commit(run: dict) -> str:
    """A run's fsnn commit, short (``-dirty``: it ran with uncommitted changes)."""
    commit = str((run.get("versions") or {}).get("fsnn_commit") or "")
    return (commit[:12] + ("-dirty" if commit.endswith("-dirty") else "")) if commit else "not recorded"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else (f"{seconds / 60:.0f} min" if seconds >= 90
                                                               else f"{seconds:.0f} s")


def provenance(runs: list[dict], results_dir: Path, out_dir: Path) -> list[dict]:
    """One entry per experiment: runs by status, seeds, epochs, recipes, commits, hardware, total and median wall
    time, and every run (overrides without machine paths, a relative link to its ``metrics.json``)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for run in runs:
        groups[experiment_of(run)].append(run)
    out = []
    for experiment, members in sorted(groups.items()):
        members.sort(key=lambda r: (recipe_of(r), epochs_of(r) or 0, r.get("run") or r["_path"]))
        walls = [r["wall_time_s"] for r in members if isinstance(r.get("wall_time_s"), (int, float))]
        status = defaultdict(int)
        for r in members:
            status[r.get("status", "unknown")] += 1
        folders = sorted({Path(os.path.relpath(Path(r["_path"]).parent.parent, results_dir)).as_posix()
                          for r in members} - {experiment})
        rows = []
        for r in members:
            metric = r.get("metric", "acc")
            value = r.get(f"test_{metric}")
            rows.append({
                "run": r.get("run") or Path(r["_path"]).parent.name, "seed": r.get("seed"), "status": r.get("status"),
                "recipe": recipe_of(r), "epochs": epochs_of(r),
                "metric": f"{metric} {percent(value)}" if isinstance(value, (int, float)) else "—",
                "overrides": " ".join(strip_paths(o, r) for o in r.get("overrides") or []) or "(defaults)",
                "commit": _commit(r), "device": r.get("device", "?"),
                "wall": _hours(r["wall_time_s"]) if isinstance(r.get("wall_time_s"), (int, float)) else "—",
                "error": strip_paths(str(r["error"]), r) if r.get("error") else None,
                "href": Path(os.path.relpath(r["_path"], out_dir)).as_posix()})
        out.append({
            "experiment": experiment, "folders": folders, "runs": len(members),
            "status": ", ".join(f"{n} {s}" for s, n in sorted(status.items())),
            "seeds": _seeds(sorted({r["seed"] for r in members if isinstance(r.get("seed"), int)})),
            "epochs": "/".join(map(str, sorted({e for r in members if (e := epochs_of(r)) is not None}))) or "—",
            "recipes": ", ".join(sorted({recipe_of(r) for r in members})),
            "commits": ", ".join(sorted({_commit(r) for r in members})),
            "hardware": ", ".join(sorted({str(r.get("device", "?")) for r in members})),
            "wall": (f"{_hours(sum(walls))} in all, median {_hours(statistics.median(walls))} per run" if walls
                     else "not recorded"),
            "rows": rows})
    return out


# -- the page ---------------------------------------------------------------------------------


def _figures(figures_dir: Path) -> list[dict]:
    """The figures ``make figures`` last drew (its ``figures.json``), each PNG as a data URI with its caption."""
    try:
        manifest = read_record(figures_dir / "figures.json")
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    out = []
    for name in manifest.get("written", []):
        png = figures_dir / f"{name}.png"
        if png.is_file():
            data = png.read_bytes()
            # shown at its own size (CSS inches of 96 px), so that 9 pt text reads as 9 pt
            width = round(int.from_bytes(data[16:20], "big") * 96 / FIGURE_DPI)
            out.append({"name": name, "caption": manifest.get("captions", {}).get(name, ""), "width": width,
                        "uri": "data:image/png;base64," + base64.b64encode(data).decode()})
    return out


def _display(path: Path) -> str:
    """A path as the page shows it: relative to the current directory when under it, else its last part."""
    try:
        return Path(os.path.relpath(path.resolve(), Path.cwd().resolve())).as_posix() if path.resolve().is_relative_to(
            Path.cwd().resolve()) else "…/" + path.resolve().name
    except (OSError, ValueError):
        return path.name


def glance(shown: list[dict], idle: int) -> str:
    """The page's first sentence: how many tables hold runs, their verdicts, how many were not run."""
    words = {"reproduces": ("reproduces", "reproduce"), "partly": ("partly reproduces", "partly reproduce"),
             "not": ("does not reproduce", "do not reproduce"),
             "setting": ("uses the paper's setting", "use the paper's settings"),
             "measured": ("is measured only", "are measured only")}
    counts = defaultdict(int)
    for table in shown:
        counts[table["verdict"]["kind"]] += 1
    verdicts = ", ".join(f"{counts[k]} {w[counts[k] != 1]}" for k, w in words.items() if counts[k])
    held = f"{len(shown)} table{'s hold' if len(shown) != 1 else ' holds'} runs of the suite"
    more = "more " if shown else ""
    return f"{held}{f' ({verdicts})' if verdicts else ''}; {idle} {more}{'were' if idle != 1 else 'was'} not run here."


def build(results_dir: str | Path = RESULTS, out_dir: str | Path | None = None,
          figures_dir: str | Path | None = None, bench_dir: str | Path | None = None) -> dict:
    """Everything the page shows, as data (what :func:`render` fills the template with)."""
    results_dir = Path(results_dir)
    out_dir = Path(out_dir) if out_dir is not None else results_dir / "report"
    figures_dir = Path(figures_dir) if figures_dir is not None else results_dir / "figures"
    bench_dir = Path(bench_dir) if bench_dir is not None else results_dir / "bench"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # corrupt files are listed on the page instead
        found = scan_runs(results_dir)
    complete, ad_hoc = suite_runs(found.complete)
    failed, ad_hoc_failed = suite_runs(found.failed)
    running, ad_hoc_running = suite_runs(found.running)
    shown, idle = [], []
    specs = load_spec()
    for spec in specs:
        built = []
        for recipe, epochs in table_variants(spec, complete + failed):
            table = build_table(spec, complete, failed, recipe, epochs)
            if any(c["n"] for r in table["rows"] for c in r["cells"]):
                built.append(table)
        if not built:
            idle.append(spec)
        for table in built:
            content = shown_table(table)
            shown.append({"id": table["id"], "spec": spec["id"], "variant": table["id"] != spec["id"],
                          "title": spec.get("title") or spec["id"], "label": table["label"],
                          "caption": table["caption"], "section": table["section"], "notes": table["notes"],
                          "verdict": verdict(spec, table), **content,
                          "not_run_columns": not_run_columns(spec, content["hidden_columns"], bench_dir)})
    others = ad_hoc + ad_hoc_failed + ad_hoc_running
    costs = step_costs(bench_dir)
    todo = not_run(idle, costs)
    used = {basis[0] for entry in todo if entry["estimate"] for basis in entry["estimate"]["basis"]}
    return {
        "commit": _commit({"versions": {"fsnn_commit": source_commit()}}), "results": _display(results_dir), "sigmas": SIGMAS,
        "summary": found.summary(), "tables": shown, "glance": glance(shown, sum(len(e["titles"]) for e in todo)),
        "coverage": coverage(specs, shown, todo),
        "also": [t["title"].removesuffix(" (not in the paper)") for t in shown
                 if not has_paper_values(next(s for s in specs if s["id"] == t["spec"]))],
        "not_run": todo, "bench": [c for c in costs if c["file"] in used], "figures": _figures(figures_dir),
        "provenance": provenance(complete + failed + running, results_dir, out_dir),
        "ad_hoc": sorted({Path(os.path.relpath(Path(r["_path"]).parent, results_dir)).as_posix() for r in others}),
        "corrupt": [(Path(os.path.relpath(p, results_dir)).as_posix(), reason) for p, reason in found.corrupt],
    }


def render(results_dir: str | Path = RESULTS, out_dir: str | Path | None = None,
           figures_dir: str | Path | None = None, bench_dir: str | Path | None = None) -> str:
    """The report page of ``results_dir`` as HTML text (links relative to ``out_dir``)."""
    env = Environment(loader=PackageLoader("fsnn", "."), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    return env.get_template(TEMPLATE).render(**build(results_dir, out_dir, figures_dir, bench_dir))


def write_report(results_dir: str | Path = RESULTS, out_dir: str | Path | None = None,
                 figures_dir: str | Path | None = None, bench_dir: str | Path | None = None) -> Path:
    """Write ``<out_dir>/index.html`` (default ``<results_dir>/report``) atomically; returns its path."""
    out_dir = Path(out_dir) if out_dir is not None else Path(results_dir) / "report"
    return write_text_atomic(out_dir / "index.html", render(results_dir, out_dir, figures_dir, bench_dir))


def main(argv: list[str] | None = None) -> int:
    """``python scripts/report.py [--results DIR] [--out DIR] [--figures DIR] [--bench DIR]``: write the report page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="results folder to scan (default: ./results)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <results>/report)")
    parser.add_argument("--figures", type=Path, default=None, help="figures folder (default: <results>/figures)")
    parser.add_argument("--bench", type=Path, default=None,
                        help="benchmark tables for the estimates (default: <results>/bench)")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        parser.exit(2, f"fsnn: error: --results {args.results}: not a folder (expected a results folder with "
                       "<experiment>/<run>/metrics.json)\n")
    from fsnn.signals import telling  # a signal: one line saying whether the page was written, exit 128 + n

    with telling("report", [args.out or args.results / "report"], ["index.html"]):
        path = write_report(args.results, args.out, args.figures, args.bench)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
