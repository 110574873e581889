"""The sequence task: built from a config, refused with a backbone of another kind of data, and the time
constants' own learning rate (tau_lr_scale)."""

from __future__ import annotations

import pytest

from fsnn.checks import ConfigError
from fsnn.suite.tasks import TASKS, build_task, task_kind


@pytest.mark.parametrize("dataset,upsample", [("delayed_cue", None), ("seq_digits", 2)])
def test_sequence_task_builds_from_a_config(compose_cfg, tmp_path, dataset, upsample):
    extra = [f"dataset.upsample={upsample}"] if upsample else ["dataset.delay=5", "dataset.num_samples=60"]
    cfg = compose_cfg(f"dataset={dataset}", "backbone=seqmlp", f"paths.data_dir={tmp_path}", *extra)
    assert task_kind(cfg) is TASKS["sequence"]
    module, data, metric = build_task(cfg)
    data.setup()
    x, y = next(iter(data.train_dataloader()))
    logits = module(x)
    assert metric == "acc" and logits.shape == (len(y), data.splits[0].num_classes)
    model = module.model
    assert model.in_features == data.splits[0].channels and model.readout_steps == data.splits[0].readout_steps


@pytest.mark.parametrize(
    "dataset,backbone",
    [("delayed_cue", "dvsnet"), ("seq_digits", "sgcn"), ("digits_dvs", "seqmlp"), ("cora", "seqmlp")],
)
def test_sequence_data_and_other_backbones_do_not_mix(compose_cfg, dataset, backbone):
    with pytest.raises(ConfigError, match=backbone):
        build_task(compose_cfg(f"dataset={dataset}", f"backbone={backbone}", "paths.data_dir=/nonexistent"))


def test_tau_lr_scale_gives_the_time_constants_their_own_learning_rate(compose_cfg, tmp_path):
    def groups(*overrides):
        cfg = compose_cfg(
            "dataset=delayed_cue", "backbone=seqmlp", "dataset.delay=4", f"paths.data_dir={tmp_path}", *overrides
        )
        module = build_task(cfg).module
        optimizer = module.configure_optimizers()["optimizer"]
        return module, [(len(g["params"]), g["lr"]) for g in optimizer.param_groups]

    module, plain = groups("+neuron_variant=sj_plif")
    assert plain == [(len(list(module.parameters())), 5e-3)]
    for variant in ("sj_plif", "lif_learn_tau"):
        module, scaled = groups(f"+neuron_variant={variant}", "tau_lr_scale=10")
        assert scaled == [(len(list(module.parameters())) - 2, 5e-3), (2, pytest.approx(5e-2))]  # one tau per layer
    with pytest.raises(ConfigError, match="tau_lr_scale"):
        from fsnn.suite.config import check_config

        check_config(compose_cfg("tau_lr_scale=0"))
