"""Make the run records under a results folder portable: ``python scripts/relative_records.py [RESULTS]``.

Records written before fsnn named the csv logger's folder relative to the run (``config.logger.save_dir``) hold
the absolute path of the place they ran in; this rewrites those paths relative to the run folder
(:func:`fsnn.files.make_records_relative`), notes it in each record (``rewritten``) and leaves everything else.
"""

import sys

from fsnn.files import make_records_relative

if __name__ == "__main__":
    results = sys.argv[1] if len(sys.argv) > 1 else "results"
    for path in make_records_relative(results):
        print(f"rewrote {path}")
