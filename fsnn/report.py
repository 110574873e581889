"""The reproduction report: one self-contained HTML page with every paper table beside ours, the figures, and the
provenance of every run.

``python scripts/report.py [--results DIR] [--out DIR]`` (``make report`` draws the figures first) reads what
:func:`fsnn.tables.scan_runs` reads under ``<results>`` and writes ``<out>/index.html`` (default
``<results>/report``):

* every table of ``paper_tables.yaml``, once per recipe its runs used (:func:`fsnn.tables.table_recipes`), each cell
  ours (mean ± std, n) beside the paper's value and the difference; a cell is highlighted when ours is more than
  two of the paper's standard deviations from the paper's mean, ``|ours - paper| > 2 std_paper`` (only where the
  paper prints a std);
* every PNG under ``<results>/figures``, embedded (base64), so the page needs no other file to render;
* one row per run (complete, failed or unfinished): experiment, recipe, status, metric, command-line overrides,
  source commit, device, wall time, and a relative link to its ``metrics.json``.

CSS is inline and the page runs no script.
"""

from __future__ import annotations

import argparse
import base64
import os
import warnings
from datetime import datetime, timezone
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from fsnn.results import percent, source_commit, write_text_atomic
from fsnn.tables import RESULTS, build_table, experiment_of, load_spec, recipe_of, scan_runs, table_recipes

TEMPLATE = "report.html.j2"  # package data of fsnn
SIGMAS = 2.0  # a cell further than this many paper standard deviations from the paper is highlighted


def off_the_paper(cell: dict) -> bool:
    """Whether a cell's mean is more than :data:`SIGMAS` of the paper's standard deviations from the paper's mean
    (never where either number is missing)."""
    if cell["mean"] is None or cell["paper_mean"] is None or not cell["paper_std"]:
        return False
    return abs(cell["mean"] - cell["paper_mean"]) > SIGMAS * cell["paper_std"]


def _cell(cell: dict) -> dict:
    """What the template shows of a table cell."""
    ours = paper = diff = None
    if cell["measured"] and cell["n"]:
        ours = f"{cell['mean']:.2f}" + (f" ± {cell['std']:.2f}" if cell["std"] is not None else "")
    if cell["paper_mean"] is not None:
        paper = f"{cell['paper_mean']:.2f}" + (f" ± {cell['paper_std']:.2f}" if cell["paper_std"] else "")
    if cell["diff"] is not None:
        diff = f"{cell['diff']:+.2f}"
        if cell["paper_std"]:
            diff += f" ({cell['diff'] / cell['paper_std']:+.1f} σ)"
    return {"ours": ours, "n": cell["n"], "paper": paper, "diff": diff, "off": off_the_paper(cell),
            "failed": cell["failed"], "mixed": cell["mixed"], "measured": cell["measured"]}


def _run_row(run: dict, out_dir: Path) -> dict:
    """Provenance of one run record for the template."""
    metric = run.get("metric", "acc")
    value = run.get(f"test_{metric}")
    versions = run.get("versions") or {}
    path = Path(run["_path"])
    return {
        "experiment": experiment_of(run) or "?", "task": run.get("task", ""), "run": run.get("run") or path.parent.name,
        "recipe": recipe_of(run), "status": run.get("status", "?"), "seed": run.get("seed"),
        "metric": f"{metric} {percent(value)}" if isinstance(value, (int, float)) else "—",
        "overrides": " ".join(run.get("overrides") or []) or "(defaults)",
        "commit": (versions.get("fsnn_commit") or "not recorded")[:12]
                  + ("-dirty" if str(versions.get("fsnn_commit", "")).endswith("-dirty") else ""),
        "device": run.get("device", "?"),
        "wall": f"{run['wall_time_s']:.0f} s" if isinstance(run.get("wall_time_s"), (int, float)) else "—",
        "error": run.get("error"),
        "href": Path(os.path.relpath(path, out_dir)).as_posix(),
    }


def _figures(figures_dir: Path) -> list[dict]:
    """Every PNG under ``figures_dir`` as a data URI (the page stays one file)."""
    if not figures_dir.is_dir():
        return []
    return [{"name": png.stem, "uri": "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()}
            for png in sorted(figures_dir.glob("*.png"))]


def render(results_dir: str | Path = RESULTS, out_dir: str | Path | None = None,
           figures_dir: str | Path | None = None) -> str:
    """The report page of ``results_dir`` as HTML text (links relative to ``out_dir``)."""
    results_dir = Path(results_dir)
    out_dir = Path(out_dir) if out_dir is not None else results_dir / "report"
    figures_dir = Path(figures_dir) if figures_dir is not None else results_dir / "figures"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # corrupt files are listed on the page instead
        found = scan_runs(results_dir)
    tables = []
    for spec in load_spec():
        for recipe in table_recipes(spec, found.complete + found.failed):
            table = build_table(spec, found.complete, found.failed, recipe)
            rows = [{"label": row["label"], "cells": [_cell(c) for c in row["cells"]]} for row in table["rows"]]
            tables.append({**table, "rows": rows, "has_runs": any(c["n"] for r in rows for c in r["cells"])})
    runs = sorted(found.complete + found.failed + found.running,
                  key=lambda r: (experiment_of(r), recipe_of(r), r.get("run") or r["_path"]))
    env = Environment(loader=PackageLoader("fsnn", "."), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    return env.get_template(TEMPLATE).render(
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), commit=source_commit() or "unknown",
        results=str(results_dir), summary=found.summary(), sigmas=SIGMAS, tables=tables,
        figures=_figures(figures_dir), runs=[_run_row(r, out_dir) for r in runs],
        corrupt=found.corrupt, filled=sum(t["has_runs"] for t in tables))


def write_report(results_dir: str | Path = RESULTS, out_dir: str | Path | None = None,
                 figures_dir: str | Path | None = None) -> Path:
    """Write ``<out_dir>/index.html`` (default ``<results_dir>/report``) atomically; returns its path."""
    out_dir = Path(out_dir) if out_dir is not None else Path(results_dir) / "report"
    return write_text_atomic(out_dir / "index.html", render(results_dir, out_dir, figures_dir))


def main(argv: list[str] | None = None) -> int:
    """``python scripts/report.py [--results DIR] [--out DIR] [--figures DIR]``: write the report page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="results folder to scan (default: ./results)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <results>/report)")
    parser.add_argument("--figures", type=Path, default=None, help="figures folder (default: <results>/figures)")
    args = parser.parse_args(argv)
    path = write_report(args.results, args.out, args.figures)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
