"""Typed records at the seams: what a solver states about its privacy.

A :class:`Record` is a frozen pydantic model that refuses unknown keys. It
remembers the order its keys were given in and writes them back in that
order, leaving out the fields nobody set, so a record read from a manifest
and written again is the same JSON to the byte.

:class:`PrivacyInfo` is what :meth:`vfl.core.solver.Solver.privacy_info`
returns: the relation in words, the mechanism, what the code enforces, the
sound (epsilon, delta) target and the paper's claim beside it, never instead
of it. The experiments layer adds what the run spent (:mod:`vfl.experiments.manifest`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

__all__ = ["Record", "Num", "LabelSpent", "LabelGuarantee", "PrivacyInfo", "privacy_record"]

#: a JSON number as written: an int stays an int and a float a float (no ``5`` -> ``5.0``)
Num = float | int


class Record(BaseModel):
    """A frozen, closed record whose JSON keeps the order its keys were given in."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        obj = handler(data)
        if isinstance(data, dict):
            obj._order = tuple(data)
        return obj

    @model_serializer(mode="wrap")
    def _in_given_order(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if isinstance(out, dict) and self._order:
            rank = {k: i for i, k in enumerate(self._order)}
            out = dict(sorted(out.items(), key=lambda kv: rank.get(kv[0], len(rank))))
        return out

    def dump(self) -> dict[str, Any]:
        """The record as the JSON object it was read from (unset fields left out)."""
        return self.model_dump(exclude_unset=True)

    def replace(self, **changes: Any) -> Record:
        """A copy with ``changes`` (validated; a new key goes last)."""
        return type(self).model_validate({**self.dump(), **changes})


class LabelSpent(Record):
    """What a run spent under the label relation (added by the runner)."""

    epsilon: float | None = Field(None, description="epsilon composed over the epochs run")
    delta: float | None = Field(None, description="its delta")
    epochs: int = Field(description="the iterations composed")


class LabelGuarantee(Record):
    """Label DP towards the passive parties (Ghazi et al. 2021): the relation
    :data:`vfl.core.relations.LABELS`, its target and how it is enforced."""

    relation: str = Field(description="the ledger it is accounted in: 'labels'")
    protects: str = Field(description="whose records: party 1's labels")
    towards: str = Field(description="who receives the values it covers")
    neighbouring: str = Field(description="the relation in words (one label flipped)")
    epsilon: Num = Field(description="the target epsilon (randomized response: ln((1-q)/q))")
    delta: Num = Field(description="its delta (0 for randomized response)")
    mechanism: str = Field(description="clipping to [-L, L] plus Gaussian noise, or randomized response, in words")
    enforced: dict[str, Any] = Field(description="the bounds the code enforces (L, ...)")
    spent: LabelSpent | None = Field(None, description="what the run spent (runner)")


class PrivacyInfo(Record):
    """What a solver states about its privacy (the manifest's ``privacy`` section).

    A number is a DP guarantee only when ``dp_guarantee`` is true and
    ``neighbouring`` names the relation. The fields every summary reads come
    first; then those only some mechanisms state, by family.
    """

    mode: Literal["simulation", "accounting", "non-private"] | None = Field(
        None,
        description="'accounting': epsilons composed from enforced sensitivities; "
        "'simulation': noise without accounting",
    )
    dp_guarantee: bool | None = Field(
        None, description="whether the run's epsilon_tight is a differential-privacy guarantee"
    )
    note: str | None = Field(None, description="why there is no guarantee, in words")
    warning: str | None = Field(None, description="printed when no guarantee holds")
    neighbouring: str | None = Field(None, description="the neighbouring relation in words (required with a guarantee)")
    towards: str | None = Field(None, description="who receives what the guarantee covers")
    labels: str | None = Field(None, description="what the relation leaves of the labels")
    label_guarantee: LabelGuarantee | None = Field(None, description="label DP, when claimed")
    protected_units: str | None = Field(None, description="the units whose records it protects")
    mechanism: str | None = Field(None, description="the noise and where it is added")
    form: str | None = Field(None, description="where the noise goes (privacy.form)")
    sigma: Any = Field(None, description="the noise scale(s) sigma, or its formula")
    enforced: dict[str, Any] | None = Field(
        None, description="what the code enforces (clip c, ball b1, unit rows, ...)"
    )
    sensitivity: str | dict[str, Any] | None = Field(
        None, description="the enforced sensitivity Delta, in words or per release"
    )
    calibration: str | None = Field(None, description="how sigma was calibrated from epsilon")
    delta: Num | None = Field(None, description="the target delta")
    epsilon_target: Num | None = Field(None, description="the target epsilon (privacy.epsilon)")
    accountant: str | None = Field(None, description="the dp-accounting accountant (pld, rdp)")
    per_party: list[dict[str, Any]] | None = Field(
        None, description="per party m: d_m, Delta_m, sigma_m (Hu et al.; private stacking)"
    )
    paper_claim: str | None = Field(
        None, description="the paper's own analysis, shown beside the sound bound, never as a guarantee"
    )
    other_claims_meaning: dict[str, str] | None = Field(
        None, description="what each further claimed epsilon_<name> column means"
    )
    exchange: str | None = Field(None, description="the exchange (secret sharing, ...)")
    noise: str | None = Field(None, description="where the noise came from (the runner)")
    # Huang et al. (DP-ADMM, Algorithms 2 and 3)
    sensitivity_enforced: dict[str, Any] | None = Field(
        None,
        description="Delta = 2 S1 / (m (rho + 1/eta^{k+1})) (Lemma 1, eq. (6)), or the corrected bound of Algorithm 2",
    )
    sensitivity_paper: Any = Field(None, description="the paper's 2 S1 N / (m lam) (Sec. III-A)")
    sigma_calibrated_to: str | None = Field(None, description="which sensitivity sigma follows")
    assumptions: Any = Field(None, description="the paper's assumptions and what enforces them")
    not_accounted: str | None = Field(None, description="what the accounting leaves out")
    # private stacking
    gdp_mu: Num | None = Field(None, description="mu of the composed Gaussian DP release")
    split: dict[str, Num] | None = Field(
        None, description="the budget's split over the model, shares and moments releases"
    )
    lam_rule: str | None = Field(None, description="how lam_m follows the model noise")
    tuning: str | None = Field(None, description="how the hyper-parameters were chosen")
    # Xiao et al. (LDP decentralized ADMM) and its comparators
    adversary_knows: str | None = Field(None, description="what the adversary sees")
    realized_loss: str | None = Field(None, description="Theorem 2.2's realized loss, ex post")
    worst_case: str | None = Field(None, description="sum_k d alpha_{k+1} beta_{k+1} B_inf")
    release_sensitivity: str | None = Field(
        None, description="the l1 / l2 bounds alpha B_1, alpha B_2 of each Laplace release"
    )
    B_inf: Num | None = Field(None, description="B_inf: the bound on every gradient entry")
    B_inf_source: str | None = Field(None, description="enforced, or privacy.B_inf (assumed)")
    enforced_bounds: dict[str, Any] | None = Field(None, description="B_inf, B_1, B_2 checked on the agents' data")
    B_inf_rests_on: str | None = Field(None, description="the data assumptions behind B_inf")


def privacy_record(info: PrivacyInfo | dict[str, Any] | None) -> PrivacyInfo | None:
    """``info`` as a :class:`PrivacyInfo` (a dict is validated; None stays None)."""
    if info is None or isinstance(info, PrivacyInfo):
        return info
    return PrivacyInfo.model_validate(info)
