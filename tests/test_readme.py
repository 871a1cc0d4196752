"""README and the manual (docs/*.md, the mkdocs site) say what the code does: their commands,
listings, examples and numbers are checked here."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pandas as pd
import pytest
from cli_helpers import vfl
from click.testing import CliRunner

from vfl.cli.main import cli
from vfl.experiments.config import load_config

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
MEASURED = REPO / "docs" / "measured.md"
#: the manual's pages (the mkdocs site's sources), README first
PAGES = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
DOCS = "\n".join(p.read_text() for p in PAGES)


def _block_after(marker: str) -> str:
    """The fenced code block that follows ``<!-- marker -->`` in README or a page."""
    m = re.search(re.escape(f"<!-- {marker} -->") + r"\s*```[a-z]*\n(.*?)```", DOCS, re.S)
    assert m, f"no page has a code block after <!-- {marker} -->"
    return m.group(1)


def _ci_lines() -> list[str]:
    return [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]


@pytest.mark.parametrize(
    "marker", ["main job: .ci/run runs exactly this line", "test command: .ci/run runs exactly this line"]
)
def test_the_two_commands_are_what_ci_runs(marker):
    command = _block_after(marker).strip()
    assert "\n" not in command, "one line each"
    ci = _ci_lines()
    assert any(line == command or line.startswith(command + " ||") for line in ci), (
        f"{command!r} is not a line of .ci/run"
    )


def test_config_listings_are_the_shipped_files():
    listings = re.findall(r"<!-- file: (\S+) -->", DOCS)
    assert listings, "no page lists a config"
    for name in listings:
        assert _block_after(f"file: {name}") == (REPO / name).read_text(), name


def test_every_file_the_docs_name_exists():
    """Links and images resolve from the page that has them; configs from the clone."""
    missing = []
    for page in PAGES:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not target.startswith(("http://", "https://")) and not (page.parent / target).exists():
                missing.append(f"{page.relative_to(REPO)}: {target}")
        missing += [
            f"{page.relative_to(REPO)}: {n}"
            for n in re.findall(r"`(configs/[\w.-]+\.toml)`", text)
            if not (REPO / n).exists()
        ]
    assert not missing, missing


def test_readme_is_short_and_the_site_lists_every_page():
    yaml = pytest.importorskip("yaml")  # (the docs extra brings it)

    assert len(README.splitlines()) <= 300
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text().replace("!!python", "#"))["nav"]

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for n in node:
                yield from pages(n)
        elif isinstance(node, dict):
            for n in node.values():
                yield from pages(n)

    listed = set(pages(nav))
    on_disk = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")}
    assert listed == on_disk, (on_disk - listed, listed - on_disk)


def test_the_parts_table_is_the_tree():
    """docs/parts.md has one row per package folder of the clone, and names only real ones."""
    table = (REPO / "docs" / "parts.md").read_text()
    rows = set(re.findall(r"^\| `([\w-]+)/` \|", table, re.M))
    packages = {p.name for p in REPO.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= rows, packages - rows
    assert all((REPO / r).is_dir() for r in rows), [r for r in rows if not (REPO / r).is_dir()]


def test_every_command_in_the_table_exists():
    table = (REPO / "docs" / "commands.md").read_text().split("## A run directory", 1)[0]
    commands = set(re.findall(r"^\| `vfl ([a-z-]+)", table, re.M))
    assert {"run", "plot", "audit", "sweep", "sweep-noise", "reproduce"} <= commands
    for name in sorted(commands):
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)


def _measured() -> dict[str, str]:
    rows = re.findall(r"^\| `([\w.-]+)` \| ([^|]+?) \|", MEASURED.read_text(), re.M)
    assert rows, "docs/measured.md has no `key` | value rows"
    return dict(rows)


def test_numbers_marked_as_measured_are_the_recorded_ones():
    measured = _measured()
    marks = re.findall(r"([\w.,]+)(?:\s\w+)?<!-- measured: ([\w.-]+) -->", DOCS)
    assert marks, "no page marks a measured number"
    for value, key in marks:
        assert key in measured, f"README cites {key}, which docs/measured.md does not record"
        assert value in measured[key], f"README says {value} for {key}; measured: {measured[key]}"


def _docs_module(name: str):
    """docs/NAME.py, a script of the clone (not installed), loaded as a module."""

    spec = importlib.util.spec_from_file_location(name, REPO / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look themselves up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def _readme_tables():
    return _docs_module("readme_tables")


def test_measured_tables_are_the_ones_the_script_writes():
    """The tables and the facts the prose quotes, in README and every page, are `python
    docs/readme_tables.py` of the committed CSVs."""
    tables = _readme_tables()
    names = re.findall(r"<!-- table: ([\w-]+) -->", DOCS)
    assert {"audits", "utility-a9a", "utility-adult"} <= set(names)
    facts = set(re.findall(r"<!-- fact: ([\w.-]+) -->", DOCS))
    assert facts == set(tables.FACTS), ("facts no page quotes", sorted(set(tables.FACTS) - facts))
    for page in PAGES:
        text = page.read_text()
        assert tables.render(text) == text, f"{page.name}: run python docs/readme_tables.py"
    assert (REPO / "docs" / "figures" / "audits" / "audits.png").is_file()


def test_a_fact_mark_is_rewritten_from_its_csv_or_refused(tmp_path, monkeypatch):
    tables = _readme_tables()
    lookup = sys.modules["readme_lookup"]  # what readme_tables reads its facts with
    (tmp_path / "runs.csv").write_text(
        "config,scale,verdict,epsilon,delta\n"
        "a,1,PASS,10035200,1e-05\na,0.33,REFUTED,10035200,1e-05\n"
        "b,1,PASS,8,1e-05\nb,0.33,PASS,8,1e-05\n"
    )
    monkeypatch.setattr(tables, "FIGURES", tmp_path)
    monkeypatch.setattr(
        tables,
        "FACTS",
        {
            "refuted": lookup.count("runs.csv", scale=0.33, verdict="REFUTED"),
            "not-refuted": lookup.Fact(
                "runs.csv", lambda t: int(((t["scale"] == 0.33) & (t["verdict"] != "REFUTED")).sum()), lookup._word
            ),
            "a-epsilon": lookup.cell("runs.csv", "epsilon", lookup._exp(1), config="a", scale=1),
            "a-delta": lookup.cell("runs.csv", "delta", lookup._exp(0), config="a", scale=1),
            "c-epsilon": lookup.cell("runs.csv", "epsilon", config="c", scale=1),
            "a-epsilon-any-scale": lookup.cell("runs.csv", "epsilon", config="a"),
        },
    )
    readme = (
        "At S = 0.33, 7<!-- fact: refuted --> are REFUTED; three<!-- fact: not-refuted --> "
        "are not.\n\n| table |\n\nIts guarantee is (2.0e3<!-- fact: a-epsilon -->, "
        "1e-5<!-- fact: a-delta -->).\n"
    )
    want = readme.replace("7<", "1<").replace("three<", "one<").replace("2.0e3<", "1.0e7<")
    assert tables.render(readme) == want
    assert tables.render(want) == want  # only the values move; the marks stay
    with pytest.raises(lookup.FactError, match="unknown fact 'nope'"):
        tables.render("1<!-- fact: nope -->")
    with pytest.raises(
        lookup.FactError, match="fact 'c-epsilon': 0 rows of runs.csv have config='c', scale=1, not one"
    ):
        tables.render("8<!-- fact: c-epsilon -->")
    with pytest.raises(lookup.FactError, match="fact 'a-epsilon-any-scale': 2 rows"):
        tables.render("8<!-- fact: a-epsilon-any-scale -->")
    (tmp_path / "runs.csv").unlink()
    with pytest.raises(lookup.FactError, match="fact 'refuted': FileNotFoundError"):
        tables.render("1<!-- fact: refuted -->")


def _run_bash(lines: str, cwd: Path) -> None:
    """Each line as bash runs it; a plain ``vfl ...`` line (no shell syntax beyond quoting) runs
    the console entry point in this process (``cli_helpers.vfl``) on the words bash would pass."""

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "MPLBACKEND": "Agg"}
    for line in lines.strip().splitlines():
        words = shlex.split(line)
        if words[:1] == ["vfl"] and not re.search(r"[|&;<>$`(){}*?~#]|\\", line):
            proc = vfl(*words[1:], cwd=cwd, env={"MPLBACKEND": "Agg"})
        else:
            proc = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
        yield line, proc.stdout


def test_the_own_data_example_runs_as_written(tmp_path):
    """README's worked example, line by line, in an empty directory."""
    outputs = dict(_run_bash(_block_after("example: own data"), tmp_path))
    inspect = next(out for line, out in outputs.items() if "inspect" in line)
    shown = _block_after("output: inspect").replace("/home/you/work", str(tmp_path.resolve()))
    for line in shown.strip().splitlines():
        assert line.strip() in inspect, line  # the config `inspect` suggests, as README shows it
    # the configs ship in the clone; README runs them from its root
    shutil.copytree(REPO / "configs" / "own-data", tmp_path / "configs" / "own-data")
    outputs = dict(_run_bash(_block_after("example: own run"), tmp_path))
    runs = sorted((tmp_path / "results" / "runs").iterdir())
    assert len(runs) == len(outputs) == 3
    for run in runs:
        assert (run / "metrics.csv").is_file() and (run / "manifest.json").is_file()
    assert all("privacy guarantee" in out for out in outputs.values())


