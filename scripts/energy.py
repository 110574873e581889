#!/usr/bin/env python
"""Layer-wise inference energy of a trained run (the paper's energy appendix; see :mod:`fsnn.energy`).

    python scripts/energy.py results/train/<run>                # one test batch of the run's dataset
    python scripts/energy.py results/train/<run> --data-dir DIR   # data somewhere else than the run's paths.data_dir
    python scripts/energy.py --backbone dvsnet --dataset dvsgesture --neuron flif   # quick: random spikes, no run

With a run folder: rebuilds the model from ``<run>/.hydra/config.yaml`` (checked first, ``fsnn.app.open_run``: only
fsnn's own optimizer/scheduler/logger classes), loads ``checkpoints/<checkpoint>.ckpt`` when present (verified and
read with ``weights_only=True``, :func:`fsnn.checkpoint.load_checkpoint`; else the initial weights, with a warning),
runs one test batch,
prints the table and totals and writes ``<run>/energy.json`` atomically. Quick mode feeds Bernoulli(--rate) spikes of
the dataset's shape (T and size from ``conf/dataset/<name>.yaml`` unless given) and writes ``--out`` if given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from fsnn.energy import E_AC_PJ, E_MAC_PJ, energy_report, format_table
from fsnn.results import write_json_atomic


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", nargs="?", type=Path, help="folder of a train.py run (with .hydra/config.yaml)")
    p.add_argument("--checkpoint", default="best", help="checkpoint name under checkpoints/ (default: best)")
    p.add_argument("--data-dir", type=Path, help="override the run's paths.data_dir")
    p.add_argument("--batch-size", type=int, default=None, help="use only the first N samples of the test batch")
    p.add_argument("--backbone", help="quick mode: backbone config (conf/backbone/, e.g. dvsnet_small; no run_dir)")
    p.add_argument("--dataset", default="digits_dvs", help="quick mode: dataset config whose T/size/classes to use")
    p.add_argument("--neuron", default="flif", help="quick mode: neuron config (conf/neuron/)")
    p.add_argument("--memory", type=int, default=None, help="quick mode: f-LIF memory length")
    p.add_argument("--T", type=int, default=None, help="quick mode: time steps (default: the dataset config's T)")
    p.add_argument("--size", type=int, default=None, help="quick mode: input size (default: the dataset config's)")
    p.add_argument("--batch", type=int, default=4, help="quick mode: batch of random inputs")
    p.add_argument("--rate", type=float, default=0.2, help="quick mode: firing rate of the random input spikes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="quick mode: write the report as JSON here")
    p.add_argument("--kappa", type=float, default=None, help=f"MAC/AC conversion (default E_MAC/E_AC = "
                                                              f"{E_MAC_PJ}/{E_AC_PJ})")
    p.add_argument("--no-first-layer-mac", action="store_true",
                   help="count the first layer as AC when its input is spikes (default: always E_MAC, as the paper)")
    args = p.parse_args(argv)
    if args.run_dir is None and args.backbone is None:
        p.error("give a run folder or --backbone for the quick mode")
    return args


def _settings(args) -> dict:
    return {"kappa": args.kappa, "first_layer_mac": not args.no_first_layer_mac}


def from_run(args) -> dict:
    from fsnn.app import open_run
    from fsnn.checkpoint import load_checkpoint
    from fsnn.tasks import build_task

    run_dir = args.run_dir
    cfg, config = open_run(run_dir, args.data_dir)  # checked: only fsnn's own _target_ classes are built
    ckpt = run_dir / "checkpoints" / f"{args.checkpoint}.ckpt"
    # verified before anything is built: weights_only (no code runs), digest, and this run's config
    state = load_checkpoint(ckpt, config) if ckpt.exists() else None
    torch.manual_seed(cfg.get("seed", 0))
    module, data, _metric = build_task(cfg)
    if not hasattr(module, "model") or not hasattr(data, "test_dataloader"):
        raise SystemExit("energy: only image/event classification runs are supported")
    if state is not None:
        module.load_state_dict(state["state_dict"])
    else:
        print(f"energy: warning: {ckpt} not found; using the initial weights", file=sys.stderr)
        ckpt = None
    data.setup("test")
    x, _y = next(iter(data.test_dataloader()))
    if args.batch_size:
        x = x[: args.batch_size]
    x = x.transpose(0, 1).contiguous()  # [B, T, ...] -> [T, B, ...]
    report = energy_report(module.model, x, **_settings(args))
    payload = {"run_dir": str(run_dir), "checkpoint": None if ckpt is None else str(ckpt),
               "backbone": cfg.backbone.name, "dataset": cfg.dataset.name, "neuron": cfg.neuron.name,
               **report.to_dict()}
    print(format_table(report))
    write_json_atomic(run_dir / "energy.json", payload)
    print(f"wrote {run_dir / 'energy.json'}")
    return payload


def compose_config(args):
    """The composed training config for ``backbone=<--backbone> dataset=<--dataset> neuron=<--neuron>`` (config
    group names, e.g. ``dvsnet_small``), with ``neuron.memory`` from ``--memory``."""
    from hydra import compose, initialize
    from hydra.core.global_hydra import GlobalHydra

    overrides = [f"backbone={args.backbone}", f"dataset={args.dataset}", f"neuron={args.neuron}"]
    if args.memory is not None:
        overrides.append(f"neuron.memory={args.memory}")
    GlobalHydra.instance().clear()
    try:
        with initialize(config_path="../conf", version_base="1.3"):  # relative to this script, as train.py's
            return compose(config_name="config", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def quick(args) -> dict:
    from fsnn.data import dataset_info
    from fsnn.models import build_backbone
    from fsnn.tasks.common import backbone_options

    cfg = compose_config(args)
    info = dataset_info(cfg.dataset.name)
    T, size = args.T or int(cfg.dataset.T), args.size or int(cfg.dataset.size)
    torch.manual_seed(args.seed)
    model = build_backbone(cfg.backbone.name, num_classes=info.num_classes, in_channels=info.in_channels,
                           input_size=(size, size), **backbone_options(cfg))
    x = (torch.rand(T, args.batch, info.in_channels, size, size) < args.rate).float()
    report = energy_report(model, x, **_settings(args))
    payload = {"backbone": cfg.backbone.name, "dataset": cfg.dataset.name, "neuron": cfg.neuron.name,
               "input_rate": args.rate,
               **report.to_dict()}
    print(format_table(report))
    if args.out is not None:
        write_json_atomic(args.out, payload)
        print(f"wrote {args.out}")
    return payload


def main(argv=None) -> dict:
    from fsnn.app import USER_ERRORS

    args = parse_args(argv)
    try:
        return from_run(args) if args.run_dir is not None else quick(args)
    except USER_ERRORS as error:  # a bad run folder, checkpoint or dataset: one line, as train.py
        print(f"fsnn: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
