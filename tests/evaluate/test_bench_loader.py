"""`kgviz bench` finds the suite in the checkout's benchmarks/ (it is not library code)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kgviz.errors import KgvizError
from kgviz.evaluate.bench import SUITE, load_suite


def test_the_suite_is_loaded_from_the_checkout() -> None:
    assert SUITE.parent.name == "benchmarks" and SUITE.is_file()
    suite = load_suite()
    assert callable(suite.run_bench) and suite.BENCH_DIR == SUITE.parent
    line = suite.format_bench({"quick": True, "met": 1, "not_met": 0, "unavailable": 1,
                               "figures": {"a": {"met": True, "target": "t"}, "b": {"met": None, "reason": "r"}}})
    assert line.splitlines()[0] == "kgviz bench (quick): 1 met, 0 not met, 1 unavailable"


def test_without_a_checkout_the_error_says_where_to_run(tmp_path: Path) -> None:
    with pytest.raises(KgvizError, match="not there") as info:
        load_suite(tmp_path / "benchmarks" / "suite.py")
    assert "source checkout" in info.value.hint
