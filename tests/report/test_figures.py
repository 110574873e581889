"""The figures (fsnn.report.figures, fsnn-report figures): files written, data from runs, skips without data, and what a
reviewer checks: legible text, every mark in a legend, families of colours, error bars, the paper only where the
protocol is the paper's, the same bytes from the same runs."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from helpers import robustness_levels, run_app

from fsnn.neurons.registry import neuron_label
from fsnn.report import collect, figures, style, theory
from fsnn.report.figures import (
    alpha as alpha_figures,
    claims as claims_figures,
    firing_rates,
    memory_horizon,
    robustness,
)
from fsnn.suite.robustness import robustness_score

LEVELS = robustness_levels("events")


@pytest.fixture
def drawn(monkeypatch):
    """``{name: Figure}`` of every figure saved while the test runs (the files are still written)."""
    seen = {}
    save = style.save

    def keep(fig, out, name):
        seen[name] = fig
        return save(fig, out, name)

    # each draws with the save it imported
    for module in (alpha_figures, claims_figures, firing_rates, memory_horizon, robustness, theory):
        monkeypatch.setattr(module, "save", keep)
    return seen


def small_text(fig) -> list[tuple[str, float]]:
    """Visible texts of ``fig`` below the minimum size, once drawn (tick labels exist only then)."""
    fig.draw_without_rendering()
    return [
        (t.get_text(), t.get_fontsize())
        for t in fig.findobj(matplotlib.text.Text)
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() < style.MIN_FONT_PT
    ]


def legend_texts(fig) -> list[str]:
    return [
        t.get_text()
        for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        for t in legend.get_texts()
    ]


def _is_figure(path: Path) -> bool:
    head = path.read_bytes()[:4]
    return path.stat().st_size > 1000 and head in (b"\x89PNG", b"%PDF")


def _study(neuron: str, drop: float, corruptions=tuple(LEVELS), dataset: str = "dvsgesture") -> dict:
    """A robustness.json record whose accuracy falls by ``drop`` per unit of level."""
    clean = 0.9
    entries = {}
    for name in corruptions:
        accs = [clean - drop * level for level in LEVELS[name]]
        entries[name] = {
            "levels": LEVELS[name],
            "acc": accs,
            "score": robustness_score(clean, accs),
            "by_level": {f"{lv:g}": a for lv, a in zip(LEVELS[name], accs)},
        }
    return {
        "metric": "acc",
        "clean": clean,
        "corruptions": entries,
        "config": {"dataset": {"name": dataset}, "backbone": {"name": "dvsnet"}, "neuron": {"name": neuron}},
    }


def _run(neuron: str, rates: dict, dataset: str = "dvsgesture", **extra) -> dict:
    return {
        "status": "complete",
        "metric": "acc",
        "test_acc": 0.5,
        "firing_rates": rates,
        "config": {"dataset": {"name": dataset}, "backbone": {"name": "dvsnet"}, "neuron": {"name": neuron}},
        **extra,
    }


def test_theory_figures_are_computed_and_written(tmp_path, drawn):
    lines = []
    paths = theory.relaxation_figure(tmp_path, dt=0.1, t_max=5.0, t_lin=2.0, echo=lines.append)
    paths += theory.kernel_figure(tmp_path, steps=101, echo=lines.append)
    assert [p.name for p in paths] == [
        "mittag_leffler_relaxation.png",
        "mittag_leffler_relaxation.pdf",
        "kernel_decay.png",
        "kernel_decay.pdf",
    ]
    assert all(_is_figure(p) for p in paths)
    assert all(small_text(fig) == [] for fig in drawn.values())
    # the printed diagnostics come from the computation: the fitted kernel slopes approach alpha - 1
    slopes = [float(line.split("= ")[1].split()[0]) for line in lines if "kernel alpha" in line]
    assert slopes == pytest.approx([-0.8, -0.6, -0.4, -0.2], abs=0.01)
    t, relax = theory.simulate_relaxation(1.0, dt=0.01, t_max=2.0, engine="direct")
    assert np.allclose(relax, np.exp(-t), atol=0.01)  # alpha = 1: the exponential


def test_robustness_figures_curves_and_radar(tmp_path, drawn):
    records = [_study("flif", 0.1), _study("flif", 0.2), _study("sj_lif", 0.5)]
    paths = robustness.robustness_figures(records, tmp_path, "study")
    assert [p.name for p in paths] == ["study_curves.png", "study_curves.pdf", "study_radar.png", "study_radar.pdf"]
    assert all(_is_figure(p) for p in paths)
    assert all(small_text(fig) == [] for fig in drawn.values())
    assert legend_texts(drawn["study_curves"]) == ["f-LIF (n=2)", "LIF (SpikingJelly) (n=1)"]
    # fewer than three corruptions: curves only, and a radar left from an earlier study is removed
    few = [_study("flif", 0.1, corruptions=("gaussian_noise", "frame_discard"))]
    messages = []
    paths = robustness.robustness_figures(few, tmp_path, "study", echo=messages.append)
    assert [p.name for p in paths] == ["study_curves.png", "study_curves.pdf"]
    assert not (tmp_path / "study_radar.png").exists() and "no radar" in messages[0]
    assert robustness.robustness_figures([], tmp_path) == []


def _graph_study(
    neuron: str, drop: float, dataset: str, backbone: str = "sgcn", corruption: str = "feature_masking"
) -> dict:
    record = _study(neuron, drop, corruptions=(), dataset=dataset)
    levels = [0.1, 0.2, 0.3, 0.4, 0.5]
    accs = [record["clean"] - drop * level for level in levels]
    record["corruptions"][corruption] = {"levels": levels, "acc": accs, "score": robustness_score(0.9, accs)}
    record["config"]["backbone"]["name"] = backbone
    return record


def test_graph_robustness_figure_panels_and_the_papers_claim(tmp_path, drawn):
    """One panel per dataset and backbone that has runs, one line per neuron with two or more seeds (a single
    same-computation run is left out), error bars over the seeds, the paper's claim and the strongest level in the
    caption."""
    records = [
        _graph_study("flif", 0.1, "cora"),
        _graph_study("flif", 0.3, "cora"),
        _graph_study("sj_lif", 0.5, "cora"),
        _graph_study("sj_lif", 0.5, "cora"),
        _graph_study("lif", 0.5, "cora"),  # one run: an identity check, not a curve
        _graph_study("flif", 0.1, "citeseer", "drsgnn"),
        _graph_study("flif", 0.1, "citeseer", "drsgnn"),
        _graph_study("flif", 0.1, "photo", corruption="edge_dropping"),
    ]  # another study
    captions = {}
    paths = robustness.graph_robustness_figure(records, "feature_masking", tmp_path, captions)
    assert [p.name for p in paths] == ["graph_feature_masking.png", "graph_feature_masking.pdf"]
    fig = drawn["graph_feature_masking"]
    assert [ax.get_title() for ax in fig.axes] == ["Cora / SGCN", "CiteSeer / DRSGNN"]
    assert legend_texts(fig) == ["f-LIF", "LIF (SpikingJelly)"] and small_text(fig) == []
    bars = [c for c in fig.axes[0].containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
    spread = 100 * np.std([0.9 - 0.1 * 0.5, 0.9 - 0.3 * 0.5], ddof=1)  # f-LIF's two seeds at level 0.5
    assert np.isclose(np.ptp(bars[0].lines[2][0].get_segments()[-1][:, 1]), 2 * spread)
    caption = captions["graph_feature_masking"]
    assert "The paper claims: f-SNN performs significantly better" in caption
    assert "cora/sgcn at 0.5: f-LIF 80.0 ± 7.1 (n=2), LIF (SpikingJelly) 65.0 ± 0.0 (n=2)" in caption
    assert robustness.graph_robustness_figure(records, "edge_dropping", tmp_path / "none") == []  # one run: no curve


def test_labels_and_settings():
    record = _study("flif", 0.1)
    assert (
        neuron_label(collect.neuron_name(record)) == "f-LIF" and collect.dataset_backbone(record) == "dvsgesture_dvsnet"
    )
    assert neuron_label(collect.neuron_name({"config": {"neuron": {"name": "mine"}}})) == "mine"
    assert collect.dataset_backbone({}) == "unknown_unknown"


def test_firing_rate_figure(tmp_path, drawn):
    # metrics.json stores the rates sorted by name (classifier before features) and the network's order beside them
    layers = {"classifier.2": 0.05, "features.0.2": 0.1, "features.1.2": 0.2}
    order = ["features.0.2", "features.1.2", "classifier.2"]
    runs = [
        _run("flif", layers),  # a record without the order: the panel takes it from another run
        _run("flif", {**layers, "features.0.2": 0.3}, layer_order=order),
        _run("lif", {"classifier.2": 0.01, "features.0.2": 0.3, "features.1.2": 0.2}, layer_order=order),
        _run("flif", {}, dataset="cora"),
    ]
    paths = firing_rates.firing_rate_figure(runs, tmp_path)
    assert [p.name for p in paths] == ["firing_rates.png", "firing_rates.pdf"] and all(map(_is_figure, paths))
    ax = drawn["firing_rates"].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["features.0.2", "features.1.2", "classifier.2"]
    assert legend_texts(drawn["firing_rates"]) == ["f-LIF (n=2)", "LIF (fsnn, alpha = 1) (n=1)"]
    # error bars: the two f-LIF runs differ in features.0.2 (0.1 and 0.3), a standard deviation of 0.14
    bars = [c for c in ax.containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
    assert len(bars) == 2 and any(
        np.isclose(np.ptp(seg[:, 1]), 2 * np.std([0.1, 0.3], ddof=1)) for seg in bars[0].lines[2][0].get_segments()
    )
    assert small_text(drawn["firing_rates"]) == []
    assert firing_rates.firing_rate_figure([_run("flif", {})], tmp_path / "none") == []
    assert not (tmp_path / "none").exists()


def test_firing_rate_panels_keep_one_colour_per_neuron(tmp_path, drawn):
    """A panel without fsnn's LIF still draws SpikingJelly's LIF in the colour it has where fsnn's LIF is present."""
    rates = {"features.0.2": 0.1}
    runs = [_run(n, rates, recipe=recipe) for n in ("flif", "sj_lif") for recipe in ("matched", "authors")]
    runs.append(_run("lif", rates))
    firing_rates.firing_rate_figure(runs, tmp_path)
    colours = [
        {
            text.get_text(): handle.get_facecolor()
            for text, handle in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)
        }
        for ax in drawn["firing_rates"].axes
    ]
    assert len(colours) == 2 and len(colours[0]) != len(colours[1])
    sj = [c for panel in colours for name, c in panel.items() if name.startswith("LIF (SpikingJelly)")]
    assert len(sj) == 2 and sj[0] == sj[1]


