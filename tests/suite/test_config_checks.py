"""A run's config is checked before anything is made: every bad value is one line naming its key, the
results config leaves out what changes no result, one configuration is one folder, and every committed run is found
by its command."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import pytest
import torch
from helpers import (
    CONF,
    ROOT,
    run_app,
)
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import CompactHydraException

from fsnn.checks import ConfigError
from fsnn.suite.checkpoint import (
    result_config,
    strip_non_result,
)
from fsnn.suite.config import check_config
from fsnn.suite.run import run_guarded

# (override, the key the error names): bad values of every kind a command line can give
BAD_VALUES = [
    *[(f"neuron.alpha={v}", "neuron.alpha") for v in ("0", "1.5", "-1", "nan", "abc", "inf", "null", "true")],
    ("neuron.tau=0", "neuron.tau"),
    ("neuron.tau=-1", "neuron.tau"),
    ("neuron.tau=inf", "neuron.tau"),
    ("neuron.tau=1e-09", "neuron.tau"),
    ("neuron.tau=0.5", "neuron.tau"),  # below f-LIF's stability bound
    ("neuron.memory=0", "neuron.memory"),
    ("neuron.memory=1.5", "neuron.memory"),
    ("neuron.method=xyz", "neuron.method"),
    ("neuron.threshold=-1", "neuron.threshold"),
    ("neuron.threshold=0", "neuron.threshold"),
    ("neuron.dt=0", "neuron.dt"),
    ("neuron.surrogate=foo", "neuron.surrogate"),
    ("neuron.surrogate_scale=0", "neuron.surrogate_scale"),
    ("neuron.reset=foo", "neuron.reset"),
    ("neuron.engine=foo", "neuron.engine"),
    ("neuron.learn_alpha=yes", "neuron.learn_alpha"),
    *[(f"dataset.T={v}", "dataset.T") for v in ("0", "-3", "2.5", "abc", "'8'")],
    ("dataset.size=0", "dataset.size"),
    ("dataset.size=[32,0]", "dataset.size"),
    ("dataset.size=[8,8,8]", "dataset.size"),
    ("dataset.val_fraction=1.5", "dataset.val_fraction"),
    ("dataset.val_fraction=0", "dataset.val_fraction"),
    ("dataset.batch_size=0", "dataset.batch_size"),
    ("dataset.batch_size=-2", "dataset.batch_size"),
    ("dataset.num_workers=-1", "dataset.num_workers"),
    ("dataset.name=nosuch", "dataset.name"),
    ("backbone.channels=0", "backbone.channels"),
    ("optimizer.lr=-1", "optimizer.lr"),
    ("optimizer.lr=0", "optimizer.lr"),
    ("optimizer.lr=abc", "optimizer.lr"),
    ("optimizer.weight_decay=-1", "optimizer.weight_decay"),
    ("optimizer._target_=os.system", "optimizer._target_"),
    ("+backbone._target_=shutil.rmtree", "backbone._target_"),
    ("seed=abc", "seed"),
    ("seed=-1", "seed"),
    ("seed=1.5", "seed"),
    ("task=nonsense", "task"),
    ("force=maybe", "force"),
    ("trainer.max_epochs=abc", "trainer.max_epochs"),
    ("trainer.max_epochs=-1", "trainer.max_epochs"),
    ("trainer.max_epochs=0", "trainer.max_epochs"),
    ("trainer.devices=0", "trainer.devices"),
    ("trainer.num_nodes=0", "trainer.num_nodes"),
    ("trainer.strategy=foo", "trainer.strategy"),
    ("trainer.precision=foo", "trainer.precision"),
    ("trainer.accelerator=tpu", "trainer.accelerator"),
    ("trainer.limit_train_batches=-1", "trainer.limit_train_batches"),
    ("trainer.limit_val_batches=1.5", "trainer.limit_val_batches"),
    ("trainer.gradient_clip_val=-1", "trainer.gradient_clip_val"),
]


MSG_LINK = ["dataset=karate", "backbone=msg", "task=link"]  # link prediction with MSG, on a graph shipped offline


def _config_error(cfg) -> str:
    with pytest.raises(ConfigError) as error:
        check_config(cfg)
    return str(error.value)


@pytest.mark.parametrize("override,key", BAD_VALUES)
def test_every_bad_value_is_one_line_naming_its_key(compose_cfg, tmp_path, override, key):
    message = _config_error(compose_cfg(override, f"paths.results_dir={tmp_path}"))
    value = override.split("=", 1)[1].strip("'")
    assert message.startswith(f"{key}: expected ") and "\n" not in message, message
    got = message.rsplit(", got ", 1)[1].replace(" ", "")  # a list is shown as Python writes it: [32, 0]
    assert got in (value, repr(value)) or (value, got) in (("null", "None"), ("true", "True")), message


@pytest.mark.parametrize(
    "override, says",
    [
        ("+alpha=0.3", "alpha: expected a key of the config (a config group or one of seed, task_name,"),
        ("+alpha=0.3", "got 'alpha'; did you mean neuron.alpha?"),
        ("+sed=3", "got 'sed'; did you mean 'seed'?"),
        ("+foo=1", "got 'foo'"),
    ],
)
def test_a_top_level_key_no_config_sets_is_refused(compose_cfg, tmp_path, override, says):
    """A key added by hand at the top of the config would be ignored, yet name the run's folder."""
    message = _config_error(compose_cfg(override, f"paths.results_dir={tmp_path}"))
    assert says in message and "\n" not in message, message


