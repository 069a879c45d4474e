"""The method registry: every class declares the Method protocol's class attributes."""
from __future__ import annotations

from typing import Any

import pytest

from kgviz.methods import base
from kgviz.methods.registry import get_method, list_methods


def test_register_refuses_a_class_missing_a_declared_attribute() -> None:
    declared: dict[str, Any] = {"name": "test-no-flag", "title": "t", "paper": "test", "Params": object,
                                "presets": {}, "budget_param": None}  # every Method attribute but no_context
    NoFlag = type("NoFlag", (), declared)
    with pytest.raises(TypeError, match="NoFlag does not declare no_context"):
        base.register(NoFlag)
    assert "test-no-flag" not in base.registered()


def test_only_the_no_retrieval_baseline_answers_without_context() -> None:
    flags = {name: get_method(name).no_context for name in list_methods()}
    assert all(isinstance(v, bool) for v in flags.values())
    assert [n for n, v in flags.items() if v] == ["no-retrieval"]
