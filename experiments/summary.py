"""The text summary of a finished run, as ``vfl run`` prints it.

A private run's diagnostic numbers (computed from exact private values,
not covered by its guarantee) carry a ``*``; a printed epsilon is rounded
up, never down; the paper's own claim, when it has one, is shown beside
the guarantee and labelled as a claim.
"""

from __future__ import annotations

import math
from pathlib import Path

from .registry import typed_privacy

__all__ = ["run_summary"]


def _fmt(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return format(value, spec)


def _up(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits, rounded up: a printed guarantee is never
    smaller than the one composed."""
    if not math.isfinite(value) or value <= 0:
        return f"{value:.{digits}g}"
    scale = 10 ** (digits - 1 - math.floor(math.log10(value)))
    up = math.ceil(value * scale * (1 - 1e-9)) / scale  # a calibrated target stays as it is
    return f"{up:.{digits}g}"


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def _plural(n, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _count(n: int, noun: str) -> str:
    """``"1 message"``, ``"1,200 messages"``."""
    return f"{int(n):,} {noun}{'' if n == 1 else 's'}"


def _privacy_lines(result) -> list[str]:
    """What a run's privacy amounts to, in words a reader cannot mistake."""
    p = result.manifest.privacy
    if p is None or not p.model_fields_set:
        return []
    m = result.metrics.iloc[-1]
    lines = []
    if p.mode == "simulation":
        lines.append(f"privacy: none claimed. {p.note}")
    spent = p.spent
    if spent is not None:
        eps = spent.epsilon_tight
        if p.dp_guarantee and eps is not None:
            lines.append(
                f"privacy guarantee: ({_up(eps)}, {spent.delta_tight:.2g})-DP after "
                f"{_plural(spent.epochs, result.manifest.iteration_name)}"
                f" ({spent.tight_accountant}); neighbours: {p.neighbouring}"
            )
        else:
            lines.append(
                f"WARNING: no differential-privacy guarantee: {p.warning if p.warning is not None else p.note or ''}"
            )
        lines += _repeats_lines(spent, bool(p.dp_guarantee) and eps is not None)
        tuning = p.hyperparameter_tuning
        if tuning:
            lines.append(f"tuning ({tuning['method']}): {tuning['charged']}")
        if "epsilon_paper" in m.index and spent.paper_claim:
            paper = spent.epsilon_paper
            star = "*" if result.manifest.released.diagnostic("epsilon_paper") else ""
            claim = (
                "n/a (the paper's analysis does not cover this noise level)"
                if paper is None
                else f"{paper:.4g}{star} at delta {_fmt(spent.delta_paper, '.2g')}"
            )
            lines.append(f"the paper's own claim (not a guarantee): epsilon {claim} ({spent.paper_claim})")
        meaning = p.other_claims_meaning or {}
        for name, c in spent.other_claims.items():
            lines.append(
                f"{name}: epsilon {c.epsilon:.4g} at delta {c.delta:.2g} "
                f"({meaning.get(name, 'the paper analysis; not a guarantee')})"
            )
    g = p.label_guarantee
    label = None if g is None else g.spent
    if label is not None and label.epsilon is not None:
        lines.append(
            f"label privacy guarantee: ({_up(label.epsilon)}, {label.delta:.2g})"
            f"-label-DP towards {g.towards}; neighbours: {g.neighbouring}"
        )
    elif p.labels is not None:
        lines.append(f"labels: {p.labels}")
    if p.noise is not None:
        lines.append(f"noise: {p.noise}")
    stopped = None if p.budget is None else p.budget.stopped
    if stopped:
        where = f" in repeat {stopped.repeat + 1}" if stopped.repeat is not None else ""
        lines.append(
            f"stopped at the privacy budget{where} after {stopped.after_epoch} "
            "iterations "
            f"(the next would spend {_up(stopped.epsilon_next_epoch)} > "
            f"{stopped.budget_epsilon:g})"
        )
    return lines


def _repeats_lines(spent, guarantee: bool) -> list[str]:
    """What the printed epsilon covers when the run has several repeats."""
    r = spent.repeats
    if not r or not guarantee:
        return []
    n, eps, delta = r.count, spent.epsilon_tight, spent.delta_tight
    if r.composed:
        alone = max(r.per_repeat_epsilon_tight)
        claims = spent.paper_claim or spent.other_claims
        return [
            f"repeats: the {n} repeats released {n} models of the same records; the "
            f"guarantee is all of them composed in one ledger (one repeat alone: epsilon "
            f"{_up(alone)})" + ("; the claims below are one repeat's" if claims else "")
        ]
    return [
        f"repeats: the {n} repeats are independent replications of a simulation "
        f"(replayable noise), each ({_up(eps)}, {delta:.2g})-DP on its own; the {n} "
        f"together are not covered by that epsilon"
    ]


def _utility_lines(result, m, b) -> list[str]:
    """One line when a private model does worse than what a party can do alone."""
    if not result.config.privacy.claims_guarantee:
        return []
    local = [
        e for e in b.values() if isinstance(e, dict) and e.get("role") == "local" and e.get("test_logloss") is not None
    ]
    if not local:
        return []
    best = min(local, key=lambda e: e["test_logloss"])
    if not m["test_logloss"] > best["test_logloss"]:
        return []
    eps = None if result.manifest.spent is None else result.manifest.spent.epsilon_tight
    at = f"at epsilon {eps:.4g}" if eps is not None else "at this noise"
    star = "*" if result.manifest.released.diagnostic("test_logloss") else ""
    # the references are fitted on the private rows: diagnostic
    return [
        f"note: {at} the private model (test log loss {m['test_logloss']:.4f}{star}) is "
        f"worse than {best['label']} ({best['test_logloss']:.4f}*): no party gains from "
        "joining"
    ]


def run_summary(result, out: Path, seconds: float) -> str:
    """What ``vfl run`` prints: the final metrics beside the references, then what the run's
    privacy amounts to, its warnings, and where it was written."""
    m = result.metrics.iloc[-1]
    man = result.manifest
    b = result.baselines or {}
    if "per_repeat" in b:  # horizontal / network: one set of references per repeat: their mean
        reps = b["per_repeat"]
        b = {"cached": all(r.get("cached") for r in reps)}
        for key, entry in reps[0].items():
            if isinstance(entry, dict) and "label" in entry:
                b[key] = {
                    k: (
                        sum(r[key][k] for r in reps) / len(reps)
                        if isinstance(v, (int, float)) and not isinstance(v, bool)
                        else v
                    )
                    for k, v in entry.items()
                }
    solver = man.solver
    title = solver.title or solver.name
    pv = typed_privacy(result.config)
    spent = man.spent
    if spent is not None and spent.epsilon_tight is not None:  # the whole run's epsilon, first
        title += f", epsilon {_up(spent.epsilon_tight)}"
    elif getattr(pv, "epsilon", None) is not None:
        title += f", epsilon {pv.epsilon:g}"
    elif getattr(pv, "sigma", None):
        title += f", sigma {pv.sigma:g}"
    repeats = result.config.run.repeats
    it = int(m["epoch"])
    private = man.released.private

    def mark(col, text):  # a diagnostic number of a private run carries a '*'
        return text + "*" if man.released.diagnostic(col) and text != "-" else text

    cols = ("objective", "suboptimality", "train_logloss", "test_logloss", "test_accuracy")
    rows = [
        (
            f"{title} ({_plural(it, man.iteration_name)}" + (f", mean of {repeats}" if repeats > 1 else "") + ")",
            *(m.get(col) for col in cols),
        )
    ]
    c = b.get("central")
    for key, entry in b.items():
        if not isinstance(entry, dict) or "label" not in entry or "test_logloss" not in entry:
            continue
        obj = entry.get("objective")
        gap = (
            0.0
            if key == "central"
            else ((obj - c["objective"]) / abs(c["objective"]) if obj is not None and c else None)
        )
        label = entry.get("label", key)  # a private run's say "(diagnostic)"
        rows.append(
            (
                label + (" *" if private and not label.endswith("(diagnostic)") else ""),
                obj,
                gap,
                entry.get("train_logloss"),
                entry["test_logloss"],
                entry.get("test_accuracy"),
            )
        )
    width = max(38, max(len(r[0]) for r in rows) + 1)
    lines = [f"{'':{width}} {'objective':>12} {'rel. gap':>9} {'train ll':>9} {'test ll':>9} {'test acc':>9}"]
    specs = ("12.4f", "9.2e", "9.4f", "9.4f", "9.4f")
    for i, (label, *values) in enumerate(rows):
        cells = [_fmt(v, f) for v, f in zip(values, specs)]
        if i == 0:
            cells = [mark(col, cell) for col, cell in zip(cols, cells)]
        lines.append(f"{label:{width}} " + " ".join(f"{cell:>{12 if j == 0 else 9}}" for j, cell in enumerate(cells)))
    lam = getattr(getattr(result.config, "objective", None), "lam", None)
    if lam is not None and any(isinstance(e, dict) and e.get("role") in ("all", "local") for e in b.values()):
        # the references minimize this config's objective: another lam, other numbers
        lines.append(
            f"references: fitted with this config's lam = {lam:g} (another lam, other numbers on the same data)"
        )
    solver_s = man.result.solver_seconds  # a release-only run leaves timings out
    t = "*" if private else ""  # times depend on the data (fits, iterations): diagnostic
    timing = (
        ""
        if solver_s is None
        else f"{solver_s:.2f} s{t} in the solver ({1e3 * solver_s / max(it, 1):.1f} ms{t} each), "
    )
    if not man.released.release_only:  # which prints no time either
        timing += f"{seconds:.1f} s{t} in all; "
    lines.append(
        f"{_plural(it, man.iteration_name)}: {timing}baselines "
        f"{'from cache' if b.get('cached') else 'computed' if c else 'skipped'}"
    )
    if "messages" in m.index:
        comm = man.communication
        lines.append(
            f"communication: {_count(int(m['messages']), 'message')}, "
            f"{_bytes(m['bytes'])} of "
            f"payload over {_plural(comm.units, 'unit')}"
            + (f", mean of {repeats}" if repeats > 1 else "")
            + "; per unit and iteration in communication.csv"
        )
        inference = comm.inference
        if inference is not None and inference.messages is not None:  # the solver declares it
            lines.append(
                f"inference: {_count(inference.messages, 'message')}, "
                f"{_bytes(inference.bytes)} of payload to score the "
                f"{inference.test_rows:,} test rows once"
                + ("" if inference.messages else " (the model is held by one endpoint)")
            )
        aligned = comm.alignment
        if aligned:  # party files: the PSI and the agreement, once before training
            rows = ", ".join(f"{n:,} {part}" for part, n in aligned.intersection.items())
            lines.append(
                f"alignment: {_count(aligned.messages, 'message')}, "
                f"{_bytes(aligned.bytes)} (private set intersection: {rows} rows "
                "held by every party)"
            )
        transport = comm.transport
        services = man.backend is not None and man.backend.backend == "services"
        ends = "the party services" if services else "the workers"
        if transport and transport.ratio:  # what the transport carried (dask, services)
            lines.append(
                f"transport ({man.backend.backend}): "
                f"{transport.bytes_per_epoch:,.0f}{t} bytes per "
                f"{man.iteration_name} on the coordinator's TCP "
                f"connections to {ends}; the protocol counts "
                f"{transport.protocol_bytes_per_epoch:,.0f} "
                f"(x{transport.ratio:.4f}{t})"
            )
            if transport.inference_bytes is not None:
                lines.append(
                    f"transport ({man.backend.backend}): scoring the test rows "
                    f"carried {transport.inference_bytes:,}{t} bytes; the protocol "
                    f"counts {transport.protocol_inference_bytes:,}"
                )
        for fault in () if man.backend is None else man.backend.recoveries:
            word = "epoch" if "epoch" in fault else "iteration"
            lines.append(
                f"fault: {fault['unit']}'s {'service' if services else 'worker'} "
                f"{fault['lost']} was lost in "
                f"{word} {fault[word]}; resumed from the checkpoint on "
                f"{fault['resumed_on']}"
            )
    lines += _privacy_lines(result)
    if private:
        note = man.released.test_metrics_note
        lines.append(
            "* diagnostic: computed from exact private values, not covered by the "
            "guarantee"
            + (f"; the test metrics are {note}" if note else "")
            + ("" if not man.released.release_only else "; release-only run: diagnostic values not written")
        )
    lines += _utility_lines(result, m, b)
    lines += [f"warning: {w}" for w in solver.warnings]
    if man.dataset.stand_in:
        lines.append(f"data: {man.dataset.description}")
    lines.append(f"wrote {out}")
    return "\n".join(lines)
