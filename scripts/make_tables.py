"""Print the paper's tables beside ours and write them to results/tables/ (Markdown + LaTeX).

Same as ``python -m fsnn.tables [--results DIR] [--out DIR]``: reads ``./results`` of the current directory by
default; see ``fsnn/tables.py`` and the paper's numbers in ``fsnn/paper_tables.yaml``.
"""

from fsnn.tables import main

if __name__ == "__main__":
    raise SystemExit(main())
