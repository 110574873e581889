"""``fsnn-fixtures DIR``: write tiny fake copies of the vision and graph datasets, in their real on-disk formats, into
``DIR`` (:func:`fsnn.data.fixtures.write_fixtures`), for smoke runs that need no download::

    fsnn-fixtures fake_data
    fsnn-train experiment=table2_node_classification_smoke paths.data_dir=fake_data

The event and image fakes are smaller than the published releases, so a run on them sets ``FSNN_DATA_VERIFY=0``
(the loaders' completeness checks: file counts, md5 sums); the graphs load as they are. ``python -m
fsnn.data.make_fixtures DIR`` is the same command.

``--scale FRACTION`` (a number in ``(0, 1]``) writes the event and image datasets of
:data:`fsnn.data.scaled_fixtures.SCALED_NAMES` instead, at that fraction of their published size
(:func:`fsnn.data.scaled_fixtures.write_scaled_fixtures`); at 1.0 they pass the loaders' file-count checks, and
ImageNet's at every scale, while CIFAR's always need ``FSNN_DATA_VERIFY=0`` (torchvision's md5 sums;
:func:`fsnn.data.scaled_fixtures.passes_verification`). Without ``--only`` all of them are written: at 1.0 that
includes ImageNet's 1.33 million JPEGs and HarDVS's 107,646 recordings::

    fsnn-fixtures big_fake --scale 0.1 --only dvsgesture
    fsnn-fixtures big_fake --scale 1.0 --only cifar10 cifar100
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from fsnn.data.fixtures import FIXTURE_NAMES, write_fixtures
from fsnn.data.scaled_fixtures import (
    SCALED_NAMES,
    check_scale,
    passes_verification,
    scaled_plan,
    write_scaled_fixtures,
)


def _scale(text: str) -> float:
    """``--scale``'s value: a number in ``(0, 1]``."""
    try:
        return check_scale(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv=None) -> int:
    """The ``fsnn-fixtures`` command: write the fakes and list them; returns the exit status (0; a bad command line
    exits with 2 before anything is written, a folder that cannot be written returns 2 with one line naming the
    file).

    Args:
        argv: the command line after the program name (default ``None``: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(
        prog="fsnn-fixtures",
        description="Write tiny fake copies of the vision and graph datasets, in their real "
        "on-disk formats, into DIR, for smoke runs that need no download.",
        epilog="Then: fsnn-train ... paths.data_dir=DIR (event and image fakes also need FSNN_DATA_VERIFY=0).",
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
    start = time.perf_counter()
    try:
        if args.scale is None:
            written = write_fixtures(args.out_dir, args.only)
        else:
            names = args.only or SCALED_NAMES
            files = sum(len(scaled_plan(name, args.scale)) for name in names)
            written = write_scaled_fixtures(args.out_dir, args.scale, names, progress=files >= 1000)
    except OSError as err:  # a read-only folder, a full disk: one line naming the file, not a traceback
        print(
            f"fsnn-fixtures: error: cannot write {err.filename or args.out_dir}: {err.strerror or err}", file=sys.stderr
        )
        return 2
    for name, path in written.items():
        print(f"{name:12s} {path}")
    if args.scale is None:
        how = "event and image fakes with FSNN_DATA_VERIFY=0"
    elif unverified := [name for name in written if not passes_verification(name, args.scale)]:
        how = f"{', '.join(unverified)} with FSNN_DATA_VERIFY=0"
    else:
        how = "verification passes"
    print(
        f"wrote {len(written)} fixtures in {time.perf_counter() - start:.2f} s: paths.data_dir={args.out_dir} "
        f"reads them ({how})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
