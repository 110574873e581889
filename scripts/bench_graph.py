#!/usr/bin/env python
"""Graph pipeline benchmarks on the CPU, two of them.

``cora``: Table 2 on the real Cora, one whole run per (code version, backbone, neuron). Each run is ``train.py
experiment=table2_node_classification dataset=cora`` (the matched recipe: T = 100, batch 32, Adam, ``--epochs`` epochs,
test phase of 20 Poisson re-samplings at the last and the best checkpoint) in a fresh process pinned to one CPU core
with one torch thread, for the code ``--before`` (a git revision, extracted into a temporary folder with ``git
archive``) and the working tree ("after"), so that both are measured in one run on the same machine. Reported per run,
from its ``metrics.json`` and the process's wall time: train seconds per epoch (the train steps), the rest of an epoch
(validation, checkpoints and the loop: ``(wall_time_s - epochs x train - test phase) / epochs``), one test pass (20
re-samplings of the test nodes), the whole run's wall time (process start to exit, imports included), and each
neuron's epoch against ``sj_lif``'s. Results: a table on stdout and JSON at ``--out`` (default
``results/bench/graph_cora.json``, written atomically)::

    .venv/bin/python scripts/bench_graph.py cora --before a1c427f
    .venv/bin/python scripts/bench_graph.py cora --before a1c427f --backbones sgcn --neurons flif sj_lif --epochs 5

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

from fsnn.data import graph_features as F
from fsnn.data.graphs import make_synthetic_graph, stratified_masks
from fsnn.files import package_versions, write_json_atomic

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
    rows.append({"stage": name, "seconds": seconds, "rss_before_gib": before / GIB, "peak_rss_gib": peak / GIB,
                 "note": note})
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
    return {"seconds_per_block_one_thread": per_block, "block_nodes": b, "workers": workers,
            "projected_seconds": per_block * math.ceil(n / b) / workers,
            "work_multiply_adds": float(n) * math.ceil(steps / 2) * s.nnz}


def time_epoch(features: torch.Tensor, y: torch.Tensor, train: torch.Tensor, neuron: str, T: int,
               batch: int, seed: int) -> dict:
    """One epoch of SGCN over the training nodes (mini-batches of rows), Adam step per batch."""
    from torch.nn import functional as nnf

    from fsnn.models import build_backbone

    torch.manual_seed(seed)
    model = build_backbone("sgcn", in_features=features.shape[1], num_classes=int(y.max()) + 1, neuron=neuron, T=T)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    idx = train.nonzero().flatten()[torch.randperm(int(train.sum()), generator=torch.Generator().manual_seed(seed))]
    start = time.perf_counter()
    for i in range(0, len(idx), batch):
        rows = idx[i:i + batch]
        loss = nnf.cross_entropy(model(features[rows]), y[rows])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {"neuron": neuron, "seconds": time.perf_counter() - start, "steps": math.ceil(len(idx) / batch),
            "engine": getattr(model.neuron, "last_engine", None)}


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
    p.add_argument("--epoch-neurons", nargs="*", default=["sj_lif", "flif"],
                   help="neurons to time one SGCN epoch with (none: preprocessing only)")
    p.add_argument("--T", type=int, default=100)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.set_defaults(run=arxiv)


def arxiv(args) -> int:
    n = args.nodes
    print(f"graph: {n} nodes, ~{args.edges} undirected edges, {args.features} features "
          f"({os.cpu_count()} CPUs, torch threads {torch.get_num_threads()})", flush=True)
    t0 = time.perf_counter()
    g = make_synthetic_graph(n, args.classes, args.features, avg_degree=2 * args.edges / n, seed=args.seed)
    train, _, _ = stratified_masks(g.y, (0.7, 0.2, 0.1), seed=args.seed)
    gen_seconds = time.perf_counter() - t0
    e_directed = int(g.edge_index.size(1))
    print(f"  generated in {gen_seconds:.1f} s: edge_index [2, {e_directed}] "
          f"({e_directed // 2} undirected edges)", flush=True)

    rows: list[dict] = []
    method = F.resolve_rwpe_method(g.edge_index, n, args.rw_steps)
    xp = _stage(rows, "propagate", lambda: F.propagate(g.x, g.edge_index, hops=1), "hops=1")
    _stage(rows, "standardize", lambda: F.standardize(xp, train), "train-node statistics")
    _stage(rows, "laplacian_pe", lambda: F.laplacian_pe(g.edge_index, n, dim=args.pe_dim, seed=args.seed),
           f"dim={args.pe_dim}, eigsh")
    _stage(rows, "random_walk_pe",
           lambda: F.random_walk_pe(g.edge_index, n, steps=args.rw_steps, method="auto",
                                    num_probes=args.rw_probes, seed=args.seed),
           f"steps={args.rw_steps}, method=auto->{method}"
           + (f", {args.rw_probes} probes" if method == "estimate" else ""))
    total = sum(r["seconds"] for r in rows)
    process_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB  # Linux: kB
    print(f"  {'total':<22} {total:8.2f} s   process peak RSS {process_peak:6.2f} GiB", flush=True)
    projection = _project_exact_rwpe(g.edge_index, n, args.rw_steps)
    print(f"  rwpe exact (projected): {projection['projected_seconds'] / 60:.0f} min "
          f"({projection['work_multiply_adds']:.2e} multiply-adds, {projection['workers']} threads)", flush=True)

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
    print(f"| **total** | **{total:.2f}** | **{process_peak:.2f}** (process) | targets < {args.budget_seconds:.0f} s:"
          f" {'met' if ok_time else 'MISSED'}, < {args.budget_gib:.0f} GiB: {'met' if ok_mem else 'MISSED'} |")
    if epochs:
        print(f"\n| SGCN epoch, T={args.T}, batch {args.batch} | seconds | x sj_lif | engine |\n|---|---:|---:|---|")
        for e in epochs:
            ratio = f"{e['ratio_vs_sj_lif']:.2f}" if e["ratio_vs_sj_lif"] else "-"
            print(f"| {e['neuron']} | {e['seconds']:.1f} | {ratio} | {e['engine'] or ''} |")

    payload = {
        "benchmark": "graph",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "graph": {"generator": "fsnn.data.graphs.make_synthetic_graph", "num_nodes": n,
                  "edge_index_entries": e_directed, "undirected_edges": e_directed // 2,
                  "num_features": args.features, "num_classes": args.classes, "seed": args.seed,
                  "generation_seconds": gen_seconds},
        "params": {"hops": 1, "pe_dim": args.pe_dim, "rw_steps": args.rw_steps, "rw_method": method,
                   "rw_probes": args.rw_probes},
        "stages": rows,
        "total_seconds": total,
        "process_peak_rss_gib": process_peak,
        "targets": {"seconds": args.budget_seconds, "gib": args.budget_gib, "time_met": ok_time,
                    "memory_met": ok_mem},
        "rwpe_exact_projection": projection,
        "epochs": epochs,
        "epoch_config": {"model": "sgcn", "T": args.T, "batch": args.batch, "optimizer": "Adam(lr=1e-3)"},
        "machine": {"platform": platform.platform(), "python": sys.version.split()[0], "cpus": os.cpu_count(),
                    "torch_threads": torch.get_num_threads(),
                    "memory_gib": psutil.virtual_memory().total / GIB},
        "versions": package_versions(),
    }
    write_json_atomic(args.out, payload)
    print(f"\nwrote {args.out}")
    return 0 if ok_time and ok_mem else 1


# ------------------------------------------------------------------------------------------------------ Cora, whole runs
CORA_OUT = Path("results") / "bench" / "graph_cora.json"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def cora_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--before", default=None, help="git revision of the code to compare with (default: none)")
    p.add_argument("--backbones", nargs="+", default=["sgcn", "drsgnn"])
    p.add_argument("--neurons", nargs="+", default=["flif", "lif", "sj_lif", "snntorch_leaky"])
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", type=Path, default=Path("tests") / "data" / "planetoid",
                   help="paths.data_dir holding Cora/raw (default: the real Cora shipped with the tests)")
    p.add_argument("--cpus", type=int, nargs="+", default=[0],
                   help="CPU cores to pin runs to, one run per core at a time (default: core 0)")
    p.add_argument("--out", type=Path, default=CORA_OUT)
    p.set_defaults(run=cora)


def _extract(revision: str, into: Path) -> Path:
    """The tree of ``revision`` of this repository, unpacked under ``into`` (``git archive``)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", revision], check=True,
                            capture_output=True, text=True).stdout.strip()
    tree = into / f"fsnn-{commit}"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", commit], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def _cora_run(tree: Path, backbone: str, neuron: str, args, results: Path, cpu: int) -> dict:
    """One Table 2 run of the code in ``tree``, pinned to ``cpu``: its timings from the process and ``metrics.json``."""
    import json
    import subprocess

    cmd = [sys.executable, str(tree / "train.py"), "experiment=table2_node_classification", "hydra.mode=RUN",
           "dataset=cora", f"backbone={backbone}", f"neuron={neuron}", f"seed={args.seed}",
           f"trainer.max_epochs={args.epochs}", f"paths.data_dir={args.data_dir.resolve()}",
           f"paths.results_dir={results}", "logger=none", "trainer.enable_progress_bar=false"]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                          preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    process_s = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    record = json.loads(next(results.glob("table2_node_classification/*/metrics.json")).read_text())
    epochs = record["epochs"]
    test_nodes = record["split_sizes"]["test"] if "split_sizes" in record else None
    test_pass = test_nodes / record["test_samples_per_s"] if test_nodes and record.get("test_samples_per_s") else 0.0
    train = record["train_epoch_s"]
    rest = (record["wall_time_s"] - epochs * train - 2 * test_pass) / epochs  # two test phases: last and best
    return {"backbone": backbone, "neuron": neuron, "epochs": epochs, "train_epoch_s": train,
            "rest_epoch_s": rest, "epoch_s": train + rest, "test_pass_s": test_pass,
            "run_s": record["wall_time_s"], "process_s": process_s, "test_acc": record["test_acc"],
            "cpu": cpu, "commit": record["versions"].get("fsnn_commit") or tree.name.removeprefix("fsnn-")}


