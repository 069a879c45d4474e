"""Declared choices and ranges of method params (``param(..., choices/min/max)`` and Literal types)."""
from __future__ import annotations

import dataclasses

import pytest

from kgviz.errors import ConfigError
from kgviz.methods.base import param_choices, param_range
from kgviz.methods.kg_infused import KGInfusedParams
from kgviz.methods.kg_rag import KGRagParams
from kgviz.methods.kg_retriever import KGRetrieverParams
from kgviz.methods.ket_params import KetRagParams
from kgviz.methods.registry import get_method, list_methods
from kgviz.methods.text_rag import TextRagParams


def test_choice_fields_declare_their_values_as_literal_types() -> None:
    assert param_choices(KGRetrieverParams, "strategy") == ("one-hop", "attentive", "multi-hop")
    assert param_choices(KGInfusedParams, "passage_search") == ("auto", "hybrid", "dense", "bm25")
    assert param_choices(KetRagParams, "pool_mode") == ("paper", "code")
    assert param_choices(TextRagParams, "top_k") == ()


def test_every_str_param_of_every_method_has_declared_choices_that_hold_its_default() -> None:
    for name in list_methods():
        cls = get_method(name).Params
        for f in dataclasses.fields(cls):
            if isinstance(f.default, str):
                assert f.default in param_choices(cls, f.name), (name, f.name)


def test_ranges_are_declared_and_enforced_with_one_message_naming_every_field() -> None:
    assert param_range(KetRagParams, "theta") == (0.0, 1.0)
    assert param_range(KGRagParams, "max_hops") == (1, None)
    with pytest.raises(ConfigError) as info:
        KGRetrieverParams(top_n=0, strategy="sideways")  # type: ignore[arg-type]
    msg = str(info.value)
    assert msg.startswith("kg-retriever: ") and "top_n must be >= 1, got 0" in msg and "strategy must be one of" in msg
    with pytest.raises(ConfigError, match=r"theta must be in \[0, 1\], got 1.5"):
        KetRagParams(theta=1.5)
    with pytest.raises(ConfigError, match="k_p must be >= 2"):
        KGInfusedParams(k_p=1)
    assert KGRagParams(plan_weight=1.0).plan_weight == 1.0  # bounds are inclusive
