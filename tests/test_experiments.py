"""The paper's experiments: every sweep composes with the paper's settings, and every `_smoke` sweep runs end to end
on fixture data and fills its paper table with exactly its own runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from conftest import run_app
from fsnn.tables import build_table, load_spec, make_tables, scan_runs

# experiment -> (jobs, table id, cells of that table each filled by exactly one run)
SMOKES = {
    "table_link_prediction_smoke": (4 * 3, "link_prediction", 4 * 3),
    "table_static_smoke": (4 * 4, "static", 4 * 4),
    "ablation_alpha_smoke": (6 * 2, "alpha_ablation", 6 * 2),
    "ablation_channels_smoke": (3 * 4, "channels", 3 * 4),
    "ablation_neuron_type_smoke": (2 * 3, "neuron_type", 2 * 3),
    "ablation_memory_smoke": (9, "memory", 9 * 4),  # memory, test speed, train speed, accuracy per M
}


def _sweep(compose_cfg, experiment: str) -> dict:
    cfg = compose_cfg(f"experiment={experiment}")
    return dict(cfg.hydra.sweeper.params)


def test_table2_uses_the_papers_alpha_per_backbone_and_dataset(compose_cfg):
    spec = next(t for t in load_spec() if t["id"] == "alpha_gnn")
    for row in spec["rows"]:
        for dataset, alpha in row["paper"].items():
            cfg = compose_cfg("experiment=table2_node_classification", f"dataset={dataset}",
                              f"backbone={row['match']['backbone']}", "neuron=flif")
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


def test_paper_settings_reach_the_run(compose_cfg):
    memory = compose_cfg("experiment=ablation_memory", "setup=dvsgesture_cnn", "neuron.memory=4")
    assert (memory.dataset.name, memory.dataset.batch_size, memory.dataset.T, memory.neuron.memory) == (
        "dvsgesture", 16, 16, 4)
    link = compose_cfg("experiment=table_link_prediction", "dataset=cs", "neuron=fif")
    assert (link.task, link.backbone.name, link.backbone.manifold, link.backbone.dim) == ("link", "msg", "lorentz", 32)
    static = compose_cfg("experiment=table_static", "setup=cifar100_resnet18")
    assert (static.dataset.name, static.backbone.name, static.dataset.T) == ("cifar100", "resnet18", 4)
    imagenet = compose_cfg("experiment=table_static", "setup=imagenet_spikformer")
    assert (imagenet.backbone.name, imagenet.dataset.size, imagenet.dataset.encoder) == (
        "spikformer_imagenet", 160, "direct")
    spikes = compose_cfg("experiment=table_static", "setup=imagenet_spikformer_spike")
    assert OmegaConf.to_container(spikes.dataset) == {**OmegaConf.to_container(imagenet.dataset), "encoder": "spike"}
    assert spikes.backbone == imagenet.backbone and spikes.optimizer == imagenet.optimizer


@pytest.mark.slow
@pytest.mark.parametrize("experiment", sorted(SMOKES))
def test_smoke_sweep_then_table(tmp_path, data_root, experiment):
    jobs, table_id, cells = SMOKES[experiment]
    proc = run_app("train.py", f"experiment={experiment}", f"paths.data_dir={data_root}", cwd=tmp_path, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    paths = sorted((tmp_path / "results" / experiment).glob("*/metrics.json"))
    runs = [json.loads(p.read_text()) for p in paths]
    assert len(runs) == jobs and all(r["status"] == "complete" for r in runs)
    assert all(r["train_samples_per_s"] > 0 and r["test_samples_per_s"] > 0 and r["peak_memory_gib"] > 0 for r in runs)

    make_tables(tmp_path / "results", tmp_path / "tables", echo=lambda *a, **k: None)
    assert (tmp_path / "tables" / f"{table_id}.tex").exists()
    assert (tmp_path / "tables" / f"{table_id}.md").read_text().count("(n=1)") == cells

    # every filled cell is its run's own number (percent for accuracies)
    spec = next(t for t in load_spec() if t["id"] == table_id)
    table = build_table(spec, scan_runs(tmp_path / "results").complete)
    for row in table["rows"]:
        for column, cell in zip(spec["columns"], row["cells"]):
            if not cell["n"]:
                continue
            run = json.loads(Path(cell["runs"][0]).read_text())
            source = column.get("value", spec.get("value", "test"))
            want = run[f"test_{run['metric']}"] * 100 if source == "test" else run[source[0]]
            assert cell["mean"] == pytest.approx(want), (row["label"], column["key"])
