"""The e2e launcher's pause spec (tests/e2e/paused_streamlit.py): read right, refused when wrong."""
from __future__ import annotations

import pytest

from tests.e2e.paused_streamlit import parse_pauses


def test_pauses_are_read_by_kind_and_name() -> None:
    assert parse_pauses("stage:knn=8, method:no-retrieval=0.5,") == {
        ("stage", "knn"): 8.0, ("method", "no-retrieval"): 0.5}
    assert parse_pauses("") == {}


@pytest.mark.parametrize("spec", ["knn=8", "stage:knn", "stage:=3", "build:knn=2", "stage:knn=soon"])
def test_a_spec_it_cannot_read_is_an_error(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_pauses(spec)
