"""Xiao, Ye, Devadas 2019: local differential privacy in decentralized optimization.

"Local Differential Privacy in Decentralized Optimization" (arXiv
1902.06101), App. E: UCI Adult over random G(N, |E|) graphs, 10 runs per
method, 100 iterations. Each figure's panels are declared here as data
(which config, which metrics.csv column, which label and style); the
drawing is in :mod:`vfl.papers.ldp.figures`.
"""

from dataclasses import dataclass

from vfl.papers.spec import Figure, Paper


@dataclass(frozen=True)
class Curve:
    """One curve: ``column`` of the runs of ``configs/<config>.toml``, mean with a min-max band."""

    config: str
    label: str
    column: str
    color: str
    style: str = "-"
    band: bool = True


def _accuracy(graph: str) -> list[Curve]:
    return [Curve(f"ldp-admm-{graph}", "Algorithm 1 (random penalties)", "log10_error", "C0"),
            Curve(f"ldp-dvp-admm-{graph}", "[42] dual perturbation", "log10_error", "C1"),
            Curve(f"ldp-pp-admm-{graph}", "[43] increasing penalty", "log10_error", "C2"),
            Curve(f"ldp-op-admm-{graph}", "[48] output perturbation", "log10_error", "C3")]


def _privacy(graph: str) -> list[Curve]:
    return [Curve(f"ldp-admm-{graph}", "Algorithm 1, realized (Thm 2.2, ex post)", "privacy_loss",
                  "C0"),
            Curve(f"ldp-admm-{graph}", "worst case sum d alpha beta B_inf", "privacy_loss_worst",
                  "black", "--", band=False),
            Curve(f"ldp-pp-admm-{graph}", "[43] (reconstruction)", "privacy_loss", "C2"),
            Curve(f"ldp-dvp-admm-{graph}", "[42] (reconstruction)", "privacy_loss", "C1")]


def _nonprivate(graph: str) -> list[Curve]:
    return [Curve(f"ldp-random-admm-{graph}", "ADMM, random penalties (Alg. 1 exact step)",
                  "log10_error", "C0"),
            Curve(f"ldp-fixed-admm-{graph}", "ADMM, fixed penalties", "log10_error", "C1", "--"),
            Curve(f"ldp-gd-{graph}", "Algorithm 2 (random weights)", "log10_error", "C2"),
            Curve(f"ldp-dgd-{graph}", "DGD, fixed weights", "log10_error", "C3", "--")]


#: output figure -> panel -> curves
PANELS = {
    "fig2": {"accuracy": _accuracy("n10"), "privacy": _privacy("n10")},
    "figB": {"accuracy": _accuracy("n100"), "privacy": _privacy("n100")},
    "figC": {
        "accuracy": [
            Curve("ldp-noisy-gd-n10e40", "[45] noisy consensus GD (eta = 0.9^k)", "log10_error",
                  "C4"),
            Curve("ldp-gd-minmax-n10e40", "Algorithm 2* (eta = 0.93^k)", "log10_error", "C5"),
            Curve("ldp-admm-n10e40", "Algorithm 1 (D = 10)", "log10_error", "C0")],
        "privacy": [
            Curve("ldp-noisy-gd-n10e40", "[45] (pure Laplace: its worst case)",
                  "privacy_loss_worst", "C4"),
            Curve("ldp-gd-minmax-n10e40", "Algorithm 2*, realized (ex post)", "privacy_loss", "C5"),
            Curve("ldp-gd-minmax-n10e40", "Algorithm 2*, worst case", "privacy_loss_worst", "C5",
                  ":", band=False),
            Curve("ldp-admm-n10e40", "Algorithm 1, realized (ex post)", "privacy_loss", "C0"),
            Curve("ldp-admm-n10e40", "Algorithm 1, worst case", "privacy_loss_worst", "C0", ":",
                  band=False)],
    },
    "figD-1": {"accuracy": _nonprivate("n10")},
    "figD-2": {"accuracy": _nonprivate("n100")},
}
#: figure -> the output figures it draws
OUTPUTS = {"fig1": [], "fig2": ["fig2"], "figB": ["figB"], "figC": ["figC"],
           "figD": ["figD-1", "figD-2"]}


def _configs(figure: str) -> tuple[str, ...]:
    return tuple(sorted({c.config for output in OUTPUTS[figure]
                         for curves in PANELS[output].values() for c in curves}))


_SHOWS = {
    "fig1": "Fig. 1: amplification constant gamma(omega, beta), eq. (11) with the exact value",
    "fig2": "Fig. 2 (a)/(b): N = 10, |E| = 20, Algorithm 1 vs [42], [43], [48]: accuracy, privacy",
    "figB": "Fig. B: the same at N = 100, |E| = 200",
    "figC": "Fig. C: N = 10, |E| = 40, Algorithm 2* vs [45] and Algorithm 1: accuracy, privacy",
    "figD": "Figs. D-1/D-2: non-private, random vs fixed parameters (ADMM, GD), N = 10 and 100",
}

PAPER = Paper(
    key="ldp",
    title="Xiao, Ye, Devadas 2019, local DP in decentralized optimization",
    source="Xiao et al. 2019, App. E (UCI Adult, random graphs, 10 runs per method)",
    module="vfl.papers.ldp.figures",
    figures=tuple(Figure(name, shows, configs=_configs(name)) for name, shows in _SHOWS.items()),
)