@pytest.mark.slow
def test_the_party_files_example_runs_as_written(tmp_path):
    """README's party-file example: split a shipped config's data into party files, tune on
    the public rows, run the chosen config on the aligned rows."""

    shutil.copytree(REPO / "configs" / "own-data", tmp_path / "configs" / "own-data")
    outputs = dict(_run_bash(_block_after("example: party files"), tmp_path))
    run = next(out for line, out in outputs.items() if line.startswith("vfl run"))
    assert "privacy guarantee: (8, 1e-05)-DP" in run and "alignment:" in run
    tuned = tomllib.loads((tmp_path / "parties" / "tuned.toml").read_text())
    assert tuned["tuning"]["method"] == "public" and tuned["data"]["dataset"] == "parties"


def test_readme_commands_parse():
    """Every `vfl ...` line in a bash block names a command the CLI has."""

    blocks = re.findall(r"```bash\n(.*?)```", DOCS, re.S)
    seen = 0
    for block in blocks:
        for line in block.splitlines():
            for part in re.split(r"&&|\|\|", line):
                words = shlex.split(part.strip()) if part.strip() else []
                if words[:1] != ["vfl"] or len(words) < 2:
                    continue
                path = [w for w in words[1:3] if not w.startswith("-")]
                group = cli
                for w in path:
                    group = group.get_command(None, w) or group if isinstance(group, click.Group) else group
                assert group is not cli, f"unknown command in the docs: {part.strip()}"
                seen += 1
    assert seen >= 5


