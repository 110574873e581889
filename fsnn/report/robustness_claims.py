"""The paper's graph robustness claims decided from the runs.

The paper's two graph studies (appendix "Extended Robustness Experiments", Graph Learning Tasks) test the trained
Table 2 models on a corrupted graph, feature masking on Cora and CiteSeer and edge dropping on Photo and Computers
(:data:`GRAPH_STUDIES`), and claim that f-SNN is better than the first-order baselines at every rate. Per study,
panel (dataset and backbone) and first-order neuron, :func:`graph_robustness_claims` decides with
:func:`fsnn.report.claims.decide` (Welch intervals over the seeds, the test of every other claim):

* at each level, that the fractional neuron's accuracy is above the baseline's (the direction: the paper prints no
  size);
* at every level together: *confirmed* where each level is, *rejected* where any level is, else *inconclusive*;
* the degradation: each run's change from its clean test to the strongest level, the fractional neuron's against
  the baseline's (*confirmed*: it loses less).

:func:`robustness_markdown` writes them as one table per study, :func:`robustness_cells` as the text of its cells.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from fsnn.neurons.registry import NEURONS, is_fractional, neuron_label
from fsnn.report.claims import CONFIRMED, INCONCLUSIVE, LEVEL, METHOD, REJECTED, Decision, decide
from fsnn.report.collect import DEFAULT_RECIPE, dataset_backbone, experiment_of, neuron_name, recipe_of

# The paper's two graph robustness studies: one corruption, the datasets it was run on and what the paper says of it
# (figures fig:robustness_feature_masking and fig:robustness_edge_dropout); conf/robustness/graph_features.yaml and
# graph_edges.yaml.
GRAPH_STUDIES = {
    "feature_masking": {
        "datasets": ("cora", "citeseer"),
        "claim": "f-SNN performs significantly better than the SpikingJelly and snnTorch baselines at every tested "
        "masking rate (Cora and Citeseer)",
    },
    "edge_dropping": {
        "datasets": ("photo", "computers"),
        "claim": "f-SNN performs better than the SpikingJelly and snnTorch baselines at every edge-dropping rate "
        "(Photo and Computers)",
    },
}
GRAPH_BACKBONES = ("sgcn", "drsgnn")
GRAPH_EXPERIMENT = "table2_node_classification"  # the runs whose trained models the studies test


def graph_records(runs: Iterable[dict]) -> list[dict]:
    """The ``robustness.json`` records of the matched-recipe Table 2 runs among ``runs`` (complete run records)."""
    return [
        run["robustness"]
        for run in runs
        if "robustness" in run and recipe_of(run) == DEFAULT_RECIPE and experiment_of(run) == GRAPH_EXPERIMENT
    ]


def panel_label(dataset: str, backbone: str) -> str:
    """``Cora / SGCN``: a panel's name as the figures and tables write it."""
    return f"{'CiteSeer' if dataset == 'citeseer' else dataset.capitalize()} / {backbone.upper()}"


def table_alpha(record: dict, dataset: str, backbone: str) -> float | None:
    """f-LIF's alpha for ``dataset`` and ``backbone`` in the run's ``alpha_per_dataset`` table (tab:alpha_gnn), if
    it has one."""
    return ((record.get("config") or {}).get("alpha_per_dataset") or {}).get(backbone, {}).get(dataset)


def level_values(group: Iterable[dict], corruption: str) -> dict[float, list[float]]:
    """``{level: [metric in %, one per record]}`` of one neuron's records under ``corruption``, level 0 being each
    record's clean test, levels in increasing order; records without that corruption are left out (``{}``: none
    has it)."""
    points: dict[float, list[float]] = defaultdict(list)
    for record in group:
        entry = (record.get("corruptions") or {}).get(corruption)
        if not entry:
            continue
        points[0.0].append(100 * record["clean"])
        for level, value in zip(entry["levels"], entry[record["metric"]]):
            points[float(level)].append(100 * value)
    return dict(sorted(points.items()))


def panel_groups(records: Iterable[dict], corruption: str, dataset: str, backbone: str) -> dict[str, list[dict]]:
    """The records of one panel under ``corruption`` by neuron, fractional neurons first, then by name; a neuron with
    a single run (a same-computation check, see Table 2) is left out: it has no spread to compare."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        if corruption in record.get("corruptions", {}) and dataset_backbone(record) == f"{dataset}_{backbone}":
            groups[neuron_name(record)].append(record)
    ordered = sorted(groups.items(), key=lambda item: (not is_fractional(item[0]), item[0]))
    return {name: group for name, group in ordered if len(group) > 1}


def _every(decisions: list[Decision]) -> str:
    """One verdict for "better at every level" from the levels' own."""
    verdicts = {d.verdict for d in decisions}
    if verdicts == {CONFIRMED}:
        return CONFIRMED
    return REJECTED if REJECTED in verdicts else INCONCLUSIVE