def test_every_experiments_top_level_keys_are_known(compose_cfg, tmp_path):
    from fsnn.suite.config import run_keys

    for experiment in sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml")):
        cfg = compose_cfg(f"experiment={experiment}", f"paths.results_dir={tmp_path}")
        assert set(cfg) - {"hydra"} <= run_keys(), experiment


def _required_keys(cfg) -> list[str]:
    """The keys of ``cfg``'s groups that their schemas declare without a default (the keys the run reads)."""
    from fsnn.suite.config import COMPONENTS, RUN_GROUPS
    from fsnn.suite.schemas import RunSchema

    schemas = {"": RunSchema, **RUN_GROUPS}
    schemas.update({group: COMPONENTS[group].schema(cfg[group].name) for group in COMPONENTS if cfg.get(group)})
    return [
        f"{group}.{field.alias or name}" if group else name
        for group, schema in schemas.items()
        if not group or cfg.get(group)
        for name, field in schema.model_fields.items()
        if field.is_required()
    ]


@pytest.mark.parametrize("base", [[], ["dataset=cora", "backbone=sgcn"], ["dataset=seq_digits", "backbone=seqmlp"]])
def test_deleting_a_key_the_run_reads_is_one_line_naming_it(compose_cfg, tmp_path, base):
    cfg = compose_cfg(*base, f"paths.results_dir={tmp_path}")
    check_config(cfg)
    required = _required_keys(cfg)
    assert {"seed", "dataset.T" if not base or "cora" in base[0] else "dataset.val_fraction"} <= set(required)
    for key in [*required, "optimizer"]:
        message = _config_error(compose_cfg(*base, f"paths.results_dir={tmp_path}", f"~{key}"))
        assert message.startswith(f"{key}: expected ") and "\n" not in message, message
        assert "missing" in message, message


def test_good_values_pass(compose_cfg, tmp_path):
    for overrides in (
        [],
        [
            "neuron.alpha=1",
            "neuron.memory=4",
            "dataset.size=[32,48]",
            "trainer.strategy=ddp",
            "trainer.devices=auto",
            "trainer.limit_val_batches=0.5",
            "scheduler=none",
            "optimizer=adamw",
        ],
        ["dataset=cora", "backbone=sgcn", "neuron=sj_lif"],
        ["dataset=computers", "backbone=msg", "task=link", "logger=wandb"],
    ):
        check_config(compose_cfg(*overrides, f"paths.results_dir={tmp_path}"))


