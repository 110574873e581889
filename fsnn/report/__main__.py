"""``python -m fsnn.report tables|figures|page``: the same as ``fsnn-report`` (:mod:`fsnn.report.cli`)."""

from fsnn.report.cli import main

raise SystemExit(main())
