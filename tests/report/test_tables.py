"""Paper tables from results/**/metrics.json: grouping, mean/std/n, missing cells, corrupt files, writers."""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import pytest
from helpers import ROOT, T2, paper_spec, run_app, run_record, table_cell, table_record, write_record

from fsnn.report import collect, table_formats, tables


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    gesture_flif = [0.95, 0.94, 0.97]
    for seed, acc in enumerate(gesture_flif):
        write_record(
            root, table_record("table1_neuromorphic", f"flif_s{seed}", "dvsgesture", "dvsnet", "flif", seed, acc)
        )
    for seed, acc in enumerate([0.93, 0.92]):
        write_record(
            root, table_record("table1_neuromorphic", f"sj_s{seed}", "dvsgesture", "dvsnet", "sj_lif", seed, acc)
        )
    write_record(
        root, table_record("table1_neuromorphic", "leaky_s0", "dvsgesture", "dvsnet", "snntorch_leaky", 0, 0.88)
    )
    write_record(
        root,
        table_record(
            "table1_neuromorphic", "leaky_s1", "dvsgesture", "dvsnet", "snntorch_leaky", 1, None, status="failed"
        ),
    )
    write_record(
        root,
        table_record(
            "table1_neuromorphic", "leaky_s2", "dvsgesture", "dvsnet", "snntorch_leaky", 2, None, status="running"
        ),
    )
    for seed, acc in enumerate([0.88, 0.89, 0.87, 0.90]):
        write_record(
            root, table_record("table2_node_classification_smoke", f"cora_s{seed}", "cora", "sgcn", "flif", seed, acc)
        )
    write_record(root, table_record("table_link_prediction", "photo_s0", "photo", "msg", "fif", 0, 0.968, metric="auc"))
    for seed, acc in enumerate([0.94, 0.96]):
        write_record(root, table_record("ablation_alpha", f"a05_s{seed}", "dvsgesture", "dvsnet", "flif", seed, acc))
    corrupt = root / "neuro" / "broken" / "metrics.json"
    corrupt.parent.mkdir(parents=True)
    corrupt.write_text('{"status": "complete", "test_acc": 0.9')  # truncated
    return root, corrupt


def test_collect_skips_and_reports_corrupt(results):
    root, corrupt = results
    with pytest.warns(UserWarning, match="broken"):
        found = collect.scan_runs(root)
    assert [p for p, _ in found.corrupt] == [str(corrupt)]
    assert "JSONDecodeError" in found.corrupt[0][1]
    assert (len(found.complete), len(found.failed), len(found.running)) == (13, 1, 1)
    with pytest.warns(UserWarning):
        runs = collect.collect_runs(root)
    assert all(r["status"] == "complete" for r in runs) and len(runs) == 13


@pytest.mark.parametrize(
    "bad, said",
    [
        (float("nan"), "test_acc, test_acc_last, val_acc_best, test_metrics.test/acc"),
        (float("inf"), "test_acc, test_acc_last, val_acc_best, test_metrics.test/acc"),
        (
            1e300,
            "test_acc=1e+300 (expected a fraction in [0, 1]), test_acc_last=1e+300 (expected a fraction in [0, 1]), "
            "val_acc_best=1e+300 (expected a fraction in [0, 1]), test_metrics.test/acc=1e+300 (expected a "
            "fraction in [0, 1])",
        ),
        (
            -5.0,
            "test_acc=-5 (expected a fraction in [0, 1]), test_acc_last=-5 (expected a fraction in [0, 1]), "
            "val_acc_best=-5 (expected a fraction in [0, 1]), test_metrics.test/acc=-5 (expected a fraction in [0, 1])",
        ),
    ],
)
def test_runs_with_impossible_metrics_are_warned_about_and_skipped(results, bad, said):
    root, _ = results
    nan_run = write_record(root, table_record("table1_neuromorphic", "flif_s3", "dvsgesture", "dvsnet", "flif", 3, bad))
    with pytest.warns(UserWarning) as caught:
        found = collect.scan_runs(root)
    assert any(str(nan_run) in str(w.message) and "impossible" in str(w.message) for w in caught)
    assert found.impossible == [(str(nan_run), said)]
    assert len(found.complete) == 13 and str(nan_run) not in [r["_path"] for r in found.complete]
    lines = []
    tables.make_tables(root, root / "tables", echo=lines.append)
    assert f"  impossible metrics, skipped: {nan_run} (test_acc" in "\n".join(lines)
    assert "1 with impossible metrics" in lines[0]
    table = tables.build_table(paper_spec("neuromorphic"), found.complete, found.failed)
    assert table_cell(table, "DVS128 Gesture / CNN (T=16)", "f-LIF (f-SNN)")["n"] == 3  # the three finite seeds


