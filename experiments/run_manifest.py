"""A run's manifest.json, assembled: the privacy claim and what was spent, what each column and
file is (released or diagnostic), the dataset, the environment, the transport."""

from __future__ import annotations

import numpy as np

from vfl.core.column_kinds import DIAGNOSTIC, RELEASED, column_kinds
from vfl.core.relations import stated_on

from .manifest import DatasetRecord
from .provenance import environment_info
from .repeat_setup import _streams
from .run_plan import _dataset_info
from .run_result import PRIVACY_COLUMNS


def _manifest(config, plan, solver, prepared, baselines, metrics, seconds, stops, repeats, inference=None) -> dict:
    cls = plan.solver_cls
    final = metrics.iloc[-1]
    objective = prepared.objective
    epochs_run = int(final["epoch"])
    streams = _streams(config, 0)
    info = solver.privacy_info()
    privacy = None
    if config.privacy.claims_guarantee or info is not None:
        privacy = {} if info is None else info.dump()
        if info is not None and info.neighbouring:  # on the cleaned file when records were removed
            privacy["neighbouring"] = stated_on(info.neighbouring, plan.cleaning)
        privacy["noise"] = streams.describe()["noise"]
        if config.tuning is not None:  # how the hyper-parameters were chosen
            privacy["hyperparameter_tuning"] = {
                "method": config.tuning.method,
                **config.tuning.values,
                "charged": "the tuning's RDP (Papernot and Steinke 2022, Thm. "
                "2) composed before the run's releases: every "
                "epsilon of this run includes it"
                if config.tuning.private
                else "nothing: chosen on rows declared public",
            }
        if "label_guarantee" in privacy and "epsilon_labels" in final.index:
            privacy["label_guarantee"] = {
                **privacy["label_guarantee"],
                "spent": {
                    "epsilon": _num(final["epsilon_labels"]),
                    "delta": _num(final["delta_labels"]),
                    "epochs": epochs_run,
                },
            }
        ledger, how = repeats.ledger(), repeats.describe()
        if ledger is not None:
            privacy["spent"] = {
                "epochs": epochs_run,
                "epsilon_tight": _num(final.get("epsilon_tight")),
                "delta_tight": ledger.delta,
                "tight_accountant": ledger.method,
                "paper_claim": type(solver).paper_claim,  # None: no published analysis
                "epsilon_paper": _num(final.get("epsilon_paper")),
                "delta_paper": _num(final.get("delta_paper")),
                "other_claims": {
                    name: {"epsilon": eps, "delta": delta} for name, (eps, delta) in solver.other_claims().items()
                },
                **({"repeats": how} if how else {}),  # composed, or replications
            }
            if config.privacy.budget_epsilon is not None:
                over = np.flatnonzero(metrics["epsilon_tight"].to_numpy() > config.privacy.budget_epsilon)
                privacy["budget"] = {
                    "epsilon": config.privacy.budget_epsilon,
                    "accountant": ledger.method,
                    "stopped": next((s for s in stops if s), None),
                    "first_epoch_over_budget": int(metrics["epoch"].iloc[over[0]]) if over.size else None,
                }
    result = {
        "final_test_logloss": final["test_logloss"],
        "final_test_accuracy": final["test_accuracy"],
        "solver_seconds": float(np.mean(seconds)),
        "epochs_run": epochs_run,
        "seconds_per_epoch": float(np.mean(seconds)) / max(1, epochs_run),
    }
    if "objective" in metrics:
        f_star = baselines.get("central", {}).get("objective") if baselines else None
        result.update(
            {
                "final_objective": final["objective"],
                "central_objective": f_star,
                "relative_gap": final.get("suboptimality"),
            }
        )
    result["messages"] = int(final["messages"])
    result["bytes"] = int(final["bytes"])
    if inference is not None:  # one scoring of the test rows, apart from training
        result["inference_messages"] = inference.messages
        result["inference_bytes"] = inference.bytes
    private = bool(config.privacy.claims_guarantee)
    # metrics scored on test rows the relation protects are diagnostic (Prepared.test_private)
    kinds = column_kinds(cls, list(metrics.columns), private, test_rows_private=bool(prepared.test_private))
    result_kinds = {
        k: (
            RELEASED
            if not private
            or k in ("epochs_run", "messages", "bytes", "inference_messages", "inference_bytes")
            or (k.startswith("final_test") and kinds.get(k[len("final_") :]) == RELEASED)
            else DIAGNOSTIC
        )
        for k in result
    }
    dataset = dict(plan.dataset_info or _dataset_info(plan.dataset, plan.fallback_note, plan.setting))
    described = solver.describe()
    exact = {
        "dataset": dataset.pop("diagnostic"),
        "solver": {k: described.pop(k) for k in cls.diagnostic_keys if k in described},
    }
    if private:
        dataset["sizes"] = (
            "N (n_train) and n_test are fixed by the relation (a neighbouring "
            "dataset has as many records), so public, as are the message "
            "counts and bytes that follow from them"
        )
    transport = _transport(plan.backend, metrics, seconds, config.run.repeats, inference)
    released = {
        "private": private,
        "meaning": {
            RELEASED: "a function of what the mechanism releases plus data it does not "
            "protect: covered by the guarantee",
            DIAGNOSTIC: "computed from exact private values (or timed), for research: not covered",
        },
        "columns": kinds,
        "result": result_kinds,
        # manifest.json: a field has the kind of its longest prefix listed here, else released
        "fields": {
            "diagnostic": DIAGNOSTIC if private else RELEASED,
            **{f"result.{k}": v for k, v in result_kinds.items()},
            # privacy.spent repeats the final row of the epsilon columns
            **{
                f"privacy.spent.{c}": DIAGNOSTIC
                for c in PRIVACY_COLUMNS
                if kinds.get(c) == DIAGNOSTIC and "spent" in (privacy or {})
            },
            **{
                f"privacy.spent.other_claims.{name}": DIAGNOSTIC
                for name in ((privacy or {})["spent"]["other_claims"] if "spent" in (privacy or {}) else ())
                if kinds.get(f"epsilon_{name}") == DIAGNOSTIC
            },
            **({"communication.transport": DIAGNOSTIC if private else RELEASED} if transport else {}),
        },
        "files": {
            "config.json": RELEASED,
            "manifest.json": "per field (see fields)",
            "metrics.csv": "per column (see columns)",
            **(
                {
                    "metrics_repeats.csv": "per column (see columns; repeat released)",
                    "metrics_stats.csv": "per column (<column>_mean, _std, _min, _max: the "
                    "column's kind; n_repeats released)",
                }
                if config.run.repeats > 1
                else {}
            ),
            "communication.csv": RELEASED,
            "baselines.json": DIAGNOSTIC if private else RELEASED,
            **{f"loss.{ext}": DIAGNOSTIC if private else RELEASED for ext in ("png", "pdf")},
        },
        "test_metrics_note": _test_note(cls, prepared, private),
        "release_only": False,
    }
    return {
        "name": config.name,
        **environment_info(),
        "seed": config.run.seed,
        "repeats": config.run.repeats,
        "dataset": dataset,
        "preprocessing": {
            "steps": prepared.preprocessing,
            "private": bool(config.privacy.claims_guarantee),
            "fitted_on_training_rows": _training_fitted(prepared.preprocessing),
        },
        "setting": cls.setting.value,
        "distribution": prepared.distribution,
        "partition": prepared.distribution.get("parties"),
        "objective": {
            "loss": objective.loss,
            "reduction": objective.reduction,
            "regularizer": objective.regularizer,
            "lam": objective.lam,
            "formula": objective.describe(),
            **({"intercept": plan.setting.partition.intercept} if plan.setting.partition is not None else {}),
        },
        "solver": {
            "name": cls.name,
            "title": cls.title,
            "setting": cls.setting.value,
            "iteration_name": cls.iteration_name,
            "reference": {
                "paper": cls.reference.paper,
                "algorithm": cls.reference.algorithm,
                "equations": cls.reference.equations,
                "note": cls.reference.note,
            },
            **config.solver.params(),
            **described,
        },
        **({"privacy": privacy} if privacy else {}),
        "communication": {
            **solver.wire.describe(),
            "units": solver.wire.units,
            "per_unit": "communication.csv (unit 0 is the hub: the coordinator, "
            "trainer or active party; absent in a network; phase "
            "training or inference)",
            **_inference_manifest(cls, inference, prepared),
            **_alignment_manifest(plan.dataset_info),
            **transport,
        },
        **({"backend": plan.backend.describe()} if plan.backend is not None else {}),
        "released": released,
        "result": result,
        # exact values that depend on the data (or on time): diagnostic in a private run; the
        # runner adds the timestamps and timings; a release-only run writes none of it
        "diagnostic": exact,
    }


