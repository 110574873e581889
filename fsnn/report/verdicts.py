"""What a table's runs say against the paper: each cell compared with the paper's value (or with the table's
reference row) in standard deviations, the rankings of the fractional neuron against the paper's baselines, the
protocol each table ran, and one short verdict per table."""

from __future__ import annotations

import json
from collections import defaultdict

from fsnn.neurons.registry import NEURONS, neuron_label, paper_baselines
from fsnn.report.claims import CONFIRMED, INCONCLUSIVE, LEVEL, NOT_DECIDED, REJECTED, claims, decide, tally
from fsnn.report.collect import (
    DEFAULT_RECIPE,
)
from fsnn.report.table_formats import trained_text
from fsnn.report.tables import has_paper_values, paper_protocol
from fsnn.runs.formatting import format_number

SIGMAS = 2.0  # a cell further than this many standard deviations from the paper is above or below it


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
    return {
        "z": z,
        "sigma": sigma,
        "by": by,
        "direction": "within" if abs(z) <= SIGMAS else ("above" if z > 0 else "below"),
    }


def off_the_paper(cell: dict) -> bool:
    """Whether a cell's mean is more than :data:`SIGMAS` standard deviations from the paper's mean."""
    return compare_cell(cell)["direction"] in ("above", "below")


def _neuron(cell: dict) -> str | None:
    return (cell.get("match") or {}).get("neuron")


def rankings(table: dict, spec: dict) -> list[dict]:
    """The paper's ranking cell by cell: in every setting (cells that differ only in the neuron) where ours and the
    paper have the fractional neuron and at least one baseline, whether the fractional one is above every baseline,
    here (over the baselines we ran) and in the paper (over the same baselines). Here it is decided against our best
    baseline by :func:`fsnn.report.claims.decide` on the direction alone: ``ours`` where the Welch interval of the
    difference lies above 0, ``behind`` where it holds no positive difference, ``tie`` (undecided) otherwise. Only
    percent cells that are compared (accuracy, AUC)."""
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
        name = next(
            (
                n
                for n in NEURONS.names(order="fractional")
                if n in cells and cells[n]["n"] and cells[n]["paper_mean"] is not None
            ),
            None,
        )
        baselines = [
            cells[n] for n in paper_baselines() if n in cells and cells[n]["n"] and cells[n]["paper_mean"] is not None
        ]
        if name is None or not baselines:
            continue
        fractional = cells[name]
        best_cell = max(baselines, key=lambda c: c["mean"])
        best, paper_best = best_cell["mean"], max(c["paper_mean"] for c in baselines)
        decided = decide(fractional["values"], best_cell["values"]).verdict
        out.append(
            {
                "setting": labels[key],
                "neuron": neuron_label(name),
                "ours": decided == CONFIRMED,
                "tie": decided in (INCONCLUSIVE, NOT_DECIDED),
                "behind": decided == REJECTED,
                "paper": fractional["paper_mean"] > paper_best,
                "mean": fractional["mean"],
                "best": best,
                "paper_mean": fractional["paper_mean"],
                "paper_best": paper_best,
            }
        )
    return out


def seed_list(seeds: list[int]) -> str:
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
    ours = [
        (
            f"{'/'.join(map(str, epochs)) or 'unrecorded'} epochs",
            bool(epochs and row_epochs and any(e not in row_epochs for e in epochs)),
        ),
        (
            f"n={n_text} per cell ({seed_list(seeds)})",
            bool(paper.get("runs") and counts and max(counts) < paper["runs"]),
        ),
        _recipe_text(spec, table, bool(paper)),
    ]
    if not paper:
        theirs = "not in the paper"
    else:
        stated = row_epochs or ([paper["epochs"]] if paper.get("epochs") else [])
        theirs = f"{'/'.join(map(str, stated)) if stated else 'unstated'} epochs, " + (
            f"{paper['runs']} runs per cell" if paper.get("runs") else "one value per cell"
        )
    return {
        "ours": ours,
        "ours_text": ", ".join(text for text, _ in ours),
        "paper": theirs,
        "source": paper.get("source"),
        "differs": [text for text, differs in ours if differs],
        "epochs": epochs,
        "paper_epochs": row_epochs or ([paper["epochs"]] if paper.get("epochs") else []),
    }


