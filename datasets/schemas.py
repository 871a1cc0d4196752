"""Published schemas of the registry datasets: public parameters for the preprocessing stage.

A private run may take a vocabulary or a range only from a public source.
For UCI Adult that source is the dataset's own documentation (``adult.names``,
Becker & Kohavi 1996): it lists every value of the eight categorical
attributes. The numeric ranges are *declared* here, from the documented
extraction rules of the 1994 Current Population Survey that Adult was drawn
from (``AAGE > 16``, ``HRSWK > 0``) and the survey's public top codes (age 90,
capital gain 99999, hours 99), never from the records: a record outside a
range is clipped to it by the stage, so no record moves a bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from vfl.core.preprocessing import ColumnSpec, Schema

__all__ = ["ADULT_SCHEMA", "SCHEMAS", "SCHEMA_DEFAULTS", "FILE_RECORDS", "FileRecords"]

_ADULT_VALUES = {
    "workclass": (
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
    ),
    "education": (
        "Bachelors",
        "Some-college",
        "11th",
        "HS-grad",
        "Prof-school",
        "Assoc-acdm",
        "Assoc-voc",
        "9th",
        "7th-8th",
        "12th",
        "Masters",
        "1st-4th",
        "10th",
        "Doctorate",
        "5th-6th",
        "Preschool",
    ),
    "marital-status": (
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
    ),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": (
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
    ),
}

# Declared ranges (see the module docstring): age >= 17 (AAGE > 16) top-coded at
# 90; fnlwgt a positive census weight, declared below 1.5 million; 16 education
# levels; capital gain top-coded at 99999; capital loss declared below 5000;
# hours per week >= 1 (HRSWK > 0) top-coded at 99.
_ADULT_BOUNDS = {
    "age": (17.0, 90.0),
    "fnlwgt": (0.0, 1_500_000.0),
    "education-num": (1.0, 16.0),
    "capital-gain": (0.0, 99_999.0),
    "capital-loss": (0.0, 5_000.0),
    "hours-per-week": (1.0, 99.0),
}

#: raw columns of adult.data / adult.test in file order (the label ``income`` last)
ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
)
_NUMERIC = ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")

ADULT_SCHEMA = Schema(
    name="adult",
    columns=tuple(
        ColumnSpec(c, "categorical", values=tuple(sorted(_ADULT_VALUES[c])))
        if c in _ADULT_VALUES
        else ColumnSpec(c, "numeric", bounds=_ADULT_BOUNDS[c])
        for c in ADULT_COLUMNS
    ),
    citation=(
        "attribute values: adult.names (Becker & Kohavi 1996, UCI Machine Learning "
        "Repository); ranges declared from the 1994 CPS extraction rules and top codes"
    ),
    layouts={
        # one-hot: fnlwgt (a sampling weight, not an attribute of the person) dropped,
        # the five numeric attributes first, then each categorical's indicators
        "onehot": (*_NUMERIC, *[c for c in ADULT_COLUMNS if c in _ADULT_VALUES]),
        # ordinal: all 14 attributes in file order (the d = 14 of Huang et al. 2019 and
        # Xiao et al. 2019)
        "ordinal": ADULT_COLUMNS,
    },
)

SCHEMAS = {"adult": ADULT_SCHEMA}

#: ``[preprocessing]`` keys a config on the dataset inherits unless it sets them
SCHEMA_DEFAULTS = {"adult": {"scaling": "minmax", "range": [0.0, 1.0]}}


@dataclass(frozen=True)
class FileRecords:
    """A distribution file's line structure, as published: ``header`` lines before the first
    record, then ``count`` records, one per line. A run that claims a guarantee reads exactly
    these records (:func:`vfl.datasets.record_parsers.record_lines`), so N never depends on what a
    record holds."""

    header: int
    count: int


#: adult.names: "train=32561, test=16281" (adult.test opens with the line "|1x3 Cross
#: validator"; both files end with an empty line, which is no record); a9a / a9a.t: the
#: same records binarised (LIBSVM's page: 32,561 / 16,281)
FILE_RECORDS = {
    "adult.data": FileRecords(0, 32_561),
    "adult.test": FileRecords(1, 16_281),
    "a9a": FileRecords(0, 32_561),
    "a9a.t": FileRecords(0, 16_281),
}