def _test_note(cls, prepared, private: bool) -> str:
    """Why a private run's test metrics are diagnostic ("" when they are released)."""
    if not private:
        return ""
    own = column_kinds(cls, ["test_logloss"], True)["test_logloss"] == DIAGNOSTIC
    return "; and ".join(n for n in (cls.diagnostic_note if own else "", prepared.test_private) if n)


def _inference_manifest(cls, inference, prepared) -> dict:
    """The manifest's ``communication.inference``: one scoring of the test rows."""
    if cls.inference is None:
        return {"inference": {"declared": False}}
    return {
        "inference": {
            "test_rows": int(len(prepared.y_test)),
            "messages": inference.messages,
            "bytes": inference.bytes,
            "values_per_row": cls.inference.values_per_row,
            "what": cls.inference.note,
            "counted": "once per repeat: the whole test set scored with the final "
            "model; not in metrics.csv's messages and bytes (training)",
        }
    }


def _alignment_manifest(info: dict | None) -> dict:
    """The manifest's ``communication.alignment``: what aligning the party files sent."""
    aligned = DatasetRecord.alignment_in(info)
    if not aligned:
        return {}
    return {
        "alignment": {
            "messages": sum(a["messages"] for a in aligned.values()),
            "bytes": sum(a["bytes"] for a in aligned.values()),
            "protocol": next(iter(aligned.values()))["protocol"],
            "intersection": {part: a["intersection"] for part, a in aligned.items()},
            "counted": "once, before training (communication.csv phase "
            "alignment); not in metrics.csv's messages and bytes",
        }
    }


