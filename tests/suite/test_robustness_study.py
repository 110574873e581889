"""The robustness study: the score (hand computed, and the paper's tables reproduced), a corruption checked
before any data, the config groups that hold the levels, and `fsnn-evaluate study=robustness` on event and graph
runs, through to the table and the figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import robustness_levels, run_app
from omegaconf import OmegaConf

from fsnn.checks import round_count
from fsnn.data.corruptions import (
    CORRUPTIONS,
    occlusion_box,
)
from fsnn.suite.robustness import check_corruption, robustness_score

LEVELS, GRAPH_LEVELS = robustness_levels("events"), robustness_levels("graph")


def test_robustness_score_hand_computed():
    # mean(0.8, 0.6, 0.4) / 0.8 * 100 = 0.6 / 0.8 * 100 = 75
    assert robustness_score(0.8, [0.8, 0.6, 0.4]) == pytest.approx(75.0)
    assert robustness_score(0.8, {0.1: 0.8, 0.2: 0.6, 0.3: 0.4}) == pytest.approx(75.0)
    assert robustness_score(0.5, [0.5, 0.5]) == pytest.approx(100.0)
    # explicit weights: 0.5 * 1.0 + 0.5 * 0.5 = 0.75 -> 75; unequal 0.25 * 1 + 0.75 * 0.5 = 0.625 -> 62.5
    assert robustness_score(0.8, [0.8, 0.4], weights=[0.5, 0.5]) == pytest.approx(75.0)
    assert robustness_score(0.8, [0.8, 0.4], weights=[0.25, 0.75]) == pytest.approx(62.5)
    with pytest.raises(ValueError):
        robustness_score(0.0, [0.5])
    with pytest.raises(ValueError):
        robustness_score(0.9, [])
    with pytest.raises(ValueError):
        robustness_score(0.9, [0.5], weights=[0.5, 0.5])


@pytest.mark.parametrize(
    "accs, clean, printed",
    [
        ([0.9236, 0.9062, 0.9062, 0.8993, 0.8646], 0.9480, 94.93),  # tab:discard, f-SNN
        ([0.9137, 0.9023, 0.8854, 0.8646, 0.8472], 0.9340, 94.50),  # tab:discard, SJ
        (
            [0.9167, 0.9132, 0.9236, 0.9306, 0.9062, 0.8750, 0.8785, 0.9028, 0.8889],
            0.9480,
            95.35,
        ),  # tab:temporal_jitter
        ([0.9410, 0.9410, 0.9271, 0.9167, 0.8237], 0.9480, 95.98),  # tab:temporal_truncate, f-SNN
        ([0.8681, 0.8368, 0.8264, 0.7396, 0.6493], 0.8899, 88.10),  # tab:occlude_block, snnTorch
    ],
)
def test_robustness_score_reproduces_paper_tables(accs, clean, printed):
    assert robustness_score(clean, accs) == pytest.approx(printed, abs=0.011)


def test_check_corruption_validates_before_any_data():
    assert check_corruption("vision", "gaussian_noise", [0.1, 1]) == [0.1, 1.0]
    assert check_corruption("graph", "spike_noise", [0.5]) == [0.5]
    bad = [
        (("vision", "nope", [0.1]), "vision corruption must be one of .*, got 'nope'"),
        (("graph", "gaussian_noise", [0.1]), "graph corruption must be one of"),
        (("vision", "center_occlusion", [0.2, 1.5]), "center_occlusion at level 1.5"),
        (("vision", "frame_discard", []), "non-empty list"),
        (("vision", "frame_discard", "0.1"), "non-empty list"),
        (("vision", "frame_discard", [True]), "numbers"),
        (("vision", "temporal_jitter", [0.1], {"boundary": "drop"}), "boundary"),
        (("vision", "frame_discard", [0.1], {"mode": "tail"}), "unexpected keyword"),
        (("graph", "spike_noise", [-0.1]), "spike noise std"),
        (("graph", "spike_noise", [0.1], {"scale": 2}), "takes no options"),
        (("graph", "edge_dropping", [2.0]), "ratio must be in"),
        (("pixels", "gaussian_noise", [0.1]), "pixels corruption must be one of"),
    ]
    for args, message in bad:
        with pytest.raises(ValueError, match=message):
            check_corruption(*args)


@pytest.mark.parametrize("name, kind", [("events", "vision"), ("graph", "graph")])
def test_config_groups_hold_the_levels(compose_cfg, name, kind):
    cfg = compose_cfg("run_dir=x", f"robustness={name}", config_name="eval")
    corruptions = OmegaConf.to_container(cfg.robustness.corruptions)
    assert set(corruptions) == set(CORRUPTIONS.names(family=kind))
    for corruption, entry in corruptions.items():
        levels = check_corruption(kind, corruption, entry["levels"], entry.get("options"))
        assert levels == sorted(levels) and len(levels) >= 5, corruption
    assert not compose_cfg("run_dir=x", config_name="eval").robustness  # default: none


def _fixture_run(root: Path, compose_cfg, *overrides: str) -> Path:
    """A finished run folder as train.py leaves one (``.hydra/config.yaml``, ``checkpoints/best.ckpt``,
    ``metrics.json``), trained in process for one epoch of two batches on fixture data."""
    import lightning as L

    from fsnn.suite.checkpoint import RunCheckpointIO, result_config
    from fsnn.suite.tasks import build_task

    cfg = compose_cfg(*overrides, "logger=none")
    cfg = OmegaConf.create({k: v for k, v in cfg.items() if k != "hydra"})
    run_dir = root / "run"
    (run_dir / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, run_dir / ".hydra" / "config.yaml")
    L.seed_everything(cfg.seed, verbose=False)
    module, data, _ = build_task(cfg)
    trainer = L.Trainer(
        max_epochs=1,
        limit_train_batches=2,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        plugins=[RunCheckpointIO(result_config(cfg))],
    )
    trainer.fit(module, datamodule=data)
    trainer.save_checkpoint(run_dir / "checkpoints" / "best.ckpt")
    (run_dir / "metrics.json").write_text(
        json.dumps({"status": "complete", "metric": "acc", "config": OmegaConf.to_container(cfg, resolve=True)})
    )
    return run_dir


def _spy(monkeypatch, cls, seen: list, probe):
    """Record ``probe(module, x)`` at every forward of ``cls`` (what the model is fed, pass by pass)."""
    forward = cls.forward

    def spying(self, x):
        seen.append(probe(self, x))
        return forward(self, x)

    monkeypatch.setattr(cls, "forward", spying)


def _check_study(study: dict, levels: dict, clean: float):
    assert study["metric"] == "acc" and study["clean"] == pytest.approx(clean)
    clean = study["clean"]
    assert sorted(study["corruptions"]) == sorted(levels)  # robustness.json keeps its keys sorted
    for name, entry in study["corruptions"].items():
        assert entry["levels"] == levels[name] and len(entry["acc"]) == len(levels[name])
        assert entry["by_level"] == {f"{lv:g}": a for lv, a in zip(entry["levels"], entry["acc"])}
        assert all(0.0 <= a <= 1.0 for a in entry["acc"])
        assert entry["score"] == (pytest.approx(robustness_score(clean, entry["acc"])) if clean > 0 else None)


def _check_figures(run_dir: Path, radar: bool = True):
    names = ["robustness_curves"] + (["robustness_radar"] if radar else [])
    for name in names:
        assert (run_dir / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert (run_dir / f"{name}.pdf").read_bytes()[:4] == b"%PDF"
    assert (run_dir / "robustness_radar.png").exists() == radar


VISION_RUN = (
    "dataset=dvsgesture",
    "dataset.size=32",
    "dataset.T=4",
    "dataset.batch_size=8",
    "dataset.num_workers=0",
    "backbone=dvsnet_small",
    "backbone.channels=4",
    "backbone.hidden=16",
)


def test_evaluate_events_study(tmp_path, data_root, compose_cfg, monkeypatch):
    from fsnn.suite.evaluate import evaluate
    from fsnn.suite.training import SpikingClassifier

    run_dir = _fixture_run(tmp_path, compose_cfg, *VISION_RUN, f"paths.data_dir={data_root}")
    seen: list[torch.Tensor] = []
    _spy(monkeypatch, SpikingClassifier, seen, lambda module, x: x.detach().clone())
    cfg = compose_cfg(
        f"run_dir={run_dir}",
        f"paths.data_dir={data_root}",
        "robustness=events",
        "limit_test_batches=1",
        "accelerator=cpu",
        config_name="eval",
    )
    result = evaluate(cfg)
    study = json.loads((run_dir / "robustness.json").read_text())
    assert study == json.loads(json.dumps(result["robustness"]))
    retest = json.loads((run_dir / "eval.json").read_text())
    _check_study(study, LEVELS, retest["test_acc"])
    assert study["robustness"] == "events" and study["config"]["dataset"]["name"] == "dvsgesture"
    # the re-test's rates are sorted by name in the file; beside them, its layers in the order DVSNet applies them
    order = retest["layer_order"]
    assert sorted(order) == sorted(retest["firing_rates"])
    assert order[0].startswith("features") and order[-1].startswith("classifier")
    _check_figures(run_dir)

    # what the model was fed: the clean batch, then one batch per corruption and level, in the study's order
    clean, passes = seen[0], seen[1:]
    assert len(passes) == sum(len(v) for v in LEVELS.values())
    t = clean.shape[1]
    for (name, level), x in zip([(n, lv) for n, levels in LEVELS.items() for lv in levels], passes):
        assert x.shape == clean.shape
        if name == "gaussian_noise":
            assert (x - clean).std().item() == pytest.approx(level, rel=0.05)
        elif name == "center_occlusion":
            top, left, sh, sw = occlusion_box(x.shape[-2], x.shape[-1], level)
            block = torch.zeros(x.shape[-2:], dtype=torch.bool)
            block[top : top + sh, left : left + sw] = True
            assert (x[..., block] == 0).all() and torch.equal(x[..., ~block], clean[..., ~block])
        elif name == "temporal_truncation":
            k = round_count(level, t)
            assert (x[:, t - k :] == 0).all() and torch.equal(x[:, : t - k], clean[:, : t - k])
        elif name == "temporal_jitter":
            assert torch.allclose(x.sum(1), clean.sum(1), atol=1e-4)
        else:  # frame_discard: k whole frames zeroed per sample, the others untouched
            zeroed = (x == 0).flatten(2).all(2) & ~(clean == 0).flatten(2).all(2)
            same = (x == clean).flatten(2).all(2)
            assert (zeroed | same).all() and (zeroed.sum(1) <= round_count(level, t)).all()

    # the same command gives the same study (seeded passes and corruptions)
    again = evaluate(
        compose_cfg(
            f"run_dir={run_dir}",
            f"paths.data_dir={data_root}",
            "robustness=events",
            "limit_test_batches=1",
            "accelerator=cpu",
            "~robustness.corruptions.gaussian_noise",
            "~robustness.corruptions.center_occlusion",
            "~robustness.corruptions.temporal_jitter",
            "robustness.corruptions.frame_discard.levels=[0.3]",
            "robustness.corruptions.temporal_truncation.levels=[0.5]",
            config_name="eval",
        )
    )
    assert again["robustness"]["corruptions"]["frame_discard"]["acc"] == [
        study["corruptions"]["frame_discard"]["by_level"]["0.3"]
    ]
    assert torch.equal(seen[-1], passes[-3])  # frame_discard 0.3 drew the same frames
    _check_figures(run_dir, radar=False)  # two corruptions: curves only


@pytest.mark.parametrize(
    "run",
    [
        ("dataset=cora", "backbone=sgcn"),
        ("dataset=photo", "backbone=msg", "backbone.T=3"),
    ],
)
def test_evaluate_graph_study(tmp_path, data_root, compose_cfg, monkeypatch, run):
    from fsnn.suite.evaluate import evaluate
    from fsnn.suite.training import GraphNodeClassifier

    run_dir = _fixture_run(
        tmp_path, compose_cfg, *run, "dataset.T=5", "dataset.test_repeats=1", f"paths.data_dir={data_root}"
    )
    seen: list[tuple] = []

    def probe(module, x):  # the feature rows, or the graph a full-graph model reads, and the noise probe
        inputs = (module.graph_x, module.graph_edge_index) if module.full_graph else (x,)
        return tuple(t.detach().clone() for t in inputs) + (module.model.spike_noise_std,)

    _spy(monkeypatch, GraphNodeClassifier, seen, probe)
    cfg = compose_cfg(
        f"run_dir={run_dir}", f"paths.data_dir={data_root}", "robustness=graph", "accelerator=cpu", config_name="eval"
    )
    result = evaluate(cfg)
    study = json.loads((run_dir / "robustness.json").read_text())
    _check_study(study, GRAPH_LEVELS, result["test_acc"])
    _check_figures(run_dir)

    # one pass per level, after the clean pass (SGCN: one batch of rows per pass)
    per_pass = len(seen) // (1 + sum(len(v) for v in GRAPH_LEVELS.values()))
    passes = seen[::per_pass]
    clean, names = passes[0], [(n, lv) for n, levels in GRAPH_LEVELS.items() for lv in levels]
    for (name, level), fed in zip(names, passes[1:]):
        assert fed[-1] == (level if name == "spike_noise" else 0.0)
        changed = [not torch.equal(a, b) for a, b in zip(fed[:-1], clean[:-1])]
        assert any(changed) == (name != "spike_noise"), (name, level)
        if len(fed) == 3:  # MSG reads the corrupted graph itself
            assert changed == [name == "feature_masking", name == "edge_dropping"]
    assert seen[-1][-1] == GRAPH_LEVELS["spike_noise"][-1] and passes[0][-1] == 0.0


@pytest.mark.parametrize("plan, kept", [("graph_features", "feature_masking"), ("graph_edges", "edge_dropping")])
def test_paper_graph_plans_keep_their_one_corruption(compose_cfg, plan, kept):
    """The paper's two graph studies are the graph plan with the other corruptions set to null, which the study
    skips; a plan whose corruptions are all null is refused like an empty one."""
    from fsnn.checks import ConfigError
    from fsnn.suite.studies import prepare_robustness
    from fsnn.suite.tasks import TASKS

    cfg = compose_cfg("dataset=cora", "backbone=sgcn", f"robustness={plan}")
    assert cfg.study.name == "robustness"
    options = OmegaConf.to_container(cfg.study, resolve=True)
    prepared = prepare_robustness(TASKS["node"], options)["plan"]
    graph = compose_cfg("dataset=cora", "backbone=sgcn", "robustness=graph").robustness
    assert list(prepared["corruptions"]) == [kept]
    assert prepared["corruptions"][kept][0] == list(graph.corruptions[kept].levels)
    options["plan"]["corruptions"][kept] = None
    with pytest.raises(ConfigError, match="expected a plan of corruptions"):
        prepare_robustness(TASKS["node"], options)


def test_eval_json_says_what_it_tested(tmp_path, data_root, compose_cfg):
    """eval.json records the split, the batches and samples its test pass covered and, where they differ from the
    run's own test (a smoke run tests a few batches), that the two metrics can differ and why."""
    from fsnn.suite.evaluate import evaluate

    run_dir = _fixture_run(
        tmp_path, compose_cfg, *VISION_RUN, "trainer.limit_test_batches=1", f"paths.data_dir={data_root}"
    )
    evaluate(compose_cfg(f"run_dir={run_dir}", f"paths.data_dir={data_root}", "accelerator=cpu", config_name="eval"))
    whole = json.loads((run_dir / "eval.json").read_text())["evaluated"]
    assert whole["split"] == "test" and whole["batches"] > 1 and whole["samples"] > 8
    assert whole["run_limit_test_batches"] == 1 and not whole["as_the_run_tested"]
    assert (
        "the whole test split" in whole["note"] and "the run's own test covered limit_test_batches=1" in whole["note"]
    )
    evaluate(
        compose_cfg(
            f"run_dir={run_dir}",
            f"paths.data_dir={data_root}",
            "accelerator=cpu",
            "limit_test_batches=1",
            config_name="eval",
        )
    )
    same = json.loads((run_dir / "eval.json").read_text())["evaluated"]
    assert (same["batches"], same["samples"], same["as_the_run_tested"]) == (1, 8, True)
    assert "can differ" not in same["note"]


