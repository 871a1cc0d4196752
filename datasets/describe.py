"""What ``vfl datasets inspect`` prints about a data file, and the config lines it suggests.

The suggested ``[preprocessing]`` never takes a parameter from the file
itself: what the file holds is not a public source, so its observed ranges
and categories are shown as comments, and the lines that need a public
value are marked FILL.
"""

from __future__ import annotations

import json

__all__ = ["describe_file"]


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _toml(value) -> str:
    """A TOML value: JSON's string and list syntax is valid TOML for these."""
    return json.dumps(value, ensure_ascii=False)


def _raw_label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else repr(value)


def _party_lines(info: dict, counts: list[int]) -> list[str]:
    """One comment per party: which columns of the file it gets."""
    lines, start = [], 0
    columns = info["columns"]
    if columns is None:  # LIBSVM: the features, numbered as in the file
        first = 1 if info["indices"] == "one-based" else 0
        for m, c in enumerate(counts, start=1):
            lines.append(f"# party {m}: features {start + first}-{start + c - 1 + first} ({c} columns)")
            start += c
        return lines
    at = 0
    for m, c in enumerate(counts, start=1):
        names, width = [], 0
        while width < c:
            names.append(columns[at]["name"])
            width += columns[at]["width"]
            at += 1
        shown = ", ".join(names) if len(names) <= 6 else f"{names[0]} .. {names[-1]}"
        lines.append(f"# party {m}: {shown} ({_count(len(names), 'file column')}, {_count(c, 'feature')})")
    return lines


def _preprocessing_lines(info: dict) -> list[str]:
    """The [preprocessing] section: per-record steps filled in, public parameters marked FILL.

    What this file holds is not a public source: its observed ranges and
    categories are shown as comments, never as values a private run would
    take (one record would then move every other record).
    """
    lines = [
        "[preprocessing]",
        "# Parameters not per record (bounds, categories) must come from a public source in",
        "# a private run: the data set's documentation, constants you can justify without",
        "# looking at these rows, or rows declared public. Lines marked FILL need one; the",
        "# values observed in this file are shown for orientation only.",
        'scaling = "minmax"         # to [0, 1]; a value outside its bounds is clipped',
        "range = [0.0, 1.0]",
        "normalize_rows = true     # per record: each party's block to unit norm",
    ]
    columns = info["columns"]
    if columns is None:
        lines.append(
            f"# bounds = [lo, hi]       # FILL: public bounds of every feature "
            f"(observed here: [{info['min']:g}, {info['max']:g}])"
        )
        return lines
    cats = [c for c in columns if c["kind"] == "categorical"]
    nums = [c for c in columns if c["kind"] == "numeric"]
    if cats:
        lines.append("")
        lines.append("[preprocessing.categories]   # FILL: every value each column can take")
        for c in cats:
            shown = c["values"][:8] + (["..."] if len(c["values"]) > 8 else [])
            lines.append(f"# {_toml(c['name'])} = [...]   # observed: {', '.join(shown)}")
    if nums:
        lines.append("")
        lines.append("[preprocessing.bounds]   # FILL: the public range of each numeric column")
        for c in nums:
            lo, hi = c["range"]
            lines.append(f"# {_toml(c['name'])} = [lo, hi]   # observed: [{lo:g}, {hi:g}]")
    return lines


def describe_file(info: dict, counts: list[int], label: str | None, parties: int) -> list[str]:
    """The description of an inspected file (:func:`~vfl.datasets.inspect_file`'s ``info``),
    then ``[data]``, ``[preprocessing]`` and ``[partition]`` lines for ``counts`` columns per
    party, ready to paste into a config."""
    text: list[str] = []
    emit = text.append
    f = info["file"]
    compression = f["compression"] if f["compression"] != "none" else "plain"
    n, d = info["n_rows"], info["n_features"]
    rows = [
        ("file", f"{f['path']} ({compression}, {_count(f['size'], 'byte')})"),
        ("sha256", f"{f['sha256']} (of the file as stored)"),
    ]
    if "content_sha256" in f:
        rows.append(("", f"{f['content_sha256']} (decompressed content)"))
    if info["format"] == "libsvm":
        rows.append(("format", f"libsvm, {info['indices']} feature indices ({info['indices_why']})"))
    else:
        delimiter = info["options"].get("delimiter", ",")
        rows.append(("format", f"csv, delimiter {delimiter!r}, label column {label!r}"))
    rows.append(("shape", f"{_count(n, 'row')} x {_count(d, 'feature')}"))
    rows.append(
        ("sparsity", f"{100 * info['density']:.3g}% of the entries are non-zero ({info['nnz']:,} of {n * d:,})")
    )
    labels = "; ".join(
        f"{'+1' if c['value'] > 0 else '-1'} = {_raw_label(c['raw'])}: "
        f"{_count(c['count'], 'row')} ({c['count'] / n:.1%})"
        for c in info["labels"]
    )
    rows.append(("labels", f"{labels} [{info['label_rule']}]"))
    constant = info["constant_columns"][:8]
    const_text = _count(info["n_constant_columns"], "constant column")
    if constant:
        more = ", ..." if info["n_constant_columns"] > len(constant) else ""
        const_text += f" (0-based: {', '.join(map(str, constant))}{more})"
    rows.append(
        (
            "values",
            f"in [{info['min']:g}, {info['max']:g}]; "
            f"{_count(info['binary_columns'], 'binary (0/1) column')}; "
            f"{const_text}",
        )
    )
    norm = f"max {info['max_row_norm']:.3g}, mean {info['mean_row_norm']:.3g}"
    if info["max_row_norm"] > 1:
        norm += " (> 1: analyses assuming ||x|| <= 1 need normalize_rows = true)"
    rows.append(("row norms", norm))
    if info["columns"] is not None:
        kinds = [
            c["name"] if c["kind"] == "numeric" else f"{c['name']} (categorical, {c['width']} values)"
            for c in info["columns"]
        ]
        shown = ", ".join(kinds[:12]) + (f", ... ({len(kinds)} in all)" if len(kinds) > 12 else "")
        rows.append(("columns", shown))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        emit(f"{key:<{width}}  {value}")

    emit("")
    emit(
        f"# Suggested config for {parties} part{'y' if parties == 1 else 'ies'}; party 1 is active (holds the labels)."
    )
    emit(
        "# The test set: test_fraction holds out that share of the rows by a seeded "
        "permutation (records of this file: a private run's test metrics are then "
        'diagnostic), or test_path = "..." names a separate test file whose rows need no '
        "protection (a private run's test metrics are then released)."
    )
    emit("[data]")
    emit(f"dataset = {_toml(info['format'])}")
    for key, value in info["options"].items():
        emit(f"{key} = {_toml(value)}")
    emit("test_fraction = 0.2")
    emit("stratify = false   # the split depends on no record's label (a private run needs it)")
    raw = [c["raw"] for c in info["labels"]]
    declared = [int(v) if isinstance(v, float) and v.is_integer() else v for v in raw]
    emit(f"labels = {_toml(declared)}   # -1, +1: declared (a private run needs them)")
    emit("")
    text += _preprocessing_lines(info)
    emit("")
    emit("[partition]")
    emit(f"columns = {_toml(counts)}")
    text += _party_lines(info, counts)
    return text