def test_cells_mean_std_n(results):
    root, _ = results
    with pytest.warns(UserWarning):
        found = collect.scan_runs(root)
    table = tables.build_table(paper_spec("neuromorphic"), found.complete, found.failed)
    row = "DVS128 Gesture / CNN (T=16)"
    flif = table_cell(table, row, "f-LIF (f-SNN)")
    assert flif["n"] == 3
    assert flif["mean"] == pytest.approx(statistics.mean([95, 94, 97]))
    assert flif["std"] == pytest.approx(statistics.stdev([95, 94, 97]))
    assert flif["paper_mean"] == pytest.approx(94.80)
    assert flif["diff"] == pytest.approx(95.333333 - 94.80, abs=1e-4)
    assert not flif["mixed"]
    sj = table_cell(table, row, "LIF (SpikingJelly)")
    assert (sj["n"], sj["mean"], sj["std"]) == (2, pytest.approx(92.5), pytest.approx(0.7071068))
    leaky = table_cell(table, row, "LIF (snnTorch)")  # one complete, one failed, one running
    assert (leaky["n"], leaky["mean"], leaky["std"], leaky["failed"]) == (1, pytest.approx(88.0), None, 1)
    assert "[1 failed]" in table_formats.cell_text(leaky)
    missing = table_cell(table, "N-MNIST / CNN (T=16)", "f-LIF (f-SNN)")
    assert missing["n"] == 0 and missing["mean"] is None
    assert table_formats.cell_text(missing) == "— / paper 99.48"
    assert table_formats.cell_text(table_cell(table, row, "LIF (fsnn alpha=1)")) == "—"  # no runs, no paper value

    nc = tables.build_table(paper_spec("node_classification"), found.complete)
    cora = table_cell(nc, "SGCN (f-SNN)", "Cora")
    assert cora["n"] == 4 and cora["mean"] == pytest.approx(88.5)
    assert cora["std"] == pytest.approx(statistics.stdev([88, 89, 87, 90]))
    assert (cora["paper_mean"], cora["paper_std"]) == (88.08, 0.58)
    assert table_cell(nc, "SGCN (SJ)", "Cora")["n"] == 0

    lp = tables.build_table(paper_spec("link_prediction"), found.complete)
    photo = table_cell(lp, "MSG (f-SNN)", "Photos")
    assert photo["n"] == 1 and photo["mean"] == pytest.approx(96.8)
    assert photo["diff"] == pytest.approx(0.0, abs=1e-9)

    alpha = tables.build_table(paper_spec("alpha_gnn"), found.complete)
    assert table_cell(alpha, "SGCN (f-SNN)", "Cora")["mean"] == pytest.approx(0.5)  # an alpha, not a percent
    # a table reads only its own experiments: Table 1's f-LIF runs (alpha 0.5) are not ablation runs
    ablation = tables.build_table(paper_spec("alpha_ablation"), found.complete)
    fixed = table_cell(ablation, "Acc1, fixed alpha", "0.5")
    assert fixed["n"] == 2 and fixed["mean"] == pytest.approx(95.0)
    assert table_cell(ablation, "Acc1, fixed alpha", "0.2")["n"] == 0
    assert table_cell(ablation, "Acc1, learnable alpha (initial value)", "0.5")["n"] == 0
    assert table_cell(table, row, "f-LIF (f-SNN)")["n"] == 3  # and the ablation runs are not Table 1 runs


def test_mixed_configs_flagged(results):
    root, _ = results
    run = table_record("table1_neuromorphic", "flif_a02", "dvsgesture", "dvsnet", "flif", 9, 0.90)
    run["config"]["neuron"]["alpha"] = 0.2
    write_record(root, run)
    with pytest.warns(UserWarning):
        runs = collect.collect_runs(root)
    cell = table_cell(
        tables.build_table(paper_spec("neuromorphic"), runs), "DVS128 Gesture / CNN (T=16)", "f-LIF (f-SNN)"
    )
    assert cell["n"] == 4 and cell["mixed"] and "mixed configs" in table_formats.cell_text(cell)


