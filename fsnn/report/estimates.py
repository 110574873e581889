"""What the tables nobody ran here would cost: each experiment's sweep composed with Hydra, its jobs' training
samples, and the measured step times of ``results/bench`` turned into CPU- or GPU-hours."""

from __future__ import annotations

import itertools
import math
import re
import tempfile
import warnings
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from fsnn.neurons.registry import NEURONS
from fsnn.report.collect import (
    INTEGER,
    OBJECT,
    TEXT,
    Each,
    Kind,
    Required,
    Values,
    read_record,
    record_problem,
)
from fsnn.runs.configs import config_root, register_resolvers
from fsnn.runs.records import results_root


def _positive(value, below: float = math.inf) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < below


#: a measured time or speed: the estimates divide by it and scale by it
POSITIVE = Kind("a positive number", _positive)
#: a speed or null (a neuron the benchmark could not time)
SPEED = Kind("a positive number or null", lambda value: value is None or _positive(value))
#: a step's T or input size: the estimates take the logarithm of their ratio to a config's, so both stay in range
EXTENT = Kind("a positive integer below 2**31", lambda value: isinstance(value, int) and _positive(value, 2**31))

#: a size or a time that may be zero (a static dataset has no frame cache)
NONNEGATIVE = Kind("a number >= 0", lambda value: value == 0 or _positive(value))
#: workers needed (or CPU step ratios), for training and for testing, or null (no GPU step to compare with)
OPTIONAL_RATES = Kind(
    "null or an object with positive train and test",
    lambda value: (
        value is None or (isinstance(value, dict) and all(_positive(value.get(k)) for k in ("train", "test")))
    ),
)
OPTIONAL_RATIOS = Kind(
    "null or an object with positive train_ratio and test_ratio",
    lambda value: (
        value is None
        or (isinstance(value, dict) and all(_positive(value.get(k)) for k in ("train_ratio", "test_ratio")))
    ),
)

#: what the estimates read of a benchmark file, by its ``benchmark``: a file of another shape is not read
BENCH_SHAPES = {
    "graph_runs": {
        "setting": OBJECT,
        "runs": Each({"dataset": TEXT, "version": TEXT, "whole_run_s": POSITIVE, "backbone": TEXT, "neuron": TEXT}),
    },
    "data_pipeline": {
        "hardware": Required(TEXT),
        "rows": Required(
            Each(
                {
                    "version": Required(TEXT),
                    "dataset": Required(TEXT),
                    "backbone": Required(TEXT),
                    "T": Required(EXTENT),
                    "size": Required(EXTENT),
                    "raw_gib_full": Required(NONNEGATIVE),
                    "prep_full": Required(Values({"hours": Required(NONNEGATIVE), "cache_gib": Required(NONNEGATIVE)})),
                    "workers_to_feed_gpu": OPTIONAL_RATES,
                    "cpu_step_ratio": OPTIONAL_RATIOS,
                }
            )
        ),
    },
    "dvsnet_train_step": {
        "hardware": TEXT,
        "config": Required(
            {"device": TEXT, "T": Required(EXTENT), "size": Required(EXTENT), "channels": INTEGER, "batch": INTEGER}
        ),
        "results": Each({"neuron": Required(TEXT), "train_samples_per_s": SPEED, "test_samples_per_s": SPEED}),
    },
}


def bench_records(bench_dir: str | Path | None, benchmark: str) -> list[tuple[Path, dict]]:
    """``(path, record)`` of the benchmark files ``<bench_dir>/*.json`` (default ``results/bench``) of
    ``benchmark`` whose shape the estimates read (:data:`BENCH_SHAPES`), read as the run records are
    (:func:`read_record`); an unreadable file, one of another shape, or one whose name no page can show (not UTF-8)
    estimates nothing."""
    found = []
    for path in sorted(Path(bench_dir if bench_dir is not None else results_root() / "bench").glob("*.json")):
        try:
            path.name.encode()
            record = read_record(path)
        except (OSError, ValueError):  # UnicodeEncodeError is a ValueError
            continue
        if record.get("benchmark") == benchmark and record_problem(record, BENCH_SHAPES[benchmark]) is None:
            found.append((path, record))
    return found