def test_early_stopping_takes_patience_and_min_delta_and_watches_the_runs_metric(compose_cfg, tmp_path):
    base = ["early_stopping=validation", f"paths.results_dir={tmp_path}"]
    check_config(compose_cfg(*base))
    for override, message in (
        ("early_stopping.patience=0", "early_stopping.patience: expected an integer >= 1, got 0"),
        ("early_stopping.min_delta=-0.1", "early_stopping.min_delta: expected a number >= 0, got -0.1"),
        ("+early_stopping.metric=loss", "early_stopping.metric: expected no value (the run gives it"),
        ("+early_stopping.mode=min", "early_stopping.mode: expected an argument of fsnn.suite.callbacks.EarlyStopping"),
        ("early_stopping._target_=os.system", "early_stopping._target_: expected one of fsnn.suite.callbacks"),
    ):
        assert _config_error(compose_cfg(*base, override)).startswith(message), override


def test_paths_and_hardware_are_checked(compose_cfg, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    assert _config_error(compose_cfg(f"paths.data_dir={a_file}")) == (
        f"paths.data_dir: expected a folder, got {str(a_file)!r} (a file)"
    )
    assert _config_error(compose_cfg(f"paths.results_dir={a_file}/results")).startswith(
        f"paths.results_dir: expected a writable folder, got {str(a_file / 'results')!r}"
    )
    assert _config_error(compose_cfg("paths.results_dir=/proc/fsnn_results")).startswith(
        "paths.results_dir: expected a writable folder"
    )
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert "paths.results_dir: expected a writable folder" in _config_error(
            compose_cfg(f"paths.results_dir={locked}")
        )
    if not torch.cuda.is_available():
        assert _config_error(compose_cfg("trainer.accelerator=gpu", f"paths.results_dir={tmp_path}")).startswith(
            "trainer.accelerator: expected auto or cpu (no GPU is visible"
        )


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            ["neuron.tau=1e-09"],
            r"neuron.tau: expected a number > 0.857805 \(at or below it the discrete f-LIF with "
            r"alpha=0.5, dt=1, method=pred grows without bound, to inf and NaN; the bound scales as "
            r"dt\^alpha\), got 1e-09",
        ),
        (["neuron.dt=100"], r"neuron.tau: expected a number > 8.578.*dt=100.*, got 2.0"),  # the dt / tau ratio
        (["neuron=lif", "neuron.tau=0.5"], r"neuron.tau: expected a number > 0.5 .*alpha=1,.*, got 0.5"),
        (["neuron.memory=3", "neuron.tau=0.7"], r"neuron.tau: expected a number > 0.717282 .*, got 0.7"),
        (
            ["neuron.engine=triton"],
            r"neuron.engine: expected auto, direct or soe \(the Triton kernels need a CUDA GPU or "
            r"TRITON_INTERPRET=1, and no GPU is visible\), got 'triton'",
        ),
    ],
)
def test_values_that_cannot_work_are_refused_with_the_config(compose_cfg, tmp_path, monkeypatch, overrides, message):
    from fsnn.neurons import triton_kernels as kernels

    monkeypatch.setattr(kernels, "interpreting", lambda: False)  # the tests run the kernels through the interpreter
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    found = _config_error(compose_cfg(*overrides, f"paths.results_dir={tmp_path}"))
    assert re.fullmatch(message, found), found
    check_config(compose_cfg("neuron.tau=0.86", f"paths.results_dir={tmp_path}"))  # just above the bound
    check_config(compose_cfg("neuron=fif", "neuron.tau=1e-09", f"paths.results_dir={tmp_path}"))  # no leak, no bound


