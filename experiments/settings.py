"""How data is distributed in each setting: the setting class the config's solver runs in.

One class per :class:`~vfl.core.solver.Setting` (:mod:`.vertical_setting`, :mod:`.row_settings`),
on what they share (:mod:`.distribution`). Each turns a loaded
dataset and the config into the solver's input (:class:`VerticalData`,
:class:`HorizontalData` or :class:`NetworkData`) plus the held-out data in
the layout the solver's ``decision_function`` expects, describes the
distribution for the manifest, and computes the baselines (:mod:`.setting_baselines`: the
central optimum of the same objective and the setting's comparison lines).

Random choices (which rows go to which provider, the graph, ``x^0``) come
from the run's own :class:`~vfl.core.solver.Streams`, so each repeat of a run
draws a fresh split while every solver in the same repeat sees the same one.
"""

from __future__ import annotations

from vfl.core.errors import DataError
from vfl.core.solver import Setting
from vfl.datasets.dataset import RawDataset

from .config import Config
from .distribution import fit_config_stage
from .row_settings import HorizontalSetting, NetworkSetting
from .vertical_setting import VerticalSetting

__all__ = ["SETTINGS", "prepare"]


SETTINGS = {Setting.VERTICAL: VerticalSetting, Setting.HORIZONTAL: HorizontalSetting, Setting.NETWORK: NetworkSetting}


def prepare(config: Config, raw: RawDataset, cls):
    """The setting object for ``config`` (fits the preprocessing stage and validates the
    distribution against the data)."""
    stage = fit_config_stage(config, raw, cls)
    try:
        return SETTINGS[config.setting](config, raw, stage)
    except ValueError as exc:
        raise DataError(str(exc)) from None
