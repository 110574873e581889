"""One registry API for every kind of component, options declared once by the component (its annotated signature),
and typos on the command line answered like every other bad value."""

from __future__ import annotations

import re

import pytest
from helpers import CONF, registries, run_app
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf
from torch import nn

from fsnn.checks import ConfigError, Count, Positive, checked, one_of
from fsnn.data.info import DATA_KINDS, DatasetInfo
from fsnn.data.registry import register_dataset
from fsnn.models import BACKBONES, register_backbone
from fsnn.neurons import register_neuron
from fsnn.registry import Registry, UnknownNameError
from fsnn.suite.config import check_config
from fsnn.suite.overrides import swept_groups

KINDS = ("neuron", "backbone", "dataset", "task", "corruption", "study")


def test_every_backbone_and_task_takes_known_kinds_of_data():
    from fsnn.suite.tasks import TASKS

    for name in BACKBONES.names():
        assert BACKBONES.meta(name).supports <= set(DATA_KINDS), name
    for name in TASKS.names():
        assert set(TASKS.meta(name).data) <= set(DATA_KINDS), name


@pytest.mark.parametrize("what", KINDS)
def test_every_kind_of_component_answers_through_one_api(what):
    components = registries()[what]
    assert isinstance(components, Registry) and components.what == what
    names = components.names()
    assert names == sorted(components) and len(names) >= 2
    first = names[0]
    assert components.names(first[:2] + "*") and all(n.startswith(first[:2]) for n in components.names(first[:2] + "*"))
    assert components.get(first) is components[first]
    with pytest.raises(UnknownNameError, match=rf"{what} must be one of .*, got '{first}x'; did you mean '{first}'"):
        components.get(first + "x")
    with pytest.raises(KeyError):  # an UnknownNameError is a KeyError and a ValueError
        components[first + "x"]


def test_names_filter_on_metadata_and_wildcards():
    assert registries()["neuron"].names("sj_*") == ["sj_if", "sj_lif", "sj_plif"]
    assert registries()["backbone"].names(supports="graph") == ["drsgnn", "gae", "msg", "sgcn"]
    assert registries()["dataset"].names(kind="sequence") == ["delayed_cue", "seq_digits"]
    assert registries()["corruption"].names(family="graph") == ["edge_dropping", "feature_masking", "spike_noise"]
    assert registries()["task"].names(data="graph") == ["link", "node"]
    assert registries()["dataset"]["ogbn-arxiv"] is registries()["dataset"]["ogbn_arxiv"]


def test_create_refuses_an_argument_by_name_with_the_closest():
    with pytest.raises(ValueError, match=r"neuron 'flif' does not take \['alpah'\]; did you mean 'alpha'\?"):
        registries()["neuron"].create("flif", alpah=0.3)
    with pytest.raises(ValueError, match="alpha must be a number in"):
        registries()["neuron"].create("flif", alpha=1.5)


def test_a_schema_is_the_component_s_own_signature():
    schema = registries()["neuron"].schema("flif")
    assert schema.model_fields["alpha"].description == "a number in (0, 1]"
    assert schema.model_fields["memory"].description == "null or an integer in [1, 65536]"
    assert "alpha" not in registries()["neuron"].schema("lif").model_fields  # fsnn's LIF has alpha fixed to 1
    backbone = registries()["backbone"].schema("sgcn").model_fields
    assert {"T", "dropout"} <= set(backbone) and not {"num_classes", "in_features", "neuron"} & set(backbone)
    assert set(registries()["study"].schema("energy").model_fields) == {"batch_size", "kappa", "first_layer_mac"}


def throwaway_net(
    num_classes: int = 2,
    in_channels: int = 2,
    input_size=(8, 8),
    neuron: str = "flif",
    neuron_kwargs: dict | None = None,
    width: Count = 4,
    gain: Positive = 1.0,
    mode: one_of("sum", "mean") = "sum",
) -> nn.Module:
    """A backbone a test registers, with options of its own."""
    return nn.Identity()


@pytest.fixture
def throwaway(tmp_path, monkeypatch):
    """``throwaway_net`` registered for the test (the registry is restored after it), and its YAML in a config folder
    of its own."""
    monkeypatch.setattr(BACKBONES, "_entries", dict(BACKBONES._entries))
    register_backbone("throwaway_net", supports={"event", "static"})(checked(throwaway_net))
    (tmp_path / "backbone").mkdir()
    (tmp_path / "backbone" / "throwaway.yaml").write_text("name: throwaway_net\nwidth: 8\nmode: mean\n")
    return tmp_path