@pytest.mark.skipif(torch.cuda.is_available(), reason="the Triton kernels run on this machine's GPU")
def test_triton_engine_without_a_gpu_exits_2_with_one_line_before_any_folder_is_made(tmp_path):
    proc = run_app("train.py", "neuron.engine=triton", cwd=tmp_path, env={"TRITON_INTERPRET": "0"}, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "fsnn: error: neuron.engine: expected auto, direct or soe (the Triton kernels need a CUDA GPU or "
        "TRITON_INTERPRET=1, and no GPU is visible), got 'triton'"
    ]
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            [*MSG_LINK, "backbone.decoder=minkowski", "backbone.manifold=sphere"],
            "backbone.decoder: expected cosine or fermi_dirac with manifold='sphere' (minkowski is the Lorentz inner "
            "product: it needs manifold='lorentz'), got 'minkowski'",
        ),
        (
            ["neuron.engine=soe", "neuron.memory=4"],
            "neuron.engine: expected auto or direct with a memory (engine='soe' is full memory), got 'soe'",
        ),
        (
            ["neuron.engine=soe", "neuron.method=l1"],
            "neuron.engine: expected auto or direct with method='l1' (soe runs ['pred', 'gl']), got 'soe'",
        ),
        (
            ["neuron.engine=cpp", "neuron.convention=spikede"],
            "neuron.engine: expected auto with convention='spikede' (engine='cpp' runs the fsnn convention; "
            "convention='spikede' has its own loop), got 'cpp'",
        ),
    ],
)
def test_a_combination_a_constructor_refuses_is_refused_by_the_schema(compose_cfg, tmp_path, overrides, message):
    """The rule is the component's own (its check_options): the constructor refuses the same options alike."""
    from omegaconf import OmegaConf

    from fsnn.suite.config import COMPONENTS

    assert _config_error(compose_cfg(*overrides, f"paths.results_dir={tmp_path}")) == message
    group = message.split(".")[0]
    options = OmegaConf.to_container(compose_cfg(*overrides)[group], resolve=True)
    supplied = {"in_features": 4} if group == "backbone" else {}
    with pytest.raises(ValueError, match=re.escape(message.split(": expected ")[1].rsplit(", got ")[0])):
        COMPONENTS[group].create(options.pop("name"), **supplied, **options)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            [*MSG_LINK, "+backbone.r=5"],
            "backbone.r: expected 2.0, its default (r is an option of decoder=fermi_dirac, and decoder is 'cosine'), "
            "got 5.0",
        ),
        (
            [*MSG_LINK, "backbone.decoder=fermi_dirac", "backbone.temperature=0.5"],
            "backbone.temperature: expected 1.0, its default (temperature is an option of decoder=cosine, and decoder "
            "is 'fermi_dirac'), got 0.5",
        ),
        (
            ["neuron=fif", "neuron.v_reset=-0.5"],  # FractionalIF passes it on to its base through **kwargs
            "neuron.v_reset: expected 0.0, its default (v_reset is an option of reset=hard, and reset is 'soft'), "
            "got -0.5",
        ),
        (
            ["neuron=lif", "neuron.v_reset=-0.5"],
            "neuron.v_reset: expected 0.0, its default (v_reset is an option of reset=hard, and reset is 'soft'), "
            "got -0.5",
        ),
    ],
)
def test_an_option_of_another_mode_is_refused_naming_its_mode(compose_cfg, tmp_path, overrides, message):
    assert _config_error(compose_cfg(*overrides, f"paths.results_dir={tmp_path}")) == message


def test_an_option_of_another_mode_at_its_default_or_under_its_own_mode_passes(compose_cfg, tmp_path):
    """conf/backbone/msg.yaml holds temperature under every decoder: at its default it changes nothing."""
    for overrides in (
        [*MSG_LINK, "+backbone.r=2.0"],
        [*MSG_LINK, "backbone.decoder=fermi_dirac"],
        [*MSG_LINK, "backbone.decoder=fermi_dirac", "+backbone.r=3", "+backbone.t=0.5"],
        ["neuron.reset=hard", "neuron.v_reset=-0.5"],
    ):
        check_config(compose_cfg(*overrides, f"paths.results_dir={tmp_path}"))


