#!/usr/bin/env python
"""Training and inference speed and peak memory of the paper's DVSNet on event frames, per neuron.

Input ``[T=16, B, 2, 128, 128]`` (DVS128 Gesture shape), DVSNet with C=128 channels, 11 classes,
cross-entropy on the mean voting output, Adam step. Each neuron runs in a fresh subprocess:
median step time over ``--repeats`` steps after two warm-up steps (train: forward + backward + Adam;
test: ``no_grad`` forward in eval mode), reported as seconds per step and samples per second.
Peak memory: on CPU the peak resident memory of the process above its resident memory just before
the first step (``ru_maxrss``); on CUDA ``torch.cuda.max_memory_allocated`` over the train steps
(the paper's "Memory (GB)").

On CUDA, ``flif`` and ``lif`` run fsnn's fused Triton kernels (``engine="auto"``); ``flif_torch`` is f-LIF on
fsnn's torch engines (``direct`` up to T=64, ``soe`` beyond), ``sj_lif_torch`` SpikingJelly's LIFNode on its torch
reference path instead of its fused kernel::

    python scripts/bench_train.py --device cuda --batch 16 \
        --neurons sj_lif sj_lif_torch snntorch_leaky flif_torch flif lif
    python scripts/bench_train.py --device cuda --batch 16 --T 256 --size 32 --out results/bench/train_step_cuda_T256.json

``--memory-sweep`` adds f-LIF with the short-memory window ``M = 2, 4, ..., 16`` (the paper's
``tab:memory_comparison``: batch 16, T=16, DVSNet on DVS128 Gesture)::

    python scripts/bench_train.py --device cuda --batch 16 --memory-sweep

Prints a table and writes ``results/bench/train_step[_cuda].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WINDOWS = range(2, 17, 2)  # --memory-sweep: f-LIF with memory=M (paper: M = 2..16)
NEURONS = {  # name -> (registry name, kwargs): only the neuron differs
    "sj_lif": ("sj_lif", {}),
    "sj_lif_torch": ("sj_lif", {}),  # SpikingJelly's torch reference path (SJ_TORCH_ENV)
    "flif_torch": ("flif", {"alpha": 0.5}),  # the torch engines, chosen as auto would on the CPU
    "flif": ("flif", {"alpha": 0.5}),
    "flif_direct": ("flif", {"alpha": 0.5, "engine": "direct"}),  # full memory, exact GEMM engine
    "lif": ("lif", {}),
    "snntorch_leaky": ("snntorch_leaky", {}),
    **{f"flif_m{m}": ("flif", {"alpha": 0.5, "memory": m}) for m in WINDOWS},
}
MARK = "@@RESULT@@ "
SJ_TORCH_ENV = {"SJ_LIF_CUDA_IMPLEMENTATION": "torch"}  # read when SpikingJelly is imported


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(name: str, args: argparse.Namespace) -> dict:
    import torch
    from torch.nn import functional as F

    from fsnn.models import build_backbone

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    neuron, kwargs = NEURONS[name]
    if name == "flif_torch":
        kwargs = {**kwargs, "engine": "direct" if args.T <= 64 else "soe"}
    model = build_backbone(
        "dvsnet",
        num_classes=11,
        in_channels=2,
        input_size=(args.size, args.size),
        neuron=neuron,
        neuron_kwargs=kwargs,
        channels=args.channels,
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = ((torch.rand(args.T, args.batch, 2, args.size, args.size) < 0.1).float() * 2).to(device)  # sparse events
    y = torch.randint(0, 11, (args.batch,)).to(device)

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).mean(0), y)
        loss.backward()
        optimizer.step()

    @torch.no_grad()
    def test_step():
        model(x).mean(0).argmax(-1)

    def timed(step, mode) -> list[float]:
        model.train(mode == "train")
        times = []
        for i in range(args.repeats + 2):
            start = time.perf_counter()
            step()
            if cuda:
                torch.cuda.synchronize()
            if i >= 2:  # two warm-up steps (first-call dispatch, allocator growth, cuDNN autotune)
                times.append(time.perf_counter() - start)
        return times

    before = _rss_mib()
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    train_times = timed(train_step, "train")
    peak = (
        torch.cuda.max_memory_allocated(device) / 2**20
        if cuda
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
    )
    test_times = timed(test_step, "test")
    engines = sorted({m.last_engine for m in model.modules() if getattr(m, "last_engine", None)})
    train_s, test_s = statistics.median(train_times), statistics.median(test_times)
    return {
        "neuron": name,
        "median_s": train_s,
        "times_s": train_times,
        "train_samples_per_s": args.batch / train_s,
        "test_median_s": test_s,
        "test_samples_per_s": args.batch / test_s,
        "peak_mib": peak,
        "engines": engines,
        "threads": torch.get_num_threads(),
        "device": args.device,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--neurons", nargs="+", default=["sj_lif", "flif", "lif", "snntorch_leaky"], choices=list(NEURONS)
    )
    parser.add_argument("--memory-sweep", action="store_true", help="also f-LIF with memory M = 2, 4, ..., 16")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:i]")
    parser.add_argument("--T", type=int, default=16)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--channels", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default results/bench/train_step.json, train_step_cuda.json on a GPU)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(MARK + json.dumps(child(args.child, args)), flush=True)
        return

    from fsnn.atomic import write_json_atomic
    from fsnn.runs.provenance import device_description, package_versions

    on_gpu = args.device.startswith("cuda")
    if on_gpu:
        import torch

        if not torch.cuda.is_available():
            parser.error(f"--device {args.device}: no CUDA device is visible")
        hardware = device_description(torch.device(args.device))
    else:
        hardware = f"{args.threads} CPU threads"
    out = args.out or Path("results") / "bench" / ("train_step_cuda.json" if on_gpu else "train_step.json")
    names = list(dict.fromkeys(args.neurons + ([f"flif_m{m}" for m in WINDOWS] if args.memory_sweep else [])))
    forward = [a for a in sys.argv[1:] if a not in ("--memory-sweep",)]
    rows = []
    for name in names:
        env = {**os.environ, **(SJ_TORCH_ENV if name == "sj_lif_torch" else {})}
        proc = subprocess.run(
            [sys.executable, __file__, *forward, "--child", name], capture_output=True, text=True, cwd=ROOT, env=env
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
        if proc.returncode or not lines:
            print(f"{name}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        rows.append(json.loads(lines[-1][len(MARK) :]))
        print(f"  {name}: {rows[-1]['median_s']:.3f} s/train step", flush=True)
    ref = next((r for r in rows if r["neuron"] == "sj_lif"), None)
    print(
        f"\nDVSNet C={args.channels}, input [{args.T}, {args.batch}, 2, {args.size}, {args.size}], {hardware}; "
        "train = one Adam step, test = no_grad forward"
    )
    print(
        f"{'neuron':<16}{'train s':>9}{'train/s':>9}{'test/s':>9}{'x sj_lif':>10}{'peak MiB':>10}{'x sj_lif':>10}"
        "  engine"
    )
    for r in rows:
        r["time_ratio"] = r["median_s"] / ref["median_s"] if ref else None
        r["mem_ratio"] = r["peak_mib"] / ref["peak_mib"] if ref else None
        ratio = f"{r['time_ratio']:>10.2f}" if ref else f"{'-':>10}"
        mem = f"{r['mem_ratio']:>10.2f}" if ref else f"{'-':>10}"
        print(
            f"{r['neuron']:<16}{r['median_s']:>9.3f}{r['train_samples_per_s']:>9.1f}{r['test_samples_per_s']:>9.1f}"
            f"{ratio}{r['peak_mib']:>10.0f}{mem}  {','.join(r['engines'])}"
        )
    write_json_atomic(
        out,
        {
            "benchmark": "dvsnet_train_step",
            "date": datetime.now(timezone.utc).isoformat(),
            "hardware": hardware,
            "config": vars(args) | {"out": str(out)},
            "versions": package_versions(),
            "results": rows,
        },
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
