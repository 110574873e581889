#!/usr/bin/env python
"""The data side of the paper's vision tables, measured: can the data loader keep a GPU busy?

For every vision configuration of the paper's tables (each experiment's sweep composed with Hydra: dataset x
backbone at its T, frame size and batch; ``table1_neuromorphic``, ``table_static`` and the appendix ablations), on
fakes written by ``fsnn-fixtures DIR --scale FRACTION`` in the real on-disk formats (the full size for all but HarDVS
and ImageNet, whose fraction is read from the files found and whose preparation is extrapolated per sample):

* ``samples`` and ``raw_bytes``: the recordings or images on disk (extrapolated to the full dataset);
* ``prep``: the one-time preparation, ``build_dataset`` on a cold cache (parsing the raw files and writing the frame
  cache; for the static images, reading the pickles or listing the JPEGs), with 1 and 2 threads
  (``num_workers`` of ``build_dataset``): seconds in all and per sample, the cache's size on disk and the peak
  resident memory (extrapolated to the full dataset);
* ``loader``: samples per second from the built cache through the suite's data module
  (:class:`fsnn.data.datamodules.SplitDataModule`, as ``train.py`` builds it), with 1 and 2 loader workers, for the
  training loader (shuffled, the training transforms) and the test loader, after the workers' first batches, with
  the cache's files (ImageNet's JPEGs) read once before, as they are in the page cache from the second epoch on;
  ``per_worker`` is the slower of ``rate / workers`` over the worker counts;
* ``gpu``: the train and test step's samples per second on a GPU from ``results/bench/*cuda*.json``
  (``scripts/bench_train.py --device cuda``: DVSNet-128, the fastest neuron) scaled to the configuration's
  ``T x H x W`` as the report's estimates are (:func:`fsnn.report.estimates.nearest_step`); a backbone without a
  measured GPU step is scaled further by its CPU step time relative to DVSNet-128's at the same input, measured
  here (``cpu_step_ratio``), and its ``gpu.basis`` says so;
* ``workers_to_feed_gpu``: ``gpu / per_worker`` for training and for testing: the loader workers an 8-worker
  budget has to cover.

Each measurement runs in a fresh process with one torch thread, for the code ``--before`` (a git revision, extracted
with ``git archive``) and the working tree ("after"), in one run on the same machine: a table on stdout and JSON at
``--out`` (default ``results/bench/data_pipeline.json``)::

    .venv/bin/fsnn-fixtures /data/fakes --scale 1.0 --only dvsgesture nmnist ncaltech101 dvslip cifar10 cifar100
    .venv/bin/fsnn-fixtures /data/fakes --scale 0.02 --only hardvs imagenet
    .venv/bin/python scripts/bench_data.py --data-dir /data/fakes --scratch /data/bench-scratch --before <rev>
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_tools import GIB, ROOT, extract_tree, watched

from fsnn.atomic import write_json_atomic
from fsnn.runs.provenance import cpu_name, package_versions

OUT = ROOT / "results" / "bench" / "data_pipeline.json"
MARK = "@@RESULT@@ "


# -- the configurations ------------------------------------------------------------------------


def configurations() -> list[dict]:
    """The vision settings of every experiment (its sweep composed; an experiment whose sweep cannot be listed, an
    Optuna search, by its own config): ``{dataset, backbone, channels, T, size, batch, experiments, overrides}``."""
    from hydra import compose, initialize_config_dir

    from fsnn.data.registry import dataset_info
    from fsnn.report.estimates import jobs
    from fsnn.runs.configs import config_root, register_resolvers
    from fsnn.runs.recipe_switches import register_recipe_switches

    register_recipe_switches()
    register_resolvers()
    found: dict[tuple, dict] = {}
    for path in sorted((config_root() / "experiment").glob("*.yaml")):
        if path.stem.endswith("_smoke"):
            continue
        try:
            cfgs = [(job["cfg"], job["overrides"]) for job in jobs(path.stem)]
        except Exception:  # noqa: BLE001 - an interval sweep (Optuna) has no list of jobs: its base config
            with initialize_config_dir(str(config_root()), version_base="1.3"):
                overrides = [f"experiment={path.stem}"]
                cfgs = [(compose("config", overrides=overrides), overrides)]
        for cfg, overrides in cfgs:
            if dataset_info(cfg.dataset.name).kind not in ("event", "static"):
                continue
            key = (
                cfg.dataset.name,
                cfg.backbone.name,
                cfg.backbone.get("channels"),
                int(cfg.dataset.T),
                int(cfg.dataset.size),
                int(cfg.dataset.batch_size),
                cfg.dataset.get("encoder"),
            )
            names = ("dataset", "backbone", "channels", "T", "size", "batch", "encoder")
            entry = found.setdefault(key, {**dict(zip(names, key)), "experiments": []})
            entry.setdefault("overrides", overrides)
            if path.stem not in entry["experiments"]:
                entry["experiments"].append(path.stem)
    return [found[k] for k in sorted(found, key=lambda k: tuple(str(v) for v in k))]


# -- children: one measurement each, in the tree given by PYTHONPATH ------------------------------


def _splits(args, cache_dir: Path, num_workers: int):
    from fsnn.data import build_dataset

    return build_dataset(
        args.dataset,
        args.data_dir,
        T=args.T,
        size=args.size,
        num_workers=num_workers,
        cache_dir=cache_dir,
        **({"encoder": args.encoder} if args.encoder else {}),
        verify=False,  # a fake at a fraction has fewer files than the release
        download=False,
    )


def child_prep(args) -> dict:
    """A cold ``build_dataset``: seconds, samples and the cache's bytes."""
    start = time.perf_counter()
    splits = _splits(args, args.cache_dir, args.workers)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "samples": {name: len(s) for name, s in zip(("train", "val", "test"), splits)},
        "cache_bytes": sum(f.stat().st_size for f in args.cache_dir.rglob("*") if f.is_file()),
    }