def moved_count(table: dict) -> str:
    """:func:`moved_rows` in a few words: how many rows moved from the reference row."""
    reference = next(row["label"] for row in table["rows"] if row.get("key") == table["reference_row"])
    compared = [row for row in table["rows"] if any(cell["diff"] is not None for cell in row["cells"])]
    moved = [row for row in compared if any(cell.get("moved") for cell in row["cells"])]
    return (
        f'{len(moved)} of {len(compared)} rows differ from "{reference}" ({LEVEL:.0%} Welch interval excluding 0)'
        if compared
        else f'No row has runs beside "{reference}"'
    )


def moved_rows(table: dict) -> str:
    """For a table that compares its rows with one of them (``reference_row``) instead of the paper: which rows moved
    a column from the reference row, its Welch interval excluding 0 (``moved``, :func:`fsnn.report.tables.build_table`),
    with those cells' Δ, largest first, and the largest shift of the rest."""
    reference = next(row["label"] for row in table["rows"] if row.get("key") == table["reference_row"])
    compared, moved = [], []
    for row in table["rows"]:
        cells = [
            (neuron_label(_neuron(cell)) if _neuron(cell) else column, cell)
            for column, cell in zip(table["columns"], row["cells"])
            if cell["diff"] is not None
        ]
        if not cells:
            continue
        compared.append((row["label"], cells))
        shifts = [(name, cell["diff"]) for name, cell in cells if cell.get("moved")]
        if shifts:
            moved.append((row["label"], shifts))
    if not compared:
        return f'No row has runs beside the row "{reference}" to compare with.'
    moved.sort(key=lambda item: -max(abs(d) for _, d in item[1]))
    head = (
        f'{len(moved)} of {len(compared)} rows differ from the row "{reference}" in a column (the {LEVEL:.0%} '
        "Welch interval of the difference over the seeds excludes 0)"
    )
    if moved:
        head += ": " + "; ".join(
            f"{label} ({', '.join(f'{name} {d:+.2f}' for name, d in shifts)})" for label, shifts in moved
        )
    rest = [(label, name, cell["diff"]) for label, cells in compared for name, cell in cells if not cell.get("moved")]
    if rest:
        label, name, diff = max(rest, key=lambda item: abs(item[2]))
        head += (
            f". The {'others' if moved else 'rows'} are not resolved from it (largest shift: {label} / {name} "
            f"{diff:+.2f})"
        )
    return head + "."


def claims_sentence(found: list[dict]) -> str | None:
    """What the runs decide of the paper's claimed gaps (:func:`fsnn.report.claims.claims`), in one sentence;
    ``None`` where no claim has a size."""
    sized = tally(found, "size")
    if not sum(sized.values()):
        return None
    return (
        f"The paper's claimed gaps ({found[0]['fractional']} - baseline): {sized[REJECTED]} of "
        f"{sum(sized.values())} rejected, {sized[CONFIRMED]} confirmed, {sized[INCONCLUSIVE]} inconclusive"
        + (f", {sized[NOT_DECIDED]} not decided" if sized[NOT_DECIDED] else "")
        + f" ({LEVEL:.0%} Welch intervals over the seeds)."
    )


