"""``fsnn-fixtures DIR``: write tiny fake copies of the vision and graph datasets, in their real on-disk formats, into
``DIR`` (:func:`fsnn.data.fakes.fixtures.write_fixtures`), for smoke runs that need no download::

    fsnn-fixtures fake_data
    fsnn-train experiment=table2_node_classification_smoke paths.data_dir=fake_data

Each dataset folder is written whole and carries a marker (:mod:`fsnn.data.fakes`): the loaders read it without the
completeness checks a fake cannot pass (file counts, md5 sums, node counts), and a run on it records ``"fake_data":
true`` in its ``metrics.json``. A folder that holds anything but an earlier fake (a real dataset) is refused before
anything is written; an earlier fake is replaced whole, and the command says so. ``python -m
fsnn.data.fakes.make_fixtures DIR`` is the same command.

``--scale FRACTION`` (a number in ``(0, 1]``) writes the event and image datasets of
:data:`fsnn.data.fakes.scaled_fixtures.SCALED_NAMES` instead, at that fraction of their published size
(:func:`fsnn.data.fakes.scaled_fixtures.write_scaled_fixtures`); at 1.0 they hold as many files as the releases. Without
``--only`` all of them are written: at 1.0 that includes ImageNet's 1.33 million JPEGs and HarDVS's 107,646
recordings::

    fsnn-fixtures big_fake --scale 0.1 --only dvsgesture
    fsnn-fixtures big_fake --scale 1.0 --only cifar10 cifar100
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from fsnn.atomic import RunFileError
from fsnn.data.fakes import NotAFakeError, fake_marker
from fsnn.data.fakes.fixtures import FIXTURE_NAMES, write_fixtures
from fsnn.data.fakes.scaled_fixtures import SCALED_NAMES, check_scale, scaled_plan, write_scaled_fixtures
from fsnn.data.registry import dataset_info


def _scale(text: str) -> float:
    """``--scale``'s value: a number in ``(0, 1]``."""
    try:
        return check_scale(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv=None) -> int:
    """The ``fsnn-fixtures`` command: write the fakes and list them; returns the exit status (0; a bad command line
    exits with 2 before anything is written; a dataset folder that holds real data, or one that cannot be written,
    returns 2 with one line naming it).

    Args:
        argv: the command line after the program name (default ``None``: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(
        prog="fsnn-fixtures",
        description="Write tiny fake copies of the vision and graph datasets, in their real "
        "on-disk formats, into DIR, for smoke runs that need no download.",
        epilog="Then: fsnn-train ... paths.data_dir=DIR. Each folder written carries a fake-data marker; a folder "
        "holding a real dataset is never written over.",
    )
    parser.add_argument("out_dir", type=Path, metavar="DIR", help="folder to write into (then paths.data_dir=DIR)")
    parser.add_argument(
        "--only", nargs="+", choices=FIXTURE_NAMES, metavar="NAME", help=f"subset of {', '.join(FIXTURE_NAMES)}"
    )
    parser.add_argument(
        "--scale",
        type=_scale,
        metavar="FRACTION",
        help=f"write {', '.join(SCALED_NAMES)} at FRACTION (0 < FRACTION <= 1) of their published size instead of "
        "the tiny fakes; 1.0 = as many files as the release (pick with --only: all of them at 1.0 is hundreds of GB)",
    )
    args = parser.parse_args(argv)
    if args.scale is not None and args.only and (unscaled := [n for n in args.only if n not in SCALED_NAMES]):
        parser.error(f"argument --scale: no scaled fake of {', '.join(unscaled)}; available: {', '.join(SCALED_NAMES)}")
    if args.out_dir.exists() and not args.out_dir.is_dir():
        parser.error(f"argument DIR: expected a folder to write into, got {str(args.out_dir)!r} (a file)")
    names = args.only or (FIXTURE_NAMES if args.scale is None else SCALED_NAMES)
    earlier = {name: fake_marker(args.out_dir / dataset_info(name).directory) for name in names}
    start = time.perf_counter()
    try:
        if args.scale is None:
            written = write_fixtures(args.out_dir, names)
        else:
            files = sum(len(scaled_plan(name, args.scale)) for name in names)
            written = write_scaled_fixtures(args.out_dir, args.scale, names, progress=files >= 1000)
    except (NotAFakeError, RunFileError) as err:  # real data in the way, a failed write: the message names it
        print(f"fsnn-fixtures: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a read-only folder, a full disk: one line naming the file, not a traceback
        print(
            f"fsnn-fixtures: error: cannot write {err.filename or args.out_dir}: {err.strerror or err}", file=sys.stderr
        )
        return 2
    for name, path in written.items():
        replaced = earlier[name]
        scale = "tiny" if replaced is None or replaced.get("scale") is None else f"scale {replaced['scale']}"
        print(f"{name:12s} {path}{f' (replaced an earlier fake, {scale})' if replaced else ''}")
    print(
        f"wrote {len(written)} fixtures in {time.perf_counter() - start:.2f} s: paths.data_dir={args.out_dir} "
        "reads them (each folder carries a fake-data marker: no checks to switch off, and runs record fake_data)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