def test_network_order_is_the_recorded_one_else_the_names():
    recorded, layers = {"layer_order": ["encoder", "neuron"]}, ["neuron", "gone", "encoder", "a"]
    assert firing_rates.network_order([{}, recorded], layers) == ["encoder", "neuron", "a", "gone"]  # the rest by name
    assert firing_rates.network_order([{}, {"layer_order": []}], ["b", "a"]) == ["a", "b"]
    assert firing_rates.network_order([], ["b", "a"]) == ["a", "b"]


def test_families_of_colours():
    styles = style.family_styles(["flif_a02", "flif_a05", "lif", "sj_lif", "sj_plif", "snntorch_leaky"])
    warm, cool = {c for c, _ in style.WARM}, {c for c, _ in style.COOL}
    assert {styles[k]["color"] for k in ("flif_a02", "flif_a05")} <= warm
    assert {styles[k]["color"] for k in ("lif", "sj_lif", "sj_plif", "snntorch_leaky")} <= cool
    assert len({(s["color"], s["marker"]) for s in styles.values()}) == len(styles)  # every line its own
    # one key per run: repeats keep the first style, so two neurons never end up on the same colour
    per_run = style.family_styles(["lif"] * 5 + ["sj_lif"] * 5 + ["snntorch_leaky"] * 3 + ["lif"])
    assert per_run == style.family_styles(["lif", "sj_lif", "snntorch_leaky"])
    assert len({(s["color"], s["marker"]) for s in per_run.values()}) == 3