def graph_robustness_claims(records: Iterable[dict]) -> list[dict]:
    """Every decision of the paper's graph robustness claims (see the module's text) that ``records`` (the
    ``robustness.json`` records of :func:`graph_records`) hold, by study, panel and baseline. The fractional side is
    f-LIF's runs; on a panel where tab:alpha_gnn sets alpha to 1.0 and f-LIF has a single run, fsnn's LIF runs
    (the same computation) stand in for it. Each entry: ``study``, ``claim`` (the paper's words), ``panel``,
    ``fractional`` and ``baseline`` (labels), ``levels`` (``[(level, Decision)]`` on the accuracy at each level),
    ``every`` (the verdict at every level together), ``strongest`` (the strongest level) and ``drop``
    (:class:`Decision` on the change from clean to the strongest level, in points)."""
    records = list(records)
    found = []
    for corruption, study in GRAPH_STUDIES.items():
        for dataset in study["datasets"]:
            for backbone in GRAPH_BACKBONES:
                groups = panel_groups(records, corruption, dataset, backbone)
                fractional = next((n for n in NEURONS.names(order="fractional") if n in groups), None)
                if fractional is None and "lif" in groups:
                    alphas = {table_alpha(r, dataset, backbone) for r in groups["lif"]}
                    fractional = "lif" if alphas == {1.0} else None
                if fractional is None:
                    continue
                frac = level_values(groups[fractional], corruption)
                frac_label = neuron_label("flif") + " (fsnn LIF, alpha = 1)" if fractional == "lif" else None
                for name, group in groups.items():
                    if name == fractional or is_fractional(name):
                        continue
                    base = level_values(group, corruption)
                    levels = [lv for lv in frac if lv > 0 and lv in base]
                    if not levels:
                        continue
                    strongest = levels[-1]
                    drops = [[s - c for s, c in zip(v[strongest], v[0.0])] for v in (frac, base)]
                    decisions = [(lv, decide(frac[lv], base[lv])) for lv in levels]
                    found.append(
                        {
                            "study": corruption,
                            "claim": study["claim"],
                            "panel": panel_label(dataset, backbone),
                            "fractional": frac_label or neuron_label(fractional),
                            "baseline": neuron_label(name),
                            "levels": decisions,
                            "every": _every([d for _, d in decisions]),
                            "strongest": strongest,
                            "drop": decide(*drops),
                        }
                    )
    return found


def _decided(decision: Decision) -> str:
    if decision.low is None:
        return f"n = {decision.n_a} / {decision.n_b}: {decision.verdict}"
    return f"{decision.diff:+.2f} [{decision.low:+.2f}, {decision.high:+.2f}] {decision.verdict}"


def robustness_cells(entry: dict) -> dict[str, str]:
    """A decision of :func:`graph_robustness_claims` as the text of its table cells: ``panel``, ``baseline``, ``n``,
    one cell per level (``"0.1"``...: Δ, interval, verdict), ``every``, ``drop`` (the mean changes from clean to the
    strongest level, fractional and baseline) and ``slower`` (Δ of the changes, interval, verdict)."""
    drop = entry["drop"]
    first = entry["levels"][0][1]
    return {
        "panel": entry["panel"],
        "baseline": entry["baseline"],
        "n": f"{first.n_a} / {first.n_b}",
        **{f"{level:g}": _decided(decision) for level, decision in entry["levels"]},
        "every": entry["every"],
        "drop": "—"
        if drop.low is None
        else f"to {entry['strongest']:g}: Δ of the changes {drop.diff:+.2f} [{drop.low:+.2f}, {drop.high:+.2f}]",
        "slower": drop.verdict,
    }


LEGEND = (
    f"Δ = fractional neuron - baseline, test accuracy in percentage points at each corruption level, with its "
    f"{LEVEL:.0%} CI ({METHOD}); the verdict is on the direction the paper claims (confirmed: the CI lies above 0; "
    "rejected: it holds no positive Δ; else inconclusive). Every level: confirmed where each level is confirmed, "
    "rejected where any is rejected. Slower degradation: each run's change from its clean test to the strongest "
    "level, the fractional neuron's against the baseline's (confirmed: it loses less)."
)


def robustness_sections(found: list[dict]) -> list[dict]:
    """The decisions of :func:`graph_robustness_claims` grouped by study, as tables show them: ``study`` (its name in
    words), ``claim`` (the paper's), ``fractional`` (what the fractional side is, per panel), ``levels`` (the study's
    levels as the cells name them) and ``rows`` (:func:`robustness_cells`, a level a panel lacks as ``"—"``)."""
    sections = []
    for corruption in dict.fromkeys(entry["study"] for entry in found):
        entries = [entry for entry in found if entry["study"] == corruption]
        levels = list(dict.fromkeys(f"{lv:g}" for entry in entries for lv, _ in entry["levels"]))
        rows = [{lv: "—" for lv in levels} | robustness_cells(entry) for entry in entries]
        sections.append(
            {
                "study": corruption.replace("_", " "),
                "claim": entries[0]["claim"],
                "fractional": ", ".join(dict.fromkeys(f"{e['panel']}: {e['fractional']}" for e in entries)),
                "levels": levels,
                "rows": rows,
            }
        )
    return sections


def robustness_markdown(found: list[dict]) -> str:
    """The decisions of :func:`graph_robustness_claims` as a Markdown section, one table per study
    (:func:`robustness_sections`)."""
    if not found:
        return ""
    lines = ["### graph robustness: the paper's claims, decided", "", LEGEND, ""]
    for section in robustness_sections(found):
        keys = ["panel", "baseline", "n", *section["levels"], "every", "drop", "slower"]
        headers = ["panel", "vs", "n", *(f"at {lv}" for lv in section["levels"]), "every level", "degradation"]
        lines += [
            f"**{section['study']}**: the paper claims {section['claim']}. Fractional side: {section['fractional']}.",
            "",
            "| " + " | ".join([*headers, "slower"]) + " |",
            "|---" * len(keys) + "|",
            *("| " + " | ".join(row[key] for key in keys) + " |" for row in section["rows"]),
            "",
        ]
    return "\n".join(lines)