def test_a_group_switched_off_is_the_config_recorded_before_it_existed(results):
    root, _ = results
    run = table_record("table1_neuromorphic", "flif_no_stop", "dvsgesture", "dvsnet", "flif", 8, 0.90)
    run["config"]["early_stopping"] = {}
    write_record(root, run)
    stopped = table_record("table1_neuromorphic", "flif_stop", "dvsgesture", "dvsnet", "flif", 9, 0.90)
    stopped["config"]["early_stopping"] = {"_target_": "fsnn.suite.callbacks.EarlyStopping", "patience": 100}
    spec, row = paper_spec("neuromorphic"), "DVS128 Gesture / CNN (T=16)"
    cell = table_cell(tables.build_table(spec, collect.collect_runs(root)), row, "f-LIF (f-SNN)")
    assert cell["n"] == 4 and not cell["mixed"]
    write_record(root, stopped)
    cell = table_cell(tables.build_table(spec, collect.collect_runs(root)), row, "f-LIF (f-SNN)")
    assert cell["n"] == 5 and cell["mixed"]


def test_a_study_on_some_seeds_is_not_another_config(results):
    """A robustness study run on the trained model of some seeds (not others) leaves their metrics alone."""
    root, _ = results
    run = table_record("table1_neuromorphic", "flif_study", "dvsgesture", "dvsnet", "flif", 8, 0.90)
    run["config"]["study"] = {"name": "robustness", "plan": {"name": "events"}}
    run["config"]["robustness"] = {"name": "events"}
    write_record(root, run)
    cell = table_cell(
        tables.build_table(paper_spec("neuromorphic"), collect.collect_runs(root)),
        "DVS128 Gesture / CNN (T=16)",
        "f-LIF (f-SNN)",
    )
    assert cell["n"] == 4 and not cell["mixed"]


def test_recipes_never_share_a_cell(results):
    root, _ = results
    for seed, acc in enumerate([0.80, 0.82]):
        write_record(
            root,
            table_record(
                "table2_node_classification", f"authors_s{seed}", "cora", "sgcn", "flif", seed, acc, recipe="authors"
            ),
        )
    write_record(
        root,
        table_record("table2_node_classification", "matched_s9", "cora", "sgcn", "flif", 9, 0.86, recipe="matched"),
    )
    with pytest.warns(UserWarning):
        found = collect.scan_runs(root)
    spec = paper_spec("node_classification")
    assert tables.table_recipes(spec, found.complete) == ["matched", "authors"]
    matched = table_cell(tables.build_table(spec, found.complete), "SGCN (f-SNN)", "Cora")
    assert matched["n"] == 5 and matched["mean"] == pytest.approx(statistics.mean([88, 89, 87, 90, 86]))
    authors = tables.build_table(spec, found.complete, recipe="authors")
    assert authors["id"] == "node_classification_authors" and "Recipe: authors" in authors["caption"]
    cell = table_cell(authors, "SGCN (f-SNN)", "Cora")
    assert cell["n"] == 2 and cell["mean"] == pytest.approx(81.0) and cell["paper_mean"] == 88.08
    assert tables.table_recipes(paper_spec("neuromorphic"), found.complete) == ["matched"]
    # a table that reads every experiment's runs gets no copy for a recipe whose runs fill none of its rows
    assert tables.table_recipes(paper_spec("robustness_noise"), found.complete) == ["matched"]
    tables.make_tables(root, echo=lambda *a: None)
    assert not (root / "tables" / "robustness_noise_authors.md").exists()
    assert "81.00 ± 1.41 (n=2)" in (root / "tables" / "node_classification_authors.md").read_text()
    assert "(n=2)" not in (root / "tables" / "node_classification.md").read_text()


def _epochs(record: dict, epochs: int) -> dict:
    record["config"]["trainer"] = {"max_epochs": epochs}
    return record