def test_saved_files_carry_no_date_or_version(tmp_path):
    fig = matplotlib.figure.Figure(figsize=(2, 2))
    fig.subplots().plot([0, 1], [1, 0])
    first = [p.read_bytes() for p in style.save(fig, tmp_path / "a", "f")]
    second = [p.read_bytes() for p in style.save(fig, tmp_path / "b", "f")]
    assert first == second
    pdf, png = first[1], first[0]
    assert b"CreationDate" not in pdf and b"Matplotlib v" not in pdf and b"Software" not in png


def _node_run(experiment: str, neuron: str, acc: float, alpha=None, epochs=10, recipe="matched") -> dict:
    config = {
        "dataset": {"name": "cora", "T": 100},
        "backbone": {"name": "sgcn"},
        "trainer": {"max_epochs": epochs},
        "neuron": {"name": neuron, **({"alpha": alpha, "learn_alpha": False} if alpha is not None else {})},
    }
    return {
        "status": "complete",
        "task": experiment,
        "metric": "acc",
        "test_acc": acc,
        "recipe": recipe,
        "config": config,
    }


def test_alpha_curve_figure(tmp_path, drawn):
    sweep = [_node_run("ablation_alpha_node", "flif", 0.85 + 0.01 * a, alpha=a) for a in (0.1, 0.5, 1.0) for _ in "ab"]
    table2 = [_node_run("table2_node_classification", n, 0.87) for n in ("lif", "sj_lif", "snntorch_leaky")]
    other = [
        _node_run("table2_node_classification", "lif", 0.80, epochs=100),  # trained differently: not drawn
        _node_run("ablation_alpha_node", "flif", 0.5, alpha=0.3, recipe="authors"),
    ]
    captions = {}
    paths = alpha_figures.alpha_curve_figure(sweep + table2 + other, tmp_path, captions=captions)
    assert [p.name for p in paths] == ["alpha_cora_sgcn.png", "alpha_cora_sgcn.pdf"] and all(map(_is_figure, paths))
    assert collect.training_setting(table2[0]) == collect.training_setting(sweep[0])
    assert collect.training_setting(other[0]) != collect.training_setting(sweep[0])
    fig = drawn["alpha_cora_sgcn"]
    labels = legend_texts(fig)
    # every mark is named: the dots, the mean with its error bars, each baseline's line and bar; no paper value on
    # 10-epoch runs (the paper trained 100)
    assert labels[:2] == ["f-LIF, one run (one dot per seed)", "f-LIF, mean ± std over seeds (n=2 per alpha)"]
    assert sum("Table 2 runs, n=1: mean (line), ± std" in label for label in labels) == 3
    assert not any(label.startswith("paper") for label in labels)
    assert "paper's values (100 epochs) not drawn" in captions["alpha_cora_sgcn"]
    assert small_text(fig) == []
    # fewer than three alphas of the matched recipe: no curve
    assert alpha_figures.alpha_curve_figure(sweep[:4] + other, tmp_path / "none") == []
    assert not (tmp_path / "none").exists()