def test_a_new_backbone_option_is_checked_without_touching_the_config_layer(throwaway, tmp_path):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):

        def check(*overrides):
            cfg = compose(
                "config",
                overrides=[
                    f"hydra.searchpath=[file://{throwaway}]",
                    "backbone=throwaway",
                    f"paths.results_dir={tmp_path / 'results'}",
                    *overrides,
                ],
            )
            check_config(OmegaConf.create({k: v for k, v in cfg.items() if k != "hydra"}))

        check()
        check("backbone.width=2", "+backbone.gain=0.5")
        for override, message in [
            ("backbone.width=0", "backbone.width: expected an integer >= 1, got 0"),
            ("backbone.width=2.5", "backbone.width: expected an integer >= 1, got 2.5"),
            ("+backbone.gain=-1", "backbone.gain: expected a number > 0, got -1"),
            ("backbone.mode=max", "backbone.mode: expected one of sum, mean, got 'max'"),
            (
                "+backbone.widht=3",
                "backbone.widht: expected an option of backbone 'throwaway_net' (width, gain, "
                "mode), got 'widht'; did you mean 'width'?",
            ),
        ]:
            with pytest.raises(ConfigError) as error:
                check(override)
            assert str(error.value) == message
    GlobalHydra.instance().clear()


def test_every_config_passes_the_schemas_of_its_components(tmp_path):
    # every key of conf/{dataset,backbone,neuron,study}/, and of every experiment and paper setting, is an option its
    # component declares, with a value its option type takes
    # (a multirun's base config as its sweep leaves it: the groups it sweeps are checked in each job)
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):  # one context: composing is then quick
        for group in ("dataset", "backbone", "neuron", "study", "experiment", "setup"):
            for option in sorted(p.stem for p in (CONF / group).glob("*.yaml")):
                cfg = compose(
                    "config", [f"{group}={option}", f"paths.results_dir={tmp_path}"], return_hydra_config=True
                )
                check_config(cfg, swept=swept_groups(cfg))
    GlobalHydra.instance().clear()


def test_helper_configs_are_no_group_options():
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        options = GlobalHydra.instance().config_loader().get_group_options("neuron")
    GlobalHydra.instance().clear()
    assert "common" not in options and set(options) == set(registries()["neuron"].names())