def graph_run_minutes(
    name: str, bench_dir: str | Path | None = None, experiment: str = "table2_node_classification"
) -> dict | None:
    """Minutes of one run of ``experiment`` (one CPU core) on the graph ``name``: the whole run that
    ``scripts/bench_graph.py runs --experiment <experiment>`` measured on it (the "after" rows of a benchmark file of
    ``bench_dir`` whose setting names that experiment), else the largest graph it measured scaled by the number of
    nodes: ``{"minutes", "basis", "basis_minutes", "backbone", "neuron"}`` (the slowest of the basis' rows);
    ``None`` without either number."""
    from fsnn.data.registry import DATASETS, dataset_info

    rows = []
    for _, record in bench_records(bench_dir, "graph_runs"):
        if (record.get("setting") or {}).get("experiment") == experiment:
            rows += [
                r
                for r in record.get("runs", [])
                if r.get("version") == "after"
                and "failed" not in r
                and r.get("dataset") in DATASETS
                and "whole_run_s" in r
            ]
    nodes = dataset_info(name).num_nodes
    measured = [(dataset_info(r["dataset"]).num_nodes, r) for r in rows]
    measured = [(n, r) for n, r in measured if n]
    if not nodes or not measured:
        return None
    own = [item for item in measured if item[1]["dataset"] == name]
    basis_nodes, basis = max(own or measured, key=lambda item: (item[0], item[1]["whole_run_s"]))
    return {
        "minutes": basis["whole_run_s"] / 60 * nodes / basis_nodes,
        "basis": basis["dataset"],
        "basis_minutes": basis["whole_run_s"] / 60,
        "backbone": basis.get("backbone", "?"),
        "neuron": basis.get("neuron", "?"),
    }


def _get_it(name: str) -> str | None:
    """The first address of the "How to get it" line of the dataset loader's own missing-data message (the loader is
    asked for ``name`` in an empty folder, downloads off), or ``None`` for generated data."""
    from fsnn.data import DatasetMissingError
    from fsnn.data.registry import build_dataset, dataset_info, load_graph

    kind = dataset_info(name).kind
    if kind not in ("event", "static", "graph"):
        return None
    with tempfile.TemporaryDirectory() as empty, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            (load_graph if kind == "graph" else build_dataset)(name, empty, download=False)
        except DatasetMissingError as missing:
            how = next((line for line in str(missing).splitlines() if line.startswith("How to get it:")), "")
            found = re.search(r"https?://[^\s,;)]+", how)
            return found.group(0) if found else None
    return None


@lru_cache(maxsize=None)
def dataset_source(name: str) -> dict:
    """``{"name", "library", "url"}`` of a registered dataset: what reads it and where to get it."""
    from fsnn.data.registry import dataset_info

    info = dataset_info(name)
    return {"name": info.name, "library": info.library.split(".")[0], "url": _get_it(info.name)}