def test_alpha_curve_draws_the_paper_only_beside_its_protocol(tmp_path, drawn):
    runs = [
        _node_run("ablation_alpha_node", "flif", 0.80 + 0.01 * a, alpha=a, epochs=e)
        for a in (0.1, 0.5, 1.0)
        for e in (4, 100)
    ]
    runs += [_node_run("table2_node_classification", "sj_lif", 0.84, epochs=e) for e in (4, 100)]
    alpha_figures.alpha_curve_figure(runs, tmp_path)
    fig = drawn["alpha_cora_sgcn"]
    short, full = fig.axes
    assert "4 epochs (paper: 100; its values not drawn)" == short.get_title()
    assert "100 epochs (the paper's protocol)" == full.get_title()
    papers = [label for label in legend_texts(fig) if label.startswith("paper")]
    assert papers == [
        "paper: SGCN (SJ) 81.81",
        "paper: SGCN (snnTorch) 83.12",
        "paper: SGCN (f-SNN) 88.08 at its alpha 0.3",
    ]
    # the paper's lines and star sit on the 100-epoch axes only
    assert not any(abs(y - 81.81) < 1e-9 for line in short.get_lines() for y in np.atleast_1d(line.get_ydata()))
    assert any(abs(y - 81.81) < 1e-9 for line in full.get_lines() for y in np.atleast_1d(line.get_ydata()))