def _rate(loader, batches: int) -> float:
    """Samples per second of ``loader`` over up to ``batches`` batches after its first two (the workers' start;
    fewer on a loader of fewer batches)."""
    it = iter(loader)
    for _ in range(min(2, len(loader) - 1)):
        next(it)
    count, start = 0, time.perf_counter()
    for _, (_x, y) in zip(range(batches), it):
        count += len(y)
    return count / (time.perf_counter() - start)


def child_load(args) -> dict:
    """Samples per second of the suite's training and test loaders (``args.workers`` workers) from a built cache."""
    import inspect

    from fsnn.data.datamodules import SplitDataModule
    from fsnn.data.registry import dataset_info

    splits = _splits(args, args.cache_dir, 1)
    # the steady state from the second epoch on: the frame cache (or the images) in the page cache
    for path in [*args.cache_dir.rglob("*"), *(args.data_dir / dataset_info(args.dataset).directory).rglob("*.JPEG")]:
        if path.is_file():
            with open(path, "rb") as handle:
                while handle.read(1 << 24):
                    pass
    # the suite's data module: frame datasets as integer counts where the code has that option
    counts = {"counts": True} if "counts" in inspect.signature(SplitDataModule).parameters else {}
    data = SplitDataModule(lambda: splits, args.batch, args.workers, 0, **counts)
    batches = max(4, math.ceil(args.samples / args.batch))
    return {
        "train_sps": _rate(data.train_dataloader(), batches),
        "test_sps": _rate(data.test_dataloader(), batches),
        "counts": bool(counts),
    }