def test_runs_at_other_epochs_than_the_papers_fill_their_own_copy(tmp_path):
    root = tmp_path / "results"
    for seed, acc in enumerate([0.80, 0.82]):  # a short protocol: 4 of the paper's 100 epochs
        write_record(
            root,
            _epochs(table_record("table2_node_classification", f"short{seed}", "cora", "sgcn", "flif", seed, acc), 4),
        )
    spec = paper_spec("node_classification")
    found = collect.scan_runs(root)
    # one protocol only: one table, no split, its caption unchanged
    assert tables.table_variants(spec, found.complete) == [("matched", None)]
    assert table_cell(tables.build_table(spec, found.complete), "SGCN (f-SNN)", "Cora")["epochs"] == [4]
    tables.make_tables(root, echo=lambda *a: None)
    assert "(n=2)" in (root / "tables" / "node_classification.md").read_text()

    for seed, acc in enumerate([0.88, 0.89, 0.90]):  # the paper's 100 epochs arrive beside them
        write_record(
            root,
            _epochs(table_record("table2_node_classification", f"full{seed}", "cora", "sgcn", "flif", seed, acc), 100),
        )
    found = collect.scan_runs(root)
    assert tables.table_variants(spec, found.complete) == [("matched", "paper"), ("matched", 4)]
    full = tables.build_table(spec, found.complete, epochs=tables.PAPER_EPOCHS)
    short = tables.build_table(spec, found.complete, epochs=4)
    assert full["id"] == "node_classification" and short["id"] == "node_classification_4ep"
    assert "Runs trained for 4 epochs (paper: 100)." in short["caption"]
    assert table_cell(full, "SGCN (f-SNN)", "Cora")["n"] == 3 and table_cell(short, "SGCN (f-SNN)", "Cora")["n"] == 2
    assert table_cell(tables.build_table(spec, found.complete), "SGCN (f-SNN)", "Cora")["n"] == 5  # epochs=None: all
    tables.make_tables(root, echo=lambda *a: None)
    assert "88.00" not in (root / "tables" / "node_classification_4ep.md").read_text()
    assert "89.00 ± 1.00 (n=3)" in (root / "tables" / "node_classification.md").read_text()

    # the short runs are deleted: their copy of the table goes with them, nothing else is touched
    for seed in range(2):
        (root / "table2_node_classification" / f"short{seed}" / "metrics.json").unlink()
    (root / "tables" / "mine.md").write_text("a file make_tables did not write")
    tables.make_tables(root, echo=lambda *a: None)
    assert not (root / "tables" / "node_classification_4ep.md").exists()
    assert not (root / "tables" / "node_classification_4ep.tex").exists()
    assert (root / "tables" / "mine.md").exists() and (root / "tables" / "node_classification.md").exists()


def test_row_protocols_keep_table_1_in_one_copy(tmp_path):
    """Table 1 trains N-MNIST 100 epochs, its CNN settings 200 and its Transformer settings 500: runs that follow
    the paper on every row are one protocol."""
    root = tmp_path / "results"
    write_record(root, _epochs(table_record("table1_neuromorphic", "nmnist", "nmnist", "dvsnet", "flif", 0, 0.99), 100))
    write_record(
        root, _epochs(table_record("table1_neuromorphic", "gesture", "dvsgesture", "dvsnet", "flif", 0, 0.95), 200)
    )
    write_record(
        root, _epochs(table_record("table1_neuromorphic", "former", "dvsgesture", "spikformer", "flif", 0, 0.96), 500)
    )
    spec = paper_spec("neuromorphic")
    found = collect.scan_runs(root)
    assert [tables.protocol_key(spec, r) for r in found.complete] == [None, None, None]
    assert tables.table_variants(spec, found.complete) == [("matched", None)]
    write_record(
        root,
        _epochs(table_record("table1_neuromorphic", "former_short", "dvsgesture", "spikformer", "flif", 1, 0.5), 200),
    )
    found = collect.scan_runs(root)
    assert tables.table_variants(spec, found.complete) == [("matched", "paper"), ("matched", 200)]
    assert tables.paper_protocol(spec, spec["rows"][0]) == {**spec["protocol"], "epochs": 100}


def test_make_tables_writes_markdown_and_latex(results):
    root, corrupt = results
    lines = []
    found, built = tables.make_tables(root, echo=lines.append)
    out = root / "tables"
    ids = [s["id"] for s in tables.load_spec() if tables.has_paper_values(s)]
    # the suite's own studies (no paper values) are written only once they have runs
    assert not (out / "memory_horizon.md").exists() and not (out / "seq_digits.tex").exists()
    for table_id in ids:
        md = (out / f"{table_id}.md").read_text()
        tex = (out / f"{table_id}.tex").read_text()
        assert md.count("\n|") >= 3
        assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert "95.33 ± 1.53 (n=3) / paper 94.80 / Δ +0.53" in (out / "neuromorphic.md").read_text()
    assert r"95.33 $\pm$ 1.53 (n=3) / paper 94.80 / $\Delta$ +0.53" in (out / "neuromorphic.tex").read_text()
    text = "\n".join(lines)
    assert "13 complete, 1 failed, 1 running/unfinished, 1 corrupt" in text
    assert str(corrupt) in text
    assert not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("spec", tables.load_spec(), ids=lambda s: s["id"])