def _horizon_run(
    variant: str, delay: int, seed: int, acc: float, task: str = "memory_horizon", recurrent: bool = False
) -> dict:
    return {
        "status": "complete",
        "task": task,
        "metric": "acc",
        "test_acc": acc,
        "seed": seed,
        "train_epoch_s": 2.0 + delay / 16 + seed * 0.1,
        "choices": {"neuron_variant": variant},
        "config": {
            "dataset": {"name": "delayed_cue", "delay": delay, "num_cues": 4},
            "backbone": {"name": "seqmlp", "recurrent": recurrent},
            "neuron": {"name": "flif" if variant.startswith("flif") else "lif"},
            "trainer": {"max_epochs": 20},
        },
    }


def test_memory_horizon_figure(tmp_path, drawn):
    variants = list(memory_horizon._variant_labels("memory_horizon"))
    runs = [
        _horizon_run(v, d, s, 0.9 - 0.1 * i / len(variants) - d / 100)
        for i, v in enumerate(variants)
        for d in (4, 8, 16, 32)
        for s in range(3)
    ]
    memory_horizon.memory_horizon_figure(runs, tmp_path)
    fig = drawn["memory_horizon"]
    ax_acc, ax_time = fig.axes
    assert legend_texts(fig) == list(memory_horizon._variant_labels("memory_horizon").values())
    # one series per variant: each its own colour and marker, f-LIF in the warm family, the others in the cool one
    lines = [c.lines[0] for c in ax_acc.containers]
    assert len({(line.get_color(), line.get_marker()) for line in lines}) == len(variants) == 12
    warm = {c for c, _ in style.WARM}
    assert [line.get_color() in warm for line in lines] == [v.startswith("flif") for v in variants]
    # chance labelled beside the axes (x = 1 in axes fraction), not over the data; plain tick labels
    chance = next(t for t in ax_acc.texts if t.get_text().startswith("chance"))
    assert chance.xy[0] == 1.0 and chance.xy[1] == 25.0
    fig.draw_without_rendering()
    assert [t.get_text() for t in ax_acc.get_xticklabels()] == ["4", "8", "16", "32"]
    assert all("^" not in t.get_text() and "times" not in t.get_text() for t in ax_time.get_yticklabels())
    assert small_text(fig) == []
    # error bars where a mean is shown, in both panels
    assert len(ax_acc.containers) == len(ax_time.containers) == len(variants)


def _write(root: Path, name: str, record: dict, study: dict | None = None):
    run = root / "task" / name
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps(record))
    if study is not None:
        (run / "robustness.json").write_text(json.dumps(study))


