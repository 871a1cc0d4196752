"""What each file-backed dataset consists of: files, official URLs, checksums.

The checksums are sha256 digests of the *original, decompressed* distribution
files, so a copy stored as ``NAME.bz2`` verifies against the same value as
the plain ``NAME`` downloaded from the official source. Every value below is
recorded in ``/work/shared/data/README.md`` (a9a, adult: cross-checked against
checksums other projects published; gisette: from the UCI files).
"""

from __future__ import annotations

from dataclasses import dataclass

from vfl.core.errors import DataError

__all__ = ["FileSpec", "DatasetSpec", "REGISTRY", "SYNTHETIC_NAME", "USER_FILE_FORMATS", "get_spec"]

#: Name under which :func:`vfl.datasets.load_dataset` generates synthetic data.
SYNTHETIC_NAME = "synthetic"

#: Names under which :func:`vfl.datasets.load_dataset` reads the user's own
#: files (option ``path``); they have no registry entry.
USER_FILE_FORMATS = ("libsvm", "csv")


@dataclass(frozen=True)
class FileSpec:
    """One file of a dataset, as distributed by its official source.

    Attributes
    ----------
    name : str
        File name as distributed, e.g. ``"a9a"``, ``"a9a.t"``,
        ``"gisette_train.data"``. A local copy may also be ``name + ".bz2"``.
    url : str
        Official download URL of the uncompressed file.
    sha256 : str
        Hex sha256 digest of the (decompressed) content.
    size : int or None
        Size of the uncompressed file in bytes, if known.
    """

    name: str
    url: str
    sha256: str
    size: int | None = None


@dataclass(frozen=True)
class DatasetSpec:
    """A file-backed dataset: its files and the shape :func:`load_dataset` returns.

    ``n_train``, ``n_test`` and ``n_features`` describe the default result of
    ``load_dataset(name)`` (after the documented preprocessing, e.g. adult
    rows with missing values are dropped), not the raw line counts.
    """

    name: str
    description: str
    files: tuple[FileSpec, ...]
    n_train: int
    n_test: int
    n_features: int
    citation: str = ""
    license: str = ""

    @property
    def file_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.files)


_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"
_UCI_ADULT = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
_UCI_GISETTE = "https://archive.ics.uci.edu/ml/machine-learning-databases/gisette/GISETTE/"
_ADULT_CITATION = (
    "Becker, B. & Kohavi, R. (1996). Adult. UCI Machine Learning Repository. https://doi.org/10.24432/C5XW20"
)

REGISTRY: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            name="a9a",
            description=("LIBSVM a9a: UCI Adult with Platt's binarisation (123 binary features, sparse)"),
            files=(
                FileSpec(
                    "a9a",
                    _LIBSVM + "a9a",
                    "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906",
                    2_329_875,
                ),
                FileSpec(
                    "a9a.t",
                    _LIBSVM + "a9a.t",
                    "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9",
                    1_164_628,
                ),
            ),
            n_train=32_561,
            n_test=16_281,
            n_features=123,
            citation=(
                "Chang, C.-C. & Lin, C.-J. LIBSVM data: binary classification "
                "(a9a, from J. Platt 1998). " + _ADULT_CITATION
            ),
            license="CC BY 4.0 (derived from UCI Adult)",
        ),
        DatasetSpec(
            name="gisette",
            description=(
                "UCI Gisette (NIPS 2003 feature selection): 4 vs 9 digits, "
                "2500 real + 2500 probe features, scaled to [-1, 1]"
            ),
            files=(
                FileSpec(
                    "gisette_train.data",
                    _UCI_GISETTE + "gisette_train.data",
                    "6d4c5e998afe67937b9e77a3334e03c85e545ebc65a6eb1333ffc14125cfc389",
                ),
                FileSpec(
                    "gisette_train.labels",
                    _UCI_GISETTE + "gisette_train.labels",
                    "42bd681fe51b161f033df773df14a0116e492676555ab14616c1b72edc054075",
                ),
                FileSpec(
                    "gisette_valid.data",
                    _UCI_GISETTE + "gisette_valid.data",
                    "5cea897956dd172a006132738254a27a8f61ecc1ceb6f5b20639c281d2942254",
                ),
                FileSpec(
                    "gisette_valid.labels",
                    _UCI_GISETTE + "gisette_valid.labels",
                    "a6b857a0448023f033c4dda2ef848714b4be2ae45ce598d088fb3efb406e08c5",
                ),
            ),
            n_train=6_000,
            n_test=1_000,
            n_features=5_000,
            citation=(
                "Guyon, I., Gunn, S., Ben-Hur, A. & Dror, G. (2004). Gisette. "
                "UCI Machine Learning Repository. https://archive.ics.uci.edu/dataset/170/gisette"
            ),
            license="CC BY 4.0",
        ),
        DatasetSpec(
            name="adult",
            description=(
                "UCI Adult (census income > 50K), rows with missing values dropped, "
                "one-hot categoricals, continuous columns scaled to [0, 1]"
            ),
            files=(
                FileSpec(
                    "adult.data",
                    _UCI_ADULT + "adult.data",
                    "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
                    3_974_305,
                ),
                FileSpec(
                    "adult.test",
                    _UCI_ADULT + "adult.test",
                    "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
                    2_003_153,
                ),
            ),
            # 32,561 / 16,281 records minus 2,399 / 1,221 with a missing value;
            # 5 continuous columns (fnlwgt dropped) + 98 one-hot columns.
            n_train=30_162,
            n_test=15_060,
            n_features=103,
            citation=_ADULT_CITATION,
            license="CC BY 4.0",
        ),
    )
}


def get_spec(name: str) -> DatasetSpec:
    """Return the :class:`DatasetSpec` of a file-backed dataset.

    Raises
    ------
    DataError
        If ``name`` is not a file-backed dataset; the message lists the known
        names (and says that ``synthetic`` is generated, not stored).
    """
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        pass
    known = ", ".join(sorted(REGISTRY))
    if isinstance(name, str) and name.split(":", 1)[0] == SYNTHETIC_NAME:
        raise DataError(f"dataset {name!r} is generated on the fly and has no files; file datasets are: {known}")
    if name in USER_FILE_FORMATS:
        raise DataError(
            f"dataset {name!r} reads the file named by its option path and has no registry "
            f"entry (nothing to fetch or verify); registry datasets are: {known}"
        )
    raise DataError(
        f"unknown dataset {name!r}; known datasets: {known}, {SYNTHETIC_NAME}, "
        f"{', '.join(USER_FILE_FORMATS)} (your own file)"
    )
