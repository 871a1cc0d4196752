"""Write README's measured tables from the CSVs committed beside its figures.

    python docs/readme_tables.py          # rewrite README.md in place
    python docs/readme_tables.py --check  # exit 1 if README differs (tests/test_readme.py)

Each table sits between ``<!-- table: NAME -->`` and ``<!-- /table -->``;
NAME says which CSV and which renderer:

- ``audits``: ``docs/figures/audits/audits.csv``, written by
  ``vfl audits DIR --out docs/figures/audits/audits.png``
  (:func:`vfl.experiments.audit.audit_markdown`);
- ``utility-a9a``, ``utility-adult``: ``docs/figures/private/utility-*.csv``,
  written by ``vfl reproduce private-utility``
  (:func:`vfl.papers.private_utility.figures.utility_markdown`);
- ``hu-bytes``: ``docs/figures/hu/bytes.csv``, written by ``vfl reproduce hu bytes``
  (:func:`vfl.papers.hu.figures.bytes_markdown`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "docs" / "figures"
_BLOCK = re.compile(r"(<!-- table: ([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def _render(name: str) -> str:
    if name == "audits":
        from vfl.experiments.audit import audit_markdown

        return audit_markdown(pd.read_csv(FIGURES / "audits" / "audits.csv"))
    if name.startswith("utility-"):
        from vfl.papers.private_utility.figures import utility_markdown

        return utility_markdown(pd.read_csv(FIGURES / "private" / f"{name}.csv", comment="#"))
    if name == "hu-bytes":
        from vfl.papers.hu.figures import bytes_markdown

        return bytes_markdown(pd.read_csv(FIGURES / "hu" / "bytes.csv"))
    raise KeyError(f"README names an unknown table {name!r}")


def render(readme: str) -> str:
    """``readme`` with every marked table rewritten from its CSV."""
    return _BLOCK.sub(lambda m: m.group(1) + _render(m.group(2)) + m.group(4), readme)


def main(argv: list[str]) -> int:
    path = REPO / "README.md"
    text = path.read_text()
    new = render(text)
    if "--check" in argv:
        return int(new != text)
    path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