@pytest.mark.parametrize(
    "override,key,suggestion",
    [
        ("neuron=flf", "neuron", "'flif'"),
        ("dataset=dvs_gesture", "dataset", "'dvsgesture'"),
        ("trainer.max_epoch=3", "trainer.max_epoch", "'max_epochs'"),
        ("+trainer.max_epoch=3", "trainer.max_epoch", "'max_epochs'"),
    ],
)
def test_a_typo_is_one_line_with_a_suggestion_before_any_folder(tmp_path, override, key, suggestion):
    proc = run_app("train.py", override, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fsnn: error: {key}: expected "), proc.stderr
    assert f"did you mean {suggestion}" in lines[0] and "common" not in lines[0]
    assert not any(tmp_path.iterdir())  # no run folder, no results folder


@pytest.mark.parametrize("what", KINDS)
@pytest.mark.parametrize("name", ["../evil", "a b", "", "a/b", "1st", "flif.yaml", "é", None])
def test_every_registry_refuses_a_name_that_is_no_identifier(what, name):
    components = registries()[what]
    before = components.names()
    with pytest.raises(
        ValueError,
        match=rf"^a {what} name must be an identifier \(ASCII letters, digits and _, not "
        rf"starting with a digit\), got {re.escape(repr(name))}$",
    ):
        components.register(name, throwaway_net)
    with pytest.raises(ValueError, match=rf"^a {what} name must be an identifier"):
        components.lazy(name, "fsnn.neurons.baselines:SJLIF", extra="baselines")
    assert components.names() == before


@pytest.mark.parametrize("what", KINDS)
def test_every_registry_refuses_an_entry_of_the_wrong_kind(what):
    components = registries()[what]
    rule = (
        "callable (a class or a function)"
        if what in ("neuron", "backbone", "corruption", "study")
        else {"dataset": "a DatasetInfo with a callable builder", "task": "a TaskKind"}[what]
    )
    assert components.entry_rule == rule
    with pytest.raises(TypeError, match=rf"^{what} 'not_callable' must be {re.escape(rule)}, got 3$"):
        components.register("not_callable", 3)
    assert "not_callable" not in components
    for name in components.names():  # every registered entry passes the rule (lazy ones are left unimported)
        if name in components.loaded():
            components.check_entry(name, components.get(name))


def _graph_info(name: str, builder) -> DatasetInfo:
    return DatasetInfo(name=name, kind="graph", num_classes=2, in_channels=2, size=None, default_T=4, builder=builder)


def test_register_neuron_and_register_dataset_check_the_name_and_the_entry():
    with pytest.raises(ValueError, match=r"^a neuron name must be an identifier .*, got '\.\./evil'$"):
        register_neuron("../evil")(nn.Identity)
    with pytest.raises(TypeError, match=r"^neuron 'not_callable' must be callable \(a class or a function\), got 3$"):
        register_neuron("not_callable")(3)
    with pytest.raises(ValueError, match=r"^a dataset name must be an identifier .*, got 'a b'$"):
        register_dataset(_graph_info("a b", builder=lambda *a, **k: None))
    with pytest.raises(TypeError, match=r"^dataset 'no_builder' must be a DatasetInfo with a callable builder"):
        register_dataset(_graph_info("no_builder", builder="not a function"))
    with pytest.raises(ValueError, match=r"^a backbone name must be an identifier .*, got ''$"):
        register_backbone("")(throwaway_net)
    assert not {"not_callable", "no_builder"} & set(registries()["neuron"].names() + registries()["dataset"].names())


def test_a_lazy_entry_is_checked_when_it_is_imported():
    components = Registry("neuron")
    with pytest.raises(ValueError, match=r"^neuron 'pi': target must be 'package.module:attribute', got 'math'$"):
        components.lazy("pi", "math", extra="baselines")
    components.lazy("pi", "math:pi", extra="baselines")
    with pytest.raises(TypeError, match=r"^neuron 'pi' must be callable \(a class or a function\), got 3\.14"):
        components.get("pi")


def test_a_neuron_registered_without_its_metadata_fails_there_naming_it_and_the_field():
    with pytest.raises(TypeError, match=r"^neuron 'unlabelled' is registered without its 'label'; NeuronMeta declares"):
        register_neuron("unlabelled", order="integer")(nn.Identity)
    with pytest.raises(TypeError, match=r"^neuron 'coloured' has no metadata field 'colour'; NeuronMeta declares"):
        register_neuron("coloured", label="C", order="integer", colour="red")(nn.Identity)
    with pytest.raises(ValueError, match=r"^a neuron's order must be one of fractional, integer, got 'half'$"):
        register_neuron("halved", label="H", order="half")(nn.Identity)
    assert not {"unlabelled", "coloured", "halved"} & set(registries()["neuron"].names())


def test_typed_metadata_is_read_by_field_and_filtered_by_names():
    from fsnn.neurons.registry import NEURONS

    assert NEURONS.meta("fif").timed_as == "flif" and NEURONS.meta("flif").timed_as is None
    assert NEURONS.names(order="fractional") == ["fif", "flif"]
    assert all(NEURONS.meta(name).timed_as in NEURONS for name in NEURONS.names() if NEURONS.meta(name).timed_as)
    assert BACKBONES.names(supports="graph", decodes_links=True) == ["gae", "msg"]
    assert "sgcn" in BACKBONES.names(supports="graph") and not BACKBONES.meta("sgcn").decodes_links
    with pytest.raises(ValueError, match=r"^backbone metadata has no field 'suports'; did you mean 'supports'\?"):
        BACKBONES.names(suports="graph")


def test_corruptions_and_studies_declare_their_metadata_and_refuse_an_entry_without_it():
    from fsnn.data.corruptions import CORRUPTIONS
    from fsnn.suite.studies import STUDIES

    assert CORRUPTIONS.names(probe=True) == ["spike_noise"]
    assert set(CORRUPTIONS.names(family="graph")) == {"feature_masking", "edge_dropping", "spike_noise"}
    assert STUDIES.meta("robustness").retest and STUDIES.meta("robustness").prepare is not None
    assert not STUDIES.meta("energy").retest and STUDIES.meta("energy").prepare is None
    with pytest.raises(TypeError, match=r"^corruption 'blur' is registered without its 'family'; CorruptionMeta"):
        CORRUPTIONS.register("blur", lambda x, level: x)
    with pytest.raises(ValueError, match=r"^family must be 'vision' or 'graph', got 'audio'$"):
        CORRUPTIONS.register("hiss", lambda x, level: x, family="audio")
    with pytest.raises(TypeError, match=r"^study 'latency' is registered without its 'retest'; StudyMeta"):
        STUDIES.register("latency", lambda run: {})
    assert "blur" not in CORRUPTIONS and "hiss" not in CORRUPTIONS and "latency" not in STUDIES
