"""Hostile records: every way one line of a private file can be wrong, per file format.

Each function takes one well-formed record (a line of the file, without its newline) and
returns ``{kind: the hostile line}``; the tests replace one record of a real file with each.
"""

from __future__ import annotations

#: the six kinds issue 33 names, in each format's words: a missing field, a malformed field,
#: NaN, inf, a blank line, an unknown label
NAMED = {
    "a9a": ("missing value", "malformed value", "nan", "inf", "blank line", "unknown label"),
    "adult": ("question mark", "malformed number", "nan", "inf", "blank line", "unknown label"),
    "csv": ("empty cell", "malformed", "nan", "inf", "blank line", "third label"),
}


def a9a_kinds(line: bytes, field: int = 0) -> dict:
    """LIBSVM records; ``field``: which ``index:value`` entry the value kinds corrupt."""
    label, *entries = line.split()
    at = entries[field].split(b":")[0]
    put = lambda v: b" ".join([label, *entries[:field], at + v, *entries[field + 1 :]])  # noqa
    return {
        "missing value": put(b":"),
        "malformed value": put(b":abc"),
        "nan": put(b":nan"),
        "inf": put(b":inf"),
        "non-binary value": put(b":1000000"),
        "blank line": b"",
        "comment line": b"# " + line,
        "unknown label": b" ".join([b"3", *entries]),
        "label 0": b" ".join([b"0", *entries]),
        "label only": label,
        "index 0": b" ".join([label, b"0:1", *entries]),
        "index 124": b" ".join([label, *entries, b"124:1"]),
        "unsorted indices": b" ".join([label, *reversed(entries)]),
        "duplicate index": b" ".join([label, entries[0], *entries]),
    }


def adult_kinds(line: bytes, field: int | None = None) -> dict:
    """Adult records; ``field``: the one field every value kind corrupts (default: a field of
    the kind's own type, a category for ``?``, a number for the others)."""
    f = line.split(b", ")
    put = lambda j, v: b", ".join([*f[:j], v, *f[j + 1 :]])  # noqa: E731
    at = (lambda j: j) if field is None else (lambda j: field)  # noqa: E731
    return {
        "question mark": put(at(6), b"?"),
        "empty field": put(at(1), b""),
        "malformed number": put(at(0), b"old"),
        "nan": put(at(10), b"nan"),
        "inf": put(at(12), b"inf"),
        "blank line": b"",
        "unknown label": put(14, b"maybe"),
        "13 fields": b", ".join(f[:13]),
        "16 fields": b", ".join([*f, b"x"]),
        "unseen and huge": (
            b"90000000, Atlantis-gov, 1500000000000, Moon-school, 16000000, "
            b"Space-married, Star-pilot, Alien, Martian, Male, 99999000000, "
            b"5000000000, 99000000, Atlantis, >50K"
        ),
    }


def csv_kinds(line: bytes, field: int = 3) -> dict:
    """CSV records; ``field``: the column the value kinds corrupt."""
    f = line.split(b",")
    put = lambda j, v: b",".join([*f[:j], v, *f[j + 1 :]])  # noqa: E731
    j = field
    return {
        "empty cell": put(j, b""),
        "malformed": put(j, b"abc"),
        "nan": put(j, b"nan"),
        "inf": put(j, b"inf"),
        "question mark": put(j, b"?"),
        "huge": put(j, b"1e300"),
        "blank line": b"",
        "third label": put(len(f) - 1, b"2"),
        "missing label": put(len(f) - 1, b""),
        "too few fields": b",".join(f[:-2]),
        "too many fields": line + b",1",
        "unbalanced quote": put(2, b'"3'),
    }


KINDS = {"a9a": a9a_kinds, "adult": adult_kinds, "csv": csv_kinds}
