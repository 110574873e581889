#!/usr/bin/env python
"""One training step of the paper's DVSNet on event frames, per neuron, on CPU.

Input ``[T=16, B=4, 2, 128, 128]`` (DVS128 Gesture shape), DVSNet with C=128 channels, 11 classes,
cross-entropy on the mean voting output, Adam step. Each neuron runs in a fresh subprocess:
median step time over ``--repeats`` steps after two warm-up steps, and the peak resident memory of
the process above its resident memory just before the first step (``ru_maxrss``; the steps
dominate it at this size). Prints a table and writes ``results/bench/train_step.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEURONS = {  # name -> (registry name, kwargs): only the neuron differs
    "sj_lif": ("sj_lif", {}),
    "flif": ("flif", {"alpha": 0.5}),
    "lif": ("lif", {}),
    "snntorch_leaky": ("snntorch_leaky", {}),
}
MARK = "@@RESULT@@ "


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(name: str, T: int, batch: int, size: int, channels: int, repeats: int, threads: int) -> dict:
    import torch
    from torch.nn import functional as F

    from fsnn.models import build_backbone

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    neuron, kwargs = NEURONS[name]
    model = build_backbone("dvsnet", num_classes=11, in_channels=2, input_size=(size, size), neuron=neuron,
                           neuron_kwargs=kwargs, channels=channels)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = (torch.rand(T, batch, 2, size, size) < 0.1).float() * 2  # sparse event counts
    y = torch.randint(0, 11, (batch,))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).mean(0), y)
        loss.backward()
        optimizer.step()

    before = _rss_mib()
    times = []
    for i in range(repeats + 2):
        start = time.perf_counter()
        step()
        if i >= 2:  # two warm-up steps (first-call dispatch and allocator growth)
            times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    engines = sorted({m.last_engine for m in model.modules() if getattr(m, "last_engine", None)})
    return {"neuron": name, "median_s": statistics.median(times), "times_s": times,
            "peak_mib": peak - before, "engines": engines, "threads": torch.get_num_threads()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--neurons", nargs="+", default=list(NEURONS), choices=list(NEURONS))
    parser.add_argument("--T", type=int, default=16)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--channels", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "train_step.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    shape = (args.T, args.batch, args.size, args.channels, args.repeats, args.threads)
    if args.child:
        print(MARK + json.dumps(child(args.child, *shape)), flush=True)
        return

    from fsnn.results import package_versions, write_json_atomic

    rows = []
    for name in args.neurons:
        cmd = [sys.executable, __file__, "--child", name, "--T", str(args.T), "--batch", str(args.batch),
               "--size", str(args.size), "--channels", str(args.channels), "--repeats", str(args.repeats),
               "--threads", str(args.threads)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
        if proc.returncode or not lines:
            print(f"{name}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        rows.append(json.loads(lines[-1][len(MARK):]))
        print(f"  {name}: {rows[-1]['median_s']:.2f} s/step", flush=True)
    ref = next((r for r in rows if r["neuron"] == "sj_lif"), None)
    print(f"\nDVSNet C={args.channels}, input [{args.T}, {args.batch}, 2, {args.size}, {args.size}], "
          f"{args.threads} CPU threads, one Adam step")
    print(f"{'neuron':<16}{'s/step':>9}{'x sj_lif':>10}{'peak MiB':>11}{'x sj_lif':>10}  engine")
    for r in rows:
        r["time_ratio"] = r["median_s"] / ref["median_s"] if ref else None
        r["mem_ratio"] = r["peak_mib"] / ref["peak_mib"] if ref else None
        ratio = f"{r['time_ratio']:>10.2f}" if ref else f"{'-':>10}"
        mem = f"{r['mem_ratio']:>10.2f}" if ref else f"{'-':>10}"
        print(f"{r['neuron']:<16}{r['median_s']:>9.2f}{ratio}{r['peak_mib']:>11.0f}{mem}  {','.join(r['engines'])}")
    write_json_atomic(args.out, {"benchmark": "dvsnet_train_step", "date": datetime.now(timezone.utc).isoformat(),
                                 "config": vars(args) | {"out": str(args.out)}, "versions": package_versions(),
                                 "results": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
