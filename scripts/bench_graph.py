#!/usr/bin/env python
"""Graph pipeline benchmarks on the CPU, two of them.

``runs``: Table 2 on real graphs, one whole run per (code version, dataset, backbone, neuron). Each run is ``train.py
experiment=table2_node_classification dataset=<name>`` (the matched recipe: T = 100, batch 32, Adam, ``--epochs``
epochs, test phase of 20 Poisson re-samplings at the last and the best checkpoint) in a fresh process pinned to one CPU
core with one torch thread, for the code ``--before`` (a git revision, extracted into a temporary folder with ``git
archive``) and the working tree ("after"), so that both are measured in one run on the same machine. ``--before-epochs``
runs the old code for fewer epochs and adds the missing ones at its measured epoch time (a 100-epoch run of the old code
on Computers takes an hour); the table says which whole runs are extrapolated. Reported per run, from its
``metrics.json``, the process's wall time and its resident memory (sampled every 50 ms; a run past
``--memory-limit-gib`` is stopped and reported so): train seconds per epoch (the train steps), the rest of an epoch
(validation, checkpoints and the loop: ``(wall_time_s - epochs x train - test phase) / epochs``), one test pass (20
re-samplings of the test nodes), the whole run (process start to exit, imports included), the peak memory and, for
SGCN f-LIF on Photo and Computers, the targets (at most 6 and 12 minutes, under 3 GiB). ``--experiment
table_link_prediction`` times link prediction the same way (MSG, 200 epochs; targets for f-IF: Physics 8 minutes,
Computers and CS 6, Photo 4, under 3 GiB). Results: a table on stdout and JSON at ``--out`` (default
``results/bench/graph_runs.json``, written atomically)::

    .venv/bin/python scripts/bench_graph.py runs --datasets photo computers --data-dir <copy of graphs> \
        --before <rev> --before-epochs 5 --cpus 0 1
    .venv/bin/python scripts/bench_graph.py runs --before <rev> --backbones sgcn --neurons flif sj_lif --epochs 5
    .venv/bin/python scripts/bench_graph.py runs --experiment table_link_prediction --backbones msg --neurons fif \
        --epochs 200 --datasets physics computers cs photo --data-dir <copy of graphs> --before <rev> \
        --out results/bench/link_runs.json

``arxiv``: CPU time and peak memory of the preprocessing of an ogbn-arxiv-sized graph, then one training epoch of
SGCN per neuron. The graph is :func:`fsnn.data.graphs.make_synthetic_graph` with ogbn-arxiv's size: 169,343 nodes,
~1.17M undirected edges (2.33M directed entries), 128 features, 40 classes (the real data is not needed). Stages, each
timed with ``time.perf_counter``:

* ``propagate``   ``propagate(x, edge_index, hops=1)``: one SGC hop, sparse
* ``standardize`` column z-score with training-node statistics (70 % stratified training mask)
* ``laplacian_pe`` 32 Laplacian eigenvectors through ``scipy.sparse.linalg.eigsh``
* ``random_walk_pe`` 32 random-walk steps, ``method="auto"`` (the probe estimator at this size)

then one epoch of SGCN (T=100 Poisson steps, batch 32, Adam, the paper's node-classification setting) on the
70 % training nodes for each neuron of ``--epoch-neurons`` (same model, only the neuron differs), timed with
``time.perf_counter``; plus ``rwpe_exact (projected)``: the exact RWPE timed on a few node blocks and extrapolated to all nodes (it is
not run in full: hours). Memory: resident set size sampled every 10 ms by a thread (psutil) -> the peak during each
stage, and the process peak (``ru_maxrss``) at the end. Results: a table on stdout and JSON at ``--out``
(default ``results/bench/graph.json``, written atomically)::

    .venv/bin/python scripts/bench_graph.py arxiv
    .venv/bin/python scripts/bench_graph.py arxiv --nodes 20000 --edges 100000 --out /tmp/small.json
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import resource
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import torch
from bench_tools import extract_tree, watched

from fsnn.atomic import write_json_atomic
from fsnn.data import graph_features as F
from fsnn.data.graphs import make_synthetic_graph, stratified_masks
from fsnn.data.registry import dataset_info
from fsnn.runs.provenance import package_versions

DEFAULT_OUT = Path("results") / "bench" / "graph.json"  # under the current directory (arxiv)
GIB = 2**30


class _RSSSampler:
    """Peak resident set size between ``start()`` and ``stop()``, sampled by a background thread."""

    def __init__(self, interval: float = 0.01):
        self.proc = psutil.Process()
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = None

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            self._stop.wait(self.interval)

    def start(self):
        self.peak = self.proc.memory_info().rss
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)
        return self.peak


def _stage(rows: list, name: str, fn, note: str = ""):
    sampler = _RSSSampler()
    before = psutil.Process().memory_info().rss
    sampler.start()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    peak = sampler.stop()
    rows.append(
        {"stage": name, "seconds": seconds, "rss_before_gib": before / GIB, "peak_rss_gib": peak / GIB, "note": note}
    )
    print(f"  {name:<22} {seconds:8.2f} s   peak RSS {peak / GIB:6.2f} GiB   {note}", flush=True)
    return out


def _project_exact_rwpe(edge_index, n: int, steps: int, blocks: int = 4) -> dict:
    """Time the exact RWPE on ``blocks`` blocks of unit vectors and extrapolate to all ``n`` nodes."""
    s = F.normalized_adjacency(edge_index, n, self_loops=False)
    b = F.RWPE_BLOCK
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for _ in range(blocks):
        idx = rng.choice(n, b, replace=False)
        y = np.zeros((n, b))
        y[idx, np.arange(b)] = 1.0
        F._walk_chain(s, y, steps, axis=0)
    per_block = (time.perf_counter() - t0) / blocks
    workers = F._workers(None)
    return {
        "seconds_per_block_one_thread": per_block,
        "block_nodes": b,
        "workers": workers,
        "projected_seconds": per_block * math.ceil(n / b) / workers,
        "work_multiply_adds": float(n) * math.ceil(steps / 2) * s.nnz,
    }


def time_epoch(
    features: torch.Tensor, y: torch.Tensor, train: torch.Tensor, neuron: str, T: int, batch: int, seed: int
) -> dict:
    """One epoch of SGCN over the training nodes (mini-batches of rows), Adam step per batch."""
    from torch.nn import functional as nnf

    from fsnn.models import build_backbone

    torch.manual_seed(seed)
    model = build_backbone("sgcn", in_features=features.shape[1], num_classes=int(y.max()) + 1, neuron=neuron, T=T)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    idx = train.nonzero().flatten()[torch.randperm(int(train.sum()), generator=torch.Generator().manual_seed(seed))]
    start = time.perf_counter()
    for i in range(0, len(idx), batch):
        rows = idx[i : i + batch]
        loss = nnf.cross_entropy(model(features[rows]), y[rows])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {
        "neuron": neuron,
        "seconds": time.perf_counter() - start,
        "steps": math.ceil(len(idx) / batch),
        "engine": getattr(model.neuron, "last_engine", None),
    }


def arxiv_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", type=int, default=169_343)
    p.add_argument("--edges", type=int, default=1_166_243, help="undirected edges to draw (before dedup)")
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--classes", type=int, default=40)
    p.add_argument("--pe-dim", type=int, default=32)
    p.add_argument("--rw-steps", type=int, default=32)
    p.add_argument("--rw-probes", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget-seconds", type=float, default=120.0)
    p.add_argument("--budget-gib", type=float, default=8.0)
    p.add_argument(
        "--epoch-neurons",
        nargs="*",
        default=["sj_lif", "flif"],
        help="neurons to time one SGCN epoch with (none: preprocessing only)",
    )
    p.add_argument("--T", type=int, default=100)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.set_defaults(run=arxiv)


def arxiv(args) -> int:
    n = args.nodes
    print(
        f"graph: {n} nodes, ~{args.edges} undirected edges, {args.features} features "
        f"({os.cpu_count()} CPUs, torch threads {torch.get_num_threads()})",
        flush=True,
    )
    t0 = time.perf_counter()
    g = make_synthetic_graph(n, args.classes, args.features, avg_degree=2 * args.edges / n, seed=args.seed)
    train, _, _ = stratified_masks(g.y, (0.7, 0.2, 0.1), seed=args.seed)
    gen_seconds = time.perf_counter() - t0
    e_directed = int(g.edge_index.size(1))
    print(
        f"  generated in {gen_seconds:.1f} s: edge_index [2, {e_directed}] ({e_directed // 2} undirected edges)",
        flush=True,
    )

    rows: list[dict] = []
    method = F.resolve_rwpe_method(g.edge_index, n, args.rw_steps)
    xp = _stage(rows, "propagate", lambda: F.propagate(g.x, g.edge_index, hops=1), "hops=1")
    _stage(rows, "standardize", lambda: F.standardize(xp, train), "train-node statistics")
    _stage(
        rows,
        "laplacian_pe",
        lambda: F.laplacian_pe(g.edge_index, n, dim=args.pe_dim, seed=args.seed),
        f"dim={args.pe_dim}, eigsh",
    )
    _stage(
        rows,
        "random_walk_pe",
        lambda: F.random_walk_pe(
            g.edge_index, n, steps=args.rw_steps, method="auto", num_probes=args.rw_probes, seed=args.seed
        ),
        f"steps={args.rw_steps}, method=auto->{method}"
        + (f", {args.rw_probes} probes" if method == "estimate" else ""),
    )
    total = sum(r["seconds"] for r in rows)
    process_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB  # Linux: kB
    print(f"  {'total':<22} {total:8.2f} s   process peak RSS {process_peak:6.2f} GiB", flush=True)
    projection = _project_exact_rwpe(g.edge_index, n, args.rw_steps)
    print(
        f"  rwpe exact (projected): {projection['projected_seconds'] / 60:.0f} min "
        f"({projection['work_multiply_adds']:.2e} multiply-adds, {projection['workers']} threads)",
        flush=True,
    )

    epochs = []
    features = F.standardize(xp, train)
    for neuron in args.epoch_neurons:
        epochs.append(time_epoch(features, g.y, train, neuron, args.T, args.batch, args.seed))
        print(f"  epoch {neuron:<14} {epochs[-1]['seconds']:8.1f} s ({epochs[-1]['steps']} steps)", flush=True)
    ref = next((e["seconds"] for e in epochs if e["neuron"] == "sj_lif"), None)
    for e in epochs:
        e["ratio_vs_sj_lif"] = e["seconds"] / ref if ref else None

    ok_time, ok_mem = total < args.budget_seconds, process_peak < args.budget_gib
    print("\n| stage | seconds | peak RSS (GiB) | note |\n|---|---:|---:|---|")
    for r in rows:
        print(f"| {r['stage']} | {r['seconds']:.2f} | {r['peak_rss_gib']:.2f} | {r['note']} |")
    print(
        f"| **total** | **{total:.2f}** | **{process_peak:.2f}** (process) | targets < {args.budget_seconds:.0f} s:"
        f" {'met' if ok_time else 'MISSED'}, < {args.budget_gib:.0f} GiB: {'met' if ok_mem else 'MISSED'} |"
    )
    if epochs:
        print(f"\n| SGCN epoch, T={args.T}, batch {args.batch} | seconds | x sj_lif | engine |\n|---|---:|---:|---|")
        for e in epochs:
            ratio = f"{e['ratio_vs_sj_lif']:.2f}" if e["ratio_vs_sj_lif"] else "-"
            print(f"| {e['neuron']} | {e['seconds']:.1f} | {ratio} | {e['engine'] or ''} |")

    payload = {
        "benchmark": "graph",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "graph": {
            "generator": "fsnn.data.graphs.make_synthetic_graph",
            "num_nodes": n,
            "edge_index_entries": e_directed,
            "undirected_edges": e_directed // 2,
            "num_features": args.features,
            "num_classes": args.classes,
            "seed": args.seed,
            "generation_seconds": gen_seconds,
        },
        "params": {
            "hops": 1,
            "pe_dim": args.pe_dim,
            "rw_steps": args.rw_steps,
            "rw_method": method,
            "rw_probes": args.rw_probes,
        },
        "stages": rows,
        "total_seconds": total,
        "process_peak_rss_gib": process_peak,
        "targets": {"seconds": args.budget_seconds, "gib": args.budget_gib, "time_met": ok_time, "memory_met": ok_mem},
        "rwpe_exact_projection": projection,
        "epochs": epochs,
        "epoch_config": {"model": "sgcn", "T": args.T, "batch": args.batch, "optimizer": "Adam(lr=1e-3)"},
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "memory_gib": psutil.virtual_memory().total / GIB,
        },
        "versions": package_versions(),
    }
    write_json_atomic(args.out, payload)
    print(f"\nwrote {args.out}")
    return 0 if ok_time and ok_mem else 1


# --------------------------------------------------------------------------------------------- real graphs, whole runs
RUNS_OUT = Path("results") / "bench" / "graph_runs.json"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# whole runs on one core, test phase included: Table 2's SGCN f-LIF (100 epochs), link prediction's MSG f-IF (200)
TARGETS_MIN = {
    ("table2_node_classification", "sgcn", "flif", "photo"): 6.0,
    ("table2_node_classification", "sgcn", "flif", "computers"): 12.0,
    ("table_link_prediction", "msg", "fif", "physics"): 8.0,
    ("table_link_prediction", "msg", "fif", "computers"): 6.0,
    ("table_link_prediction", "msg", "fif", "cs"): 6.0,
    ("table_link_prediction", "msg", "fif", "photo"): 4.0,
}
TARGET_GIB = 3.0


def runs_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--experiment",
        default="table2_node_classification",
        choices=["table2_node_classification", "table_link_prediction"],
        help="node classification (Table 2) or link prediction (MSG, task=link)",
    )
    p.add_argument("--datasets", nargs="+", default=["cora"], help="real graphs (paths.data_dir/<Name>/raw)")
    p.add_argument("--before", default=None, help="git revision of the code to compare with (default: none)")
    p.add_argument(
        "--before-epochs",
        type=int,
        default=None,
        help="epochs of the --before runs (default: --epochs); fewer are extrapolated to --epochs, "
        "saying so in the table",
    )
    p.add_argument(
        "--before-overrides",
        nargs="+",
        default=None,
        help="one more --before run per setting with these overrides (e.g. dataset.eval_batch_size=256, "
        "for old code that does not fit in memory at the default)",
    )
    p.add_argument("--backbones", nargs="+", default=["sgcn"])
    p.add_argument("--neurons", nargs="+", default=["flif"])
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--data-dir",
        type=Path,
        default=Path("tests") / "data" / "planetoid",
        help="paths.data_dir holding <Name>/raw (default: the real Cora shipped with the tests)",
    )
    p.add_argument(
        "--cpus",
        type=int,
        nargs="+",
        default=[0],
        help="CPU cores to pin runs to, one run per core at a time (default: core 0)",
    )
    p.add_argument(
        "--memory-limit-gib",
        type=float,
        default=16.0,
        help="a run whose resident memory passes this is stopped and reported as such",
    )
    p.add_argument("--out", type=Path, default=RUNS_OUT)
    p.set_defaults(run=runs)


def _whole_run(
    tree: Path,
    version: str,
    dataset: str,
    backbone: str,
    neuron: str,
    epochs: int,
    args,
    results: Path,
    cpu: int,
    overrides: tuple[str, ...] = (),
) -> dict:
    """One Table 2 run of the code in ``tree`` on ``dataset``, pinned to ``cpu``: its timings and memory from the
    process and ``metrics.json``; with fewer than ``args.epochs`` epochs the whole run is extrapolated."""
    cmd = [
        sys.executable,
        str(tree / "train.py"),
        f"experiment={args.experiment}",
        "hydra.mode=RUN",
        f"dataset={dataset}",
        f"backbone={backbone}",
        f"neuron={neuron}",
        f"seed={args.seed}",
        f"trainer.max_epochs={epochs}",
        f"paths.data_dir={args.data_dir.resolve()}",
        f"paths.results_dir={results}",
        "logger=none",
        "trainer.enable_progress_bar=false",
        *overrides,
    ]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(tree)}
    code, process_s, sampled_peak, output = watched(cmd, tree, env, args.memory_limit_gib, {cpu})
    row = {
        "version": version,
        "experiment": args.experiment,
        "overrides": list(overrides),
        "dataset": dataset,
        "backbone": backbone,
        "neuron": neuron,
        "epochs": epochs,
        "cpu": cpu,
        "process_s": process_s,
        "peak_rss_gib": sampled_peak,
        "commit": tree.name,
    }
    if code != 0:
        killed = code == -9 and sampled_peak >= args.memory_limit_gib
        phase = "test" if "`Trainer.fit` stopped" in output else "training"  # fit ends before the test passes
        row["failed"] = (
            f"stopped at {sampled_peak:.1f} GiB resident in the {phase} phase (limit {args.memory_limit_gib:g} GiB)"
            if killed
            else f"exit code {code}: {output[-500:]}"
        )
        return row
    record = json.loads(next(results.glob(f"{args.experiment}/*/metrics.json")).read_text())
    # a node test pass scores the test nodes; a link one the whole graph, one "sample"
    per_pass = record["split_sizes"]["test"] if record.get("metric") == "acc" else 1
    test_pass = per_pass / record["test_samples_per_s"]
    train = record["train_epoch_s"]
    rest = (record["wall_time_s"] - epochs * train - 2 * test_pass) / epochs  # two test phases: last and best
    startup = process_s - record["wall_time_s"]
    whole = process_s + (args.epochs - epochs) * (train + rest)
    return {
        **row,
        "train_epoch_s": train,
        "rest_epoch_s": rest,
        "epoch_s": train + rest,
        "test_pass_s": test_pass,
        "startup_s": startup,
        "run_s": record["wall_time_s"],
        "whole_run_s": whole,
        "whole_run_extrapolated": epochs < args.epochs,
        "metric": record["metric"],
        "test_metric": record[f"test_{record['metric']}"],
        "peak_memory_gib": record.get("peak_memory_gib"),
        "commit": record["versions"].get("fsnn_commit") or tree.name.removeprefix("fsnn-"),
    }


def summarize(rows: list[dict]) -> None:
    """Each "after" row's speed-up over the "before" run of its setting (the one at the default config where it ran to
    its end, else the one with ``--before-overrides``) and, for SGCN f-LIF on Photo and Computers, its target."""
    before: dict[tuple, dict] = {}
    for r in rows:
        if r["version"] == "before" and "failed" not in r:
            key = (r["dataset"], r["backbone"], r["neuron"])
            if key not in before or not r["overrides"]:
                before[key] = r
    for r in rows:
        old = before.get((r["dataset"], r["backbone"], r["neuron"])) if r["version"] == "after" else None
        r["before_compared"] = old["overrides"] if old else None
        r["speedup_vs_before"] = old["whole_run_s"] / r["whole_run_s"] if old and "failed" not in r else None
        key = (r.get("experiment", "table2_node_classification"), r["backbone"], r["neuron"], r["dataset"])
        r["target_min"] = TARGETS_MIN.get(key) if r["version"] == "after" else None
        if r["target_min"] and "failed" not in r:
            r["target_met"] = r["whole_run_s"] <= 60 * r["target_min"] and r["peak_rss_gib"] < TARGET_GIB


def runs_table(rows: list[dict], epochs: int) -> str:
    """The rows of :func:`runs` (after :func:`summarize`) as a Markdown table."""
    lines = [
        f"| code | dataset | backbone | neuron | epochs run | train s/epoch | rest s/epoch | test pass s | "
        f"whole {epochs}-epoch run | peak RSS GiB | x before | target |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["dataset"], r["backbone"], r["neuron"], r["version"] != "before")):
        code = (
            f"{r['version']} ({r['commit'].removeprefix('fsnn-')[:7]}{', ' if r['overrides'] else ''}"
            f"{' '.join(r['overrides'])})"
        )
        head = f"| {code} | {r['dataset']} | {r['backbone']} | {r['neuron']} | {r['epochs']} |"
        if "failed" in r:
            lines.append(f"{head} - | - | - | {r['failed']} | {r['peak_rss_gib']:.1f} | | |")
            continue
        whole = f"{r['whole_run_s'] / 60:.1f} min" + (" (extrapolated)" if r["whole_run_extrapolated"] else "")
        speedup = ""
        if r.get("speedup_vs_before"):
            versus = f" (vs {' '.join(r['before_compared'])})" if r["before_compared"] else ""
            speedup = f"{r['speedup_vs_before']:.1f}x faster{versus}"
        target = (
            ""
            if not r.get("target_min")
            else f"<= {r['target_min']:g} min, < {TARGET_GIB:g} GiB: {'met' if r['target_met'] else 'MISSED'}"
        )
        lines.append(
            f"{head} {r['train_epoch_s']:.2f} | {r['rest_epoch_s']:.2f} | {r['test_pass_s']:.1f} | {whole} | "
            f"{r['peak_rss_gib']:.2f} | {speedup} | {target} |"
        )
    return "\n".join(lines)


def table_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("json", type=Path, nargs="?", default=RUNS_OUT, help="a saved `runs` benchmark")
    p.set_defaults(run=table)


def table(args) -> int:
    """Print the table of a saved ``runs`` benchmark again (speed-ups and targets recomputed from its rows)."""
    payload = json.loads(args.json.read_text())
    summarize(payload["runs"])
    print(runs_table(payload["runs"], payload["setting"]["epochs"]))
    return 0


def runs(args) -> int:
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        tmp = Path(tmp)
        trees = {"after": Path(__file__).resolve().parents[1]}
        if args.before:
            trees = {"before": extract_tree(args.before, tmp), **trees}
        epochs = {"before": args.before_epochs or args.epochs, "after": args.epochs}
        variants = [("after", ())] + ([("before", ())] if args.before else [])
        if args.before and args.before_overrides:
            variants.append(("before", tuple(args.before_overrides)))
        jobs = [
            (version, overrides, d, b, n)
            for d in args.datasets
            for b in args.backbones
            for n in args.neurons
            for version, overrides in variants
        ]
        jobs.sort(key=lambda job: -epochs[job[0]] * (dataset_info(job[2]).num_nodes or 1))  # longest first
        free = list(args.cpus)

        def run(job):
            version, overrides, dataset, backbone, neuron = job
            cpu = free.pop()
            try:
                row = _whole_run(
                    trees[version],
                    version,
                    dataset,
                    backbone,
                    neuron,
                    epochs[version],
                    args,
                    tmp / "results" / f"{version}-{len(overrides)}-{dataset}-{backbone}-{neuron}",
                    cpu,
                    overrides,
                )
            finally:
                free.append(cpu)
            print(
                f"  {version:<6} {' '.join(overrides):<28} {dataset:<10} {backbone:<6} {neuron:<15} "
                + (
                    row["failed"]
                    if "failed" in row
                    else f"epoch {row['epoch_s']:6.2f} s  whole run {row['whole_run_s']:7.1f} s  "
                    f"peak {row['peak_rss_gib']:.2f} GiB  test {row['metric']} {100 * row['test_metric']:.2f}"
                ),
                flush=True,
            )
            return row

        before_epochs = epochs["before"] if args.before else "-"
        print(
            f"{', '.join(args.datasets)}: {args.epochs}-epoch runs (before: {before_epochs}), one core per run "
            f"({len(jobs)} runs on cores {args.cpus})",
            flush=True,
        )
        with ThreadPoolExecutor(len(args.cpus)) as pool:
            rows = list(pool.map(run, jobs))

    summarize(rows)
    print(runs_table(rows, args.epochs))
    payload = {
        "benchmark": "graph_runs",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "setting": {
            "experiment": args.experiment,
            "datasets": args.datasets,
            "epochs": args.epochs,
            "before_epochs": epochs["before"] if args.before else None,
            "seed": args.seed,
            "torch_threads_per_run": 1,
            "cores": args.cpus,
            "before": args.before,
            "memory_limit_gib": args.memory_limit_gib,
        },
        "columns": {
            "train_epoch_s": "train steps (forward, backward, Adam) per epoch",
            "rest_epoch_s": "(wall_time_s - epochs x train_epoch_s - 2 test passes) / epochs: validation, "
            "checkpoints and the loop",
            "test_pass_s": "one test pass: 20 Poisson re-samplings of the test nodes (node classification), "
            "the test pairs scored on the whole graph (link prediction)",
            "whole_run_s": "process start (imports) to exit; runs of fewer epochs add the missing epochs "
            "at their measured epoch time",
            "peak_rss_gib": "the process's resident memory, sampled every 50 ms, over the whole run",
        },
        "runs": rows,
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "load_average_at_end": os.getloadavg(),
            "memory_gib": psutil.virtual_memory().total / GIB,
        },
        "versions": package_versions(),
    }
    write_json_atomic(args.out, payload)
    print(f"\nwrote {args.out}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(required=True, metavar="{runs,table,arxiv}")
    runs_parser(commands.add_parser("runs", help="Table 2 on real graphs: whole runs per neuron, before/after"))
    table_parser(commands.add_parser("table", help="the table of a saved `runs` benchmark"))
    arxiv_parser(commands.add_parser("arxiv", help="preprocessing and one SGCN epoch on an ogbn-arxiv-sized graph"))
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
