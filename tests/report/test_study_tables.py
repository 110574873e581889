"""Tables of the post-training studies and of the ablations: robustness (a run's robustness.json beside its
metrics.json, the paper's transcribed), energy (energy.json), and a reference row compared across recipes."""

from __future__ import annotations

import json
import statistics

import pytest
from helpers import paper_spec, table_cell, table_record, write_record

from fsnn.report import collect, table_formats, tables


def _study(clean: float, noise: list[float]) -> dict:
    """A robustness.json (evaluate.py robustness=events) with the Gaussian-noise levels of the paper."""
    levels = [0.1, 0.2, 0.3, 0.4, 0.5]
    return {
        "metric": "acc",
        "clean": clean,
        "corruptions": {
            "gaussian_noise": {
                "levels": levels,
                "acc": noise,
                "by_level": {f"{lv:g}": a for lv, a in zip(levels, noise)},
                "score": 100 * statistics.fmean(noise) / clean,
            }
        },
    }


def test_lookup_list_paths():
    record = {"robustness": {"corruptions": {"noise": {"by_level": {"0.1": 0.9, "1": 0.5}, "acc": [0.9, 0.8]}}}}
    base = ["robustness", "corruptions", "noise"]
    assert tables._lookup(record, base + ["by_level", 0.1]) == (True, 0.9)  # a number is its shortest text
    assert tables._lookup(record, base + ["by_level", "0.1"]) == (True, 0.9)
    assert tables._lookup(record, base + ["by_level", 1]) == (True, 0.5)
    assert tables._lookup(record, base + ["acc", 1]) == (True, 0.8)  # an int indexes a list
    assert tables._lookup(record, base + ["acc", 2]) == (False, None)
    assert tables._lookup(record, base + ["by_level", 0.3]) == (False, None)
    assert tables._lookup(record, ["robustness", "clean"]) == (False, None)
    assert tables._value({"robustness": {"clean": 0.7}}, ["robustness", "clean"]) == 0.7


def test_robustness_table_from_robustness_json(tmp_path):
    root = tmp_path / "results"
    flif = [(0.95, [0.94, 0.93, 0.92, 0.91, 0.90]), (0.93, [0.92, 0.91, 0.90, 0.89, 0.80])]
    for seed, (clean, noise) in enumerate(flif):
        path = write_record(root, table_record("rob", f"flif_s{seed}", "dvsgesture", "dvsnet", "flif", seed, clean))
        (path.parent / "robustness.json").write_text(json.dumps(_study(clean, noise)))
    write_record(root, table_record("rob", "sj_s0", "dvsgesture", "dvsnet", "sj_lif", 0, 0.93))  # no robustness study
    path = write_record(root, table_record("rob", "leaky_s0", "dvsgesture", "dvsnet", "snntorch_leaky", 0, 0.88))
    (path.parent / "robustness.json").write_text('{"clean": 0.8')  # truncated
    with pytest.warns(UserWarning, match="robustness.json"):
        found = collect.scan_runs(root)
    assert len(found.complete) == 4 and [p for p, _ in found.corrupt] == [str(path.parent / "robustness.json")]
    assert "robustness" not in next(r for r in found.complete if r["run"] == "leaky_s0")

    table = tables.build_table(paper_spec("robustness_noise"), found.complete)
    assert [r["label"] for r in table["rows"]] == ["0.1", "0.2", "0.3", "0.4", "0.5", "Score", "Original"]
    level = table_cell(table, "0.5", "f-SNN")
    assert level["n"] == 2 and level["mean"] == pytest.approx(85.0) and level["paper_mean"] == pytest.approx(90.28)
    assert level["std"] == pytest.approx(statistics.stdev([90.0, 80.0]))
    score = table_cell(table, "Score", "f-SNN")  # already in percent: not scaled again
    scores = [100 * statistics.fmean(noise) / clean for clean, noise in flif]
    assert score["mean"] == pytest.approx(statistics.fmean(scores)) and score["paper_mean"] == 95.96
    assert table_cell(table, "Original", "f-SNN")["mean"] == pytest.approx(94.0)
    for column in ("SJ", "snnTorch", "LIF (fsnn alpha=1)"):  # no (readable) robustness.json: no cells
        assert all(table_cell(table, row, column)["n"] == 0 for row in ("0.1", "Score", "Original"))
    assert table_formats.cell_text(table_cell(table, "0.1", "SJ")) == "— / paper 92.36"
    assert table_formats.cell_text(table_cell(table, "0.1", "LIF (fsnn alpha=1)")) == "—"
    # another corruption's table: no levels nor score (not run), only the clean accuracy of the same studies
    jitter = tables.build_table(paper_spec("robustness_temporal_jitter"), found.complete)
    assert all(c["n"] == 0 for r in jitter["rows"] if r["label"] != "Original" for c in r["cells"])
    assert table_cell(jitter, "Original", "f-SNN")["n"] == 2
    # the 128-channel DVSNet of the paper only: other widths do not count
    path = write_record(root, table_record("rob", "flif_c8", "dvsgesture", "dvsnet", "flif", 9, 0.5))
    record = json.loads(path.read_text())
    record["config"]["backbone"]["channels"] = 8
    path.write_text(json.dumps(record))
    (path.parent / "robustness.json").write_text(json.dumps(_study(0.5, [0.1] * 5)))
    with pytest.warns(UserWarning):
        runs = collect.collect_runs(root)
    assert table_cell(tables.build_table(paper_spec("robustness_noise"), runs), "0.5", "f-SNN")["n"] == 2


