"""The reproduction report: one self-contained HTML page that says, table by table, what reproduces.

``fsnn-report page [--results DIR] [--out DIR]`` (``make report`` rebuilds the tables and figures first)
reads the runs of the suite's experiments under ``<results>`` (:func:`fsnn.report.tables.suite_runs`; runs made by hand are
only listed) and writes ``<out>/index.html`` (default ``<results>/report``):

* first, on one screen: every table of the paper in one row (:func:`coverage`): answered, partly or not run, what
  its runs found in a sentence, and its columns as measured or not run with the estimated cost;
* a verdict per table with runs, computed from them (:func:`verdict`): *reproduces*, *partly*, *does not reproduce*
  (or, for a table of settings, whether the runs used the paper's), in a short sentence, with the numbers (ours
  against the paper's, n) folded below it, and both protocols (epochs, runs, recipe); in a list and above the table;
* each such table with only its measured rows and columns; a cell is coloured by where ours lies against the paper
  (:func:`compare_cell`): within two standard deviations (neutral), above, below; sigma is the paper's std where it
  prints one, else the std of our runs;
* under each such table, the paper's claims it holds, decided (:mod:`fsnn.report.claims`): per pair of cells that
  differ only in the neuron, the difference with its 95 % Welch interval, the paper's claimed difference, the
  smallest difference the runs could detect, and whether the claimed gap (and the direction alone) is confirmed,
  rejected or inconclusive; the verdict's words on the claims come from the same decisions;
* the figures that ``make figures`` drew (``figures.json``), embedded with their captions;
* the tables nobody ran here, in one short list: the data each needs and where to get it (the dataset loader's own
  words), the command, an estimate of the GPU-hours from the per-step costs measured in ``results/bench``
  (:func:`estimate`) and the data's measured cost: its one-time preparation, its disk and the loader workers that
  keep the GPU busy (``results/bench/data_pipeline.json``, :func:`data_costs`);
* one provenance line per experiment (runs, seeds, epochs, commit, hardware, wall time), every run in a
  ``<details>`` with its overrides (machine paths made relative) and a link to its ``metrics.json``.

CSS is inline, the page runs no script and holds no timestamp: the same runs give the same page.
"""

from __future__ import annotations

import base64
import math
import os
import re
import statistics
import warnings
from collections import defaultdict
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from fsnn.atomic import write_text_atomic
from fsnn.report.claims import COLUMNS, LEGEND, LEVEL, claim_cells, claims
from fsnn.report.collect import (
    epochs_of,
    experiment_of,
    inside,
    printable,
    recipe_of,
    scan_runs,
)
from fsnn.report.estimates import (
    data_costs,
    dataset_source,
    estimate,
    evaluation_estimate,
    graph_run_minutes,
    spec_values,
    step_costs,
    sweep,
)
from fsnn.report.outputs import confined, listed_files, relative_url
from fsnn.report.robustness_claims import (
    LEGEND as ROBUSTNESS_LEGEND,
    graph_records,
    graph_robustness_claims,
    robustness_sections,
)
from fsnn.report.tables import (
    build_table,
    has_paper_values,
    load_spec,
    suite_runs,
    table_variants,
)
from fsnn.report.verdicts import SIGMAS, seed_list, shown_table, verdict
from fsnn.runs.configs import config_root
from fsnn.runs.formatting import format_percent
from fsnn.runs.provenance import source_commit
from fsnn.runs.records import results_root

TEMPLATE = "report.html.j2"  # package data of fsnn
FIGURE_DPI = 150  # fsnn.report.style.save writes PNGs at this resolution


# -- cells and verdicts -----------------------------------------------------------------------