def test_every_paper_table_renders_empty(spec):
    table = tables.build_table(spec, [])
    keys = [c["key"] for c in spec["columns"]]
    assert len(set(keys)) == len(keys) and spec.get("label") and spec.get("section")
    for row in spec["rows"]:
        assert set(row.get("paper") or {}) <= set(keys), row["label"]
    assert all(c["n"] == 0 and c["mean"] is None for r in table["rows"] for c in r["cells"])
    md, tex = table_formats.to_markdown(table), table_formats.to_latex(table)
    assert "—" in md and "---" in tex and "—" not in tex
    assert len(md.strip().splitlines()) >= 4 + len(spec["rows"])


def test_paper_transcription_spot_checks():
    specs = {s["id"]: s for s in tables.load_spec()}
    assert {
        "neuromorphic",
        "node_classification",
        "link_prediction",
        "static",
        "alpha_gnn",
        "alpha_ablation",
        "channels",
        "neuron_type",
        "memory",
    } <= set(specs)
    neuro = {r["label"]: r["paper"] for r in specs["neuromorphic"]["rows"]}
    assert neuro["HarDVS / Transformer (T=8)"] == {"sj_lif": 45.20, "snntorch_leaky": 46.14, "flif": 47.23, "lif": None}
    nc = {r["label"]: r["paper"] for r in specs["node_classification"]["rows"]}
    assert nc["DRSGNN (snnTorch)"]["ogbn_arxiv"] == [28.46, 0.25]


