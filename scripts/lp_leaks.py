#!/usr/bin/env python
"""What the link-prediction splits leak from training into evaluation, measured on the splits the runs use.

For each graph, the split of ``task=link`` (:class:`fsnn.data.datamodules.LinkDataModule`, seeded with ``--seed``) is
built twice, the matched one (PyG's ``RandomLinkSplit``, fresh negatives) and the authors' one
(``dataset.authors_link_split=true dataset.authors_link_negatives=true``: split by storage position, negatives from a
pool), and :func:`fsnn.data.datamodules.link_split_leaks` counts on each: the share of validation and test positives
whose reverse edge is a training positive or passes messages when they are scored, the share of test negatives a
training negative can be, and how many times one test negative is drawn as a training negative over ``--epochs``
epochs. Only splits are built, no model: seconds per graph (Physics: about a minute). Prints a markdown table;
``--out`` also writes the numbers as JSON::

    .venv/bin/python scripts/lp_leaks.py --data-dir <graphs> --datasets computers photo cs physics
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPLITS = {"matched": {}, "authors": {"authors_by_position": True, "authors_negative_pool": True}}
COLUMNS = {
    "val_reverse_in_train": "val +, reverse in train +",
    "val_reverse_in_messages": "val +, reverse passes messages",
    "test_reverse_in_train": "test +, reverse in train +",
    "test_reverse_in_messages": "test +, reverse passes messages",
    "test_negatives_in_pool": "test -, drawable in training",
    "test_negative_draws": "draws of one test - as training -",
}


def measure(dataset: str, data_dir: str, seed: int, epochs: int) -> dict[str, dict[str, float]]:
    """``{split: link_split_leaks(...)}`` for the graph ``dataset``, loaded and split as ``task=link`` does."""
    from omegaconf import OmegaConf

    from fsnn.data.datamodules import LinkDataModule, link_split_leaks
    from fsnn.data.registry import load_graph

    split = OmegaConf.load(ROOT / "conf" / "dataset" / f"{dataset}.yaml").get("split", "ratio")
    graph = load_graph(dataset, data_dir=data_dir, split=split, seed=seed, download=False)
    leaks = {}
    for name, split in SPLITS.items():
        data = LinkDataModule(graph, seed=seed, **split)
        data.setup()
        leaks[name] = link_split_leaks(data.splits, epochs=epochs)
    return leaks


def table(results: dict[str, dict[str, dict[str, float]]], epochs: int) -> str:
    header = [
        "graph",
        "split",
        *(f"{title} ({epochs} epochs)" if key == "test_negative_draws" else title for key, title in COLUMNS.items()),
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for dataset, leaks in results.items():
        for split, values in leaks.items():
            cells = [
                f"{values[key]:.1f}" if key == "test_negative_draws" else f"{100 * values[key]:.1f} %"
                for key in COLUMNS
            ]
            lines.append("| " + " | ".join([dataset, split, *cells]) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["computers", "photo", "cs", "physics"])
    parser.add_argument("--data-dir", default=os.environ.get("FSNN_DATA_DIR", "data/graphs"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--out", type=Path, help="also write the numbers as JSON here")
    args = parser.parse_args(argv)
    results = {name: measure(name, args.data_dir, args.seed, args.epochs) for name in args.datasets}
    print(table(results, args.epochs))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        record = {"seed": args.seed, "epochs": args.epochs, "leaks": results}
        temporary = args.out.with_name(args.out.name + ".tmp")
        temporary.write_text(json.dumps(record, indent=2) + "\n")
        temporary.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
