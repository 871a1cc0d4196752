"""Your own data as it really lies: one file per party, rows aligned by a private set
intersection.

In vertical FL each organisation holds its own table keyed by an ID (a customer
number), and the tables overlap only in part. A config names one file per party
(``[[data.party]]``, :mod:`.spec`); each party reads only its own file
(:func:`load_party`, :mod:`.table`); the label holder runs an ECDH private set
intersection with every other party (:mod:`.psi`), the parties agree on one
intersection and one row order that reveals no ID (:mod:`.align`), and the
aligned rows become one dataset whose columns are the parties' blocks
(:mod:`.join`). Public parameters can come from a Frictionless Table Schema
(:mod:`.schema`); ``vfl datasets split`` turns one file into party files
(:mod:`.split`).
"""

from .party_spec import DATA_KEYS, PARTY_KEYS, PartySpec, check_parties
from .party_table import PartyTable, load_party

__all__ = ["PARTY_KEYS", "DATA_KEYS", "PartySpec", "PartyTable", "check_parties", "load_party"]