def test_result_config_leaves_out_what_does_not_change_a_result(compose_cfg):
    # the keys left out of a run folder's name are the keys a finished run is not compared on
    from fsnn.suite.run_names import run_dir_name

    ignored = [
        "paths.data_dir=/elsewhere",
        "dataset.num_workers=3",
        "logger=wandb",
        "logger.mode=online",
        "force=true",
        "trainer.enable_progress_bar=false",
        "study=energy",
        "robustness=events",
    ]
    assert run_dir_name(None, ignored + ["launcher=joblib", "experiment=graph_demo"]) == "default"
    assert run_dir_name(None, ["seed=1", *ignored, "neuron=lif"]) == "neuron-lif+seed-1"
    base = result_config(compose_cfg())
    assert result_config(compose_cfg(*ignored)) == base
    assert result_config(compose_cfg("neuron.tau=3.0")) != base
    assert base["optimizer"]["lr"] == 5e-3 and base["scheduler"]["T_max"] == 10  # resolved


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_environment_variable_set_to_nothing_counts_as_unset(compose_cfg, monkeypatch, tmp_path, blank):
    from fsnn.runs.records import results_root

    for name in ("FSNN_RESULTS", "FSNN_DATA", "FSNN_SLURM_PARTITION", "WANDB_MODE"):
        monkeypatch.setenv(name, blank)
    cfg = compose_cfg("launcher=slurm", "logger=wandb")
    assert (cfg.paths.results_dir, cfg.paths.data_dir) == ("./runs", "./data")  # not '' (runs in /train/...)
    assert cfg.hydra.launcher.partition is None and cfg.logger.mode == "offline"
    assert results_root() == Path("results")
    monkeypatch.setenv("FSNN_RESULTS", str(tmp_path))
    assert compose_cfg().paths.results_dir == str(tmp_path) and results_root() == tmp_path
    # given blank on purpose, it is refused by name
    assert _config_error(compose_cfg("paths.results_dir=''")) == (
        "paths.results_dir: expected a folder (a path, not blank), got ''"
    )


def _folder(*overrides: str) -> str:
    """The run folder name ``train.py <overrides>`` gets (a sweep's job: the overrides the sweeper gives it), from
    the config Hydra composes, as the ``run_dir`` resolver names it."""
    from fsnn.suite.run_names import run_dir_name

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
        return run_dir_name(cfg.get("run_name"), cfg.hydra.overrides.task, cfg)


def test_one_configuration_one_folder_whichever_default_values_are_given():
    # the seed is always named; a key at its default value is the configuration without it
    assert _folder() == _folder("seed=0") == _folder("neuron=flif", "seed=0") == "seed-0"
    assert _folder("neuron=lif") == "neuron-lif+seed-0" and _folder("seed=3") == "seed-3"
    # +smoke=vision sets its sweep's seed: a single run and the sweep's job (seed=0 given) are one folder
    assert _folder("+smoke=vision") == _folder("+smoke=vision", "seed=0") == "+smoke-vision+seed-0"
    # a key the experiment sweeps is named at its default too, as every job of the sweep names it
    cell = ["experiment=table2_node_classification", "dataset=cora", "backbone=sgcn", "neuron=flif", "seed=0"]
    assert _folder(*cell) == "backbone-sgcn+dataset-cora+neuron-flif+seed-0"
    assert _folder(*cell, "recipe=matched") == _folder(*cell)  # the default recipe
    assert _folder(*cell, "recipe=authors") == "backbone-sgcn+dataset-cora+neuron-flif+recipe-authors+seed-0"


def test_a_long_command_names_its_folder_with_a_bounded_number_of_compositions(monkeypatch):
    """Every plain key of the default config given at its own value, some changed, one repeated 300 times: the
    folder names what changes the result, and the config is composed a few times, not once per key."""
    from hydra.core.override_parser.types import Override
    from omegaconf import OmegaConf

    from fsnn.suite.run_names import _unchanged_keys, run_dir_name

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        default = compose("config")
        lines = [
            f"{group}.{key}={Override._get_value_element_as_str(value)}"
            for group in ("dataset", "neuron", "backbone", "trainer", "optimizer", "scheduler")
            for key, value in OmegaConf.to_container(default[group], resolve=True).items()
            if not key.startswith("_") and key != "name"
        ]
        assert len(lines) > 30
        lines += ["optimizer=adamw", "neuron.tau=3.0", "trainer.max_epochs=3", *["neuron.alpha=0.5"] * 300]
        cfg = compose("config", overrides=lines, return_hydra_config=True)
        loader = GlobalHydra.instance().config_loader()
        calls = []
        load = loader.load_configuration
        monkeypatch.setattr(loader, "load_configuration", lambda *a, **k: calls.append(1) or load(*a, **k))
        _unchanged_keys.cache_clear()
        name = run_dir_name(None, cfg.hydra.overrides.task, cfg)
    GlobalHydra.instance().clear()
    # adamw's weight decay is not adam's 0.0; T_max given as 10 is not the 3 epochs it would copy
    assert name == (
        "neuron.tau-3.0+optimizer.weight_decay-0.0+optimizer-adamw+scheduler.T_max-10+seed-0+trainer.max_epochs-3"
    )
    assert len(calls) <= 5, len(calls)