def test_cli_on_empty_results(tmp_path):
    empty = tmp_path / "results"
    empty.mkdir()
    done = run_app("fsnn-report", "tables", "--results", str(empty), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "0 complete, 0 failed, 0 running/unfinished, 0 corrupt" in done.stdout
    assert "— / paper 99.48" in done.stdout
    assert (empty / "tables" / "memory.tex").exists() and (empty / "tables" / "all.md").exists()


def test_cli_reads_and_writes_the_results_of_the_current_directory(tmp_path, results):
    # run from a folder outside the checkout, without arguments: ./results is read and ./results/tables written,
    # never a folder of the checkout or of the installed package
    assert not tmp_path.is_relative_to(ROOT)
    checkout_tables = ROOT / "results" / "tables"
    before = {p: p.stat().st_mtime_ns for p in checkout_tables.glob("*")}
    done = run_app("fsnn-report", "tables", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "runs in results: 13 complete, 1 failed, 1 running/unfinished, 1 corrupt" in done.stdout
    md = (tmp_path / "results" / "tables" / "neuromorphic.md").read_text()
    assert "95.33 ± 1.53 (n=3) / paper" in md
    assert (tmp_path / "results" / "tables" / "neuromorphic.tex").exists()
    assert {p: p.stat().st_mtime_ns for p in checkout_tables.glob("*")} == before


# -- robustness tables: a run's robustness.json beside its metrics.json -----------------------


def test_a_negative_loss_or_speed_is_impossible_an_unknown_metric_only_needs_to_be_finite():
    record = {
        "test_metrics": {"test/loss": -0.1, "test/energy_mJ": 2.0, "test/custom": -3.0},
        "test_samples_per_s": -1.0,
        "val_acc_best": 1.0,
    }
    assert collect.impossible_metrics(record) == [
        "test_samples_per_s=-1 (expected >= 0)",
        "test_metrics.test/loss=-0.1 (expected >= 0)",
    ]


@pytest.mark.parametrize("recipe", ["../../../../../victim", "a/b", '"><img src=x onerror=alert(1)>', 7, "nosuch"])
def test_a_recipe_that_is_not_the_suite_s_never_names_a_file(tmp_path, results, recipe):
    """A run record's recipe names a table file (``<id>_<recipe>.md``): one that is not a suite recipe counts as
    corrupt, so nothing is written outside ``--out`` (nor under a made-up name) and no file is overwritten."""
    root, _ = results
    bad = write_record(
        root, {**table_record("table1_neuromorphic", "evil", "dvsgesture", "dvsnet", "flif", 9, 0.5), "recipe": recipe}
    )
    out = tmp_path / "a" / "b" / "tables"
    victim = tmp_path / "victim.md"
    victim.write_text("keep me")
    before = {p for p in tmp_path.rglob("*") if p.is_file()}
    lines = []
    found, made = tables.make_tables(root, out, echo=lines.append)
    assert f"  corrupt, skipped: {bad} (recipe " in "\n".join(lines)
    assert "is not one of the suite's recipes (authors, matched)" in dict(found.corrupt)[str(bad)]
    assert victim.read_text() == "keep me"
    new = {p for p in tmp_path.rglob("*") if p.is_file()} - before
    assert new and all(out in p.parents for p in new)
    assert all(
        t["id"] in {s["id"] for s in tables.load_spec()} | {f"{s['id']}_authors" for s in tables.load_spec()}
        for t in made
    )


def test_a_manifest_that_names_a_path_removes_nothing_outside_its_folder(tmp_path):
    out = tmp_path / "tables"
    out.mkdir()
    victim = tmp_path / "victim.md"
    victim.write_text("keep me")
    (out / tables.MANIFEST).write_text(json.dumps({"written": ["../victim", str(tmp_path / "victim"), "old"]}))
    (out / "old.md").write_text("stale")
    removed = tables.remove_stale(out, [], (".md",))
    assert removed == [out / "old.md"] and victim.read_text() == "keep me"


# -- a hostile or broken results tree: every bad record skipped and named, every write whole or refused -----------


def _nested(root: Path) -> Path:
    path = root / "t" / "nested" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def _fifo(root: Path) -> Path:
    path = root / "t" / "fifo" / "metrics.json"
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    return path


def _loop(root: Path) -> Path:
    (root / "neuro" / "loop").symlink_to("..")
    return root / "neuro" / "loop"


def _link_out(root: Path) -> Path:
    outside = root.parent / "outside.json"
    outside.write_text(json.dumps(table_record("table1_neuromorphic", "x", "dvsgesture", "dvsnet", "flif", 7, 0.5)))
    path = root / "t" / "linked" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    return path


def _not_utf8(root: Path) -> Path:
    return write_record(
        root, table_record("table1_neuromorphic", os.fsdecode(b"run-\xff"), "dvsgesture", "dvsnet", "flif", 7, 0.5)
    )


def _changed(key: str, value):
    def damage(root: Path) -> Path:
        record = table_record("table1_neuromorphic", f"bad-{key}", "dvsgesture", "dvsnet", "flif", 7, 0.5)
        *parents, last = key.split(".")
        node = record
        for part in parents:
            node = node[part]
        node[last] = value
        return write_record(root, record)

    return damage


@pytest.mark.parametrize(
    "damage, said",
    [
        (_loop, "a link to a folder, not followed"),
        (_nested, "nested deeper than a record's 32 levels"),
        (_fifo, "not a file but a special file"),
        (_link_out, "a link to "),
        (_not_utf8, "its path is not valid UTF-8"),
        (_changed("config", "x"), 'config: expected an object, got text ("x")'),
        (_changed("config.paths", "x"), "config.paths: expected an object"),
        (_changed("config.trainer", "x"), "config.trainer: expected an object"),
        (_changed("versions", "x"), "versions: expected an object"),
        (_changed("status", 3), "status: expected text, got a number (3)"),
        (_changed("config.dataset.name", ["cora"]), "config.dataset.name: expected text, got a list"),
        (_changed("overrides", [1]), "overrides[0]: expected text"),
        (_changed("test_acc", "0.5"), 'test_acc: expected a number, got text ("0.5")'),
        (_changed("firing_rates", {"layer": "high"}), "firing_rates.layer: expected a number"),
        (_changed("layer_order", ["features", 2]), "layer_order[1]: expected text, got a number (2)"),
        (_changed("device", "lone \udcff surrogate"), "text that is not valid Unicode"),
    ],
    ids=[
        "loop",
        "nested",
        "fifo",
        "link-out",
        "not-utf8",
        "config",
        "paths",
        "trainer",
        "versions",
        "status",
        "name",
        "overrides",
        "test_acc",
        "firing_rates",
        "layer_order",
        "surrogate",
    ],
)
def test_a_record_that_cannot_be_one_is_skipped_and_named(results, damage, said):
    """Whatever lies in a results tree (a link loop, a fifo that would block the reader, JSON nested past the
    recursion limit, a folder name that is not UTF-8, a value of the wrong type where a report reads it), the reader
    sets it aside with its reason and reads the others; the tables name it on the console and are written."""
    root, corrupt = results
    bad = damage(root)
    with pytest.warns(UserWarning, match="skipping"):
        found = collect.scan_runs(root)
    reasons = dict(found.corrupt)
    assert said in reasons[collect.printable(bad)], reasons
    assert len(found.complete) == 13 and str(corrupt) in reasons
    lines = []
    tables.make_tables(root, root / "tables", echo=lines.append)
    assert f"  corrupt, skipped: {collect.printable(bad)} (" in "\n".join(lines)
    assert (root / "tables" / "all.md").is_file()


def test_a_sibling_study_of_the_wrong_shape_is_skipped_and_its_run_counts(results):
    root, _ = results
    path = root / "table1_neuromorphic" / "flif_s0"
    (path / "robustness.json").write_text(
        json.dumps({"metric": "acc", "clean": 0.9, "corruptions": {"noise": {"levels": [0.1], "acc": "high"}}})
    )
    with pytest.warns(UserWarning):
        found = collect.scan_runs(root)
    assert (
        dict(found.corrupt)[str(path / "robustness.json")]
        == 'corruptions.noise.acc: expected a list, got text ("high")'
    )
    assert "robustness" not in next(r for r in found.complete if r["run"] == "flif_s0")


def test_a_complete_run_without_its_test_metric_is_impossible(results):
    root, _ = results
    record = table_record("table1_neuromorphic", "no_test", "dvsgesture", "dvsnet", "flif", 7, 0.5)
    del record["test_acc"]
    path = write_record(root, record)
    with pytest.warns(UserWarning):
        found = collect.scan_runs(root)
    assert found.impossible == [(str(path), "test_acc (not recorded)")]


def test_the_tables_folder_as_a_link_out_of_the_results_tree_is_refused(tmp_path, results):
    root, _ = results
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "all.md").write_text("kept")
    (root / "tables").symlink_to(elsewhere)
    done = run_app("fsnn-report", "tables", "--results", str(root), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [
        f"fsnn: error: {root / 'tables'}: a link leads it to {elsewhere}, outside the results folder {root}; a report's "
        "folder stays inside it (the reports overwrite and remove files in their folders): remove the link, or name "
        "a folder outside the results folder (--out, --figures)"
    ]
    assert [p.name for p in elsewhere.iterdir()] == ["all.md"] and (elsewhere / "all.md").read_text() == "kept"
    # named outside the results folder, the same folder is the user's own choice; a results folder reached through a
    # link (the tree on another disk) keeps its tables inside it
    tables.make_tables(root, elsewhere, echo=lambda *a: None)
    assert (elsewhere / "all.md").read_text() != "kept"
    (root / "tables").unlink()
    linked = tmp_path / "linked-results"
    linked.symlink_to(root)
    tables.make_tables(linked, echo=lambda *a: None)
    assert (root / "tables" / "all.md").is_file()


@pytest.mark.parametrize("how", ["full", "read-only", "unmakeable"])
def test_a_write_that_cannot_happen_is_one_line_naming_the_folder(tmp_path, results, monkeypatch, capsys, how):
    """A full disk or a read-only ``--out``: ``fsnn: error:`` naming the folder, exit 2, no partial file; the files
    written before are whole."""
    import errno
    import io

    import fsnn.atomic
    from fsnn.report import cli

    sys.path.insert(0, str(ROOT / "tests"))
    from interrupt import FillingUp

    root, _ = results
    out = tmp_path / "out"
    out.mkdir()
    (out / "all.md").write_text("the previous all.md")

    def failing_open(path, mode="r", *args, **kwargs):
        if how == "read-only":
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return io.BufferedWriter(FillingUp(path, "wb"))

    if how == "unmakeable":
        out = tmp_path / "a-file" / "out"
        out.parent.write_text("a file where the folder's parent belongs")
    else:
        monkeypatch.setattr(fsnn.atomic, "open", failing_open, raising=False)
    with pytest.raises(SystemExit) as stop:
        cli.main(["tables", "--results", str(root), "--out", str(out)])
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fsnn: error: cannot write {out}"), lines
    assert {"full": "No space left on device", "read-only": "Read-only file system", "unmakeable": "Not a directory"}[
        how
    ] in lines[0]
    if how != "unmakeable":
        assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]
        assert (out / "all.md").read_text() == "the previous all.md"


def test_a_stale_table_that_cannot_be_removed_is_named(tmp_path, monkeypatch):
    out = tmp_path / "tables"
    out.mkdir()
    (out / tables.MANIFEST).write_text(json.dumps({"written": ["old"]}))
    (out / "old.md").write_text("stale")

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "unlink", refuse)
    with pytest.raises(OSError, match=f"cannot remove {out / 'old.md'}: Permission denied"):
        tables.remove_stale(out, [], (".md",))