def _transport(backend, metrics, seconds, repeats: int, inference=None) -> dict:
    """What the transport itself carried (a backend that has one), beside the protocol's count;
    for inference, what the last scoring of the test rows carried."""
    if backend is None:
        return {}
    scored = (
        {}
        if inference is None or backend.inference_transport is None
        else {"inference_bytes": backend.inference_transport, "protocol_inference_bytes": inference.bytes}
    )
    epochs = int(metrics["epoch"].iloc[-1]) * repeats
    protocol = int(metrics["bytes"].iloc[-1]) * repeats
    return {
        "transport": {
            "bytes": backend.transport,
            "protocol_bytes": protocol,
            "bytes_per_epoch": backend.transport / max(epochs, 1),
            "protocol_bytes_per_epoch": protocol / max(epochs, 1),
            "ratio": backend.transport / protocol if protocol else None,
            **scored,
            # every phase: what TCP carried, and the codec's payload and framing
            "phases": backend.phases(),
            "source": backend.describe()["transport_source"],
        }
    }


def _training_fitted(steps: list) -> bool:
    """Whether any parameter of the stage was read off the training rows (non-private runs)."""
    sources = [str(s.get("source", "")) for s in steps]
    sources += [c.get("source", "") for s in steps for c in s.get("categorical", {}).values()]
    return any("training_rows" in src for src in sources)


def _num(v):
    if v is None:
        return None
    v = float(v)
    return None if np.isnan(v) else v
