"""The paper's experiments: every sweep composes with the paper's settings, and every `_smoke` sweep runs end to end
on fixture data and fills its paper table with exactly its own runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import one_run_cells, run_app
from omegaconf import OmegaConf

from fsnn.report.collect import scan_runs
from fsnn.report.figures import memory_horizon_figure
from fsnn.report.tables import build_table, load_spec, make_tables

# experiment -> (jobs, table id, cells of that table each filled by exactly one run)
SMOKES = {
    "table_link_prediction_smoke": (4 * 3, "link_prediction", 4 * 3),
    "table_static_smoke": (4 * 4, "static", 4 * 4),
    "ablation_alpha_smoke": (6 * 2, "alpha_ablation", 6 * 2),
    "ablation_channels_smoke": (3 * 4, "channels", 3 * 4),
    "ablation_neuron_type_smoke": (2 * 3, "neuron_type", 2 * 3),
    "ablation_memory_smoke": (9, "memory", 9 * 4),  # memory, test speed, train speed, accuracy per M
    "memory_horizon_smoke": (6 * 12, "memory_horizon", 12 * (6 + 2)),  # 6 delays, s/epoch at 2 of them
    "seq_digits_smoke": (2 * 11, "seq_digits", 11 * (2 + 1)),  # in order, permuted, s/epoch
}


def _sweep(compose_cfg, experiment: str) -> dict:
    cfg = compose_cfg(f"experiment={experiment}")
    return dict(cfg.hydra.sweeper.params)


def test_table2_uses_the_papers_alpha_per_backbone_and_dataset(compose_cfg):
    spec = next(t for t in load_spec() if t["id"] == "alpha_gnn")
    for row in spec["rows"]:
        for dataset, alpha in row["paper"].items():
            cfg = compose_cfg(
                "experiment=table2_node_classification",
                f"dataset={dataset}",
                f"backbone={row['match']['backbone']}",
                "neuron=flif",
            )
            assert cfg.neuron.alpha == alpha, (row["label"], dataset)
    # the table does not leak into other runs, baselines take no alpha, and the command line still wins
    assert compose_cfg("dataset=pubmed", "backbone=sgcn", "neuron=flif").neuron.alpha == 0.5
    assert "alpha" not in compose_cfg("experiment=table2_node_classification", "neuron=sj_lif").neuron
    assert compose_cfg("experiment=table2_node_classification", "dataset=cora", "neuron.alpha=0.7").neuron.alpha == 0.7


@pytest.mark.parametrize("experiment", sorted(SMOKES))
def test_smoke_is_the_full_sweep_shrunk(compose_cfg, experiment):
    full, smoke = _sweep(compose_cfg, experiment.removesuffix("_smoke")), _sweep(compose_cfg, experiment)
    assert {k: v for k, v in full.items() if k != "seed"} == {k: v for k, v in smoke.items() if k != "seed"}
    assert smoke["seed"] == "0"
    cfg = compose_cfg(f"experiment={experiment}")
    assert cfg.trainer.max_epochs == 1 and not cfg.logger


@pytest.mark.parametrize("neuron", ["fif", "sj_if"])
def test_link_prediction_as_the_authors_ran_it(compose_cfg, neuron):
    """The msg_authors row of the link-prediction table: every departure of the authors' MSG code switched on at once, the
    rest of the experiment unchanged; the link switches are refused for node classification."""
    from fsnn.checks import ConfigError
    from fsnn.suite.config import check_config
    from fsnn.suite.tasks import build_task

    base = compose_cfg("experiment=table_link_prediction", "dataset=photo", f"neuron={neuron}")
    cfg = compose_cfg("experiment=table_link_prediction", "dataset=photo", f"+recipe_switch={neuron}/msg_authors")
    assert (
        cfg.neuron.name,
        cfg.recipe_switch,
        cfg.dataset.authors_link_split,
        cfg.dataset.authors_link_negatives,
        cfg.backbone.decoder,
        cfg.backbone.temperature,
        cfg.backbone.authors_no_spike_gradient,
    ) == (neuron, "msg_authors", True, True, "cosine", 1.0, True)
    assert (cfg.trainer.max_epochs, cfg.backbone.T, cfg.optimizer) == (
        base.trainer.max_epochs,
        base.backbone.T,
        base.optimizer,
    )
    check_config(cfg)
    node = compose_cfg("dataset=cora", "backbone=sgcn", "+dataset.authors_link_split=true")
    with pytest.raises(ConfigError, match="dataset.authors_link_split: a switch of link prediction"):
        build_task(node)


# an LP switch -> (split by storage position, negative pool, no spike gradient, decoder)
LP_SWITCHES = {
    "none": (False, False, False, "cosine"),
    "msg_split": (True, False, False, "cosine"),
    "msg_negative_pool": (False, True, False, "cosine"),
    "msg_no_spike_gradient": (False, False, True, "cosine"),
    "msg_authors": (True, True, True, "cosine"),
    "msg_authors_but_split": (False, True, True, "cosine"),
    "msg_authors_but_negative_pool": (True, False, True, "cosine"),
    "msg_authors_data": (True, True, False, "cosine"),
    "msg_fermi_dirac": (False, False, False, "fermi_dirac"),
}


def _link_switches(cfg) -> tuple:
    return (
        cfg.dataset.get("authors_link_split", False),
        cfg.dataset.get("authors_link_negatives", False),
        cfg.backbone.get("authors_no_spike_gradient", False),
        cfg.backbone.get("decoder"),
    )


def test_lp_switch_ablation_rows_switch_what_they_name_and_fill_its_table(compose_cfg):
    """Every row of the switch ablation is the link-prediction table's matched run of its neuron with exactly the
    switches its name says, and lands in a row of its own of the ablation's table."""
    from fsnn.suite.config import check_config

    values = [v.strip() for v in _sweep(compose_cfg, "lp_switch_ablation")["+recipe_switch"].split(",")]
    spec = next(t for t in load_spec() if t["id"] == "lp_switch_ablation")
    rows = {row["match"]["recipe_switch"] for row in spec["rows"]}
    assert {value.split("/")[1] for value in values} == rows == set(LP_SWITCHES)
    for value in values:
        neuron, switch = value.split("/")
        cfg = compose_cfg("experiment=lp_switch_ablation", "dataset=physics", f"+recipe_switch={value}")
        matched = compose_cfg("experiment=table_link_prediction", "dataset=physics", f"neuron={neuron}")
        assert (cfg.neuron.name, cfg.recipe_switch, cfg.task) == (neuron, switch, "link"), value
        assert _link_switches(cfg) == (
            LP_SWITCHES[switch][:3]
            + (LP_SWITCHES[switch][3] if switch == "msg_fermi_dirac" else matched.backbone.decoder,)
        ), value
        assert (
            cfg.trainer.max_epochs,
            cfg.optimizer,
            cfg.neuron,
            {**cfg.backbone, "decoder": None, "authors_no_spike_gradient": None},
        ) == (
            matched.trainer.max_epochs,
            matched.optimizer,
            matched.neuron,
            {**matched.backbone, "decoder": None, "authors_no_spike_gradient": None},
        ), value
        check_config(cfg)