def test_robustness_tables_transcribed():
    specs = {s["id"]: s for s in tables.load_spec()}
    ids = [
        "robustness_noise",
        "robustness_discard",
        "robustness_temporal_jitter",
        "robustness_temporal_truncate",
        "robustness_occlude_block",
    ]
    assert set(ids) <= set(specs)
    for table_id in ids:
        rows = {r["label"]: r["paper"] for r in specs[table_id]["rows"]}
        assert rows["Original"] == {"flif": 94.80, "sj_lif": 93.40, "snntorch_leaky": 88.99, "lif": None}
        if table_id == "robustness_noise":
            continue  # its printed Score does not follow from its accuracies (see the table's notes)
        for key in ("flif", "sj_lif", "snntorch_leaky"):  # Score = 100 x mean(level accuracies) / Original
            levels = [paper[key] for label, paper in rows.items() if label not in ("Score", "Original")]
            assert 100 * statistics.fmean(levels) / rows["Original"][key] == pytest.approx(
                rows["Score"][key], abs=0.011
            )
    jitter = {r["label"]: r["paper"] for r in specs["robustness_temporal_jitter"]["rows"]}
    assert len(jitter) == 11 and jitter["0.9"]["snntorch_leaky"] == 73.61


def test_energy_table_from_energy_json(tmp_path):
    root = tmp_path / "results"
    totals = {"flif": [(2.4, 0.4), (2.6, 0.5)], "sj_lif": [(2.7, 0.2)]}  # (synaptic, neuron) mJ per run
    for neuron, runs in totals.items():
        for seed, (synaptic, neuron_mj) in enumerate(runs):
            path = write_record(
                root,
                table_record("table1_neuromorphic", f"{neuron}_s{seed}", "dvsgesture", "spikformer", neuron, seed, 0.9),
            )
            total = synaptic + neuron_mj
            energy = {
                "synaptic_mj": synaptic,
                "neuron_mj": neuron_mj,
                "total_mj": total,
                "synaptic_share": synaptic / total,
                "neuron_share": neuron_mj / total,
                "layers": [],
            }
            (path.parent / "energy.json").write_text(json.dumps(energy))
    # a DVSNet run's energy is not the Spikformer table's, nor an ablation run's
    path = write_record(root, table_record("table1_neuromorphic", "cnn", "dvsgesture", "dvsnet", "flif", 0, 0.9))
    (path.parent / "energy.json").write_text(json.dumps({"synaptic_mj": 9.0, "neuron_mj": 9.0, "total_mj": 18.0}))
    table = tables.build_table(paper_spec("energy"), collect.scan_runs(root).complete)
    total = table_cell(table, "f-LIF (f-SNN)", "Total (uJ)")
    assert total["n"] == 2 and total["mean"] == pytest.approx(2950.0) and total["paper_mean"] == 2911.79
    share = table_cell(table, "f-LIF (f-SNN)", "Neuron share (%)")
    assert share["mean"] == pytest.approx(statistics.fmean([100 * 0.4 / 2.8, 100 * 0.5 / 3.1]))
    assert table_cell(table, "LIF (SpikingJelly)", "Synaptic (uJ)")["mean"] == pytest.approx(2700.0)
    assert table_cell(table, "LIF (fsnn alpha=1)", "Total (uJ)")["n"] == 0