def not_run_columns(spec: dict, hidden: list[str], bench_dir: str | Path) -> list[dict]:
    """For a table whose columns are graphs (Table 2), each column nobody ran here: its dataset and where to get it,
    the command that fills it, its runs in the experiment's sweep and their CPU time (:func:`graph_run_minutes`)."""
    from fsnn.data.registry import dataset_info

    experiment = (spec.get("experiments") or [None])[0]
    if experiment is None or not (config_root() / "experiment" / f"{experiment}.yaml").is_file():
        return []
    grid = sweep(experiment)
    per_dataset = math.prod(len(values) for key, values in grid.items() if key != "dataset")
    out = []
    for column in spec["columns"]:
        name = (column.get("match") or {}).get("dataset")
        if column["label"] not in hidden or name is None or dataset_info(name).kind != "graph":
            continue
        cost = graph_run_minutes(name, bench_dir, experiment)
        out.append(
            {
                "label": column["label"],
                "source": dataset_source(name),
                "runs": per_dataset,
                "command": f"python train.py experiment={experiment} dataset={name}",
                "cost": cost,
                "cpu_hours": cost["minutes"] * per_dataset / 60 if cost else None,
            }
        )
    return out


# -- what the tables nobody ran need ------------------------------------------------------------


def _titles(titles: list[str]) -> str:
    """``Robustness: noise, jitter (appendix)`` for titles that share their part before the colon."""
    heads = {t.split(": ", 1)[0] for t in titles}
    if len(titles) > 1 and len(heads) == 1 and all(": " in t for t in titles):
        return f"{heads.pop()}: " + ", ".join(t.split(": ", 1)[1] for t in titles)
    return "; ".join(titles)