@pytest.mark.parametrize("switch", ["none", "msg_authors_data"])
def test_gae_reference_runs_on_both_splits_and_never_classifies_nodes(compose_cfg, switch):
    from fsnn.checks import ConfigError
    from fsnn.suite.config import check_config
    from fsnn.suite.tasks import task_kind

    assert _sweep(compose_cfg, "lp_gae_reference")["+recipe_switch"] == "common/none,common/msg_authors_data"
    cfg = compose_cfg("experiment=lp_gae_reference", "dataset=cs", f"+recipe_switch=common/{switch}")
    assert (cfg.backbone.name, cfg.task, cfg.recipe_switch, _link_switches(cfg)[:2]) == (
        "gae",
        "link",
        switch,
        LP_SWITCHES[switch][:2],
    )
    check_config(cfg)
    assert task_kind(cfg).name == "link"
    with pytest.raises(ConfigError, match="backbone=gae predicts links and has no classification head"):
        task_kind(compose_cfg("dataset=cora", "backbone=gae"))


def test_tuned_gae_is_the_reference_early_stopped_over_encoders_and_rates_in_a_folder_of_its_own(compose_cfg, tmp_path):
    from fsnn.suite.config import check_config
    from fsnn.suite.run_names import run_dir_name

    sweep = _sweep(compose_cfg, "lp_gae_tuned")
    assert sweep == {
        **_sweep(compose_cfg, "lp_gae_reference"),
        "seed": "range(0,5)",
        "backbone.encoder": "gcn,linear",
        "optimizer.lr": "0.01,0.005,0.001",
    }
    cell = ["dataset=photo", "+recipe_switch=common/none", "backbone.encoder=linear", "optimizer.lr=0.005", "seed=1"]
    cfg, reference = (compose_cfg(f"experiment={e}", *cell[:2], "seed=1") for e in ("lp_gae_tuned", "lp_gae_reference"))
    assert (cfg.task_name, cfg.trainer.max_epochs, cfg.early_stopping.patience) == ("lp_gae_tuned", 2000, 100)
    assert not reference.early_stopping and reference.trainer.max_epochs == 200
    # the rest is the reference's: the same splits, model and optimizer
    for key in ("task", "backbone", "optimizer", "scheduler", "dataset", "recipe_switch"):
        assert cfg[key] == reference[key], key
    cfg = compose_cfg("experiment=lp_gae_tuned", *cell, f"paths.results_dir={tmp_path}")
    check_config(cfg)
    assert (cfg.backbone.encoder, cfg.optimizer.lr) == ("linear", 0.005)
    folder = "+recipe_switch-common_none+backbone.encoder-linear+dataset-photo+optimizer.lr-0.005+seed-1"
    assert run_dir_name(None, cfg.hydra.overrides.task, cfg) == folder


