"""The figures (fsnn.figures, scripts/figures.py): files written, data from runs, skips without data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import robustness_levels, run_app
from fsnn import figures
from fsnn.robustness import robustness_score

LEVELS = robustness_levels("events")


def _is_figure(path: Path) -> bool:
    head = path.read_bytes()[:4]
    return path.stat().st_size > 1000 and head in (b"\x89PNG", b"%PDF")


def _study(neuron: str, drop: float, corruptions=tuple(LEVELS), dataset: str = "dvsgesture") -> dict:
    """A robustness.json record whose accuracy falls by ``drop`` per unit of level."""
    clean = 0.9
    entries = {}
    for name in corruptions:
        accs = [clean - drop * level for level in LEVELS[name]]
        entries[name] = {"levels": LEVELS[name], "acc": accs, "score": robustness_score(clean, accs),
                         "by_level": {f"{lv:g}": a for lv, a in zip(LEVELS[name], accs)}}
    return {"metric": "acc", "clean": clean, "corruptions": entries,
            "config": {"dataset": {"name": dataset}, "backbone": {"name": "dvsnet"}, "neuron": {"name": neuron}}}


def _run(neuron: str, rates: dict, dataset: str = "dvsgesture", **extra) -> dict:
    return {"status": "complete", "metric": "acc", "test_acc": 0.5, "firing_rates": rates,
            "config": {"dataset": {"name": dataset}, "backbone": {"name": "dvsnet"}, "neuron": {"name": neuron}},
            **extra}


def test_theory_figures_are_computed_and_written(tmp_path):
    lines = []
    paths = figures.relaxation_figure(tmp_path, dt=0.1, t_max=5.0, t_lin=2.0, echo=lines.append)
    paths += figures.kernel_figure(tmp_path, steps=101, echo=lines.append)
    assert [p.name for p in paths] == ["mittag_leffler_relaxation.png", "mittag_leffler_relaxation.pdf",
                                       "kernel_decay.png", "kernel_decay.pdf"]
    assert all(_is_figure(p) for p in paths)
    # the printed diagnostics come from the computation: the fitted kernel slopes approach alpha - 1
    slopes = [float(line.split("= ")[1].split()[0]) for line in lines if "kernel alpha" in line]
    assert slopes == pytest.approx([-0.8, -0.6, -0.4, -0.2], abs=0.01)
    t, relax = figures.simulate_relaxation(1.0, dt=0.01, t_max=2.0, engine="direct")
    assert np.allclose(relax, np.exp(-t), atol=0.01)  # alpha = 1: the exponential


def test_robustness_figures_curves_and_radar(tmp_path):
    records = [_study("flif", 0.1), _study("flif", 0.2), _study("sj_lif", 0.5)]
    paths = figures.robustness_figures(records, tmp_path, "study")
    assert [p.name for p in paths] == ["study_curves.png", "study_curves.pdf", "study_radar.png", "study_radar.pdf"]
    assert all(_is_figure(p) for p in paths)
    # fewer than three corruptions: curves only, and a radar left from an earlier study is removed
    few = [_study("flif", 0.1, corruptions=("gaussian_noise", "frame_discard"))]
    messages = []
    paths = figures.robustness_figures(few, tmp_path, "study", echo=messages.append)
    assert [p.name for p in paths] == ["study_curves.png", "study_curves.pdf"]
    assert not (tmp_path / "study_radar.png").exists() and "no radar" in messages[0]
    assert figures.robustness_figures([], tmp_path) == []


def test_labels_and_settings():
    record = _study("flif", 0.1)
    assert figures.neuron_label(record) == "f-LIF (f-SNN)" and figures.setting(record) == "dvsgesture_dvsnet"
    assert figures.neuron_label({"config": {"neuron": {"name": "mine"}}}) == "mine"
    assert figures.setting({}) == "unknown_unknown"


def test_firing_rate_figure(tmp_path):
    runs = [_run("flif", {"features.0.2": 0.1, "classifier.3": 0.05}), _run("flif", {"features.0.2": 0.2}),
            _run("lif", {"features.0.2": 0.3, "classifier.3": 0.01}), _run("flif", {}, dataset="cora")]
    paths = figures.firing_rate_figure(runs, tmp_path)
    assert [p.name for p in paths] == ["firing_rates.png", "firing_rates.pdf"] and all(map(_is_figure, paths))
    assert figures.firing_rate_figure([_run("flif", {})], tmp_path / "none") == []
    assert not (tmp_path / "none").exists()


def _node_run(experiment: str, neuron: str, acc: float, alpha=None, epochs=10, recipe="matched") -> dict:
    config = {"dataset": {"name": "cora", "T": 100}, "backbone": {"name": "sgcn"}, "trainer": {"max_epochs": epochs},
              "neuron": {"name": neuron, **({"alpha": alpha, "learn_alpha": False} if alpha is not None else {})}}
    return {"status": "complete", "task": experiment, "metric": "acc", "test_acc": acc, "recipe": recipe,
            "config": config}


def test_alpha_curve_figure(tmp_path):
    sweep = [_node_run("ablation_alpha_node", "flif", 0.85 + 0.01 * a, alpha=a) for a in (0.1, 0.5, 1.0) for _ in "ab"]
    table2 = [_node_run("table2_node_classification", n, 0.87) for n in ("lif", "sj_lif", "snntorch_leaky")]
    other = [_node_run("table2_node_classification", "lif", 0.80, epochs=100),  # trained differently: not drawn
             _node_run("ablation_alpha_node", "flif", 0.5, alpha=0.3, recipe="authors")]
    paths = figures.alpha_curve_figure(sweep + table2 + other, tmp_path)
    assert [p.name for p in paths] == ["alpha_cora_sgcn.png", "alpha_cora_sgcn.pdf"] and all(map(_is_figure, paths))
    assert figures._comparable(table2[0], sweep[0]) and not figures._comparable(other[0], sweep[0])
    # fewer than three alphas of the matched recipe: no curve
    assert figures.alpha_curve_figure(sweep[:4] + other, tmp_path / "none") == []
    assert not (tmp_path / "none").exists()


def _write(root: Path, name: str, record: dict, study: dict | None = None):
    run = root / "task" / name
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps(record))
    if study is not None:
        (run / "robustness.json").write_text(json.dumps(study))


def test_figures_script(tmp_path):
    results, out = tmp_path / "results", tmp_path / "figures"
    _write(results, "flif", _run("flif", {"features.0.2": 0.1}), _study("flif", 0.1))
    _write(results, "sj", _run("sj_lif", {"features.0.2": 0.2}), _study("sj_lif", 0.4))
    _write(results, "nc", _run("flif", {"neuron": 0.3}, dataset="cora"))
    (results / "task" / "broken").mkdir()
    (results / "task" / "broken" / "metrics.json").write_text("{")
    proc = run_app("scripts/figures.py", "--dt", "0.5", "--t-max", "5", "--t-lin", "5", "--kernel-steps", "101",
                   "--results", str(results), "--out", str(out), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = {"mittag_leffler_relaxation", "kernel_decay", "firing_rates", "robustness_dvsgesture_dvsnet_curves",
             "robustness_dvsgesture_dvsnet_radar"}
    assert {p.name for p in out.iterdir()} == {f"{n}.{ext}" for n in names for ext in ("png", "pdf")}
    assert all(_is_figure(p) for p in out.iterdir())
    assert "corrupt, skipped" in proc.stdout and "broken" in proc.stdout

    # no runs: each figure from runs says why it is skipped
    empty, lines = tmp_path / "empty", []
    empty.mkdir()
    assert figures.run_figures(empty, tmp_path / "nothing", echo=lines.append) == []
    assert [line.split(":")[-1].strip() for line in lines] == [
        "firing-rate figure skipped", "alpha curve skipped", "robustness figures skipped",
        "memory-horizon figure skipped"]
    assert not (tmp_path / "nothing").exists()