def test_every_committed_run_is_found_by_its_command():
    """Rerunning the command of a committed run (its recorded overrides) names the run's own folder, and the config
    it composes is the recorded one (keys added to fsnn's configs since aside), so the rerun finds it finished.
    Records whose overrides differ only in the values of swept keys share one composition."""
    from fsnn.runs.renames import current_config
    from fsnn.suite.run_names import folder_keys, rendered_run_name
    from fsnn.suite.runfiles import tree_changes

    groups: dict[tuple, list[dict]] = {}
    for path in sorted((ROOT / "results").glob("*/*/metrics.json")):
        record = json.loads(path.read_text())
        keys = [o.split("=")[0] for o in record["overrides"]]
        swept = (
            "seed",
            "dataset",
            "backbone",
            "neuron",
            "+neuron_variant",
            "+recipe_switch",
            "+cue_variant",
            "dataset.delay",
            "dataset.permute",
            "neuron.alpha",
            "neuron.tau",
            "tau_lr_scale",
        )
        shape = (*sorted(keys), *sorted(o for o, key in zip(record["overrides"], keys) if key not in swept))
        groups.setdefault(shape, []).append({**record, "folder": path.parent.name})
    runs = sum(map(len, groups.values()))
    # grouping is what keeps this test fast: one composition per command shape, many runs per shape
    assert runs > 1000 and len(groups) * 20 < runs, (runs, len(groups))
    for records in groups.values():
        first = records[0]
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=first["overrides"], return_hydra_config=True)
            keys = folder_keys(cfg, cfg.hydra)
            changes = tree_changes(strip_non_result(current_config(first["config"])), result_config(cfg), added=False)
            assert not changes, (first["folder"], changes)
        for record in records:
            assert rendered_run_name(None, record["overrides"], *keys) == record["folder"], record["overrides"]
    GlobalHydra.instance().clear()


def test_a_sweep_that_names_a_renamed_switch_finds_the_run_recorded_under_its_earlier_name(tmp_path):
    """The recipe ablation sweeps ``flif/fspikede``; its committed runs were recorded as ``flif/legacy``: the sweep's
    job names their folder, so it does no work again, and a results folder without them gets the current name."""
    from fsnn.suite.run_names import run_dir_name

    job = ["experiment=recipe_ablation_cora", "dataset=cora", "backbone=sgcn", "+recipe_switch=flif/fspikede", "seed=1"]
    names = {}
    for results in (ROOT / "results", tmp_path):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=[*job, f"paths.results_dir={results}"], return_hydra_config=True)
            names[results] = run_dir_name(None, job, cfg)
    GlobalHydra.instance().clear()
    recorded = "+recipe_switch-flif_legacy+backbone-sgcn+dataset-cora+seed-1"
    assert (ROOT / "results" / "recipe_ablation_cora" / recorded / "metrics.json").is_file()
    assert names == {ROOT / "results": recorded, tmp_path: recorded.replace("legacy", "fspikede")}


