"""The paper's graph robustness claims decided (fsnn/report/robustness_claims.py) on hand-made records."""

from __future__ import annotations

import pytest

from fsnn.report.claims import CONFIRMED, INCONCLUSIVE, REJECTED
from fsnn.report.robustness_claims import (
    graph_records,
    graph_robustness_claims,
    level_values,
    robustness_cells,
    robustness_markdown,
)

LEVELS = [0.1, 0.2, 0.3, 0.4, 0.5]


def _record(neuron, clean, accs, dataset="cora", backbone="sgcn", corruption="feature_masking", alpha=0.3) -> dict:
    """A ``robustness.json`` as ``evaluate.py robustness=graph_features`` writes it, with what the decisions read."""
    return {
        "clean": clean,
        "metric": "acc",
        "config": {
            "dataset": {"name": dataset},
            "backbone": {"name": backbone},
            "neuron": {"name": neuron},
            "alpha_per_dataset": {backbone: {dataset: alpha}},
        },
        "corruptions": {corruption: {"levels": LEVELS, "acc": accs}},
    }


def _seeds(neuron, clean, slope, jitters=(0.0, 0.004, -0.004), **kw) -> list[dict]:
    """One record per jitter: accuracy ``clean - slope * level`` (fractions), shifted by the jitter."""
    return [_record(neuron, clean + j, [clean + j - slope * lv for lv in LEVELS], **kw) for j in jitters]


def test_better_at_every_level_and_slower_degradation_is_confirmed():
    found = graph_robustness_claims(_seeds("flif", 0.90, 0.05) + _seeds("sj_lif", 0.85, 0.20))
    [entry] = found
    assert (entry["panel"], entry["fractional"], entry["baseline"]) == ("Cora / SGCN", "f-LIF", "LIF (SpikingJelly)")
    assert [lv for lv, _ in entry["levels"]] == LEVELS and entry["strongest"] == 0.5
    assert all(d.verdict == CONFIRMED for _, d in entry["levels"]) and entry["every"] == CONFIRMED
    assert entry["levels"][-1][1].diff == pytest.approx(100 * ((0.90 - 0.025) - (0.85 - 0.10)))
    assert entry["drop"].diff == pytest.approx(100 * (-0.025 + 0.10)) and entry["drop"].verdict == CONFIRMED


def test_one_level_below_rejects_every_level_and_faster_degradation_is_rejected():
    """f-LIF ahead when clean but losing faster: ahead at 0.1, behind from 0.3 on."""
    [entry] = graph_robustness_claims(_seeds("flif", 0.90, 0.40) + _seeds("snntorch_leaky", 0.85, 0.10))
    verdicts = [d.verdict for _, d in entry["levels"]]
    assert verdicts[0] == CONFIRMED and verdicts[-1] == REJECTED and entry["every"] == REJECTED
    assert entry["drop"].verdict == REJECTED and entry["drop"].diff == pytest.approx(100 * (-0.20 + 0.05))


def test_overlapping_seeds_are_inconclusive():
    wide = (0.0, 0.05, -0.05)
    [entry] = graph_robustness_claims(
        _seeds("flif", 0.86, 0.1, wide) + _seeds("sj_lif", 0.85, 0.1, (0.01, -0.04, 0.04))
    )
    assert {d.verdict for _, d in entry["levels"]} == {INCONCLUSIVE} and entry["every"] == INCONCLUSIVE