def test_paper_settings_reach_the_run(compose_cfg):
    memory = compose_cfg("experiment=ablation_memory", "setup=dvsgesture_cnn", "neuron.memory=4")
    assert (memory.dataset.name, memory.dataset.batch_size, memory.dataset.T, memory.neuron.memory) == (
        "dvsgesture",
        16,
        16,
        4,
    )
    link = compose_cfg("experiment=table_link_prediction", "dataset=cs", "neuron=fif")
    assert (link.task, link.backbone.name, link.backbone.manifold, link.backbone.dim) == ("link", "msg", "lorentz", 32)
    static = compose_cfg("experiment=table_static", "setup=cifar100_resnet18")
    assert (static.dataset.name, static.backbone.name, static.dataset.T) == ("cifar100", "resnet18", 4)
    imagenet = compose_cfg("experiment=table_static", "setup=imagenet_spikformer")
    assert (imagenet.backbone.name, imagenet.dataset.size, imagenet.dataset.encoder) == (
        "spikformer_imagenet",
        160,
        "direct",
    )
    spikes = compose_cfg("experiment=table_static", "setup=imagenet_spikformer_spike")
    assert OmegaConf.to_container(spikes.dataset) == {**OmegaConf.to_container(imagenet.dataset), "encoder": "spike"}
    assert spikes.backbone == imagenet.backbone and spikes.optimizer == imagenet.optimizer