def test_figures_script(tmp_path):
    results, out = tmp_path / "results", tmp_path / "figures"
    table1 = {"task": "table1_neuromorphic"}
    _write(results, "flif", _run("flif", {"features.0.2": 0.1}, **table1), _study("flif", 0.1))
    _write(results, "sj", _run("sj_lif", {"features.0.2": 0.2}, **table1), _study("sj_lif", 0.4))
    _write(results, "nc", _run("flif", {"neuron": 0.3}, dataset="cora", task="table2_node_classification"))
    _write(results, "mine", _run("lif", {"neuron": 0.9}, dataset="karate", task="train"))  # by hand: not drawn
    # studies that vary more than the neuron (a recipe switch, alpha) would blur its bars: not drawn either
    _write(results, "switch", _run("flif", {"neuron": 0.8}, dataset="citeseer", task="recipe_ablation_cora"))
    _write(results, "alpha", _run("flif", {"neuron": 0.7}, dataset="pubmed", task="ablation_alpha"))
    (results / "task" / "broken").mkdir()
    (results / "task" / "broken" / "metrics.json").write_text("{")
    proc = run_app(
        "fsnn-report",
        "figures",
        "--dt",
        "0.5",
        "--t-max",
        "5",
        "--t-lin",
        "5",
        "--kernel-steps",
        "101",
        "--results",
        str(results),
        "--out",
        str(out),
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = {
        "mittag_leffler_relaxation",
        "kernel_decay",
        "firing_rates",
        "robustness_dvsgesture_dvsnet_curves",
        "robustness_dvsgesture_dvsnet_radar",
    }
    assert {p.name for p in out.iterdir()} == {f"{n}.{ext}" for n in names for ext in ("png", "pdf")} | {"figures.json"}
    assert all(_is_figure(p) for p in out.iterdir() if p.suffix != ".json")
    assert "corrupt, skipped" in proc.stdout and "broken" in proc.stdout
    assert "not of a suite experiment, not drawn: 1 run(s) (train)" in proc.stdout
    manifest = json.loads((out / "figures.json").read_text())
    assert set(manifest["written"]) == names and set(manifest["captions"]) == names
    assert all(name not in manifest["captions"]["firing_rates"] for name in ("karate", "citeseer", "pubmed"))
    assert "cora" in manifest["captions"]["firing_rates"]

    # no runs: each figure from runs says why it is skipped
    empty, lines = tmp_path / "empty", []
    empty.mkdir()
    assert figures.run_figures(empty, tmp_path / "nothing", echo=lines.append) == []
    assert [line.split(":")[-1].strip() for line in lines] == [
        "firing-rate figure skipped",
        "alpha curve skipped",
        "robustness figures skipped",
        "memory-horizon figure skipped",
    ]
    assert not (tmp_path / "nothing").exists()


def test_a_figure_goes_with_its_runs(tmp_path):
    """make_figures draws the memory-horizon figure once its runs exist and deletes it once they are gone; files it
    never wrote stay."""
    results, out = tmp_path / "results", tmp_path / "figures"
    for i, run in enumerate(_horizon_run(v, d, 0, 0.5) for v in ("flif_a05", "lif") for d in (4, 8)):
        _write(results, f"horizon{i}", run)
    out.mkdir()
    (out / "demo_neuron.png").write_bytes(b"not drawn by make_figures")
    small = {"dt": 0.5, "t_max": 5.0, "t_lin": 5.0, "kernel_steps": 101, "echo": lambda *a: None}
    figures.make_figures(results, out, **small)
    manifest = json.loads((out / "figures.json").read_text())
    assert manifest["written"] == ["memory_horizon", "mittag_leffler_relaxation", "kernel_decay"]
    assert "n=1 per point" in manifest["captions"]["memory_horizon"]
    assert (out / "memory_horizon.png").is_file() and (out / "memory_horizon.pdf").is_file()
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    figures.make_figures(results, out, **small)  # the same runs: the same bytes
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before

    for path in (results / "task").glob("horizon*/metrics.json"):
        path.unlink()
    lines = []
    figures.make_figures(results, out, **{**small, "echo": lines.append})
    assert sorted(p.name for p in out.iterdir()) == [
        "demo_neuron.png",
        "figures.json",
        "kernel_decay.pdf",
        "kernel_decay.png",
        "mittag_leffler_relaxation.pdf",
        "mittag_leffler_relaxation.png",
    ]
    assert any("memory_horizon.png (its runs are gone)" in line for line in lines)


def test_memory_horizon_long_figure_puts_feed_forward_beside_recurrent(tmp_path, drawn):
    variants = ["flif_a05", "lif", "sj_plif"]
    runs = [
        _horizon_run(v, d, s, 0.25 + 0.1 * i + 0.2 * r, task="memory_horizon_long", recurrent=bool(r))
        for i, v in enumerate(variants)
        for d in (128, 256, 512, 1024)
        for s in range(2)
        for r in (0, 1)
        if not (v == "sj_plif" and r)  # a variant with only feed-forward runs is drawn in one panel
    ]
    runs.append(_horizon_run("lif", 64, 0, 0.9))  # another experiment's run is left out
    paths = memory_horizon.memory_horizon_long_figure(runs, tmp_path)
    assert sorted(p.name for p in paths) == ["memory_horizon_long.pdf", "memory_horizon_long.png"]
    fig = drawn["memory_horizon_long"]
    forward, recurrent = fig.axes[:2]
    assert (forward.get_title(), recurrent.get_title()) == ("feed-forward", "recurrent (R s_{t-1} in every layer)")
    labels = memory_horizon._variant_labels("memory_horizon")
    assert legend_texts(fig) == [labels[v] for v in variants]
    means = {
        (ax is recurrent, c.get_label()): list(c.lines[0].get_ydata())
        for ax in (forward, recurrent)
        for c in ax.containers
    }
    assert means[(False, labels["lif"])] == pytest.approx([35.0] * 4)
    assert means[(True, labels["lif"])] == pytest.approx([55.0] * 4)
    assert (True, labels["sj_plif"]) not in means
    fig.draw_without_rendering()
    assert [t.get_text() for t in forward.get_xticklabels()] == ["128", "256", "512", "1024"]
    assert memory_horizon.memory_horizon_long_figure(runs[-1:], tmp_path / "none") == []


def test_learned_tau_figure_draws_tau_per_epoch_per_delay(tmp_path, drawn):
    def run(variant, delay, seed, grow):
        record = _horizon_run(variant, delay, seed, 0.5)
        record["neurons_by_epoch"] = [
            {
                "epoch": e,
                "neurons": {
                    "layers.0.neuron": {"tau_mean": 2.0, "tau_std": 0.0},
                    "layers.1.neuron": {"tau_mean": 2.0 + grow * e + seed, "tau_std": 0.0},
                },
            }
            for e in range(4)
        ]
        return record

    runs = [run(v, d, s, d / 4) for v in ("lif_learn_tau", "sj_plif") for d in (4, 8) for s in range(2)]
    runs.append(_horizon_run("lif", 4, 0, 0.3))  # nothing learned: no panel
    assert [p.name for p in memory_horizon.learned_tau_figure(runs, tmp_path)] == [
        "memory_horizon_tau.png",
        "memory_horizon_tau.pdf",
    ]
    fig = drawn["memory_horizon_tau"]
    assert [ax.get_title() for ax in fig.axes] == [
        memory_horizon._variant_labels("memory_horizon")[v] for v in ("lif_learn_tau", "sj_plif")
    ]
    solid = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == "-"]
    assert [line.get_label() for line in solid] == ["delay 4", "delay 8"]
    # the mean over seeds, epoch by epoch: 2 + grow * epoch + mean seed (0.5)
    assert list(solid[1].get_ydata()) == pytest.approx([2.5 + 2 * e for e in range(4)])
    assert legend_texts(fig) == ["delay 4", "delay 8"] and small_text(fig) == []
    assert memory_horizon.learned_tau_figure([_horizon_run("lif", 4, 0, 0.3)], tmp_path / "none") == []