def cora(args) -> int:
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    with tempfile.TemporaryDirectory(prefix="bench-cora-") as tmp:
        tmp = Path(tmp)
        trees = {"after": Path(__file__).resolve().parents[1]}
        if args.before:
            trees = {"before": _extract(args.before, tmp), **trees}
        jobs = [(version, b, n) for b in args.backbones for n in args.neurons for version in trees]
        free = list(args.cpus)

        def run(job):
            version, backbone, neuron = job
            cpu = free.pop()
            try:
                row = _cora_run(trees[version], backbone, neuron, args, tmp / "results" / "-".join(job), cpu)
            finally:
                free.append(cpu)
            print(f"  {version:<6} {backbone:<6} {neuron:<15} epoch {row['epoch_s']:6.2f} s  "
                  f"whole run {row['process_s']:7.1f} s  test acc {100 * row['test_acc']:.2f}", flush=True)
            return {"version": version, **row}

        print(f"Cora, {args.epochs} epochs, one core per run ({len(jobs)} runs on cores {args.cpus})", flush=True)
        with ThreadPoolExecutor(len(args.cpus)) as pool:
            rows = list(pool.map(run, jobs))

    reference = {(r["version"], r["backbone"]): r["epoch_s"] for r in rows if r["neuron"] == "sj_lif"}
    before = {(r["backbone"], r["neuron"]): r for r in rows if r["version"] == "before"}
    for r in rows:
        ref = reference.get((r["version"], r["backbone"]))
        r["epoch_x_sj_lif"] = r["epoch_s"] / ref if ref else None
        old = before.get((r["backbone"], r["neuron"])) if r["version"] == "after" else None
        r["speedup_vs_before"] = old["process_s"] / r["process_s"] if old else None
    print(f"\n| code | backbone | neuron | train s/epoch | rest s/epoch | epoch x sj_lif | test pass s | "
          f"whole {args.epochs}-epoch run s | x before |\n|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ratio = f"{r['epoch_x_sj_lif']:.2f}" if r["epoch_x_sj_lif"] else "-"
        speedup = f"{r['speedup_vs_before']:.1f}x faster" if r["speedup_vs_before"] else ""
        print(f"| {r['version']} ({r['commit'][:7]}) | {r['backbone']} | {r['neuron']} | {r['train_epoch_s']:.2f} | "
              f"{r['rest_epoch_s']:.2f} | {ratio} | {r['test_pass_s']:.2f} | {r['process_s']:.1f} | {speedup} |")
    payload = {
        "benchmark": "graph_cora",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "setting": {"experiment": "table2_node_classification", "dataset": "cora (real, Planetoid raw files)",
                    "epochs": args.epochs, "seed": args.seed, "torch_threads_per_run": 1,
                    "cores": args.cpus, "before": args.before},
        "columns": {"train_epoch_s": "train steps (forward, backward, Adam) per epoch",
                    "rest_epoch_s": "(wall_time_s - epochs x train_epoch_s - 2 test passes) / epochs: validation, "
                                    "checkpoints and the loop",
                    "test_pass_s": "one test pass, 20 Poisson re-samplings of the test nodes",
                    "process_s": "the whole run: process start (imports) to exit"},
        "runs": rows,
        "machine": {"platform": platform.platform(), "python": sys.version.split()[0], "cpus": os.cpu_count(),
                    "load_average_at_end": os.getloadavg(), "memory_gib": psutil.virtual_memory().total / GIB},
        "versions": package_versions(),
    }
    write_json_atomic(args.out, payload)
    print(f"\nwrote {args.out}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(required=True, metavar="{cora,arxiv}")
    cora_parser(commands.add_parser("cora", help="Table 2 on the real Cora: whole runs per neuron, before/after"))
    arxiv_parser(commands.add_parser("arxiv", help="preprocessing and one SGCN epoch on an ogbn-arxiv-sized graph"))
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
