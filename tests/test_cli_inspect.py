"""Tests of ``vfl datasets inspect PATH`` on small files the tests write."""

import bz2
import gzip
import hashlib
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from vfl.cli.datasets_cmd import datasets
from vfl.datasets import load_dataset

SVM = b"1 1:0.5 3:1\n0 2:1\n1 1:1 4:2\n0 3:1\n1 2:3\n0 1:1\n"
CSV = b"age,city,y,income\n30,Paris,yes,1.5\n40,Rome,no,2\n50,Paris,no,3\n60,Oslo,yes,4\n70,Rome,yes,5\n20,Oslo,no,6\n"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def run(*args):
    return CliRunner().invoke(datasets, ["inspect", *map(str, args)])


def config_part(stdout: str) -> dict:
    """The suggested config printed after the summary, parsed as TOML."""
    return tomllib.loads(stdout[stdout.index("# Suggested config") :])


def test_inspect_libsvm(tmp_path):
    Path("train.svm").write_bytes(SVM)
    result = run("train.svm")
    assert result.exit_code == 0, result.output
    summary = result.stdout.split("\n\n")[0].splitlines()
    path = tmp_path / "train.svm"
    assert summary == [
        f"file       {path} (plain, 46 bytes)",
        f"sha256     {hashlib.sha256(SVM).hexdigest()} (of the file as stored)",
        "format     libsvm, one-based feature indices (assumed: no index 0 occurs, so the file "
        "reads both ways; set zero_based = true if it counts from 0, as scikit-learn's "
        "dump_svmlight_file does)",
        "shape      6 rows x 4 features",
        "sparsity   33.3% of the entries are non-zero (8 of 24)",
        "labels     -1 = 0: 3 rows (50.0%); +1 = 1: 3 rows (50.0%) [larger label is +1]",
        "values     in [0, 3]; 1 binary (0/1) column; 0 constant columns",
        "row norms  max 3, mean 1.56 (> 1: analyses assuming ||x|| <= 1 need normalize_rows = true)",
    ]
    config = config_part(result.stdout)
    assert config == {
        "data": {
            "dataset": "libsvm",
            "path": str(path),
            "n_features": 4,
            "zero_based": False,
            "test_fraction": 0.2,
            "stratify": False,
            "labels": [0, 1],
        },
        "preprocessing": {"scaling": "minmax", "range": [0.0, 1.0], "normalize_rows": True},
        "partition": {"columns": [2, 2]},
    }
    # the public bounds are left to fill: what this file shows is not a public source
    assert "# bounds = [lo, hi]       # FILL: public bounds of every feature (observed here: [0, 3])" in result.stdout
    assert "# party 1: features 1-2 (2 columns)" in result.stdout
    # The printed [data] lines load as they are (split_seed is the run seed).
    options = {k: v for k, v in config["data"].items() if k != "dataset"}
    data = load_dataset("libsvm", options={**options, "test_fraction": 0.5})
    assert data.n_features == sum(config["partition"]["columns"])


def test_inspect_compressed_csv_three_parties(tmp_path):
    Path("t.csv.gz").write_bytes(gzip.compress(CSV))
    result = run("t.csv.gz", "--label", "y", "--parties", 3)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"file       {tmp_path / 't.csv.gz'} (gzip, " in out
    assert "(decompressed content)" in out
    assert "shape      6 rows x 5 features" in out
    assert "labels     -1 = 'no': 3 rows (50.0%); +1 = 'yes': 3 rows (50.0%)" in out
    assert "columns    age, city (categorical, 3 values), income" in out
    config = config_part(out)
    assert config["data"] == {
        "dataset": "csv",
        "path": str(tmp_path / "t.csv.gz"),
        "label": "y",
        "categorical_columns": ["city"],
        "test_fraction": 0.2,
        "stratify": False,
        "labels": ["no", "yes"],
    }
    # the vocabulary and the ranges are marked to fill, with what the file shows as comments
    assert "[preprocessing.categories]   # FILL: every value each column can take" in out
    assert '# "city" = [...]   # observed: Oslo, Paris, Rome' in out
    assert '# "age" = [lo, hi]   # observed: [20, 70]' in out
    assert config["partition"]["columns"] == [1, 3, 1]  # the one-hot block stays whole
    assert "# party 2: city (1 file column, 3 features)" in out
    # the labels are declared, negative first: what a private run needs
    assert 'labels = ["no", "yes"]   # -1, +1: declared (a private run needs them)' in out
    data = load_dataset(
        "csv", options={k: v for k, v in config["data"].items() if k != "dataset"} | {"test_fraction": 0.5}
    )
    assert data.n_features == 5


