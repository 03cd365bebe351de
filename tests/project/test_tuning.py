"""One conformance test over every tuning dataclass: defaults construct, bad values are refused
naming the class and the field, when the object is made."""

from __future__ import annotations

import dataclasses
import math
import types
import typing

import pytest

from mdp.emd.grid import GridEMDTuning
from mdp.errors import ParameterError, ParameterTypeError
from mdp.families.constopt.tuning import ConstOPTTuning
from mdp.families.optimal.tuning import OptimalTuning
from mdp.families.spanner.tuning import SpannerTuning
from mdp.runtime.threads import ThreadTuning
from mdp.vocabulary.nearest_screen import ScreenTuning
from mdp.worst_case.block_rounds import BlockRoundsTuning
from mdp.worst_case.column_blocks import BlockResources
from mdp.worst_case.solve import LazyRoundsTuning

TUNINGS = [GridEMDTuning, ConstOPTTuning, OptimalTuning, SpannerTuning, ThreadTuning,
           ScreenTuning, BlockRoundsTuning, BlockResources, LazyRoundsTuning]


def _bad_values(hint):
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else None
    if hint is int:
        return [-1, 2.5, True, "3"]
    if hint is float:
        return [math.nan, "0.1", True] + ([] if optional else [None])
    if hint is bool:
        return [1, "yes"]
    if hint is str:
        return [3]
    if typing.get_origin(hint) is tuple:
        return [(), (1e7, -1.0), [1e7]]
    return []


def test_every_tuning_dataclass_is_listed():
    # every dataclass of the package named ...Tuning is conformance-tested here
    import importlib
    import pkgutil

    import mdp

    found = set()
    for info in pkgutil.walk_packages(mdp.__path__, "mdp."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (isinstance(obj, type) and dataclasses.is_dataclass(obj)
                    and obj.__module__ == module.__name__ and obj.__name__.endswith("Tuning")):
                found.add(obj)
    assert found == set(TUNINGS) - {BlockResources}


@pytest.mark.parametrize("cls", TUNINGS, ids=lambda c: c.__name__)
def test_tuning_refuses_bad_fields(cls):
    default = cls()
    hints = typing.get_type_hints(cls)
    checked = 0
    for f in dataclasses.fields(cls):
        if f.name.startswith("_"):
            continue
        for bad in _bad_values(hints[f.name]):
            with pytest.raises((ParameterError, ParameterTypeError), match=f"{cls.__name__}.{f.name}"):
                dataclasses.replace(default, **{f.name: bad})
            checked += 1
    assert checked > 0
    # the defaults pass, and so does a valid change
    assert dataclasses.replace(default) == default