def test_copies_of_a_run_count_once_and_a_cell_says_what_it_pools(tmp_path):
    """A copied run folder (anywhere in the tree, its seed edited, or written -0) is the same run: it is left out of
    the cell, so n and the interval stay those of the distinct runs, and the cell says so; runs of several commits
    are marked."""
    root = tmp_path / "results"
    paths = [
        write_record(root, run_record(T2, f"flif{s}", "cora", "sgcn", "flif", s, 0.80 + 0.01 * s)) for s in range(3)
    ]
    record = json.loads(paths[2].read_text())
    copy = root / "copies" / "flif2" / "metrics.json"
    copy.parent.mkdir(parents=True)
    copy.write_text(json.dumps(record))
    edited = root / T2 / "flif2_seed7" / "metrics.json"
    edited.parent.mkdir()
    edited.write_text(json.dumps({**record, "seed": 7, "run": "flif2_seed7"}))
    minus_zero = root / T2 / "flif0_again" / "metrics.json"
    minus_zero.parent.mkdir()
    minus_zero.write_text(paths[0].read_text().replace('"seed": 0', '"seed": -0'))
    spec = paper_spec("node_classification")
    table = tables.build_table(spec, collect.scan_runs(root).complete)
    cell = table_cell(table, "SGCN (f-SNN)", "Cora")
    assert cell["n"] == 3 and sorted(cell["values"]) == pytest.approx([80.0, 81.0, 82.0])
    assert len(cell["duplicates"]) == 3 and "(n=3, 3 copies left out)" in table_formats.cell_text(cell)
    # a run of the same seed and configuration redone (other numbers) is that seed again, not a fourth run
    redo = run_record(T2, "flif1_redo", "cora", "sgcn", "flif", 1, 0.9)
    redo["versions"] = {"fsnn_commit": "fedcba9876543210fedc"}
    write_record(root, redo)
    other = run_record(T2, "flif3", "cora", "sgcn", "flif", 3, 0.83)
    other["versions"] = {"fsnn_commit": "fedcba9876543210fedc"}
    write_record(root, other)
    cell = table_cell(tables.build_table(spec, collect.scan_runs(root).complete), "SGCN (f-SNN)", "Cora")
    assert cell["n"] == 4 and 90.0 not in cell["values"] and len(cell["duplicates"]) == 4
    assert len(cell["commits"]) == 2 and "(n=4, 2 commits, 4 copies left out)" in table_formats.cell_text(cell)