def test_inspect_tsv_prints_its_delimiter():
    Path("t.tsv").write_bytes(CSV.replace(b",", b"\t"))
    result = run("t.tsv", "--label", "y", "--parties", 1)
    assert result.exit_code == 0, result.output
    config = config_part(result.stdout)
    assert config["data"]["delimiter"] == "\t" and config["partition"]["columns"] == [5]


def test_inspect_format_option_overrides_the_name():
    Path("data.txt").write_bytes(CSV)
    assert run("data.txt", "--format", "csv", "--label", "y").exit_code == 0
    result = run("data.txt")  # read as LIBSVM: malformed
    assert result.exit_code == 2 and "malformed LIBSVM file" in result.stderr


@pytest.mark.parametrize(
    "files, args, message",
    [
        (
            {},
            ["none.svm"],
            "{d}/none.svm: no such file (relative paths are resolved against the current directory {d})",
        ),
        (
            {"x.svm.gz": SVM},
            ["x.svm.gz"],
            "{d}/x.svm.gz: the name ends in .gz but the content is not gzip-compressed (it starts with b'1 1:0.5 ')",
        ),
        (
            {"x.svm.bz2": bz2.compress(SVM * 20)[:-20]},
            ["x.svm.bz2"],
            "{d}/x.svm.bz2: truncated bzip2 file (the compressed data ends before its end-of-stream marker)",
        ),
        ({"x.svm": b""}, ["x.svm"], "{d}/x.svm: empty file (0 bytes)"),
        (
            {"x.svm": b"1 1:1\n0 2:nan\n"},
            ["x.svm"],
            "{d}/x.svm line 2: feature 2 has value nan (NaN and inf are not allowed)",
        ),
        (
            {"x.svm": b"1 1:1\n1 2:1\n"},
            ["x.svm"],
            "{d}/x.svm: constant label: every row has label 1; binary classification needs two classes",
        ),
        (
            {"x.csv": CSV},
            ["x.csv"],
            "{d}/x.csv: a CSV file needs --label COLUMN; columns are: 'age', 'city', 'y', 'income'",
        ),
        (
            {"x.csv": CSV},
            ["x.csv", "--label", "target"],
            "{d}/x.csv: label column 'target' not found; columns are: 'age', 'city', 'y', 'income'",
        ),
        (
            {"x.csv": CSV.replace(b"40,", b"forty,")},
            ["x.csv", "--label", "y"],
            "{d}/x.csv line 3, column 'age': non-numeric value 'forty' in a numeric column (list the "
            "column in categorical_columns if it is categorical)",
        ),
        (
            {"x.svm": SVM},
            ["x.svm", "--label", "y"],
            "--label applies to CSV files; a LIBSVM file's label is the first value of each line",
        ),
        (
            {"x.svm": SVM},
            ["x.svm", "--parties", 5],
            "cannot split 4 column(s) among 5 parties: every party needs at least one",
        ),
    ],
)
def test_inspect_errors_one_line_exit_2(tmp_path, files, args, message):
    for name, content in files.items():
        Path(name).write_bytes(content)
    result = run(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"error: {message.format(d=tmp_path)}\n"


def test_list_mentions_user_file_formats(tmp_path):
    result = CliRunner().invoke(datasets, ["list", "--data-dir", str(tmp_path)])
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert "your file" in lines["libsvm"] and "vfl datasets inspect" in lines["csv"]


def test_fetch_of_a_file_format_explains(tmp_path):
    result = CliRunner().invoke(datasets, ["fetch", "libsvm", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "reads the file named by its option path" in result.stderr


def test_inspect_zero_based_file_with_constant_columns():
    Path("z.svm").write_bytes(b"1 0:1 3:0.5\n0 0:2\n1 3:1\n0 0:1\n")
    result = run("z.svm")
    assert result.exit_code == 0, result.output
    assert "format     libsvm, zero-based feature indices" in result.stdout
    assert "values     in [0, 2]; 2 binary (0/1) columns; 2 constant columns (0-based: 1, 2)" in result.stdout
    config = config_part(result.stdout)
    assert config["data"]["zero_based"] is True and config["data"]["n_features"] == 4
    assert "# party 1: features 0-1 (2 columns)" in result.stdout
    options = {k: v for k, v in config["data"].items() if k != "dataset"}
    assert load_dataset("libsvm", options={**options, "test_fraction": 0.5}).n_features == 4
