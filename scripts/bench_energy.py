#!/usr/bin/env python
"""Layer-wise inference energy of an untrained backbone on random spikes (the paper's energy appendix; see
:mod:`fsnn.models.energy`): how an architecture x neuron costs before anything is trained.

    python scripts/bench_energy.py --backbone dvsnet --dataset dvsgesture --neuron flif   # T and size of the dataset config

Feeds Bernoulli(--rate) spikes of the dataset's shape (T and size from ``conf/dataset/<name>.yaml`` unless given),
prints the table and writes ``--out`` if given. The energy of a trained run is its post-training study:
``python evaluate.py run_dir=<run> study=energy`` (:mod:`fsnn.suite.studies`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from fsnn.atomic import write_json_atomic
from fsnn.models.energy import E_AC_PJ, E_MAC_PJ, energy_report, format_table

CONF = Path(__file__).resolve().parents[1] / "conf"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--backbone", required=True, help="backbone config (conf/backbone/, e.g. dvsnet_small)")
    p.add_argument("--dataset", default="digits_dvs", help="dataset config whose T/size/classes to use")
    p.add_argument("--neuron", default="flif", help="neuron config (conf/neuron/)")
    p.add_argument("--memory", type=int, default=None, help="f-LIF memory length")
    p.add_argument("--T", type=int, default=None, help="time steps (default: the dataset config's T)")
    p.add_argument("--size", type=int, default=None, help="input size (default: the dataset config's)")
    p.add_argument("--batch", type=int, default=4, help="batch of random inputs")
    p.add_argument("--rate", type=float, default=0.2, help="firing rate of the random input spikes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="write the report as JSON here")
    p.add_argument(
        "--kappa", type=float, default=None, help=f"MAC/AC conversion (default E_MAC/E_AC = {E_MAC_PJ}/{E_AC_PJ})"
    )
    p.add_argument(
        "--no-first-layer-mac",
        action="store_true",
        help="count the first layer as AC when its input is spikes (default: always E_MAC, as the paper)",
    )
    return p.parse_args(argv)


def compose_config(args):
    """The composed training config for ``backbone=<--backbone> dataset=<--dataset> neuron=<--neuron>`` (config
    group names, e.g. ``dvsnet_small``), with ``neuron.memory`` from ``--memory``."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from fsnn.runs.configs import register_resolvers

    register_resolvers()
    overrides = [f"backbone={args.backbone}", f"dataset={args.dataset}", f"neuron={args.neuron}"]
    if args.memory is not None:
        overrides.append(f"neuron.memory={args.memory}")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return compose(config_name="config", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def main(argv=None) -> dict:
    from fsnn.data import dataset_info
    from fsnn.models import build_backbone
    from fsnn.models.registry import backbone_options

    args = parse_args(argv)
    cfg = compose_config(args)
    info = dataset_info(cfg.dataset.name)
    T, size = args.T or int(cfg.dataset.T), args.size or int(cfg.dataset.size)
    torch.manual_seed(args.seed)
    model = build_backbone(
        cfg.backbone.name,
        num_classes=info.num_classes,
        in_channels=info.in_channels,
        input_size=(size, size),
        **backbone_options(cfg),
    )
    x = (torch.rand(T, args.batch, info.in_channels, size, size) < args.rate).float()
    report = energy_report(model, x, kappa=args.kappa, first_layer_mac=not args.no_first_layer_mac)
    payload = {
        "backbone": cfg.backbone.name,
        "dataset": cfg.dataset.name,
        "neuron": cfg.neuron.name,
        "input_rate": args.rate,
        **report.to_dict(),
    }
    print(format_table(report))
    if args.out is not None:
        write_json_atomic(args.out, payload)
        print(f"wrote {args.out}")
    return payload


if __name__ == "__main__":
    main()
