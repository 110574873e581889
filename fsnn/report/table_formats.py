"""A built table (:func:`fsnn.report.tables.build_table`) as text: a cell's line (ours, n, the paper's value, the
difference and what the runs pool), and the whole table as Markdown and as LaTeX (booktabs)."""

from __future__ import annotations

import statistics

from fsnn.report.claims import LEVEL
from fsnn.runs.formatting import DASH, format_number


def _provenance_note(cell: dict) -> str:
    """``, 2 commits, 3 copies left out, 4 on fake data``: what a cell's runs pool (:func:`fsnn.report.tables.build_table`), where it is
    not one commit's distinct runs on real data (a run on a fake that ``fsnn-fixtures`` wrote records ``fake_data``)."""
    commits, copies, fake = len(cell.get("commits", ())), len(cell.get("duplicates", ())), cell.get("fake", 0)
    return (
        (f", {commits} commits" if commits > 1 else "")
        + (f", {copies} {'copy' if copies == 1 else 'copies'} left out" if copies else "")
        + (f", {fake} on fake data" if fake else "")
    )


def trained_text(cell: dict) -> str | None:
    """``early stopping: median 412 epochs, 230-905`` for a cell of early-stopped runs, else ``None``."""
    trained = cell.get("epochs_trained")
    if not trained:
        return None
    return f"early stopping: median {statistics.median(trained):g} epochs, {trained[0]}-{trained[-1]}"


def cell_text(cell: dict, pm: str = "±") -> str:
    """``ours (n=k) / paper P / Δ d``; ``—`` where there is no run (or no paper value)."""
    paper = (
        "" if cell["paper_mean"] is None else "paper " + format_number(cell["paper_mean"], std=cell["paper_std"], pm=pm)
    )
    if not cell["measured"]:
        return paper or DASH
    ours = format_number(cell["mean"], std=cell["std"], pm=pm)
    if cell["n"]:
        ours += f" (n={cell['n']}{', mixed configs' if cell['mixed'] else ''}{_provenance_note(cell)})"
    if same := cell.get("same_as"):
        seeds = ("seed " if len(same["seeds"]) == 1 else "seeds ") + ", ".join(str(s) for s in same["seeds"])
        checked = (
            "identity not checked"
            if same["identical"] is None
            else f"identical on {seeds}"
            if same["identical"]
            else f"DIFFERENT on {seeds}"
        )
        ours += f" [the runs of {same['label']}: the same computation, {checked}]"
    for note in (cell.get("selection"), trained_text(cell)):
        if note:
            ours += f" [{note}]"
    if cell["failed"]:
        ours += f" [{cell['failed']} failed]"
    text = f"{ours} / {paper}" if paper else ours
    if cell["diff"] is not None:
        text += f" / Δ {cell['diff']:+.2f}" + (" (moved)" if cell.get("moved") else "")
        if cell.get("p") is not None:
            text += f" p={cell['p']:.2g}"
    return text


def to_markdown(table: dict) -> str:
    """A built table (:func:`fsnn.report.tables.build_table`) as Markdown: caption, paper reference, one row per setting."""

    def esc(text: str) -> str:
        return str(text).replace("|", "\\|")

    if table.get("reference_row"):
        legend = (
            f"Cells: mean ± std (n) / Δ = row - row `{table['reference_row']}`; (moved): the {LEVEL:.0%} Welch "
            "interval of Δ over the seeds excludes 0; p: Welch's t-test over the seeds."
        )
    else:
        legend = "Cells: ours mean ± std (n) / paper / Δ = ours - paper."
    lines = [
        f"### {table['id']} ({table['label']}): {esc(table['caption'])}",
        "",
        f"Paper: {table['section']}. {legend}",
        "",
        "| | " + " | ".join(esc(c) for c in table["columns"]) + " |",
        "|---" * (len(table["columns"]) + 1) + "|",
    ]
    for row in table["rows"]:
        lines.append(f"| {esc(row['label'])} | " + " | ".join(esc(cell_text(c)) for c in row["cells"]) + " |")
    if table.get("notes"):
        lines += ["", esc(table["notes"])]
    return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    out = str(text)
    for char, repl in (
        ("\\", r"\textbackslash "),
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("{", r"\{"),
        ("}", r"\}"),
    ):
        out = out.replace(char, repl)
    return out.replace(DASH, "---").replace("Δ", r"$\Delta$").replace("±", r"$\pm$").replace("α", r"$\alpha$")


def to_latex(table: dict) -> str:
    """A built table (:func:`fsnn.report.tables.build_table`) as a LaTeX ``table`` with booktabs rules."""
    cols = "l" + "c" * len(table["columns"])
    lines = [
        r"\begin{table}[ht]",
        r"\centering",
        r"\small",
        rf"\caption{{{_latex_escape(table['caption'])} (paper: {_latex_escape(table['label'] or '')})}}",
        rf"\label{{repro:{table['id']}}}",
        rf"\begin{{tabular}}{{{cols}}}",
        r"\toprule",
        " & ".join([""] + [_latex_escape(c) for c in table["columns"]]) + r" \\",
        r"\midrule",
    ]
    for row in table["rows"]:
        lines.append(
            " & ".join([_latex_escape(row["label"])] + [_latex_escape(cell_text(c)) for c in row["cells"]]) + r" \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"
