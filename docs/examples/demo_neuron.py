"""A one-minute look at fractional memory: the same input through f-LIF (several alpha) and LIF.

Drives one neuron with a step current that switches off half way, prints the firing and how much
potential is left after the input stops, and saves the membrane traces as a figure.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from fsnn import FractionalLIF, build_neuron  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("results/figures"))
    args = parser.parse_args()

    T = args.steps
    x = torch.zeros(T, 1, 1)
    x[: T // 2] = 0.6  # sub-threshold for LIF on its own: 0.6 < threshold 1
    x[T // 4 : T // 4 + 5] = 3.0  # a short burst that makes every neuron fire
    neurons = {f"f-LIF alpha={a}": FractionalLIF(alpha=a, tau=2.0) for a in (0.3, 0.6, 0.9)}
    neurons["LIF (alpha=1)"] = build_neuron("lif", tau=2.0)
    print(f"{'neuron':<18} {'spikes':>6} {'engine':>7} {'V 20 steps after input stops':>30}")
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for name, neuron in neurons.items():
        spikes, v = neuron(x, return_state=True)
        after = v[T // 2 + 20].item()
        print(f"{name:<18} {int(spikes.sum()):>6} {neuron.last_engine:>7} {after:>30.4f}")
        ax.plot(v.flatten().numpy(), label=name, lw=1.2)
    ax.axvline(T // 2, color="grey", ls=":", lw=0.8)
    ax.set(xlabel="step", ylabel="membrane potential V", title="power-law memory of f-LIF")
    ax.legend(fontsize=8)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "demo_neuron.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"figure: {path}")


if __name__ == "__main__":
    main()