def test_evaluate_bad_input_is_one_clear_config_error(tmp_path, data_root, compose_cfg):
    from fsnn.checks import ConfigError
    from fsnn.suite.evaluate import evaluate

    run_dir = tmp_path / "run"
    (run_dir / ".hydra").mkdir(parents=True)
    cfg = compose_cfg(*VISION_RUN, "logger=none")
    OmegaConf.save(OmegaConf.create({k: v for k, v in cfg.items() if k != "hydra"}), run_dir / ".hydra" / "config.yaml")

    def fails(*overrides, match, **changes):
        cfg = compose_cfg(f"run_dir={run_dir}", f"paths.data_dir={data_root}", *overrides, config_name="eval")
        for key, value in changes.items():
            OmegaConf.update(cfg, key.replace("__", "."), value, merge=False)
        with pytest.raises(ConfigError, match=match):
            evaluate(cfg)

    fails("robustness=events", match=r"checkpoint='best': .* does not exist \(run_dir=.* has no checkpoints")
    (run_dir / "checkpoints").mkdir()
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(b"")
    fails(match="has checkpoints last")
    (run_dir / "checkpoints" / "best.ckpt").write_bytes(b"")  # never loaded: the plan fails first
    fails(
        "robustness=events",
        "+robustness.corruptions.blur.levels=[0.1]",
        match=r"robustness.corruptions.blur: vision corruption must be one of .*got 'blur'.*robustness=events fits",
    )
    fails("robustness=graph", match=r"robustness.corruptions.feature_masking: vision corruption must be one of")
    fails(
        "robustness=events",
        "robustness.corruptions.center_occlusion.levels=[0.5,2]",
        match=r"center_occlusion at level 2",
    )
    fails("robustness=events", "+robustness.corruptions.frame_discard.repeat=3", match="unknown keys")
    fails("robustness=events", robustness__corruptions={}, match="robustness: expected a plan of corruptions")
    fails("run_dir=/nonexistent", match=r"run_dir: expected the folder of a train.py run \(with .hydra/config.yaml\)")


