#!/usr/bin/env python
"""CPU time and peak memory of the graph pipeline on an ogbn-arxiv-sized graph: preprocessing, then one
training epoch of SGCN per neuron.

The graph is :func:`fsnn.data.graphs.make_synthetic_graph` with ogbn-arxiv's size: 169,343 nodes, ~1.17M
undirected edges (2.33M directed entries), 128 features, 40 classes (the real data is not needed). Stages, each
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
(default ``results/bench/graph.json``, written atomically).

Examples::

    .venv/bin/python scripts/bench_graph.py
    .venv/bin/python scripts/bench_graph.py --nodes 20000 --edges 100000 --out /tmp/small.json
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

DEFAULT_OUT = Path("results") / "bench" / "graph.json"  # under the current directory
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    args = p.parse_args(argv)

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


if __name__ == "__main__":
    sys.exit(main())
