"""The solver registry: every algorithm ``vfl`` can run, by ``solver.name``.

Adding an algorithm means writing its :class:`~vfl.core.solver.Solver`
subclass in its own module and adding one line here (or, for a solver that
a paper brings, one entry in its paper's declaration,
:attr:`vfl.papers.spec.Paper.solvers`); the config schema, the runner, the
manifest, the CLI summary and the plots read everything else from the
class's declarations.
"""

from __future__ import annotations

import functools
import importlib
from importlib.metadata import entry_points

from vfl.core.errors import ConfigError
from vfl.core.solver import Solver

__all__ = [
    "SOLVERS",
    "get_solver",
    "registered",
    "solver_help",
    "solver_listing",
    "solver_names",
    "typed_params",
    "typed_privacy",
]

#: name -> "module:Class"; imported on first use, so a config typo is reported
#: before any algorithm module (and its dependencies) is loaded.
SOLVERS: dict[str, str] = {
    # vertical: parties hold columns (Hu et al.)
    "admm_sharing": "vfl.admm.sharing:ADMMSharingSolver",
    "fdml_sgd": "vfl.baselines.fdml_sgd:FDMLSGDSolver",
    "private_stacking": "vfl.stacking.private_stacking:PrivateStacking",
    # horizontal: providers hold rows, one trainer (Huang et al.)
    "consensus_admm": "vfl.admm.consensus:ConsensusADMM",
    "consensus_admm_perturbed": "vfl.admm.consensus:ConsensusADMMPerturbed",
    "dp_admm": "vfl.admm.consensus:DPADMM",
    # network: agents on a graph, no centre (Xiao et al. and the methods they compare with)
    "ldp_admm": "vfl.decentralized.admm:LDPADMM",
    "random_penalty_admm": "vfl.decentralized.admm:RandomPenaltyADMM",
    "fixed_admm": "vfl.decentralized.admm:FixedADMM",
    "dvp_admm": "vfl.decentralized.admm:DVPADMM",
    "pp_admm": "vfl.decentralized.admm:PPADMM",
    "op_admm": "vfl.decentralized.admm:OPADMM",
    "ldp_gd": "vfl.decentralized.gd:LDPGD",
    "ldp_gd_minmax": "vfl.decentralized.gd:LDPGDMinMax",
    "dgd": "vfl.decentralized.gd:DGD",
    "noisy_consensus_gd": "vfl.decentralized.gd:NoisyConsensusGD",
}

_loaded: dict[str, type[Solver]] = {}  # "module:Class" -> the class


#: the entry-point group through which packages above this layer declare solvers (vfl's own
#: papers do, in pyproject.toml; so may a third-party package): each entry is a function
#: returning ``name -> "module:Class"``
ENTRY_POINTS = "vfl.solvers"


def registered() -> dict[str, str]:
    """Every solver, ``name -> "module:Class"``: the families' (:data:`SOLVERS`) and the ones
    declared through :data:`ENTRY_POINTS` (the papers' packages). Only the light declarations
    are read, no solver module; the layer above is reached by its entry point, not an
    import."""
    table = dict(SOLVERS)
    for source, declared in _declarers():
        for name, target in declared().items():
            if name in table:  # a declaration clash, not a user error
                raise RuntimeError(f"{source} declares solver {name!r}, which is registered already")
            table[name] = target
    return table


@functools.cache
def _declarers() -> tuple:
    """``(entry point, function)`` of every declaration (the installed metadata, read once;
    each function is called afresh, so what it declares may change)."""
    entries = sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name)
    return tuple((e.value, e.load()) for e in entries)


def solver_names() -> list[str]:
    return list(registered())


def get_solver(name: str) -> type[Solver]:
    """The solver class registered as ``name``; an unknown name lists the valid ones."""
    table = registered()
    if name not in table:
        raise ConfigError(f"solver.name = {name!r} is not one of: {', '.join(table)}")
    target = table[name]
    if target not in _loaded:
        module, _, cls = target.partition(":")
        solver = getattr(importlib.import_module(module), cls)
        if solver.name != name:  # a registry typo, not a user error
            raise RuntimeError(f"registry entry {name!r} points at a solver named {solver.name!r}")
        _loaded[target] = solver
    return _loaded[target]


def solver_listing() -> list[str]:
    """``vfl solvers``: every registered solver by setting, with its paper."""
    by_setting: dict[str, list[type[Solver]]] = {}
    for name in registered():
        cls = get_solver(name)
        by_setting.setdefault(cls.setting.value, []).append(cls)
    lines = []
    for setting, classes in by_setting.items():
        lines.append(f"{setting}:")
        lines += [f"  {cls.name:26} {cls.title}; {cls.reference}" for cls in classes]
    return lines + ["`vfl solvers NAME` lists a solver's [solver] and [privacy] keys"]


def solver_help(name: str) -> list[str]:
    """``vfl solvers NAME``: the solver's source, regularizers, config keys and columns."""
    cls = get_solver(name)
    lines = [
        f"{cls.name}: {cls.title} ({cls.setting.value} setting)",
        f"  source: {cls.reference}",
        f"  regularizers: {', '.join(cls.regularizers)}",
        "  [solver] name, epochs (iterations), and:",
        *(f"    {p.describe()}" for p in cls.params),
        "  [privacy] replayable_noise, budget_epsilon, and:",
        *(f"    {p.describe()}" for p in cls.privacy_params),
    ]
    if cls.columns:
        lines.append(f"  metrics.csv adds: {', '.join(cls.columns)}")
    return lines


def typed_params(config):
    """``config``'s ``[solver]`` values as its solver's typed record."""
    return get_solver(config.solver.name).typed_params(config.solver.values)


def typed_privacy(config):
    """``config``'s ``[privacy]`` values as its solver's typed record (fields: the solver's
    ``privacy_params``; a key it does not declare is not an attribute)."""
    return get_solver(config.solver.name).typed_privacy(config.privacy.values)