def test_reference_row_table_compares_switches_across_recipes(tmp_path):
    """The recipe ablation: one table over both recipes, each cell against the `none` row of its column, `moved`
    only where the 95 % Welch interval of the difference excludes 0 (the claims' test), not where the difference
    merely exceeds both rows' seed-to-seed spread."""
    root = tmp_path / "results"
    cases = {
        ("none", "flif"): [0.80, 0.81, 0.82],
        ("surrogate", "flif"): [0.805, 0.815, 0.825],
        ("reset", "flif"): [0.815, 0.825, 0.835],  # 1.5 points up, over the std of 1, inside the interval
        ("authors", "flif"): [0.86, 0.87, 0.88],
        ("none", "sj_lif"): [0.85, 0.84, 0.86],
    }
    for (switch, neuron), accs in cases.items():
        for seed, acc in enumerate(accs):
            record = table_record(
                "recipe_ablation_cora",
                f"{neuron}_{switch}_s{seed}",
                "cora",
                "sgcn",
                neuron,
                seed,
                acc,
                recipe="authors" if switch == "authors" else "matched",
            )
            record["config"]["recipe_switch"] = switch
            write_record(root, record)
    spec = paper_spec("recipe_ablation_cora")
    found = collect.scan_runs(root)
    assert tables.table_recipes(spec, found.complete) == ["matched"]  # one table, not one per recipe
    table = tables.build_table(spec, found.complete)
    none = next(r for r in table["rows"] if r["key"] == "none")
    assert none["cells"][0]["n"] == 3 and none["cells"][0]["diff"] is None
    surrogate = table_cell(table, spec["rows"][3]["label"], table["columns"][0])
    assert surrogate["diff"] == pytest.approx(0.5) and not surrogate["moved"]
    reset = table_cell(table, spec["rows"][1]["label"], table["columns"][0])
    assert reset["diff"] == pytest.approx(1.5) and reset["diff"] > reset["std"] and not reset["moved"]
    authors_row = next(row for row in spec["rows"] if row["match"] == {"recipe_switch": "authors"})
    authors = table_cell(table, authors_row["label"], table["columns"][0])
    assert authors["diff"] == pytest.approx(6.0) and authors["moved"]
    assert "Δ +6.00 (moved)" in table_formats.cell_text(authors)
    # Welch's t-test over the seeds: equal spreads 6 points apart (t = 6 / sqrt(2/3), 4 dof) against 0.5 points
    assert authors["p"] == pytest.approx(0.0018, abs=2e-4) and surrogate["p"] == pytest.approx(0.57, abs=0.01)
    assert table_formats.cell_text(authors).endswith("p=0.0018") and none["cells"][0].get("p") is None
    assert tables.welch_p([1.0, 1.0], [1.0, 1.0]) == 1.0 and tables.welch_p([1.0], [2.0, 3.0]) is None
    assert table_cell(table, spec["rows"][3]["label"], table["columns"][1])["n"] == 0  # no sj_lif surrogate runs
    assert "row `none`" in table_formats.to_markdown(table)