def test_a_cell_says_how_many_of_its_runs_trained_on_fake_data(tmp_path):
    """A smoke run on ``fsnn-fixtures``' fakes records ``fake_data``: its cell says so, real runs' cells do not."""
    root = tmp_path / "results"
    for seed in range(3):
        record = run_record(T2, f"flif{seed}", "cora", "sgcn", "flif", seed, 0.8)
        write_record(root, {**record, "fake_data": seed < 2})
    cell = table_cell(
        tables.build_table(paper_spec("node_classification"), collect.scan_runs(root).complete), "SGCN (f-SNN)", "Cora"
    )
    assert cell["fake"] == 2 and "(n=3, 2 on fake data)" in table_formats.cell_text(cell)
    assert "fake" not in table_formats.cell_text({**cell, "fake": 0})


def test_a_neuron_column_without_a_label_is_headed_by_the_neurons_registered_label(tmp_path):
    spec = tmp_path / "tables.yaml"
    columns = "[{key: a, match: {neuron: sj_lif}}, {key: b, label: Mine, match: {neuron: flif}}]"
    spec.write_text(f"tables:\n  - {{id: t, columns: {columns}, rows: []}}\n")
    assert [c["label"] for c in tables.load_spec(spec)[0]["columns"]] == ["LIF (SpikingJelly)", "Mine"]
    spec.write_text("tables:\n  - {id: t, columns: [{key: a, match: {dataset: cora}}], rows: []}\n")
    with pytest.raises(ValueError, match=r"tables.yaml: table 't', column 'a': a label is needed where a column"):
        tables.load_spec(spec)
