"""Party files' public parameters from a Table Schema (issue 36): a private run takes each
party's column bounds and categories from its schema (the manifest cites it as the source),
one line names every parameter still missing, and a category list that misses a value the
file holds points at it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from cli_helpers import assert_one_line_error, invoke


def _bank(d: Path, n=200, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.arange(n) + 1000
    p1 = pd.DataFrame(
        {
            "cid": ids,
            "age": rng.integers(18, 90, n),
            "job": rng.choice(["admin", "services", "student"], n),
            "y": rng.integers(0, 2, n),
        }
    )
    p2 = pd.DataFrame(
        {
            "cid": ids,
            "balance": rng.normal(1000, 300, n),
            "city": rng.choice(["north", "south"], n),
            "calls": rng.integers(0, 9, n),
        }
    )
    p1.to_csv(d / "p1.csv", index=False)
    p2.to_csv(d / "p2.csv", index=False)


def _schema(d: Path, name: str, fields: list) -> str:
    (d / name).write_text(json.dumps({"fields": fields, "primaryKey": "cid"}))
    return name


PRIVATE_STACKING = """
[preprocessing]
scaling = "minmax"
normalize_rows = true
[solver]
name = "private_stacking"
epochs = 1
[privacy]
epsilon = 8.0
delta = 1e-5
"""


def test_public_parameters_from_a_table_schema_and_one_error_for_every_missing_one(tmp_path, monkeypatch):
    _bank(tmp_path)
    monkeypatch.chdir(tmp_path)
    s1 = _schema(
        tmp_path,
        "p1.json",
        [
            {"name": "cid", "type": "integer"},
            {"name": "age", "type": "integer", "constraints": {"minimum": 18, "maximum": 100}},
            {"name": "job", "type": "string", "constraints": {"enum": ["admin", "services", "student"]}},
            {"name": "y", "type": "integer"},
        ],
    )
    s2 = _schema(
        tmp_path,
        "p2.json",
        [
            {"name": "cid", "type": "integer"},
            {"name": "balance", "type": "number"},
            {"name": "city", "type": "string"},
            {"name": "calls", "type": "integer", "constraints": {"minimum": 0}},
        ],
    )
    text = (
        '[data]\ndataset = "parties"\ntest_fraction = 0.25\n'
        f'[[data.party]]\npath = "p1.csv"\nid = "cid"\nlabel = "y"\nlabels = [0, 1]\n'
        f'schema = "{s1}"\n'
        f'[[data.party]]\npath = "p2.csv"\nid = "cid"\nschema = "{s2}"\n'
        + PRIVATE_STACKING.replace("[privacy]", "[privacy]\nreplayable_noise = true")
    )
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    # one line names every column still missing: the vocabulary of city, the bounds of
    # balance and calls (age's and job's come from party 1's schema)
    result = invoke("run", "--config", cfg, "--out", tmp_path / "o")
    assert_one_line_error(
        result, "3 column(s) have no public parameter", "the categories of 'city'", "the bounds of 'balance', 'calls'"
    )
    assert not (tmp_path / "o").exists()
    # declared in the schema, the run goes; its manifest cites the schema as the source
    s2 = _schema(
        tmp_path,
        "p2.json",
        [
            {"name": "cid", "type": "integer"},
            {"name": "balance", "type": "number", "constraints": {"minimum": 0, "maximum": 3000}},
            {"name": "city", "type": "string", "constraints": {"enum": ["north", "south"]}},
            {"name": "calls", "type": "integer", "constraints": {"minimum": 0, "maximum": 10}},
        ],
    )
    result = invoke("run", "--config", cfg, "--out", tmp_path / "o")
    assert result.returncode == 0, result.stderr
    man = json.loads((tmp_path / "o" / "manifest.json").read_text())
    scale = next(s for s in man["preprocessing"]["steps"] if s["step"] == "scale")
    assert scale["source"] == "schema"
    # a non-private run: a category list that misses a value the file holds points at it
    _schema(
        tmp_path,
        "p1.json",
        [
            {"name": "cid", "type": "integer"},
            {"name": "age", "type": "integer", "constraints": {"minimum": 18, "maximum": 100}},
            {"name": "job", "type": "string", "constraints": {"enum": ["admin", "services"]}},
        ],
    )
    plain = tmp_path / "plain.toml"
    plain.write_text(text.split("[solver]")[0] + "[solver]\nepochs = 2\n")
    assert_one_line_error(
        invoke("run", "--config", plain, "--out", tmp_path / "p"),
        "the enum of field 'job' in the schema",
        "misses 'student'",
        "add it to the list",
    )
    listed = tmp_path / "listed.toml"
    listed.write_text(
        text.split("[solver]")[0].replace(f'schema = "{s1}"\n', "")
        + '[preprocessing.categories]\njob = ["admin", "student"]\n'
        "[solver]\nepochs = 2\n"
    )
    assert_one_line_error(
        invoke("run", "--config", listed, "--out", tmp_path / "p"), "preprocessing.categories.job misses 'services'"
    )
