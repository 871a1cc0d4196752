"""The shape of the code, checked on the tree (issue 38, items 3 and 4): small modules, no
import cycle inside a package or between them, every function-level import with its
reason, and no module name that two layers share.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parents[1]
#: the longest a module may be (lines, after `ruff format`)
MAX_LINES = 500
#: why a function-level import may stay: written next to it as ``# lazy: <reason>``
LAZY = "# lazy:"


def _python_files() -> list[Path]:
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True)
    if tracked.returncode != 0:  # an unpacked archive: every file beside the tests
        return sorted(p for p in REPO.rglob("*.py") if "build" not in p.parts and ".venv" not in p.parts)
    return [REPO / name for name in tracked.stdout.split()]


def test_every_module_stays_within_500_lines():
    long = {str(p.relative_to(REPO)): n for p in _python_files() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def _function_level_imports(path: Path):
    source = path.read_text()
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    yield inner.lineno, lines[inner.lineno - 1]


def test_a_function_level_import_says_why_it_is_lazy():
    """An import inside a function stays only where start-up time needs it (an optional
    dependency, or a slow one a light command does not load), with ``# lazy: <reason>``."""
    bare = [
        f"{path.relative_to(REPO)}:{lineno}: {line.strip()}"
        for path in _python_files()
        for lineno, line in _function_level_imports(path)
        if LAZY not in line
    ]
    assert not bare, f"{len(bare)} function-level imports without '{LAZY} <reason>':\n" + "\n".join(bare[:40])


#: what a party's process starts without: the coordinator's accounting, baselines and figures
#: (dp-accounting and scipy.stats, sklearn, matplotlib: 1.1 s of a party's 2 s start)
NOT_IN_A_PARTY = ("dp_accounting", "sklearn", "matplotlib", "scipy.stats")


def test_a_partys_process_imports_only_its_side():
    """A Dask worker's side and a party service import none of :data:`NOT_IN_A_PARTY`; their
    lazy imports are what keeps them out (``# lazy: start-up``), so a new module-level import
    of them would slow every party's start again."""
    code = (
        "import sys, vfl.experiments.transport.dask_actor, vfl.experiments.transport.service_party;"
        f"print(sorted(m for m in {NOT_IN_A_PARTY!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", f"a party's process imports {proc.stdout.strip()}"


def _import_graph(tmp_path: Path) -> nx.DiGraph:
    """vfl's modules and the imports between them (grimp, as import-linter reads them: every
    import statement, function-level ones included, ``if TYPE_CHECKING:`` ones not), over a
    namespace of links to the clone's parts."""
    root = tmp_path / "vfl"
    root.mkdir()
    for part in (p for p in REPO.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"):
        (root / part.name).symlink_to(part, target_is_directory=True)
    code = (
        "import grimp, json;"
        "g = grimp.build_graph('vfl', include_external_packages=False, exclude_type_checking_imports=True);"
        "print(json.dumps([[m, i] for m in g.modules for i in g.find_modules_directly_imported_by(m)]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env={"PYTHONPATH": str(tmp_path), "PATH": ""}, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return nx.DiGraph(json.loads(proc.stdout))


def test_no_import_cycle(tmp_path):
    """No module imports itself back through others: not between packages, not inside one (a
    package's ``__init__`` that imports its submodules counts as a module of its own)."""
    graph = _import_graph(tmp_path)
    assert graph.number_of_nodes() > 100, "grimp found no modules"
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


#: the parts a traceback's file name should tell apart: each layer's part, the solver families
#: as one (each family has its own ``party.py``), the scripts (benchmarks/, docs/) aside
PARTS = {
    **dict.fromkeys(("core", "privacy", "datasets", "experiments", "plots", "papers", "cli"), None),
    **dict.fromkeys(("admm", "attacks", "baselines", "decentralized", "stacking"), "solver families"),
}


def test_no_module_name_is_shared_by_two_parts():
    """A traceback's ``records.py`` names one module: a name may repeat inside a part (each
    paper's ``figures.py``, each solver family's ``party.py``), never across two."""
    parts_of = defaultdict(set)
    for path in _python_files():
        part = path.relative_to(REPO).parts[0]
        if part in PARTS and path.name != "__init__.py":
            parts_of[path.name].add(PARTS[part] or part)
    shared = {name: sorted(parts) for name, parts in parts_of.items() if len(parts) > 1}
    assert not shared, f"module names in more than one part: {shared}"