def verdict(spec: dict, table: dict, specs: list[dict] = ()) -> dict:
    """The table's verdict from its runs: ``{"word", "kind", "sentence"}``. ``kind`` is ``reproduces``, ``partly``,
    ``not`` (does not reproduce), ``setting`` (a table of hyperparameters: the word says whether the runs used the
    paper's), ``measured`` (not in the paper) or ``none`` (no runs).

    A table reproduces when every compared cell is within :data:`SIGMAS` sigma of the paper and, where the paper
    ranks its fractional neuron against baselines, our ranking agrees in every setting; it does not when our
    ranking disagrees in every such setting, or, without rankings, when no compared cell is within; else partly."""
    cells = [
        (row["label"], column, cell) for row in table["rows"] for column, cell in zip(table["columns"], row["cells"])
    ]
    measured = [(r, c, cell) for r, c, cell in cells if cell["n"]]
    proto = protocols(spec, table)
    if not measured:
        return {"word": "not run here", "kind": "none", "sentence": "No run.", "short": "No run.", "protocol": proto}
    epochs_note = ""
    if proto["ours"][0][1]:
        epochs_note = (
            f"at {'/'.join(map(str, proto['epochs']))} of the paper's "
            f"{'/'.join(map(str, proto['paper_epochs']))} epochs, "
        )
    tail = f" Ours: {proto['ours_text']}; paper: {proto['paper']}."
    if spec.get("kind") == "setting":
        same = all(
            compare_cell(cell)["direction"] == "within" for _, _, cell in measured if cell["paper_mean"] is not None
        )
        values = "; ".join(
            f"{r} / {c} {cell['mean']:g} (paper {format_number(cell['paper_mean'], 1)})" for r, c, cell in measured
        )
        short = (
            f"The runs use the paper's {spec.get('printed_as', 'values')}."
            if same
            else f"The runs' {spec.get('printed_as', 'values')} is not the paper's in "
            f"{sum(compare_cell(c)['direction'] != 'within' for *_, c in measured)} of {len(measured)} cells."
        )
        return {
            "word": "the paper's setting" if same else "differs from the paper",
            "kind": "setting",
            "sentence": f"The runs use {values}.",
            "short": short,
            "protocol": proto,
        }
    if not has_paper_values(spec):
        text = f"{len(measured)} cells measured; the paper has no such experiment."
        short = text
        if table.get("reference_row"):
            short = moved_count(table) + f" ({len(measured)} cells; not in the paper)."
            text = moved_rows(table) + " " + text
        if decided := claims_sentence(claims(spec, table, specs)):
            short, text = f"{short} {decided}", f"{decided} {text}"
        return {"word": "measured here", "kind": "measured", "protocol": proto, "sentence": text + tail, "short": short}
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
    word = {
        "reproduces": "reproduces",
        "partly": "partly reproduces",
        "not": "does not reproduce",
        "measured": "measured, not compared",
    }[kind]
    sentences, short = [], []
    if ranks:
        shown = "; ".join(
            f"{k['setting']} {format_number(k['mean'])} vs {format_number(k['best'])} (paper {format_number(k['paper_mean'])} vs "
            f"{format_number(k['paper_best'])})"
            for k in ranks[:4]
        )
        wins, paper_wins = sum(k["ours"] for k in ranks), sum(k["paper"] for k in ranks)
        ties, behind = sum(k["tie"] for k in ranks), sum(k["behind"] for k in ranks)
        undecided = f" ({ties} undecided, {behind} behind)" if ties or behind else ""
        sentences.append(
            f"{epochs_note}{ranks[0]['neuron']} beats the best baseline (the {LEVEL:.0%} Welch interval "
            f"of the difference above 0) in {wins} of {len(ranks)} settings here{undecided}, in "
            f"{paper_wins} of {len(ranks)} in the paper: {shown}{'; …' if len(ranks) > 4 else ''}."
        )
        short.append(
            f"{ranks[0]['neuron']} ahead of the best baseline in {wins} of {len(ranks)} settings"
            f" ({f'{ties} undecided; ' if ties else ''}paper: {paper_wins} of {len(ranks)})"
        )
        epochs_note = ""
    found = claims(spec, table, specs)
    if decided := claims_sentence(found):
        sized = tally(found, "size")
        sentences.append(decided)
        short.append(
            f"the paper's claimed gaps: {sized[REJECTED]} of {sum(sized.values())} rejected, "
            f"{sized[CONFIRMED]} confirmed"
        )
    if compared:
        r, c, cell, v = max(compared, key=lambda item: abs(item[3]["z"]))
        sentences.append(
            f"{epochs_note}{count['within']} of {len(compared)} compared cells within {SIGMAS:g}σ of the "
            f"paper, {count['above']} above, {count['below']} below (largest gap: {r} / {c} "
            f"{format_number(cell['mean'])} vs {format_number(cell['paper_mean'])}, {v['z']:+.1f}σ)."
        )
        short.append(f"{count['within']} of {len(compared)} cells within {SIGMAS:g}σ of the paper")
    measured_cells = sum(1 for *_, cell in papered if cell["n"])
    counts_papered = (measured_cells, len(papered))
    sentences.append(f"{measured_cells} of {len(papered)} paper cells measured.")
    short.append(
        f"{measured_cells} of {len(papered)} cells measured"
        + (
            f" at {'/'.join(map(str, proto['epochs']))} of {'/'.join(map(str, proto['paper_epochs']))} epochs"
            if proto["ours"][0][1]
            else ""
        )
    )
    text = " ".join(t if t.startswith("f-") else t[0].upper() + t[1:] for t in sentences)  # f-LIF keeps its f
    short_text = "; ".join(short)
    return {
        "word": word,
        "kind": kind,
        "sentence": text + tail,
        "protocol": proto,
        "papered": counts_papered,
        "short": (short_text if short_text.startswith("f-") else short_text[0].upper() + short_text[1:]) + ".",
    }