@pytest.mark.slow
@pytest.mark.parametrize("experiment", sorted(SMOKES))
def test_smoke_sweep_then_table(tmp_path, data_root, experiment):
    jobs, table_id, cells = SMOKES[experiment]
    proc = run_app("train.py", f"experiment={experiment}", f"paths.data_dir={data_root}", cwd=tmp_path, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    paths = sorted((tmp_path / "runs" / experiment).glob("*/metrics.json"))
    runs = [json.loads(p.read_text()) for p in paths]
    assert len(runs) == jobs and all(r["status"] == "complete" for r in runs)
    assert all(r["train_samples_per_s"] > 0 and r["test_samples_per_s"] > 0 and r["peak_memory_gib"] > 0 for r in runs)

    make_tables(tmp_path / "runs", tmp_path / "tables", echo=lambda *a, **k: None)
    assert (tmp_path / "tables" / f"{table_id}.tex").exists()
    assert one_run_cells((tmp_path / "tables" / f"{table_id}.md").read_text()) == cells

    # every filled cell is its run's own number (percent for accuracies)
    spec = next(t for t in load_spec() if t["id"] == table_id)
    table = build_table(spec, scan_runs(tmp_path / "runs").complete)
    for row in table["rows"]:
        for column, cell in zip(spec["columns"], row["cells"]):
            if not cell["n"]:
                continue
            run = json.loads(Path(cell["runs"][0]).read_text())
            source = column.get("value", spec.get("value", "test"))
            want = run[f"test_{run['metric']}"] * 100 if source == "test" else run[source[0]]
            assert cell["mean"] == pytest.approx(want), (row["label"], column["key"])

    if table_id == "memory_horizon":  # its figure too: accuracy and s/epoch against the delay
        figures = memory_horizon_figure(scan_runs(tmp_path / "runs").complete, tmp_path / "figures")
        assert sorted(p.name for p in figures) == ["memory_horizon.pdf", "memory_horizon.png"]
        assert all(p.stat().st_size > 10_000 for p in figures)


# -- recipe=authors ------------------------------------------------------------------------------------------------


def test_authors_recipe_is_their_released_settings(compose_cfg):
    base = ("experiment=table2_node_classification", "dataset=cora", "recipe=authors")
    flif = compose_cfg(*base, "backbone=sgcn", "neuron=flif")
    assert flif.recipe == "authors"
    neuron = OmegaConf.to_container(flif.neuron, resolve=True)
    # spikeDE's run_sgcn_cora.sh: alpha 0.9 with gl, h = 0.1, learnable tau from 2 tau0 = 4; spikeDE's numerics
    assert {
        k: neuron[k]
        for k in ("alpha", "method", "dt", "tau", "learn_tau", "convention", "surrogate", "surrogate_scale")
    } == {
        "alpha": 0.9,
        "method": "gl",
        "dt": 0.1,
        "tau": 4.0,
        "learn_tau": True,
        "convention": "spikede",
        "surrogate": "arctan",
        "surrogate_scale": 5.0,
    }
    # the graph scripts' training recipe
    assert (
        flif.dataset.batch_size,
        flif.optimizer.weight_decay,
        flif.trainer.gradient_clip_val,
        flif.backbone.bias,
        flif.lr_monitor,
    ) == (512, 1e-4, 1.0, False, "val/loss")
    assert OmegaConf.to_container(flif.scheduler) == {
        "_target_": "torch.optim.lr_scheduler.ReduceLROnPlateau",
        "_partial_": True,
        "mode": "min",
        "factor": 0.5,
        "patience": 25,
        "min_lr": 1e-6,
    }
    # fspikeDE's SpikingJelly baseline: SpikingJelly's defaults (hard reset to 0, Sigmoid alpha 4), decay_input off
    sj = OmegaConf.to_container(compose_cfg(*base, "backbone=sgcn", "neuron=sj_lif").neuron, resolve=True)
    assert {k: sj[k] for k in ("reset", "v_reset", "decay_input", "tau", "surrogate", "surrogate_scale")} == {
        "reset": "hard",
        "v_reset": 0.0,
        "decay_input": False,
        "tau": 2.0,
        "surrogate": "sigmoid",
        "surrogate_scale": 4.0,
    }
    drsgnn = compose_cfg(*base, "backbone=drsgnn", "neuron=sj_lif")
    assert drsgnn.neuron.tau == 12.0  # fspikeDE's DRSGCN baseline
    assert compose_cfg(*base, "backbone=drsgnn", "neuron=lif").neuron.tau == 10.0  # run_drsgnn_cora.sh: tau0 5
    # without a released script for the setting only the neurons change; the matched recipe changes nothing
    pubmed = compose_cfg("experiment=table2_node_classification", "dataset=pubmed", "recipe=authors", "neuron=flif")
    assert (pubmed.dataset.batch_size, pubmed.neuron.convention, pubmed.neuron.dt) == (32, "spikede", 1.0)
    matched = compose_cfg("experiment=table2_node_classification", "dataset=cora", "neuron=sj_lif")
    assert matched.recipe == "matched" and matched.neuron.reset == "soft" and "decay_input" not in matched.neuron
    n101 = compose_cfg("setup=ncaltech101_transformer", "recipe=authors", "neuron=flif")
    assert (n101.optimizer._target_, n101.optimizer.weight_decay, n101.neuron.alpha, n101.dataset.batch_size) == (
        "torch.optim.AdamW",
        0.06,
        0.1,
        32,
    )
    hardvs = compose_cfg("setup=hardvs_cnn", "dataset=hardvs_mini", "recipe=authors", "neuron=flif")
    assert (hardvs.neuron.alpha, hardvs.trainer.max_epochs, hardvs.backbone.voting) == (0.8, 400, 1)


@pytest.mark.parametrize("neuron", ["flif", "lif", "fif", "if", "sj_lif", "sj_if", "snntorch_leaky"])
@pytest.mark.parametrize(
    "setting",
    [
        ("cora", "sgcn"),
        ("citeseer", "drsgnn"),
        ("ncaltech101", "spikformer"),
        ("hardvs_mini", "dvsnet"),
        ("cifar10", "resnet18"),
    ],
)
def test_authors_recipe_builds_every_neuron(compose_cfg, setting, neuron):
    from fsnn import build_neuron

    dataset, backbone = setting
    cfg = compose_cfg(f"dataset={dataset}", f"backbone={backbone}", f"neuron={neuron}", "recipe=authors")
    options = OmegaConf.to_container(cfg.neuron, resolve=True)
    built = build_neuron(options.pop("name"), **options)
    assert built.threshold is not None


def test_authors_recipe_runs_and_is_recorded(tmp_path, data_root):
    proc = run_app(
        "train.py",
        "experiment=table2_node_classification",
        "hydra.mode=RUN",
        "dataset=cora",
        "backbone=drsgnn",
        "neuron=sj_lif",
        "recipe=authors",
        "+smoke=graph",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = next((tmp_path / "runs" / "table2_node_classification").glob("*/metrics.json"))
    assert "recipe-authors" in path.parent.name  # its own run folder, beside the matched run of the same command
    run = json.loads(path.read_text())
    assert run["status"] == "complete" and run["recipe"] == "authors" == run["config"]["recipe"]
    assert (run["config"]["neuron"]["reset"], run["config"]["scheduler"]["_target_"]) == (
        "hard",
        "torch.optim.lr_scheduler.ReduceLROnPlateau",
    )
    make_tables(tmp_path / "runs", tmp_path / "tables", echo=lambda *a, **k: None)
    assert one_run_cells((tmp_path / "tables" / "node_classification_authors.md").read_text())
    assert not one_run_cells((tmp_path / "tables" / "node_classification.md").read_text())


# -- the recipe ablation (experiment=recipe_ablation_cora) ------------------------------------------------------------
ABLATION = "experiment=recipe_ablation_cora", "dataset=cora", "backbone=sgcn"


def _ablation_cases(compose_cfg, experiment: str = "recipe_ablation_cora") -> list[str]:
    return [case.strip() for case in _sweep(compose_cfg, experiment)["+recipe_switch"].split(",")]


def test_recipe_ablation_switches_one_setting_each(compose_cfg):
    """Every case of the sweep changes the matched recipe in exactly the place its name says, for its own neuron."""
    cases = _ablation_cases(compose_cfg)
    assert len(cases) == len(set(cases)) == 32
    reference = {}
    for neuron in ("flif", "sj_lif"):
        cfg = compose_cfg(*ABLATION, f"+recipe_switch={neuron}/none")
        assert (cfg.neuron.name, cfg.recipe, cfg.recipe_switch, cfg.trainer.max_epochs) == (
            neuron,
            "matched",
            "none",
            100,
        )
        reference[neuron] = OmegaConf.to_container(cfg, resolve=False)

    def changed(case: str) -> set[str]:
        neuron = case.split("/")[0]
        cfg = OmegaConf.to_container(compose_cfg(*ABLATION, f"+recipe_switch={case}"), resolve=False)
        assert cfg["neuron"]["name"] == neuron

        def flat(d: dict, p: str = "") -> dict:
            return {
                k2: v2
                for k, v in d.items()
                for k2, v2 in (flat(v, f"{p}{k}.").items() if isinstance(v, dict) else [(f"{p}{k}", v)])
            }

        old, new = flat(reference[neuron]), flat(cfg)
        return {
            k
            for k in old.keys() | new.keys()
            if old.get(k) != new.get(k) and k != "recipe_switch" and not k.startswith("hydra.")
        }

    assert changed("sj_lif/reset") == {"neuron.reset"}  # v_reset is 0 in both
    assert changed("sj_lif/decay_input") == {"neuron.decay_input"}
    assert changed("flif/reset") == {"neuron.convention"}
    assert changed("flif/alpha") == {"neuron.alpha", "neuron.method"}
    assert changed("flif/step") == {"neuron.dt"}
    assert changed("flif/learn_tau") == {"neuron.learn_tau", "neuron.tau"}
    assert changed("flif/surrogate") == {"neuron.surrogate", "neuron.surrogate_scale"}
    assert changed("sj_lif/surrogate") == {"neuron.surrogate_scale"}  # sigmoid already, its scale 5 -> 4
    assert changed("flif/batch_wd") == {"dataset.batch_size", "optimizer.weight_decay"}
    assert changed("sj_lif/fspikede_features") == {"dataset.hops", "dataset.zscore"}
    assert changed("flif/fspikede_frozen_encoding") == {"backbone.authors_frozen_encoding"}
    assert changed("sj_lif/fspikede_double_softmax") == {"backbone.authors_double_softmax"}
    assert {"scheduler._target_", "trainer.gradient_clip_val", "backbone.bias", "lr_monitor"} <= changed(
        "flif/schedule_clip_bias"
    )
    assert changed("flif/fspikede_readout") == {"backbone.authors_cumulated_readout"}
    assert changed("sj_lif/fspikede") == {
        "dataset.hops",
        "dataset.zscore",
        "backbone.authors_frozen_encoding",
        "backbone.authors_double_softmax",
    }
    # recipe=authors, alone, with the fspikeDE switches and with the read-out
    authors = compose_cfg(*ABLATION, "+recipe_switch=sj_lif/authors_fspikede")
    assert (
        authors.recipe,
        authors.neuron.reset,
        authors.dataset.hops,
        authors.backbone.authors_frozen_encoding,
        authors.backbone.authors_double_softmax,
        authors.dataset.batch_size,
    ) == ("authors", "hard", 2, True, True, 512)
    readout = compose_cfg(*ABLATION, "+recipe_switch=flif/authors_readout")
    assert (readout.recipe, readout.neuron.convention, readout.backbone.authors_cumulated_readout) == (
        "authors",
        "spikede",
        True,
    )
    # the paper's comparison as the authors ran it: each neuron through its own code path, on the same features
    assert changed("flif/published") == {
        "dataset.hops",
        "dataset.zscore",
        "backbone.authors_cumulated_readout",
        "backbone.authors_double_softmax",
        "neuron.convention",
        "neuron.learn_tau",
        "neuron.tau",
        "neuron.surrogate_scale",
    }
    assert changed("sj_lif/published") == {
        "dataset.hops",
        "dataset.zscore",
        "backbone.authors_frozen_encoding",
        "backbone.authors_double_softmax",
        "backbone.dropout",
        "neuron.decay_input",
        "neuron.reset",
        "neuron.surrogate_scale",
    }


def test_citeseer_recipe_ablation_is_the_cora_one_on_citeseer(compose_cfg):
    cases = _ablation_cases(compose_cfg, "recipe_ablation_citeseer")
    assert len(cases) == len(set(cases)) == 12 and set(cases) <= set(_ablation_cases(compose_cfg))
    cfg = compose_cfg(
        "experiment=recipe_ablation_citeseer", "dataset=citeseer", "backbone=sgcn", "+recipe_switch=flif/none"
    )
    assert (cfg.task_name, cfg.neuron.alpha, cfg.trainer.max_epochs) == ("recipe_ablation_citeseer", 0.3, 100)


def test_recipe_ablation_cases_build_their_model(compose_cfg):
    from fsnn.models import build_backbone
    from fsnn.suite.tasks import graph_options

    for case in _ablation_cases(compose_cfg):
        cfg = compose_cfg(*ABLATION, f"+recipe_switch={case}")
        OmegaConf.resolve(cfg.neuron)
        model = build_backbone("sgcn", in_features=20, num_classes=3, **graph_options(cfg))
        assert model.neuron is not None, case
