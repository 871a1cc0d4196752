"""The user-file datasets' validation table: (id, files written, dataset, options, exact
message; {d} is the tmp dir), and the content of the files that depend on a compressor.
tests/test_userfiles_validation.py runs it."""

import bz2
import gzip
import lzma

from userfiles_helpers import CSV, SVM

ZIP = b"PK\x03\x04" + b"\x00" * 30


CASES = [
    # NaN / inf, naming the first row (file line) and column
    (
        "nan-libsvm",
        {"n.svm": b"# comment\n1 1:1\n\n0 2:nan # x\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm line 4: feature 2 has value nan (NaN and inf are not allowed)",
    ),
    (
        "inf-libsvm",
        {"n.svm": b"1 1:1\n0 2:1 3:inf\n1 1:nan\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm line 2: feature 3 has value inf (NaN and inf are not allowed)",
    ),
    (
        "nan-label-libsvm",
        {"n.svm": b"1 1:1\nnan 2:1\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm line 2: label nan is not a finite number",
    ),
    (
        "nan-csv",
        {"n.csv": b"a,b,y\n1,2,0\n\n3,nan,1\n4,inf,1\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv line 4, column 'b': value 'nan' is not finite (NaN and inf are not allowed)",
    ),
    (
        "inf-csv",
        {"n.csv": b"a,b,y\n1,2,0\n3,-inf,1\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv line 3, column 'b': value '-inf' is not finite (NaN and inf are not allowed)",
    ),
    (
        "inf-label-csv",
        {"n.csv": b"a,y\n1,0\n3,inf\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv line 3, column 'y': label 'inf' is not a finite number",
    ),
    (
        "missing-cell-csv",
        {"n.csv": b"a,b,y\n1,2,0\n3,,1\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv line 3, column 'b': missing value (fill or drop the row; vfl does not impute)",
    ),
    (
        "missing-label-csv",
        {"n.csv": b"a,y\n1,0\n3,\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv line 3, column 'y': missing label",
    ),
    # issue 39: a row one field short is a short row, not a missing label
    (
        "short-row-csv",
        {"n.csv": b"a,b,y\n1,2,0\n3,4\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv line 3: a short row: 2 fields where the header has 3",
    ),
    # issue 39: every row with a missing value counted, the first ones named
    (
        "missing-cells-csv",
        {"n.csv": b"a,b,y\n1,2,0\n3,,1\n,1,1\n" + b"5,6,0\n" * 3 + b"1,,0\n" * 5},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv line 3, column 'b': missing value (fill or drop the row; vfl does not "
        "impute); 7 rows have a missing value (lines 3, 4, 8, 9, 10 ...)",
    ),
    (
        "non-numeric-csv",
        {"n.csv": b"age,y\n31,0\nold,1\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv line 3, column 'age': non-numeric value 'old' in a numeric column (list the "
        "column in categorical_columns if it is categorical)",
    ),
    # feature indices
    (
        "index-beyond-n-features",
        {"n.svm": b"1 1:1\n0 2:1 5:1\n"},
        "libsvm",
        {"path": "n.svm", "n_features": 4},
        "{d}/n.svm line 2: feature index 5 exceeds n_features = 4 (indices are one-based)",
    ),
    (
        "index-0-one-based",
        {"n.svm": b"1 1:1\n0 0:1 2:1\n"},
        "libsvm",
        {"path": "n.svm", "zero_based": False},
        "{d}/n.svm line 2: feature index 0 in a one-based file (zero_based = false); set "
        "zero_based = true if the files count features from 0",
    ),
    (
        "test-wider-than-train",
        {"n.svm": SVM, "t.svm": b"1 1:1\n0 7:1\n"},
        "libsvm",
        {"path": "n.svm", "test_path": "t.svm"},
        "{d}/t.svm line 2: feature index 7 is beyond the 4 features of the training file "
        "{d}/n.svm (set n_features to the true number of features)",
    ),
    (
        "test-extra-column-csv",
        {"n.csv": b"a,y\n1,0\n2,1\n", "t.csv": b"a,b,y\n1,2,0\n"},
        "csv",
        {"path": "n.csv", "test_path": "t.csv"},
        "{d}/t.csv: column(s) 'b' are not in the training file {d}/n.csv (set features to choose the columns)",
    ),
    (
        "malformed-libsvm",
        {"n.svm": b"1 1:1\n0 2:abc\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm: malformed LIBSVM file (could not convert string to float: b'abc')",
    ),
    (
        "no-features",
        {"n.svm": b"1\n0\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm: no features (every line holds only a label)",
    ),
    # empty files
    ("empty", {"n.svm": b""}, "libsvm", {"path": "n.svm"}, "{d}/n.svm: empty file (0 bytes)"),
    (
        "whitespace",
        {"n.svm": b"\n  \n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm: empty file (no data, only whitespace)",
    ),
    (
        "empty-gz",
        {"n.svm.gz": None},
        "libsvm",
        {"path": "n.svm.gz"},
        "{d}/n.svm.gz: empty file (no data after decompression)",
    ),
    (
        "comments-only",
        {"n.svm": b"# nothing\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm: empty file (no data lines, only comments or blank lines)",
    ),
    (
        "header-only-csv",
        {"n.csv": b"a,y\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv: empty file (a header line but no data rows)",
    ),
    # columns and labels
    (
        "repeated-column-name",
        {"n.csv": b"a,b,a,y\n1,2,3,0\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv: column name(s) 'a' appear more than once in the header line",
    ),
    (
        "label-column-missing",
        {"n.csv": b"a,b,target\n1,2,0\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv: label column 'y' not found; columns are: 'a', 'b', 'target'",
    ),
    (
        "feature-missing",
        {"n.csv": b"a,y\n1,0\n"},
        "csv",
        {"path": "n.csv", "features": ["a", "c"]},
        "{d}/n.csv: feature column(s) 'c' not found; columns are: 'a', 'y'",
    ),
    (
        "categorical-not-a-feature",
        {"n.csv": b"a,b,y\n1,2,0\n"},
        "csv",
        {"path": "n.csv", "features": ["a"], "categorical_columns": ["b"]},
        "csv: categorical_columns lists 'b', not among the feature columns",
    ),
    (
        "constant-label",
        {"n.svm": b"1 1:1\n1 2:1\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm: constant label: every row has label 1; binary classification needs two classes",
    ),
    (
        "constant-label-csv",
        {"n.csv": b"a,y\n1,yes\n2,yes\n"},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv: constant label: every row has label 'yes'; binary classification needs two classes",
    ),
    (
        "three-classes",
        {"n.svm": b"1 1:1\n2 1:1\n3 1:1\n1 1:1\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm: 3 distinct labels (1, 2, 3); binary classification needs exactly two",
    ),
    (
        "many-classes-csv",
        {"n.csv": b"a,y\n" + b"".join(b"1,c%d\n" % i for i in range(9))},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv: 9 distinct labels ('c0', 'c1', 'c2', 'c3', 'c4', ... (9 in all)); binary "
        "classification needs exactly two",
    ),
    (
        "label-positive-unknown",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "label_positive": 3},
        "{d}/n.svm: label_positive = 3 is not one of the labels 0, 1",
    ),
    (
        "test-label-unknown",
        {"n.svm": SVM, "t.svm": b"1 1:1\n5 1:1\n"},
        "libsvm",
        {"path": "n.svm", "test_path": "t.svm"},
        "{d}/t.svm: test label(s) 5 do not occur in the training file (whose labels are 0, 1)",
    ),
    (
        "test-label-unknown-csv",
        {"n.csv": b"a,y\n1,0\n2,1\n", "t.csv": b"a,y\n1,0\n2,yes\n"},
        "csv",
        {"path": "n.csv", "test_path": "t.csv"},
        "{d}/t.csv line 3, column 'y': label 'yes' does not occur in the training file",
    ),
    (
        "cannot-stratify",
        {"n.svm": b"1 1:1\n0 1:1\n0 1:2\n0 1:3\n"},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm: cannot hold out test_fraction = 0.5 stratified by label: label 1 has only 1 "
        "row and a stratified split needs at least 2 of each",
    ),
    (
        "too-few-test-rows",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "test_fraction": 0.1},
        "{d}/n.svm: test_fraction = 0.1 of 6 rows leaves 1 row for testing and 5 for training; "
        "a stratified split needs at least one row of each label in each part",
    ),
    # files that are not what their name says
    (
        "gz-not-gzip",
        {"n.svm.gz": None},
        "libsvm",
        {"path": "n.svm.gz"},
        "{d}/n.svm.gz: the name ends in .gz but the content is not gzip-compressed (it starts with b'1 1:0.5 ')",
    ),
    (
        "bz2-is-xz",
        {"n.svm.bz2": None},
        "libsvm",
        {"path": "n.svm.bz2"},
        "{d}/n.svm.bz2: the name ends in .bz2 but the content is xz-compressed (it starts "
        "with b'\\xfd7zXZ\\x00\\x00\\x04')",
    ),
    (
        "gzip-without-gz",
        {"n.svm": None},
        "libsvm",
        {"path": "n.svm"},
        "{d}/n.svm: the content is gzip-compressed but the name does not end in .gz; rename it to n.svm.gz",
    ),
    (
        "zip-as-csv",
        {"n.csv": ZIP},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv: the content is a zip archive (or an .xlsx workbook), not LIBSVM or CSV text "
        "(vfl reads plain, .gz, .bz2 and .xz text files)",
    ),
    (
        "utf16-csv",
        {"n.csv": "a,y\n1,0\n".encode("utf-16")},
        "csv",
        {"path": "n.csv"},
        "{d}/n.csv: binary content (NUL bytes), not a text file (a UTF-16 export? save it as UTF-8)",
    ),
    # truncated / corrupt compressed files
    (
        "truncated-gz",
        {"n.svm.gz": None},
        "libsvm",
        {"path": "n.svm.gz"},
        "{d}/n.svm.gz: truncated gzip file (the compressed data ends before its end-of-stream marker)",
    ),
    (
        "truncated-bz2",
        {"n.svm.bz2": None},
        "libsvm",
        {"path": "n.svm.bz2"},
        "{d}/n.svm.bz2: truncated bzip2 file (the compressed data ends before its end-of-stream marker)",
    ),
    (
        "truncated-xz",
        {"n.svm.xz": None},
        "libsvm",
        {"path": "n.svm.xz"},
        "{d}/n.svm.xz: truncated xz file (the compressed data ends before its end-of-stream marker)",
    ),
    (
        "corrupt-bz2",
        {"n.svm.bz2": None},
        "libsvm",
        {"path": "n.svm.bz2"},
        "{d}/n.svm.bz2: corrupt bzip2 file (Invalid data stream)",
    ),
    # missing / unreadable
    (
        "missing-relative",
        {},
        "libsvm",
        {"path": "data/none.svm"},
        "{d}/data/none.svm: no such file (relative paths are resolved against the current directory {d})",
    ),
    ("missing-absolute", {}, "libsvm", {"path": "{d}/none.svm"}, "{d}/none.svm: no such file"),
    ("directory", {"sub/x": b""}, "libsvm", {"path": "sub"}, "{d}/sub: is a directory, not a data file"),
    (
        "missing-test-file",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "test_path": "t.svm"},
        "{d}/t.svm: no such file (relative paths are resolved against the current directory {d})",
    ),
    # options
    (
        "fraction-zero",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "test_fraction": 0},
        "libsvm: test_fraction must be a number in (0, 1), got 0",
    ),
    (
        "fraction-one",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "test_fraction": 1.0},
        "libsvm: test_fraction must be a number in (0, 1), got 1.0",
    ),
    (
        "fraction-text",
        {"n.csv": CSV},
        "csv",
        {"path": "n.csv", "test_fraction": "0.2"},
        "csv: test_fraction must be a number in (0, 1), got '0.2'",
    ),
    (
        "both-test-options",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "test_path": "n.svm", "test_fraction": 0.2},
        "libsvm: give test_path or test_fraction, not both",
    ),
    (
        "no-test-option",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "test_fraction": None},
        "libsvm: needs test_path (a separate test file) or test_fraction (the share of the rows "
        "of path held out for testing, e.g. 0.2)",
    ),
    ("no-path", {}, "libsvm", {"test_fraction": 0.2}, "libsvm: option path is required (the training file)"),
    (
        "no-label-option",
        {"n.csv": CSV},
        "csv",
        {"path": "n.csv", "label": None},
        "csv: option label (the name of the label column) is required",
    ),
    (
        "bad-zero-based",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "zero_based": "yes"},
        "libsvm: zero_based must be \"auto\", true or false, got 'yes'",
    ),
    (
        "bad-n-features",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "n_features": 0},
        "libsvm: n_features must be an integer >= 1, got 0",
    ),
    (
        "bad-split-seed",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "split_seed": -1},
        "libsvm: split_seed must be an integer >= 0, got -1",
    ),
    (
        "moved-categorical",
        {"n.csv": CSV},
        "csv",
        {"path": "n.csv", "categorical": "dummy"},
        "csv: option categorical moved to the [preprocessing] section: set preprocessing.encoding",
    ),
    (
        "bad-stratify",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "stratify": "yes"},
        "libsvm: stratify must be true or false, got 'yes'",
    ),
    (
        "bad-delimiter",
        {"n.csv": CSV},
        "csv",
        {"path": "n.csv", "delimiter": ",,"},
        'csv: delimiter must be one character such as ",", ";" or "\\t", got \',,\'',
    ),
    (
        "label-in-features",
        {"n.csv": CSV},
        "csv",
        {"path": "n.csv", "features": ["age", "y"]},
        "csv: features lists the label column 'y'",
    ),
    (
        "unknown-option",
        {"n.svm": SVM},
        "libsvm",
        {"path": "n.svm", "label": "y"},
        "libsvm: unknown option(s) label; valid options: path, test_path, test_fraction, "
        "split_seed, stratify, n_features, zero_based, label_positive, labels",
    ),
]


# Content for the cases whose file depends on a compressor.
SPECIAL = {
    "empty-gz": gzip.compress(b""),
    "gz-not-gzip": SVM,
    "bz2-is-xz": lzma.compress(SVM),
    "gzip-without-gz": gzip.compress(SVM),
    "truncated-gz": gzip.compress(SVM * 50)[:-30],
    "truncated-bz2": bz2.compress(SVM * 50)[:-30],
    "truncated-xz": lzma.compress(SVM * 50)[:-30],
    "corrupt-bz2": bz2.compress(SVM)[:10] + b"\x00" * 40,
}
