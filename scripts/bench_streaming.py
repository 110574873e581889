#!/usr/bin/env python
"""Streaming benchmark: stepping neurons one step at a time from a state, on one CPU thread.

Neurons (each driven directly, one step ``[B, F]`` per call, with its state carried from call to call):

* ``flif_soe``    fsnn ``FractionalLIF(alpha=0.5, tau=2, engine="soe")``: the state is the exact head plus the
                  exponential modes, a constant size;
* ``flif_exact``  ``FractionalLIF(alpha=0.5, tau=2, engine="direct")``: the state is the whole history, so a step
                  costs O(steps so far) and the run is quadratic; it stops at ``EXACT_MAX_STEPS`` steps (the table
                  says so in its cells past that);
* ``lif``         fsnn's LIF (``build_neuron("lif", tau=2)``, alpha = 1);
* ``sj_lif``      SpikingJelly ``neuron.LIFNode(tau=2, v_reset=None, step_mode="s")``, the reference of the target.

Two sizes, ``B x F`` = 64 x 128 (a recurrent SHD-style layer of 128 neurons at training batch 64, where the arithmetic
on the state counts) and 8 x 128 (online inference at a small batch, where the per-step Python and dispatch overhead
dominates).

Per-step latency and memory: one fresh process per (code, neuron, size) steps ``max(--steps)`` times under
``torch.no_grad()``; the mean time per step over each decade of steps (``10^(d-1) .. 10^d``) is its latency at
``10^d`` steps. Memory is measured over the whole run: the kernel's resident-memory high-water mark (``VmHWM``,
reset through ``/proc/self/clear_refs`` after warm-up) read at each decade, less the resident memory just before
the first step, with the default allocator (which reuses the blocks a constant-size state frees at each step, so
its resident memory stays flat, while a growing state grows the heap; lowering ``MALLOC_MMAP_THRESHOLD_`` as
``bench_neurons.py`` does would map and fault in each step's tensors and distort the per-step time measured in the
same run); the state's own size in bytes is recorded beside it. The ``--before`` code steps at most
``BEFORE_MAX_STEPS`` times, to keep the run short. Forward + backward (a
``(spikes + v).sum()`` over every step, backward once at the end) is timed at 10^2 steps.

Chunked throughput: ``T = 1024`` steps of 64 x 128 run from a state in chunks of 1, 16 and 128 steps, and as one
whole-sequence call, forward under ``torch.no_grad()``, for f-LIF SOE and exact.

With ``--before REV`` the fsnn cells also run on the code of the git revision ``REV`` (extracted with ``git
archive``), in the same run. Targets, printed as pass/fail lines: SOE stepping memory flat in the number of steps,
and the SOE step within 2x of SpikingJelly's single-step LIF.

Example::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_streaming.py --before 181ca63
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_tools import ROOT, cpu_model, extract_tree

DEFAULT_OUT = Path("results") / "bench" / "streaming.json"
NEURONS = ["flif_soe", "flif_exact", "lif", "sj_lif"]
FSNN = {"flif_soe", "flif_exact", "lif"}
SIZES = [(64, 128), (8, 128)]
STEPS = [100, 1_000, 10_000, 100_000]
EXACT_MAX_STEPS = 1_000  # the exact state's step copies and reads its whole history: quadratic beyond
GRAD_STEPS = [100]  # with grad the exact state keeps every step's history for backward: quadratic memory
CHUNK_T = 1024
CHUNKS = [1, 16, 128]
BEFORE_MAX_STEPS = 10_000
TARGET_RATIO = 2.0
FLAT_TOLERANCE_MIB = 2.0  # SOE memory counts as flat when 10^5 steps use at most this much more than 10^2
MARK = "@@STREAMING@@ "


# -- child side --------------------------------------------------------------------------------------------------
def make_neuron(name: str):
    import torch

    if name == "sj_lif":
        from spikingjelly.activation_based import neuron, surrogate

        node = neuron.LIFNode(
            tau=2.0, v_threshold=1.0, v_reset=None, surrogate_function=surrogate.Sigmoid(alpha=5.0), step_mode="s"
        )

        def run(x, state):
            if state is None:
                node.reset()
            return node(x), node.v, True

        return node, run
    from fsnn.neurons import FractionalLIF, build_neuron

    if name == "lif":
        mod = build_neuron("lif", tau=2.0)
    else:
        mod = FractionalLIF(alpha=0.5, tau=2.0, engine="soe" if name == "flif_soe" else "direct")

    def run(x, state):
        if state is None:
            state = mod.initial_state(x[0] if x.dim() == 3 else x)
        return mod(x, state, return_state=True)

    torch.manual_seed(0)
    return mod, run


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _state_bytes(state) -> int:
    import torch

    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    return sum(t.numel() * t.element_size() for t in vars(state).values() if isinstance(t, torch.Tensor))


def cell_stream(name: str, batch: int, features: int, max_steps: int) -> dict:
    """Step ``max_steps`` times under no_grad; time and memory at each decade."""
    import torch

    torch.set_num_threads(1)
    _, run = make_neuron(name)
    gen = torch.Generator().manual_seed(0)
    pool = torch.randn(64, batch, features, generator=gen) * 1.5 + 0.6  # inputs cycled, so none are made per step
    with torch.no_grad():
        state = None
        for t in range(20):  # warm-up: caches, first-call paths
            _, _, state = run(pool[t % 64], state)
        state = None
        _, _, state = run(pool[0], state)
        Path("/proc/self/clear_refs").write_text("5")
        rss0 = _status_kib("VmRSS")
        rows, done, t0 = [], 1, time.perf_counter()
        for decade in STEPS:
            if decade > max_steps:
                break
            start = time.perf_counter()
            first = done
            while done < decade:
                _, _, state = run(pool[done % 64], state)
                done += 1
            seconds = time.perf_counter() - start
            rows.append(
                {
                    "steps": decade,
                    "step_us": 1e6 * seconds / max(done - first, 1),
                    "peak_rss_mib": (_status_kib("VmHWM") - rss0) / 1024,
                    "state_mib": None if isinstance(state, bool) else _state_bytes(state) / 2**20,
                }
            )
        total = time.perf_counter() - t0
    return {"decades": rows, "wall_s": total}


def cell_grad(name: str, batch: int, features: int, steps: int) -> float:
    """Seconds per step of forward + backward over ``steps`` single steps (median of 3)."""
    import torch

    torch.set_num_threads(1)
    mod, run = make_neuron(name)
    x = (torch.randn(steps, batch, features, generator=torch.Generator().manual_seed(0)) * 1.5 + 0.6).requires_grad_()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        state, loss = None, 0.0
        for t in range(steps):
            s, v, state = run(x[t], state)
            loss = loss + (s + v).sum()
        loss.backward()
        times.append(time.perf_counter() - start)
        x.grad = None
    return 1e6 * sorted(times)[1] / steps


def cell_chunks(name: str, batch: int, features: int) -> dict:
    """Steps per second of ``CHUNK_T`` steps in chunks of each size, and whole (median of 3)."""
    import torch

    torch.set_num_threads(1)
    mod, run = make_neuron(name)
    x = torch.randn(CHUNK_T, batch, features, generator=torch.Generator().manual_seed(0)) * 1.5 + 0.6
    out = {}
    with torch.no_grad():
        for size in [*CHUNKS, "whole"]:
            times = []
            for _ in range(3):
                start = time.perf_counter()
                if size == "whole":
                    mod(x)
                else:
                    state = mod.initial_state(x[0])
                    for t in range(0, CHUNK_T, size):
                        chunk = x[t] if size == 1 else x[t : t + size]
                        _, state = mod(chunk, state)
                times.append(time.perf_counter() - start)
            out[str(size)] = CHUNK_T / sorted(times)[1]
    return out


def child(spec: dict) -> dict:
    kind = spec["kind"]
    if kind == "stream":
        return cell_stream(spec["neuron"], spec["batch"], spec["features"], spec["max_steps"])
    if kind == "grad":
        return {"step_us": cell_grad(spec["neuron"], spec["batch"], spec["features"], spec["steps"])}
    return {"steps_per_s": cell_chunks(spec["neuron"], spec["batch"], spec["features"])}


# -- parent side -------------------------------------------------------------------------------------------------
def spawn(spec: dict, tree: Path) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--cell", json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise RuntimeError(f"cell {spec} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def _fmt(value, unit="") -> str:
    return "—" if value is None else f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"


def tables(payload: dict) -> str:
    codes = payload["codes"]
    lines = [
        f"Stepping under no_grad, one thread, CPU: {payload['cpu_model']}, torch {payload['torch_version']}. "
        f"Per-step µs (mean over the decade) / peak RSS increase MiB over the whole run so far / state MiB. "
        f"f-LIF exact stops at {EXACT_MAX_STEPS} steps (quadratic), the before code at {BEFORE_MAX_STEPS}.",
        "",
        "| neuron | code | B x F | " + " | ".join(f"{s:.0e} steps" for s in STEPS) + " | fwd+bwd µs/step at 1e2 |",
        "|---|---|---|" + "---|" * len(STEPS) + "---|",
    ]
    for row in payload["stream"]:
        cells = {d["steps"]: d for d in row["decades"]}
        parts = []
        for s in STEPS:
            d = cells.get(s)
            parts.append(
                "not run" if d is None else f"{_fmt(d['step_us'])} / {_fmt(d['peak_rss_mib'])} / {_fmt(d['state_mib'])}"
            )
        grad = row.get("grad_step_us") or {}
        lines.append(
            f"| {row['neuron']} | {row['code']} | {row['batch']}x{row['features']} | "
            + " | ".join(parts)
            + f" | {' / '.join(_fmt(grad.get(str(s))) for s in GRAD_STEPS)} |"
        )
    lines += [
        "",
        f"Chunked against whole-sequence runs: T = {CHUNK_T}, 64 x 128, no_grad, steps per second.",
        "",
        "| neuron | code | " + " | ".join(f"chunks of {c}" for c in CHUNKS) + " | whole |",
        "|---|---|" + "---|" * (len(CHUNKS) + 1),
    ]
    for row in payload["chunks"]:
        sps = row["steps_per_s"]
        lines.append(
            f"| {row['neuron']} | {row['code']} | "
            + " | ".join(f"{sps[str(c)]:.0f}" for c in CHUNKS)
            + f" | {sps['whole']:.0f} |"
        )
    lines += ["", "Targets (code: " + codes[-1] + "):"] + [f"- {t}" for t in payload["targets"]]
    return "\n".join(lines)


def targets(stream: list[dict], code: str) -> list[str]:
    out = []
    rows = {(r["neuron"], r["batch"]): r for r in stream if r["code"] == code or r["neuron"] == "sj_lif"}
    for batch, _ in SIZES:
        soe, sj = rows[("flif_soe", batch)]["decades"], rows[("sj_lif", batch)]["decades"]
        growth = soe[-1]["peak_rss_mib"] - soe[0]["peak_rss_mib"]
        flat = growth <= FLAT_TOLERANCE_MIB and soe[-1]["state_mib"] == soe[0]["state_mib"]
        out.append(
            f"{'PASS' if flat else 'FAIL'} SOE memory flat at B={batch}: peak RSS {soe[0]['peak_rss_mib']:.1f} MiB at "
            f"{soe[0]['steps']} steps, {soe[-1]['peak_rss_mib']:.1f} MiB at {soe[-1]['steps']} (tolerance "
            f"{FLAT_TOLERANCE_MIB} MiB), state {soe[-1]['state_mib']:.3f} MiB throughout"
        )
        ratio = soe[-1]["step_us"] / sj[-1]["step_us"]
        out.append(
            f"{'PASS' if ratio <= TARGET_RATIO else 'FAIL'} SOE step within {TARGET_RATIO:g}x of SpikingJelly at "
            f"B={batch}: {soe[-1]['step_us']:.1f} µs against {sj[-1]['step_us']:.1f} µs ({ratio:.2f}x)"
        )
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    parser.add_argument("--before", default=None, help="git revision of the code to compare with (default: none)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    parser.add_argument("--max-steps", type=int, default=STEPS[-1], help="steps of the stepping runs")
    args = parser.parse_args(argv)
    if args.cell:
        print(MARK + json.dumps(child(json.loads(args.cell))), flush=True)
        return 0

    import torch

    from fsnn.atomic import write_json_atomic
    from fsnn.runs.provenance import package_versions

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"after": ROOT}
        if args.before:
            trees = {"before": extract_tree(args.before, Path(tmp)), **trees}
        stream, chunks = [], []
        for batch, features in SIZES:
            for name in NEURONS:
                for code, tree in trees.items():
                    if name not in FSNN and code != "after":
                        continue
                    cap = min(args.max_steps, EXACT_MAX_STEPS) if name == "flif_exact" else args.max_steps
                    if code == "before":
                        cap = min(cap, BEFORE_MAX_STEPS)
                    spec = {"kind": "stream", "neuron": name, "batch": batch, "features": features, "max_steps": cap}
                    row = {"neuron": name, "code": code if name in FSNN else "spikingjelly", "batch": batch}
                    row |= {"features": features, **spawn(spec, tree)}
                    row["grad_step_us"] = {
                        str(s): spawn({**spec, "kind": "grad", "steps": s}, tree)["step_us"]
                        for s in GRAD_STEPS
                        if s <= cap
                    }
                    stream.append(row)
                    print(json.dumps(row), flush=True)
        for name in ["flif_soe", "flif_exact"]:
            for code, tree in trees.items():
                spec = {"kind": "chunks", "neuron": name, "batch": SIZES[0][0], "features": SIZES[0][1]}
                chunks.append({"neuron": name, "code": code, **spawn(spec, tree)})
                print(json.dumps(chunks[-1]), flush=True)
    code = "after"
    payload = {
        "benchmark": "streaming",
        "config": {
            "sizes": SIZES,
            "steps": STEPS,
            "max_steps": args.max_steps,
            "exact_max_steps": EXACT_MAX_STEPS,
            "grad_steps": GRAD_STEPS,
            "chunk_T": CHUNK_T,
            "chunks": CHUNKS,
            "neurons": NEURONS,
            "before": args.before,
            "timing": "mean per-step wall time over each decade of steps, one fresh process per cell, "
            "torch.set_num_threads(1), OMP_NUM_THREADS=1",
            "memory": "VmHWM (reset via /proc/self/clear_refs after 20 warm-up steps) minus VmRSS before the "
            "first step, read at each decade of one run, default allocator; state_mib is the tensors of the state "
            "(SpikingJelly: none reported)",
            "before_max_steps": BEFORE_MAX_STEPS,
            "grad": "forward of every step then (spikes + v).sum() backward once; median of 3, µs per step",
        },
        "codes": [*trees],
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "threads": 1,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "library_versions": package_versions(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "stream": stream,
        "chunks": chunks,
        "total_wall_s": time.perf_counter() - start,
    }
    payload["targets"] = targets(stream, code)
    table = tables(payload)
    payload["table"] = table
    write_json_atomic(args.out, payload)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
