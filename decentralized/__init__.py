"""Decentralized (network-setting) private optimization: Xiao, Ye, Devadas (arXiv 1902.06101).

Agents on an undirected connected graph minimize ``sum_i f_i(x)`` by
consensus, exchanging only their (noisy) iterates; local DP protects each
agent's ``f_i`` against everyone else colluding.

- :mod:`.graphs`: communication graphs (``make_graph``) as sparse adjacencies,
  Laplacian and Metropolis weights;
- :mod:`.problem`: the local functions, ``x*``, sample assignment, ``x0``,
  label encodings and the enforced gradient sensitivities;
- :mod:`.admm`, :mod:`.gd`: the solvers (registered in :mod:`vfl.experiments.registry`);
- :mod:`.secret_sharing`: Algorithm 3's additive secret-sharing exchange.

The privacy computations (Theorems 2.2, 2.3, footnote 1) are in
:mod:`vfl.privacy.ldp`.
"""

from .admm import DVPADMM, LDPADMM, OPADMM, PPADMM, FixedADMM, RandomPenaltyADMM
from .gd import DGD, LDPGD, LDPGDMinMax, NoisyConsensusGD
from .graphs import (
    GRAPH_KINDS,
    check_adjacency,
    closed_neighbourhoods,
    degrees,
    is_complete,
    is_connected,
    laplacian,
    make_graph,
    metropolis_weights,
)
from .network import NetworkSolver
from .private_network import NEIGHBOURING, PrivateNetworkSolver
from .problem import (
    LABEL_ENCODINGS,
    Sensitivity,
    assign_samples,
    build_network_data,
    central_optimum,
    encode_labels,
    gradient_sensitivity,
    initial_models,
    loss_derivatives,
    paper_objective,
)
from .secret_sharing import AdditiveSecretSharing, SecretSharingOverflowError

__all__ = [
    "NEIGHBOURING",
    "NetworkSolver",
    "PrivateNetworkSolver",
    "LDPADMM",
    "RandomPenaltyADMM",
    "FixedADMM",
    "LDPGD",
    "LDPGDMinMax",
    "DGD",
    "DVPADMM",
    "PPADMM",
    "NoisyConsensusGD",
    "OPADMM",
    "GRAPH_KINDS",
    "make_graph",
    "check_adjacency",
    "is_connected",
    "is_complete",
    "degrees",
    "laplacian",
    "metropolis_weights",
    "closed_neighbourhoods",
    "LABEL_ENCODINGS",
    "encode_labels",
    "assign_samples",
    "initial_models",
    "central_optimum",
    "loss_derivatives",
    "Sensitivity",
    "gradient_sensitivity",
    "paper_objective",
    "build_network_data",
    "AdditiveSecretSharing",
    "SecretSharingOverflowError",
]