def child_step(args) -> dict:
    """Median seconds of a train step (forward, backward, Adam) and a test step of the configuration's network and of
    DVSNet-128 on the same random input (``args.batch`` samples), one thread."""
    import torch
    from hydra import compose, initialize_config_dir

    from fsnn.data.registry import dataset_info
    from fsnn.runs.configs import config_root, register_resolvers
    from fsnn.runs.recipe_switches import register_recipe_switches
    from fsnn.suite.tasks import build_task

    register_recipe_switches()
    register_resolvers()
    out = {}
    for name, extra in (("config", []), ("dvsnet", ["backbone=dvsnet", "backbone.channels=128"])):
        with initialize_config_dir(str(config_root()), version_base="1.3"):
            cfg = compose("config", overrides=[*args.overrides, *extra])
        module = build_task(cfg).module
        channels = dataset_info(cfg.dataset.name).in_channels
        x = torch.rand(args.batch, cfg.dataset.T, channels, cfg.dataset.size, cfg.dataset.size)
        y = torch.randint(0, module.num_classes, (args.batch,))
        optimizer = torch.optim.Adam(module.parameters())
        train, test = [], []
        for step in range(args.steps + 1):
            start = time.perf_counter()
            module.train()
            loss = torch.nn.functional.cross_entropy(module(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            train.append(time.perf_counter() - start)
            start = time.perf_counter()
            module.eval()
            with torch.no_grad():
                module(x)
            test.append(time.perf_counter() - start)
        out[name] = {"train_s": statistics.median(train[1:]), "test_s": statistics.median(test[1:])}
    return {
        "train_ratio": out["config"]["train_s"] / out["dvsnet"]["train_s"],
        "test_ratio": out["config"]["test_s"] / out["dvsnet"]["test_s"],
        "steps": out,
    }


CHILDREN = {"prep": child_prep, "load": child_load, "step": child_step}


def child(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=CHILDREN)
    p.add_argument("--dataset")
    p.add_argument("--data-dir", type=Path)
    p.add_argument("--cache-dir", type=Path)
    p.add_argument("--T", type=int)
    p.add_argument("--size", type=int)
    p.add_argument("--batch", type=int)
    p.add_argument("--encoder", default=None)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--overrides", nargs="*", default=[])
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    print(MARK + json.dumps(CHILDREN[args.what](args)), flush=True)


# -- the parent --------------------------------------------------------------------------------


def _measure(tree: Path, argv: list[str], limit_gib: float) -> tuple[dict, float, float]:
    """Run a child in ``tree``: ``(its result, seconds, peak GiB)``; a failed child raises with its output."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.update(FSNN_DATA_DOWNLOAD="0", TQDM_DISABLE="1", PYTHONWARNINGS="ignore")
    code, seconds, peak, output = watched(
        [sys.executable, str(Path(__file__).resolve()), "child", *argv], tree, env, limit_gib
    )
    lines = [line for line in output.splitlines() if line.startswith(MARK)]
    if code != 0 or not lines:
        raise RuntimeError(f"child {argv[:1]} in {tree} failed ({code}):\n{output[-3000:]}")
    return json.loads(lines[-1][len(MARK) :]), seconds, peak


def published_samples(name: str) -> int:
    """Samples of the published release of ``name``, all splits."""
    from fsnn.data.hardvs import HARDVS_SIZES
    from fsnn.data.static import PUBLISHED_IMAGES
    from fsnn.data.tonic_datasets import TONIC_SPECS

    if name in TONIC_SPECS:
        return sum(TONIC_SPECS[name].published.values())
    if name == "hardvs":
        return sum(HARDVS_SIZES.values())
    return sum(PUBLISHED_IMAGES[name])


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and "fsnn_cache" not in f.parts)


def gpu_rates(config: dict, ratio: dict | None) -> dict | None:
    """The GPU's train and test samples per second for ``config`` (see the module docstring), or ``None``."""
    from fsnn.report.estimates import nearest_step, step_costs

    costs = step_costs()
    network = (config["channels"], config["T"], config["size"])
    found, scaled_by = nearest_step(costs, config["backbone"], *network), None
    if found is None:
        found, scaled_by = nearest_step(costs, "dvsnet", 128, *network[1:]), ratio
    if found is None or (scaled_by is None and config["backbone"] != "dvsnet"):
        return None
    bench, scale = found
    neuron, (train, test) = max(bench["rates"].items(), key=lambda item: item[1][0])
    basis = f"{bench['file']} ({bench['hardware']}, {neuron}, T={bench['T']} {bench['size']}px) x T*H*W"
    out = {"train_sps": train / scale, "test_sps": test / scale, "basis": basis}
    if scaled_by is not None:
        out["train_sps"] /= scaled_by["train_ratio"]
        out["test_sps"] /= scaled_by["test_ratio"]
        out["basis"] = f"DVSNet-128's step: {basis}, x this machine's CPU step ratio of {config['backbone']}"
    return out


def run(args) -> None:
    configs = configurations()
    if args.datasets:
        configs = [c for c in configs if c["dataset"] in args.datasets]
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        trees = {"after": ROOT}
        if args.before:
            trees = {"before": extract_tree(args.before, Path(tmp)), **trees}
        ratios = {}
        for config in configs:  # the CPU step ratios (the code of the networks is the working tree's)
            key = (config["backbone"], config["channels"], config["T"], config["size"])
            if config["backbone"] == "dvsnet" and config["channels"] == 128 or key in ratios:
                continue
            argv = ["step", "--batch", str(args.step_batch), "--overrides", *config["overrides"], "neuron=flif"]
            ratios[key], _, _ = _measure(ROOT, argv, args.memory_limit_gib)
            print(f"cpu step ratio {key}: {ratios[key]['train_ratio']:.2f} train, {ratios[key]['test_ratio']:.2f} test")
        settings = {}  # one preparation and loader measurement per (dataset, T, size, batch) and version
        for config in configs:
            key = (config["dataset"], config["T"], config["size"], config["batch"], config["encoder"])
            settings.setdefault(key, []).append(config)
        rows = []
        for setting, group in settings.items():
            for version, tree in trees.items():
                measured = _setting(args, Path(tmp), version, tree, *setting)
                for config in group:
                    key = (config["backbone"], config["channels"], config["T"], config["size"])
                    rows.append(_row(config, version, measured, gpu_rates(config, ratios.get(key)), ratios.get(key)))
                    print(_line(rows[-1]), flush=True)
    record = {
        "benchmark": "data_pipeline",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "hardware": cpu_name(),
        "cpus": os.cpu_count(),
        "setting": {
            "data_dir": "fakes from fsnn-fixtures (real on-disk formats)",
            "before": args.before,
            "build_workers": args.workers,
            "loader_workers": args.workers,
            "loader_samples": args.samples,
        },
        "versions": package_versions(),
        "rows": rows,
    }
    write_json_atomic(args.out, record)
    print(table(rows))
    print(f"wrote {args.out}")


def _setting(
    args, tmp: Path, version: str, tree: Path, dataset: str, T: int, size: int, batch: int, encoder: str | None
) -> dict:
    """Preparation with each thread count (cold caches) and loader rates with each worker count, for one version."""
    from fsnn.data.registry import dataset_info

    info = dataset_info(dataset)
    raw = args.data_dir / info.directory
    full = published_samples(dataset)
    common = ["--dataset", dataset, "--data-dir", str(args.data_dir), "--T", str(T), "--size", str(size)]
    common += ["--encoder", encoder] if encoder else []
    prep, samples = {}, None
    for workers in args.workers:
        cache = tmp / f"{version}-{workers}"
        shutil.rmtree(cache, ignore_errors=True)
        out, _, peak = _measure(
            tree, ["prep", *common, "--cache-dir", str(cache), "--workers", str(workers)], args.memory_limit_gib
        )
        samples = out["samples"]
        n = sum(samples.values())
        prep[str(workers)] = {
            "seconds": out["seconds"],
            "per_sample_ms": 1e3 * out["seconds"] / n,
            "cache_bytes": out["cache_bytes"],
            "peak_gib": peak,
        }
        if workers != args.workers[0]:
            shutil.rmtree(cache, ignore_errors=True)
    cache = tmp / f"{version}-{args.workers[0]}"
    loader = {}
    for workers in args.workers:
        argv = ["load", *common, "--cache-dir", str(cache), "--batch", str(batch), "--workers", str(workers)]
        out, _, peak = _measure(tree, [*argv, "--samples", str(args.samples)], args.memory_limit_gib)
        loader[str(workers)] = {**out, "peak_gib": peak}
    shutil.rmtree(cache, ignore_errors=True)
    n = sum(samples.values())
    return {
        "samples": samples,
        "full_samples": full,
        "fraction": n / full,
        "raw_bytes": folder_bytes(raw),
        "prep": prep,
        "loader": loader,
    }


def _row(config: dict, version: str, measured: dict, gpu: dict | None, ratio: dict | None) -> dict:
    scale = 1 / measured["fraction"]
    per_worker = {
        split: min(m[f"{split}_sps"] / int(w) for w, m in measured["loader"].items()) for split in ("train", "test")
    }
    full_prep = {
        w: {
            "hours": p["seconds"] * scale / 3600,
            "cache_gib": p["cache_bytes"] * scale / GIB,
            "peak_gib": p["peak_gib"],
        }
        for w, p in measured["prep"].items()
    }
    return {
        **{k: config[k] for k in ("dataset", "backbone", "channels", "T", "size", "batch", "encoder", "experiments")},
        "version": version,
        **measured,
        "extrapolated": measured["fraction"] < 0.999,
        "raw_gib_full": measured["raw_bytes"] * scale / GIB,
        "prep_full": full_prep,
        "per_worker": per_worker,
        "cpu_step_ratio": ratio,
        "gpu": gpu,
        "workers_to_feed_gpu": None
        if gpu is None
        else {split: gpu[f"{split}_sps"] / per_worker[split] for split in ("train", "test")},
    }


def _line(row: dict) -> str:
    need = row["workers_to_feed_gpu"] or {}
    return (
        f"{row['version']:<6} {row['dataset']:<11} {row['backbone']:<19} loader/worker "
        f"{row['per_worker']['train']:8.0f} {row['per_worker']['test']:8.0f}  workers "
        f"{need.get('train', float('nan')):5.2f} {need.get('test', float('nan')):5.2f}"
    )


def table(rows: list[dict]) -> str:
    """The markdown table of ``rows``: per configuration and version, preparation, loader and workers needed."""
    workers = sorted({w for r in rows for w in r["prep"]}, key=int)
    head = (
        "| dataset | backbone | T | size | batch | version | samples (fraction) | raw GiB (full) | "
        + " | ".join(f"prep s/sample, {w} thr" for w in workers)
        + " | prep hours (full, "
        + workers[-1]
        + " thr) | cache GiB (full) | prep peak GiB | loader samples/s/worker train / test | GPU samples/s train / "
        "test | workers to feed GPU train / test |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        gpu, need = r["gpu"], r["workers_to_feed_gpu"]
        lines.append(
            "| "
            + " | ".join(
                [
                    r["dataset"] + (f" ({r['encoder']})" if r["encoder"] not in (None, "direct") else ""),
                    r["backbone"] + (f"-{r['channels']}" if r["channels"] else ""),
                    str(r["T"]),
                    str(r["size"]),
                    str(r["batch"]),
                    r["version"],
                    f"{sum(r['samples'].values()):,} ({r['fraction']:.3g})",
                    f"{r['raw_gib_full']:.2f}",
                    *(f"{r['prep'][w]['per_sample_ms']:.2f} ms" for w in workers),
                    f"{r['prep_full'][workers[-1]]['hours']:.3f}",
                    f"{r['prep_full'][workers[-1]]['cache_gib']:.2f}",
                    f"{max(p['peak_gib'] for p in r['prep'].values()):.2f}",
                    f"{r['per_worker']['train']:,.0f} / {r['per_worker']['test']:,.0f}",
                    "-" if gpu is None else f"{gpu['train_sps']:,.0f} / {gpu['test_sps']:,.0f}",
                    "-" if need is None else f"{need['train']:.2f} / {need['test']:.2f}",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["child"]:
        child(argv[1:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data-dir", type=Path, required=True, help="the fakes (fsnn-fixtures DIR --scale ...)")
    p.add_argument("--scratch", type=Path, default=None, help="where the caches are built (default: the temp dir)")
    p.add_argument("--before", default=None, help="git revision of the code to compare with (default: none)")
    p.add_argument("--datasets", nargs="*", default=None, help="only these datasets (default: all)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="thread and loader worker counts")
    p.add_argument("--samples", type=int, default=2048, help="samples timed per loader (default 2048)")
    p.add_argument("--step-batch", type=int, default=2, help="batch of the CPU step ratios (default 2)")
    p.add_argument("--memory-limit-gib", type=float, default=16.0)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    args.data_dir = args.data_dir.resolve()
    run(args)


if __name__ == "__main__":
    main()