def test_single_runs_other_panels_and_the_alpha_one_stand_in():
    records = (
        _seeds("flif", 0.9, 0.1)
        + _seeds("sj_lif", 0.9, 0.1)
        + [_record("lif", 0.9, [0.9] * 5)]  # one run: a same-computation check, no spread to decide on
        + [_record("flif", 0.9, [0.9] * 5, "photo", corruption="edge_dropping", alpha=1.0)]
        + _seeds("lif", 0.9, 0.0, dataset="photo", corruption="edge_dropping", alpha=1.0)
        + _seeds("sj_lif", 0.9, 0.1, dataset="photo", corruption="edge_dropping", alpha=1.0)
        + _seeds("sj_lif", 0.9, 0.1, dataset="computers", corruption="edge_dropping", alpha=0.8)  # no f-LIF
        + _seeds("flif", 0.9, 0.1, dataset="pubmed")  # not a panel of the paper's studies
    )
    found = graph_robustness_claims(records)
    assert [(e["study"], e["panel"], e["baseline"]) for e in found] == [
        ("feature_masking", "Cora / SGCN", "LIF (SpikingJelly)"),
        ("edge_dropping", "Photo / SGCN", "LIF (SpikingJelly)"),
    ]
    assert found[1]["fractional"] == "f-LIF (fsnn LIF, alpha = 1)" and found[1]["every"] == CONFIRMED
    # without alpha = 1 in the run's table, fsnn's LIF is a baseline, never f-LIF's stand-in
    photo = records[7:14]
    assert [e["panel"] for e in graph_robustness_claims(photo)] == ["Photo / SGCN"]
    assert graph_robustness_claims([dict(r, config={**r["config"], "alpha_per_dataset": {}}) for r in photo]) == []


def test_level_values_in_percent_with_the_clean_test_at_zero():
    points = level_values(
        _seeds("flif", 0.9, 0.1, (0.0, 0.01)) + [{"clean": 0.5, "corruptions": {}}], "feature_masking"
    )
    assert list(points) == [0.0, *LEVELS]
    assert points[0.0] == pytest.approx([90.0, 91.0]) and points[0.5] == pytest.approx([85.0, 86.0])


def test_cells_and_markdown():
    found = graph_robustness_claims(
        _seeds("flif", 0.90, 0.05) + _seeds("sj_lif", 0.85, 0.20) + _seeds("snntorch_leaky", 0.80, 0.05)
    )
    cells = robustness_cells(found[0])
    assert cells["n"] == "3 / 3" and cells["every"] == CONFIRMED and cells["slower"] == CONFIRMED
    assert cells["0.5"].startswith("+12.50 [") and cells["0.5"].endswith(f"] {CONFIRMED}")
    assert cells["drop"].startswith("to 0.5: Δ of the changes +7.50 [")
    text = robustness_markdown(found)
    assert text.startswith("### graph robustness: the paper's claims, decided")
    assert "**feature masking**: the paper claims f-SNN performs significantly better" in text
    assert (
        "| panel | vs | n | at 0.1 | at 0.2 | at 0.3 | at 0.4 | at 0.5 | every level | degradation | slower |" in text
    )
    assert text.count("| Cora / SGCN |") == 2
    assert robustness_markdown([]) == ""


def test_a_pair_without_spread_is_not_decided_and_shown_without_an_interval():
    flat = [_record(neuron, 0.9, [0.9] * 5) for neuron in ("flif", "flif", "sj_lif", "sj_lif")]
    [entry] = graph_robustness_claims(flat)
    assert entry["drop"].verdict == "not decided" and entry["every"] == INCONCLUSIVE
    cells = robustness_cells(entry)
    assert cells["drop"] == "—" and cells["0.5"] == "n = 2 / 2: not decided" and cells["slower"] == "not decided"


def test_graph_records_are_the_matched_table2_studies():
    study = _record("flif", 0.9, [0.9] * 5)
    runs = [
        {"task": "table2_node_classification", "recipe": "matched", "robustness": study},
        {"task": "table2_node_classification_smoke", "robustness": study},  # a smoke run counts as its experiment
        {"task": "table2_node_classification", "recipe": "authors", "robustness": study},
        {"task": "ablation_alpha_node", "recipe": "matched", "robustness": study},
        {"task": "table2_node_classification", "recipe": "matched"},
    ]
    assert graph_records(runs) == [study, study]