def test_graph_robustness_caption_says_where_flif_is_the_integer_lif(tmp_path, drawn):
    """Where the runs' tab:alpha_gnn table gives f-LIF alpha = 1.0, the caption says f-LIF is fsnn's LIF there (one
    line stands for both); elsewhere it says nothing of it."""
    records = [_graph_study("lif", 0.1, "photo", corruption="edge_dropping") for _ in range(2)]
    records += [_graph_study("flif", 0.1, "computers", corruption="edge_dropping") for _ in range(2)]
    for r in records:
        r["config"]["alpha_per_dataset"] = {"sgcn": {"photo": 1.0, "computers": 0.8}}
    captions = {}
    robustness.graph_robustness_figure(records, "edge_dropping", tmp_path, captions)
    assert "On photo/sgcn tab:alpha_gnn sets f-LIF's alpha to 1.0" in captions["graph_edge_dropping"]
    assert "computers/sgcn tab" not in captions["graph_edge_dropping"]
    for r in records:
        del r["config"]["alpha_per_dataset"]
    robustness.graph_robustness_figure(records, "edge_dropping", tmp_path, captions)
    assert "alpha to 1.0" not in captions["graph_edge_dropping"]


def test_a_figure_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """A disk that fills up while a figure is saved: the error names the file, the previous figure stays whole and
    no partial file is left; a link in the figure's place is replaced, never followed."""
    import errno
    import io

    import fsnn.atomic

    fig = matplotlib.figure.Figure(figsize=(2, 2))
    fig.subplots().plot([0, 1], [1, 0])
    out = tmp_path / "figures"
    out.mkdir()
    elsewhere = tmp_path / "victim.png"
    elsewhere.write_bytes(b"kept")
    (out / "f.png").symlink_to(elsewhere)
    (out / "f.pdf").write_bytes(b"the previous figure")

    class Full(io.FileIO):
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsnn.atomic, "open", lambda path, mode="r": io.BufferedWriter(Full(path, "wb")), raising=False)
    with pytest.raises(OSError, match=f"cannot write {out / 'f.png'}: No space left on device"):
        style.save(fig, out, "f")
    assert (
        sorted(p.name for p in out.iterdir()) == ["f.pdf", "f.png"]
        and (out / "f.pdf").read_bytes() == b"the previous figure"
    )
    monkeypatch.undo()
    style.save(fig, out, "f")
    assert not (out / "f.png").is_symlink() and elsewhere.read_bytes() == b"kept"
    assert (out / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_the_figures_folder_as_a_link_out_of_the_results_tree_is_refused(tmp_path, capsys):
    from fsnn.report import cli

    results, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    results.mkdir()
    elsewhere.mkdir()
    (elsewhere / "figures.json").write_text(json.dumps({"written": ["kept"]}))
    (elsewhere / "kept.png").write_bytes(b"kept")
    (results / "figures").symlink_to(elsewhere)
    with pytest.raises(SystemExit) as stop:
        cli.main(["figures", "--results", str(results)])
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"fsnn: error: {results / 'figures'}: a link leads it to {elsewhere}"
    )
    assert sorted(p.name for p in elsewhere.iterdir()) == ["figures.json", "kept.png"]


def test_the_claims_figure_of_a_first_run_per_neuron(tmp_path, drawn):
    """One run of f-LIF beside two of the baseline (a first sweep, one seed): the claim is undecided and drawn as
    its difference without an interval; a pair without a run on one side draws no point."""
    from helpers import T2, run_record

    runs = [
        run_record(T2, f"{n}{s}", "cora", "sgcn", n, s, acc + 0.01 * s)
        for n, acc, seeds in (("flif", 0.86, 1), ("sj_lif", 0.85, 2))
        for s in range(seeds)
    ]
    for i, run in enumerate(runs):
        run["_path"] = f"/r/{i}/metrics.json"
    sections = claims_figures.claim_sections(runs)
    assert [c["size"].low for _, found in sections for c in found if c["size"]] == [None]
    assert [p.name for p in claims_figures.claims_figure(sections, tmp_path)] == ["claims.png", "claims.pdf"]
    ax = drawn["claims"].axes[0]
    assert len(ax.lines) >= 2 and not ax.collections  # the point and the paper's cross; no interval's bar