@pytest.mark.parametrize(
    "args",
    [
        ["neuron.alpha=abc"],
        ["dataset.T=2.5"],
        ["~dataset.T"],
        ["dataset=karate", "backbone=msg", "task=link", "backbone.decoder=minkowski", "backbone.manifold=sphere"],
        ["trainer.max_epochs=-1"],
        ["paths.results_dir=a_file/results"],
    ],
)
def test_bad_value_exits_2_with_one_line_before_any_folder_is_made(tmp_path, args):
    (tmp_path / "a_file").write_text("")
    proc = run_app("train.py", *args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsnn: error: ") and "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*"))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["launcher=submitit_local", "hydra.launcher.timeout_min=0"],
            "hydra.launcher.timeout_min: expected an integer >= 1, got 0",
        ),
        (
            ["launcher=slurm", "hydra.launcher.cpus_per_task=0"],
            "hydra.launcher.cpus_per_task: expected an integer >= 1, got 0",
        ),
        (
            ["launcher=slurm", "hydra.launcher.gpus_per_node=-1"],
            "hydra.launcher.gpus_per_node: expected an integer >= 0, got -1",
        ),
        (
            ["launcher=joblib", "hydra.launcher.n_jobs=0"],
            "hydra.launcher.n_jobs: expected an integer other than 0 (-1: one job per core), got 0",
        ),
    ],
)
def test_a_launchers_settings_are_checked(compose_cfg, overrides, message):
    from fsnn.suite.config import check_launcher

    for launcher in ("basic", "joblib", "slurm", "submitit_local"):
        check_launcher(compose_cfg(f"launcher={launcher}"))
    with pytest.raises(ConfigError) as error:
        check_launcher(compose_cfg(*overrides))
    assert str(error.value) == message


def test_a_bad_launcher_setting_stops_a_multirun_before_its_launcher_starts_or_a_folder_is_made(tmp_path):
    proc = run_app("train.py", "-m", "launcher=submitit_local", "hydra.launcher.timeout_min=0", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "fsnn: error: hydra.launcher.timeout_min: expected an integer >= 1, got 0"
    ]
    assert not (tmp_path / "runs").exists()


def test_evaluate_checks_its_values_before_hydra_makes_a_folder(tmp_path):
    proc = run_app("evaluate.py", f"run_dir={tmp_path / 'nosuch'}", cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith("fsnn: error: run_dir: expected the folder of a train.py")
    assert not (tmp_path / "nosuch").exists()


def test_evaluate_refuses_a_top_level_key_its_config_does_not_set(tmp_path):
    proc = run_app("evaluate.py", f"run_dir={tmp_path / 'nosuch'}", "+studdy=energy", cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "fsnn: error: studdy: expected a key of the config (a config group or one of accelerator, allow_unfinished, "
        "checkpoint, limit_test_batches, paths, robustness, run_dir, seed, study), got 'studdy'; did you mean 'study'?"
    ]
    assert not (tmp_path / "nosuch").exists()


@pytest.mark.parametrize(
    "overrides, key",
    [(["+early_stopping.patience=5"], "patience"), (["scheduler=none", "+scheduler.T_max=3"], "T_max")],
)
def test_an_option_of_a_group_whose_choice_builds_nothing_is_refused_by_name(compose_cfg, tmp_path, overrides, key):
    """``early_stopping=none`` (the default) or ``scheduler=none`` builds nothing: an option added there would be
    ignored."""
    message = _config_error(compose_cfg(*overrides, f"paths.results_dir={tmp_path}"))
    group = overrides[-1][1:].split(".")[0]
    assert message.startswith(f"{group}.{key}: expected no option ({group} has no _target_") and "\n" not in message
    assert message.endswith(f"got {key!r}"), message


def test_a_bug_in_a_multirun_job_is_one_line_and_its_traceback_goes_to_the_log(compose_cfg, tmp_path, capsys):
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().set_config(compose_cfg("hydra.mode=MULTIRUN"))
    handler = logging.FileHandler(tmp_path / "train.log")
    logging.getLogger().addHandler(handler)

    def broken(cfg):
        raise RuntimeError("a bug")

    try:
        with pytest.raises(CompactHydraException, match="fsnn: error: RuntimeError: a bug"):
            run_guarded(broken, None)
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
        HydraConfig.instance().cfg = None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / "train.log") in err and "Traceback" not in err
    assert "Traceback" in (tmp_path / "train.log").read_text() and "a bug" in (tmp_path / "train.log").read_text()