def sweep(experiment: str) -> dict[str, list[str]]:
    """The sweep of ``conf/experiment/<experiment>.yaml``, ``{override key: [values]}`` (Hydra's own parser reads the
    values: ``a,b``, ``range(0,20)``); ``{}`` for an experiment of one run."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    params = (
        OmegaConf.select(OmegaConf.load(config_root() / "experiment" / f"{experiment}.yaml"), "hydra.sweeper.params")
        or {}
    )
    parser = OverridesParser.create()
    out = {}
    for key, value in params.items():
        override = parser.parse_overrides([f"{key}={value}"])[0]
        out[key] = (
            list(override.sweep_string_iterator())
            if override.is_sweep_override()
            else [override.get_value_element_as_str()]
        )
    return out


@lru_cache(maxsize=None)
def jobs(experiment: str) -> list[dict]:
    """The jobs of an experiment's sweep, one entry per composed setting: its resolved config and the overrides that
    compose it, the neurons it runs and how many jobs it stands for (neuron options x seeds). Neuron options (``neuron``, ``neuron.*``,
    ``neuron_variant``) and seeds do not change dataset, backbone or epochs, so they are counted, not composed."""
    from hydra import compose, initialize_config_dir

    from fsnn.runs.recipe_switches import register_recipe_switches

    register_recipe_switches()
    register_resolvers()
    params = sweep(experiment)
    counted = {k: v for k, v in params.items() if k == "seed" or k.lstrip("+").startswith("neuron")}
    composed = {k: v for k, v in params.items() if k not in counted}
    out = []
    with initialize_config_dir(str(config_root()), version_base="1.3"):
        for combination in itertools.product(*composed.values()):
            overrides = [f"experiment={experiment}", *(f"{k}={v}" for k, v in zip(composed, combination))]
            cfg = compose("config", overrides=overrides)
            neurons = counted.get("neuron") or [cfg.neuron.name]
            per_neuron = math.prod(len(v) for k, v in counted.items() if k != "neuron")
            out.append({"cfg": cfg, "overrides": overrides, "neurons": neurons, "jobs_per_neuron": per_neuron})
    return out


def step_costs(bench_dir: str | Path | None = None) -> list[dict]:
    """The measured train steps on a GPU under ``bench_dir`` (``scripts/bench_train.py --device cuda``): per file the
    setting (backbone, channels, T, size), the hardware and ``{neuron: (train samples/s, test samples/s)}``."""
    out = []
    for path, record in bench_records(bench_dir, "dvsnet_train_step"):
        config = record["config"]
        if config.get("device") != "cuda":
            continue
        rates = {
            r["neuron"]: (r["train_samples_per_s"], r["test_samples_per_s"])
            for r in record.get("results", [])
            if r.get("train_samples_per_s") and r.get("test_samples_per_s")
        }
        if not rates:  # nothing measured: no step to scale
            continue
        out.append(
            {
                "file": path.name,
                "backbone": "dvsnet",
                "channels": config.get("channels"),
                "T": config["T"],
                "size": config["size"],
                "batch": config.get("batch"),
                "hardware": record.get("hardware", "GPU"),
                "rates": rates,
            }
        )
    return out


def train_samples(cfg) -> int | None:
    """Training samples per epoch of a composed config: the training split of the dataset's published release
    (:attr:`fsnn.data.info.DatasetInfo.published`; a release of one pool loses its test share first), less the
    validation share unless the release has its own validation split; ``None`` where none is registered."""
    from fsnn.data.frame_cache import TEST_FRACTION
    from fsnn.data.registry import dataset_info

    published = dataset_info(cfg.dataset.name).published
    if "val" in published:
        return published["train"]
    if "train" in published:
        train = published["train"]
    elif "all" in published:
        train = round(published["all"] * (1 - TEST_FRACTION))
    else:
        return None
    return round(train * (1 - float(cfg.dataset.get("val_fraction") or 0.0)))


def nearest_step(costs: list[dict], backbone: str, channels, T: int, size) -> tuple[dict, float] | None:
    """The measured step nearest to a network ``backbone`` of ``channels`` (same backbone and width; nearest
    ``T x size x size``) and the factor scaling its time per sample to that ``T x size x size`` (convolutions and
    neurons cost in proportion to both); ``None`` without such a step."""
    if not isinstance(size, int):
        return None
    candidates = [c for c in costs if c["backbone"] == backbone and c["channels"] == channels]
    if not candidates:
        return None
    work = T * size * size
    best = min(candidates, key=lambda c: abs(math.log(work / (c["T"] * c["size"] ** 2))))
    return best, work / (best["T"] * best["size"] ** 2)


def config_step(cfg, costs: list[dict], data: dict | None = None) -> tuple[dict, float, str | None] | None:
    """The measured step of ``cfg``'s network (:func:`nearest_step`), or else DVSNet-128's, slowed by the
    network's CPU step time relative to DVSNet-128's that ``scripts/bench_data.py`` measured (``data``,
    :func:`data_costs`): ``(step, factor, note)``, the note naming the second basis; ``None`` without either."""
    channels, T, size = cfg.backbone.get("channels"), cfg.dataset.get("T"), cfg.dataset.get("size")
    if (step := nearest_step(costs, cfg.backbone.name, channels, T, size)) is not None:
        return (*step, None)
    ratio = ((data or {}).get("ratios") or {}).get((cfg.backbone.name, channels, T, size))
    if ratio is None or (step := nearest_step(costs, "dvsnet", 128, T, size)) is None:
        return None
    bench, scale = step
    width = f" ({channels} channels)" if channels else ""
    return bench, scale * ratio["train_ratio"], f"{cfg.backbone.name}{width} timed as DVSNet-128 x its CPU step ratio"


def data_costs(bench_dir: str | Path | None = None) -> dict | None:
    """The data side of the vision settings measured by ``scripts/bench_data.py`` (the "after" rows of the newest
    ``data_pipeline`` file under ``bench_dir``): ``{"file", "hardware", "threads", "settings": {(dataset, T, size):
    {"prep_hours", "raw_gib", "cache_gib", "extrapolated"}}, "workers": {(dataset, backbone, channels, T, size):
    loader workers the GPU needs}, "ratios": {(backbone, channels, T, size): CPU step ratio to DVSNet-128}}``, or
    ``None`` without such a file."""
    found = bench_records(bench_dir, "data_pipeline")
    if not found:
        return None
    path, record = max(found, key=lambda item: str(item[1].get("date", "")))
    out = {"file": path.name, "hardware": record["hardware"], "settings": {}, "workers": {}, "ratios": {}}
    for row in record["rows"]:
        if row["version"] != "after":
            continue
        threads = max(row["prep_full"], key=int)
        out["threads"] = int(threads)
        out["settings"][(row["dataset"], row["T"], row["size"])] = {
            "prep_hours": row["prep_full"][threads]["hours"],
            "raw_gib": row["raw_gib_full"],
            "cache_gib": row["prep_full"][threads]["cache_gib"],
            "extrapolated": bool(row.get("extrapolated")),
        }
        network = (row["backbone"], row.get("channels"), row["T"], row["size"])
        if row.get("workers_to_feed_gpu"):
            out["workers"][(row["dataset"], *network)] = max(row["workers_to_feed_gpu"].values())
        if row.get("cpu_step_ratio"):
            out["ratios"][network] = row["cpu_step_ratio"]
    return out


def estimate(experiment: str, costs: list[dict], data: dict | None = None) -> dict:
    """GPU-hours of an experiment's full sweep from measured train steps (:func:`step_costs`): per job, epochs x
    training samples x the measured seconds per training sample of its neuron, scaled by :func:`config_step`;
    validation is not counted. Jobs whose backbone, width or data size has no measurement are counted in
    ``unestimated`` with the reason. With ``data`` (:func:`data_costs`), ``"data"`` adds the one-time preparation of
    the sweep's data (hours of the benchmark's threads, once per dataset, T and size: the frame cache is shared by
    the jobs), its disk (raw data and frame caches, GiB) and the most loader workers one of its jobs needs to keep
    the GPU busy; datasets the benchmark did not measure are listed in ``"missing"``."""
    hours, estimated, total, basis, notes = 0.0, 0, 0, set(), set()
    unestimated: dict[str, int] = defaultdict(int)
    settings, datasets, workers = set(), set(), []
    for job in jobs(experiment):
        cfg = job["cfg"]
        count = len(job["neurons"]) * job["jobs_per_neuron"]
        total += count
        settings.add((cfg.dataset.name, cfg.dataset.get("T"), cfg.dataset.get("size")))
        datasets.add(cfg.dataset.name)
        network = (cfg.backbone.name, cfg.backbone.get("channels"), cfg.dataset.get("T"), cfg.dataset.get("size"))
        if (need := ((data or {}).get("workers") or {}).get((cfg.dataset.name, *network))) is not None:
            workers.append(need)
        step, samples = config_step(cfg, costs, data), train_samples(cfg)
        if step is None:
            unestimated[
                f"{cfg.backbone.name}"
                + (f" ({cfg.backbone.channels} channels)" if cfg.backbone.get("channels") else "")
                + ": no measured step"
            ] += count
            continue
        if samples is None:
            unestimated[f"{cfg.dataset.name}: size unknown"] += count
            continue
        bench, scale, note = step
        if note:
            notes.add(note)
        for neuron in job["neurons"]:
            timed = neuron if neuron in bench["rates"] or neuron not in NEURONS else NEURONS.meta(neuron).timed_as
            if timed not in bench["rates"]:
                unestimated[f"{neuron}: no measured step"] += job["jobs_per_neuron"]
                continue
            if timed != neuron:
                notes.add(f"{neuron} timed as {timed}")
            hours += job["jobs_per_neuron"] * cfg.trainer.max_epochs * samples * scale / bench["rates"][timed][0] / 3600
            estimated += job["jobs_per_neuron"]
        basis.add((bench["file"], bench["hardware"], bench["T"], bench["size"], bench["batch"]))
    out = {
        "jobs": total,
        "estimated": estimated,
        "hours": hours,
        "unestimated": dict(sorted(unestimated.items())),
        "basis": sorted(basis),
        "notes": sorted(notes),
        "data": None,
    }
    if data is not None:
        measured = {k: data["settings"][k] for k in settings if k in data["settings"]}
        raw = {name: next(v["raw_gib"] for k, v in measured.items() if k[0] == name) for name, *_ in measured}
        out["data"] = {
            "prep_hours": sum(v["prep_hours"] for v in measured.values()),
            "raw_gib": sum(raw.values()),
            "cache_gib": sum(v["cache_gib"] for v in measured.values()),
            "workers": max(workers) if workers else None,
            "missing": sorted(datasets - {k[0] for k in measured}),
            "extrapolated": sorted({k[0] for k, v in measured.items() if v["extrapolated"]}),
            "threads": data.get("threads"),
        }
    return out


def spec_values(spec: dict, key: str) -> list[str]:
    """Every value a table's cells match ``key`` against (table, rows and columns), in order."""
    matches = [spec.get("match") or {}] + [part.get("match") or {} for part in spec["rows"] + spec["columns"]]
    return list(dict.fromkeys(m[key] for m in matches if m.get(key) is not None))