# -- end to end: train.py, evaluate.py robustness=..., the paper's table, the figures script ---


@pytest.mark.slow
def test_train_then_events_study_then_table_and_figures(tmp_path, data_root):
    from fsnn.report import collect, tables

    run = [
        "dataset=dvsgesture",
        "dataset.size=32",
        "dataset.T=4",
        "dataset.batch_size=8",
        "dataset.num_workers=0",
        "backbone=dvsnet",
        "backbone.channels=4",
        "backbone.num_blocks=3",
        "backbone.hidden=16",
        "neuron=flif",
        "trainer.max_epochs=1",
        "trainer.limit_train_batches=4",
        "logger=none",
        "trainer.enable_progress_bar=false",
        f"paths.data_dir={data_root}",
        "task_name=table1_neuromorphic",
    ]  # a Table 1 run: the figures draw it
    proc = run_app("train.py", *run, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = next((tmp_path / "runs" / "table1_neuromorphic").glob("*/metrics.json")).parent

    bad = run_app(
        "evaluate.py",
        f"run_dir={run_dir}",
        "robustness=events",
        "+robustness.corruptions.blur.levels=[0.1]",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "robustness.corruptions.blur: vision corruption must be one of" in bad.stderr and "got 'blur'" in bad.stderr

    ev = run_app(
        "evaluate.py",
        f"run_dir={run_dir}",
        "robustness=events",
        "limit_test_batches=3",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
    )
    assert ev.returncode == 0, ev.stderr[-3000:]
    assert "29/29" in ev.stderr  # the progress bar over every test pass
    study = json.loads((run_dir / "robustness.json").read_text())
    _check_study(study, LEVELS, json.loads((run_dir / "eval.json").read_text())["test_acc"])
    _check_figures(run_dir)

    # the paper's table from it (the paper's 128-channel row relaxed to this run's width)
    spec = next(s for s in tables.load_spec() if s["id"] == "robustness_occlude_block")
    spec["match"] = {"dataset": "dvsgesture", "backbone": "dvsnet"}
    table = tables.build_table(spec, collect.scan_runs(tmp_path / "runs").complete)
    entry = study["corruptions"]["center_occlusion"]
    expected = [100 * a for a in entry["acc"]] + [entry["score"], 100 * study["clean"]]
    for row, value in zip(table["rows"], expected):
        flif, *others = row["cells"]
        assert flif["n"] == 1 and flif["mean"] == pytest.approx(value)
        assert all(cell["n"] == 0 for cell in others)

    out = tmp_path / "figures"
    fig = run_app(
        "fsnn-report",
        "figures",
        "--results",
        str(tmp_path / "runs"),
        "--out",
        str(out),
        "--dt",
        "0.5",
        "--t-max",
        "5",
        "--t-lin",
        "5",
        "--kernel-steps",
        "101",
        cwd=tmp_path,
    )
    assert fig.returncode == 0, fig.stderr[-3000:]
    for name in (
        "firing_rates",
        "robustness_dvsgesture_dvsnet_curves",
        "robustness_dvsgesture_dvsnet_radar",
        "mittag_leffler_relaxation",
        "kernel_decay",
    ):
        assert (out / f"{name}.png").stat().st_size > 0 and (out / f"{name}.pdf").stat().st_size > 0, name