#: the user-facing files that must cite papers by author, year and section, never by the
#: internal ids of the implementation specs or the issue tracker
USER_FACING = (
    "admm/consensus/*.py",
    "admm/sharing/*.py",
    "decentralized/admm.py",
    "decentralized/gd.py",
    "decentralized/problem.py",
    "decentralized/graphs.py",
    "decentralized/network.py",
    "decentralized/private_network.py",
    "decentralized/secret_sharing.py",
    "privacy/ldp.py",
    "privacy/paper.py",
    "privacy/moments.py",
    "papers/*.py",
    "papers/*/*.py",
    "plots/*.py",
    "datasets/*.py",
    "datasets/userfiles/*.py",
    "experiments/*.py",
    "configs/*.toml",
    "README.md",
    "docs/*.md",
)
INTERNAL_ID = re.compile(r"\b(spec [A-Z]\d|erratum [A-Z]?\d|issue \d|papers/0\d|00\d eq\.|of 00\d\b)", re.I)


def test_no_internal_ids_in_user_facing_text():
    """Help texts, docstrings, comments and configs name no spec decision, erratum or issue."""
    files = sorted({p for pattern in USER_FACING for p in REPO.glob(pattern)})
    assert len(files) > 40, files
    offending = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in files
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if INTERNAL_ID.search(line)
    ]
    assert not offending, "internal ids a user cannot resolve:\n" + "\n".join(offending)


def test_the_audit_table_covers_every_config_that_claims_a_guarantee():
    """`python docs/measure.py audits` audits every shipped config whose run claims a
    guarantee, and the committed table holds exactly those, as run and at the reduced scale."""

    audits = _docs_module("measure_audits")
    # (configs/deploy/ holds a deployment's files, run by party services, not in-process: its
    # mechanism is papers/hu/configs/privacy-a9a-row.toml's, audited)
    shipped = sorted(REPO.glob("papers/*/configs/*.toml")) + sorted(
        p for p in REPO.glob("configs/**/*.toml") if "deploy" not in p.parts
    )
    claiming = {str(p.relative_to(REPO)) for p in shipped if load_config(p).privacy.claims_guarantee}
    assert claiming <= {config for config, _, _ in audits.AUDITED}
    expected = []  # (name, noise scale, guarantee): a row per guarantee the entry claims
    for config, sets, _ in audits.AUDITED:
        loaded = load_config(REPO / config, [s for s in sets if not s.startswith("name=")])
        assert loaded.privacy.claims_guarantee, config  # an entry sets what it audits
        name = next((s[5:] for s in sets if s.startswith("name=")), loaded.name)
        kinds = (["features"] if loaded.privacy.values.get("delta") is not None else []) + (
            ["labels"] if loaded.privacy.values.get("label_epsilon") is not None else []
        )
        expected += [(name, s, k) for s in (1.0, audits.AUDIT_LOW_SCALE) for k in kinds]
    table = pd.read_csv(REPO / "docs" / "figures" / "audits" / "audits.csv")
    kind = ["labels" if m.endswith("(labels)") else "features" for m in table["mechanism"]]
    assert sorted(zip(table["config"], table["noise_scale"], kind)) == sorted(expected)
