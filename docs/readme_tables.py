"""Write the measured tables of README and the manual (docs/*.md) from the CSVs committed
beside their figures.

    python docs/readme_tables.py          # rewrite README.md and docs/*.md in place
    python docs/readme_tables.py --check  # exit 1 if any differs (tests/test_readme.py)

Each table sits between ``<!-- table: NAME -->`` and ``<!-- /table -->``;
NAME says which CSV and which renderer:

- ``audits``: ``docs/figures/audits/audits.csv``, written by ``python docs/measure.py
  audits`` (every config that claims a guarantee, through ``vfl audit`` and ``vfl audits``;
  :func:`vfl.experiments.audit.audit_markdown`); the prose's facts also read ``ceiling.csv``
  and ``tv.csv`` beside it, written by ``python docs/measure.py ceiling``;
- ``utility-a9a``, ``utility-adult``: ``docs/figures/private/utility-*.csv``,
  written by ``vfl reproduce private-utility``
  (:func:`vfl.papers.private_utility.utility_panels.utility_markdown`);
- ``attacks``: ``docs/figures/attacks/attacks.csv``, written by ``vfl reproduce attacks``
  (:func:`vfl.papers.attacks.figures.attacks_markdown`);
- ``hu-bytes``: ``docs/figures/hu/bytes.csv``, written by ``vfl reproduce hu bytes``
  (:func:`vfl.papers.hu.figures.bytes_markdown`);
- ``scale``: ``docs/figures/scale/scale.csv``, written by ``python docs/measure.py scale``
  (:func:`scale_markdown`, with issue 23's targets);
- ``services``: ``docs/figures/services/services.csv``, written by
  ``python docs/measure.py services`` (:func:`services_markdown`);
- ``dask``: ``docs/figures/dask/dask.csv`` and ``dask-nanny.csv``, written by
  ``python docs/measure.py dask`` (:func:`dask_markdown`);
- ``alignment``: ``docs/figures/alignment/alignment.csv``, written by ``python -m
  benchmarks.alignment --ids 100000 1000000 10000000 --csv ...`` (:func:`alignment_markdown`);
- ``bench-targets``, ``bench-variants``: ``docs/figures/bench/targets.csv``,
  ``variants.csv`` and ``references.csv``, written by ``python docs/measure.py
  benchmarks`` from the run's bench.json (:func:`bench_targets_markdown`,
  :func:`bench_variants_markdown`).

Numbers in README's prose that a committed CSV determines are *facts*:
``VALUE<!-- fact: NAME -->``, where VALUE is the word right before the mark
(letters, digits and ``.,+-%``: ``0.3250``, ``1,041,952``, ``1e-5``, ``48%``,
``two``) and NAME a key of :data:`FACTS`, which says which CSV under
``docs/figures/`` and how the number is read off it (a cell of the one row a
selector picks, a count of rows, or a small function of the table), and how
it is printed. :func:`render` rewrites VALUE along with the tables, so the same
check fails when the prose drifts from its CSV. An unknown NAME, a selector
that picks no row or several, or a value that is not one word raises an error
naming the fact. To quote a new number: add its entry to :data:`FACTS`
(``docs/readme_facts.py``), put the mark after the number in README, run this script.

The tables' renderers are ``docs/readme_markdown.py``; the facts ``docs/readme_facts.py``;
reading a number off a table is ``docs/readme_lookup.py``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

sys.path.append(str(Path(__file__).resolve().parent))  # its siblings, also when loaded by path
from readme_facts import FACTS  # noqa: E402
from readme_lookup import FactError  # noqa: E402
from readme_markdown import (  # noqa: E402
    alignment_markdown,
    bench_targets_markdown,
    bench_variants_markdown,
    dask_markdown,
    scale_markdown,
    services_markdown,
)

from vfl.experiments.audit import audit_markdown  # noqa: E402
from vfl.papers.attacks.figures import attacks_markdown  # noqa: E402
from vfl.papers.hu.figures import bytes_markdown  # noqa: E402
from vfl.papers.private_utility.utility_panels import utility_markdown  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "docs" / "figures"
#: the documents whose marked tables and facts are generated: README and the manual's pages
DOCUMENTS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
_BLOCK = re.compile(r"(<!-- table: ([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def _render(name: str) -> str:
    if name == "audits":
        return audit_markdown(pd.read_csv(FIGURES / "audits" / "audits.csv"))
    if name.startswith("utility-"):
        return utility_markdown(pd.read_csv(FIGURES / "private" / f"{name}.csv", comment="#"))
    if name == "attacks":
        return attacks_markdown(pd.read_csv(FIGURES / "attacks" / "attacks.csv"))
    if name == "hu-bytes":
        return bytes_markdown(pd.read_csv(FIGURES / "hu" / "bytes.csv"))
    if name == "scale":
        return scale_markdown(pd.read_csv(FIGURES / "scale" / "scale.csv"))
    if name == "dask":
        return dask_markdown(
            pd.read_csv(FIGURES / "dask" / "dask.csv"), pd.read_csv(FIGURES / "dask" / "dask-nanny.csv")
        )
    if name == "services":
        return services_markdown(pd.read_csv(FIGURES / "services" / "services.csv"))
    if name == "bench-targets":
        return bench_targets_markdown(pd.read_csv(FIGURES / "bench" / "targets.csv"))
    if name == "alignment":
        return alignment_markdown(pd.read_csv(FIGURES / "alignment" / "alignment.csv"))
    if name == "bench-variants":
        return bench_variants_markdown(
            pd.read_csv(FIGURES / "bench" / "variants.csv"), pd.read_csv(FIGURES / "bench" / "references.csv")
        )
    raise KeyError(f"README names an unknown table {name!r}")


#: ``VALUE<!-- fact: NAME -->``: VALUE is the word right before the mark
_FACT = re.compile(r"([\w.,+%-]*)<!-- fact: (.*?) -->")
_WORD = re.compile(r"[\w.,+%-]+")


def fact(name: str) -> str:
    """The text of the fact NAME, as README shows it."""
    if name not in FACTS:
        raise FactError(f"README names an unknown fact {name!r} (docs/readme_tables.py FACTS)")
    try:
        text = FACTS[name].text(FIGURES)
    except FactError as e:
        raise FactError(f"fact {name!r}: {e}") from None
    except (KeyError, OSError, ValueError, TypeError) as e:
        raise FactError(f"fact {name!r}: {type(e).__name__}: {e}") from e
    if not _WORD.fullmatch(text):
        raise FactError(f"fact {name!r} prints {text!r}, which is not one word")
    return text


def render(readme: str) -> str:
    """``readme`` with every marked table and fact rewritten from its CSV."""
    readme = _BLOCK.sub(lambda m: m.group(1) + _render(m.group(2)) + m.group(4), readme)
    return _FACT.sub(lambda m: fact(m.group(2)) + m.group(0)[len(m.group(1)) :], readme)


def main(argv: list[str]) -> int:
    changed = {}
    for path in DOCUMENTS:
        text = path.read_text()
        try:
            new = render(text)
        except FactError as e:
            print(f"error: {path.relative_to(REPO)}: {e}", file=sys.stderr)
            return 2
        if new != text:
            changed[path] = new
    if "--check" in argv:
        for path in changed:
            print(f"{path.relative_to(REPO)} differs", file=sys.stderr)
        return int(bool(changed))
    for path, new in changed.items():
        path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
