"""The user-file datasets' validation table: each bad file or option and its exact one-line
message, written into tmp_path (the working directory) before anything is split or written.
"""

from pathlib import Path

import pytest
from userfiles_helpers import (
    SVM,
    _in_tmp,  # noqa: F401 (autouse: each test runs in tmp_path)
    write,
)
from userfiles_table import CASES, SPECIAL

from vfl.core.errors import DataError
from vfl.datasets import LOADER_OPTIONS, get_spec, load_dataset, read_user_file


@pytest.mark.parametrize("case_id, files, fmt, options, message", CASES, ids=[c[0] for c in CASES])
def test_validation_table(tmp_path, case_id, files, fmt, options, message):
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.write_bytes(SPECIAL[case_id])
        else:
            path.write_bytes(content)
    opts = {"test_fraction": 0.5, **({"label": "y"} if fmt == "csv" else {})}
    opts.update({k: (v.format(d=tmp_path) if isinstance(v, str) else v) for k, v in options.items()})
    opts = {k: v for k, v in opts.items() if v is not None}
    if "test_path" in opts and "test_fraction" not in options:
        del opts["test_fraction"]
    with pytest.raises(DataError) as err:
        load_dataset(fmt, options=opts)
    assert str(err.value) == message.format(d=tmp_path)
    assert "\n" not in str(err.value)


def test_unreadable_file(tmp_path, monkeypatch):
    write("locked.svm", SVM)

    def deny(self):
        raise PermissionError(13, "Permission denied")

    # Tests may run as root, which reads anything: simulate the denial.
    monkeypatch.setattr(Path, "read_bytes", deny)
    with pytest.raises(DataError) as err:
        read_user_file("locked.svm")
    assert str(err.value) == f"cannot read {tmp_path}/locked.svm: Permission denied"


def test_validation_happens_before_any_split_or_write(tmp_path):
    # The bad test file is found although the training file is fine, and nothing is written.
    write("n.svm", SVM)
    Path("t.svm.gz").write_bytes(SVM)  # not gzip
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(DataError, match="t.svm.gz: the name ends in .gz"):
        load_dataset("libsvm", options={"path": "n.svm", "test_path": "t.svm.gz"})
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_registry_names_the_file_formats():
    with pytest.raises(DataError) as err:
        get_spec("libsvm")
    assert str(err.value).startswith("dataset 'libsvm' reads the file named by its option path")
    with pytest.raises(
        DataError,
        match=r"known datasets: a9a, adult, gisette, synthetic, "
        r"libsvm, csv \(your own file\)",
    ):
        load_dataset("rcv1")
    with pytest.raises(DataError, match="unknown dataset 'libsvm:x'"):
        load_dataset("libsvm:x")
    assert LOADER_OPTIONS["csv"][:2] == ("path", "label")