def not_run(specs_without_runs: list[dict], costs: list[dict], data: dict | None = None) -> list[dict]:
    """One entry per command that would fill the tables nobody ran here (tables one command fills share it): their
    titles, the datasets they need with where to get them, the command and the estimate (with ``data``, the data
    side's, :func:`data_costs`)."""
    entries: dict[str, dict] = {}
    for spec in specs_without_runs:
        experiment = (spec.get("experiments") or [None])[0]
        command = spec.get("command") or f"python train.py experiment={experiment}"
        entry = entries.setdefault(
            command,
            {
                "titles": [],
                "command": command,
                "experiment": experiment,
                "after": spec.get("after"),
                "spec": spec,
                "datasets": [],
                "estimate": None,
                "evaluation": None,
            },
        )
        entry["titles"].append(spec.get("title") or spec["id"])
        entry.setdefault("specs", []).append(spec)
        entry["datasets"] = list(dict.fromkeys(entry["datasets"] + spec_values(spec, "dataset")))
    for entry in entries.values():
        entry["title"] = _titles(entry["titles"])
        entry["datasets"] = [dataset_source(name) for name in entry["datasets"]]
        source = entry["after"] or entry["experiment"]
        if source is None or not (config_root() / "experiment" / f"{source}.yaml").is_file():
            continue
        if entry["after"]:
            study = re.search(r"robustness=(\w+)", entry["command"])
            entry["evaluation"] = evaluation_estimate(study.group(1), source, entry["spec"], costs) if study else None
        else:
            entry["estimate"] = estimate(source, costs, data)
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
            rows.append(
                {
                    "id": main["id"],
                    "title": spec.get("title") or spec["id"],
                    "label": spec.get("label"),
                    "status": "answered" if not missing and papered and papered[0] == papered[1] else "partly",
                    "kind": main["verdict"]["kind"],
                    "word": main["verdict"]["word"],
                    "short": main["verdict"]["short"],
                    "measured": measured,
                    "not_run": {"labels": missing, "why": why} if missing else None,
                }
            )
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
        rows.append(
            {
                "id": "not-run",
                "title": entry["title"],
                "label": spec.get("label"),
                "status": "not run",
                "kind": "none",
                "word": "not run here",
                "short": "",
                "measured": [],
                "not_run": {"labels": [d["name"] for d in entry["datasets"]], "why": why},
            }
        )
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
    return (
        f"{seconds / 3600:.1f} h"
        if seconds >= 5400
        else (f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s")
    )


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
        folders = sorted(
            {Path(os.path.relpath(Path(r["_path"]).parent.parent, results_dir)).as_posix() for r in members}
            - {experiment}
        )
        rows = []
        for r in members:
            metric = r.get("metric", "acc")
            value = r.get(f"test_{metric}")
            rows.append(
                {
                    "run": r.get("run") or Path(r["_path"]).parent.name,
                    "seed": r.get("seed"),
                    "status": r.get("status"),
                    "recipe": recipe_of(r),
                    "epochs": epochs_of(r),
                    "metric": f"{metric} {format_percent(value)}" if isinstance(value, (int, float)) else "—",
                    "overrides": " ".join(strip_paths(o, r) for o in r.get("overrides") or []) or "(defaults)",
                    "commit": _commit(r),
                    "device": r.get("device", "?"),
                    "wall": _hours(r["wall_time_s"]) if isinstance(r.get("wall_time_s"), (int, float)) else "—",
                    "error": strip_paths(str(r["error"]), r) if r.get("error") else None,
                    "href": relative_url(os.path.relpath(r["_path"], out_dir)),
                }
            )
        out.append(
            {
                "experiment": experiment,
                "folders": folders,
                "runs": len(members),
                "status": ", ".join(f"{n} {s}" for s, n in sorted(status.items())),
                "seeds": seed_list(sorted({r["seed"] for r in members if isinstance(r.get("seed"), int)})),
                "epochs": "/".join(map(str, sorted({e for r in members if (e := epochs_of(r)) is not None}))) or "—",
                "recipes": ", ".join(sorted({recipe_of(r) for r in members})),
                "commits": ", ".join(sorted({_commit(r) for r in members})),
                "hardware": ", ".join(sorted({str(r.get("device", "?")) for r in members})),
                "wall": (
                    f"{_hours(sum(walls))} in all, median {_hours(statistics.median(walls))} per run"
                    if walls
                    else "not recorded"
                ),
                "rows": rows,
            }
        )
    return out


# -- the page ---------------------------------------------------------------------------------


def _figures(figures_dir: Path) -> list[dict]:
    """The figures ``make figures`` last drew (its ``figures.json``), each PNG as a data URI with its caption: only
    the files of ``figures_dir`` itself (:func:`listed_files`; a PNG that is a link out of it is not read)."""
    names, manifest = listed_files(figures_dir, "figures.json")
    captions = manifest.get("captions") if isinstance(manifest.get("captions"), dict) else {}
    out = []
    for name in names:
        png = figures_dir / f"{name}.png"
        if png.is_file() and inside(png, figures_dir):
            data = png.read_bytes()
            # shown at its own size (CSS inches of 96 px), so that 9 pt text reads as 9 pt
            width = round(int.from_bytes(data[16:20], "big") * 96 / FIGURE_DPI)
            out.append(
                {
                    "name": name,
                    "caption": str(captions.get(name, "")),
                    "width": width,
                    "uri": "data:image/png;base64," + base64.b64encode(data).decode(),
                }
            )
    return out


def _display(path: Path) -> str:
    """A path as the page shows it: relative to the current directory when under it, else its last part."""
    try:
        shown = (
            Path(os.path.relpath(path.resolve(), Path.cwd().resolve())).as_posix()
            if path.resolve().is_relative_to(Path.cwd().resolve())
            else "…/" + path.resolve().name
        )
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a link loop
        shown = path.name
    return printable(shown)


def summary_sentence(shown: list[dict], idle: int) -> str:
    """The page's first sentence: how many tables hold runs, their verdicts, how many were not run."""
    words = {
        "reproduces": ("reproduces", "reproduce"),
        "partly": ("partly reproduces", "partly reproduce"),
        "not": ("does not reproduce", "do not reproduce"),
        "setting": ("uses the paper's setting", "use the paper's settings"),
        "measured": ("is measured only", "are measured only"),
    }
    counts = defaultdict(int)
    for table in shown:
        counts[table["verdict"]["kind"]] += 1
    verdicts = ", ".join(f"{counts[k]} {w[counts[k] != 1]}" for k, w in words.items() if counts[k])
    held = f"{len(shown)} table{'s hold' if len(shown) != 1 else ' holds'} runs of the suite"
    more = "more " if shown else ""
    return f"{held}{f' ({verdicts})' if verdicts else ''}; {idle} {more}{'were' if idle != 1 else 'was'} not run here."


def build(
    results_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    figures_dir: str | Path | None = None,
    bench_dir: str | Path | None = None,
) -> dict:
    """Everything the page shows, as data (what :func:`render` fills the template with)."""
    results_dir = Path(results_dir) if results_dir is not None else results_root()
    out_dir = Path(out_dir) if out_dir is not None else results_dir / "report"
    figures_dir = confined(figures_dir if figures_dir is not None else results_dir / "figures", results_dir)
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
            shown.append(
                {
                    "id": table["id"],
                    "spec": spec["id"],
                    "variant": table["id"] != spec["id"],
                    "title": spec.get("title") or spec["id"],
                    "label": table["label"],
                    "caption": table["caption"],
                    "section": table["section"],
                    "notes": table["notes"],
                    "verdict": verdict(spec, table, specs),
                    **content,
                    "claims": [claim_cells(c) for c in claims(spec, table, specs)],
                    "not_run_columns": not_run_columns(spec, content["hidden_columns"], bench_dir),
                }
            )
    others = ad_hoc + ad_hoc_failed + ad_hoc_running
    costs, data = step_costs(bench_dir), data_costs(bench_dir)
    todo = not_run(idle, costs, data)
    used = {basis[0] for entry in todo if entry["estimate"] for basis in entry["estimate"]["basis"]}
    return {
        "commit": _commit({"versions": {"fsnn_commit": source_commit()}}),
        "results": _display(results_dir),
        "sigmas": SIGMAS,
        "summary": found.summary(),
        "tables": shown,
        "claim_columns": COLUMNS,
        "claims_legend": LEGEND,
        "claims_level": f"{LEVEL:.0%}",
        "robustness_claims": robustness_sections(graph_robustness_claims(graph_records(complete))),
        "robustness_legend": ROBUSTNESS_LEGEND,
        "glance": summary_sentence(shown, sum(len(e["titles"]) for e in todo)),
        "coverage": coverage(specs, shown, todo),
        "also": [
            t["title"].removesuffix(" (not in the paper)")
            for t in shown
            if not has_paper_values(next(s for s in specs if s["id"] == t["spec"]))
        ],
        "not_run": todo,
        "bench": [c for c in costs if c["file"] in used],
        "data_bench": data,
        "figures": _figures(figures_dir),
        "provenance": provenance(complete + failed + running, results_dir, out_dir),
        "ad_hoc": sorted({Path(os.path.relpath(Path(r["_path"]).parent, results_dir)).as_posix() for r in others}),
        "corrupt": [(Path(os.path.relpath(p, results_dir)).as_posix(), reason) for p, reason in found.corrupt],
    }


def render(
    results_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    figures_dir: str | Path | None = None,
    bench_dir: str | Path | None = None,
) -> str:
    """The report page of ``results_dir`` as HTML text (links relative to ``out_dir``)."""
    env = Environment(
        loader=PackageLoader("fsnn.report", "."),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template(TEMPLATE).render(**build(results_dir, out_dir, figures_dir, bench_dir))


def write_report(
    results_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    figures_dir: str | Path | None = None,
    bench_dir: str | Path | None = None,
) -> Path:
    """Write ``<out_dir>/index.html`` (default ``<results_dir>/report``, which must stay in ``results_dir``:
    :func:`confined`) atomically, making the folder only to write the page (a page interrupted while it is built leaves
    no folder behind); returns its path."""
    results_dir = Path(results_dir) if results_dir is not None else results_root()
    out_dir = confined(out_dir if out_dir is not None else results_dir / "report", results_dir)
    return write_text_atomic(out_dir / "index.html", render(results_dir, out_dir, figures_dir, bench_dir))