def shown_cell(cell: dict, mixed_epochs: bool = False, reference: str | None = None) -> dict:
    """What the template shows of a table cell (its epochs where the table's cells differ in them; Δ against the row
    ``reference`` in a table that compares its rows with one of them)."""
    versus = compare_cell(cell)
    ours = None
    if cell["measured"] and cell["n"]:
        ours = format_number(cell["mean"], std=cell["std"])
    paper = None
    if cell["paper_mean"] is not None:
        paper = format_number(cell["paper_mean"], std=cell["paper_std"] or None)
    delta = None
    if cell["diff"] is not None and reference is not None:
        delta = f"{cell['diff']:+.2f} vs {reference}" + (", moved" if cell.get("moved") else "")
    elif cell["diff"] is not None:
        delta = f"{cell['diff']:+.2f}" + (
            f" ({versus['z']:+.1f}σ{'' if versus['by'] == 'paper' else ' ours'})" if versus["sigma"] else ""
        )
    epochs = "/".join(map(str, cell["epochs"]))
    same = None
    if cell.get("same_as"):
        checked = cell["same_as"]
        seeds = ", ".join(map(str, checked["seeds"]))
        same = f"the runs of {checked['label']}, the same computation" + (
            ""
            if checked["identical"] is None
            else f" ({'identical' if checked['identical'] else 'DIFFERENT'} on seed{'s' * (len(checked['seeds']) > 1)}"
            f" {seeds})"
        )
    return {
        "ours": ours,
        "n": cell["n"],
        "paper": paper,
        "delta": delta,
        "direction": versus["direction"],
        "failed": cell["failed"],
        "mixed": cell["mixed"],
        "commits": len(cell.get("commits", ())),
        "copies": len(cell.get("duplicates", ())),
        "moved": bool(cell.get("moved")),
        "epochs": epochs if mixed_epochs and cell["epochs"] else None,
        "same": same,
        "selection": cell.get("selection"),
        "trained": trained_text(cell),
    }


def shown_table(table: dict) -> dict:
    """The rows and columns of ``table`` that hold a run, the labels of those left out, and the label of the row its
    cells are compared with (``reference``, ``None`` where they are compared with the paper)."""
    columns = [
        i
        for i in range(len(table["columns"]))
        if any(r["cells"][i]["n"] or r["cells"][i]["failed"] for r in table["rows"])
    ]
    rows = [r for r in table["rows"] if any(r["cells"][i]["n"] or r["cells"][i]["failed"] for i in columns)]
    mixed = len({e for r in rows for i in columns for e in r["cells"][i]["epochs"]}) > 1
    reference = table.get("reference_row")
    return {
        "columns": [table["columns"][i] for i in columns],
        "rows": [
            {"label": r["label"], "cells": [shown_cell(r["cells"][i], mixed, reference) for i in columns]} for r in rows
        ],
        "hidden_columns": [c for i, c in enumerate(table["columns"]) if i not in columns],
        "hidden_rows": [r["label"] for r in table["rows"] if r not in rows],
        "reference": next((r["label"] for r in table["rows"] if reference and r.get("key") == reference), None),
    }