def evaluation_estimate(study: str, experiment: str, spec: dict, costs: list[dict]) -> dict | None:
    """Seconds of the test passes of ``evaluate.py robustness=<study>`` on one run of ``experiment`` in the setting
    of ``spec`` (its dataset and backbone) that has a measured step: 1 clean + one per corruption level passes over
    the published test split, at the slowest measured neuron's test speed."""
    from omegaconf import OmegaConf

    from fsnn.data.registry import dataset_info

    corruptions = OmegaConf.load(config_root() / "robustness" / f"{study}.yaml").corruptions
    passes = 1 + sum(len(c.levels) for c in corruptions.values())
    out = []
    datasets, backbones = spec_values(spec, "dataset"), spec_values(spec, "backbone")
    for job in jobs(experiment):
        cfg = job["cfg"]
        if cfg.dataset.name not in datasets or cfg.backbone.name not in backbones:
            continue
        step = nearest_step(
            costs, cfg.backbone.name, cfg.backbone.get("channels"), cfg.dataset.T, cfg.dataset.get("size")
        )
        test = dataset_info(cfg.dataset.name).published.get("test")
        if step is None or test is None:
            continue
        bench, scale = step
        rate = min(r[1] for r in bench["rates"].values())
        out.append(passes * test * scale / rate)
    return {"passes": passes, "seconds": max(out)} if out else None
