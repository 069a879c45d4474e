from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from kgviz.errors import ConfigError
from kgviz.providers.pricing import DEFAULT_PRICES, PRICES_AS_OF, PriceTable
from kgviz.providers.usage import UsageLedger
from kgviz.types import Usage


# --- ledger ----------------------------------------------------------------------------------
def test_ledger_sums_per_step_and_in_total() -> None:
    ledger = UsageLedger()
    ledger.record("extract", Usage(100, 10, 1, 0, 0.5, 0.01))
    ledger.record("extract", Usage(0, 0, 0, 1, 0.001, 0.0))
    ledger.record("answer", Usage(50, 5, 1, 0, 0.25, 0.02))
    steps = ledger.by_step()
    assert list(steps) == ["extract", "answer"]  # first-seen order, for display
    assert steps["extract"] == Usage(100, 10, 1, 1, 0.501, 0.01)
    total = ledger.total()
    assert (total.input_tokens, total.output_tokens, total.calls, total.cached_calls) == (150, 15, 2, 1)
    assert total.cost_usd == pytest.approx(0.03) and total.latency_s == pytest.approx(0.751)


def test_ledger_snapshots_do_not_alias() -> None:
    ledger = UsageLedger()
    u = Usage(1, 1, 1)
    ledger.record("s", u)
    u.input_tokens = 999  # the caller mutating its object afterwards changes nothing
    snap = ledger.by_step()
    snap["s"].calls = 42
    assert ledger.by_step()["s"] == Usage(1, 1, 1)


def test_ledger_to_dict_is_json_ready() -> None:
    ledger = UsageLedger()
    ledger.record("judge", Usage(10, 2, 1, cost_usd=0.5))
    d = json.loads(json.dumps(ledger.to_dict()))
    assert d["steps"]["judge"]["total_tokens"] == 12
    assert d["total"]["cost_usd"] == 0.5


def test_ledger_is_thread_safe() -> None:
    ledger = UsageLedger()

    def work(i: int) -> None:
        for _ in range(500):
            ledger.record(f"step{i % 3}", Usage(1, 2, 1))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = ledger.total()
    assert (total.input_tokens, total.output_tokens, total.calls) == (4000, 8000, 4000)
    assert sum(u.calls for u in ledger.by_step().values()) == 4000


# --- prices ----------------------------------------------------------------------------------
def test_cost_math() -> None:
    prices = PriceTable({("anthropic", "m"): (3.0, 15.0)})
    assert prices.cost("anthropic", "m", 1_000_000, 0) == pytest.approx(3.0)
    assert prices.cost("anthropic", "m", 0, 1_000_000) == pytest.approx(15.0)
    assert prices.cost("anthropic", "m", 2_000, 500) == pytest.approx(0.006 + 0.0075)


def test_defaults_are_dated_and_cover_both_providers() -> None:
    prices = PriceTable()
    assert PRICES_AS_OF == "2026-11" and prices.as_of == "2026-11"
    assert {p for p, _ in DEFAULT_PRICES} == {"anthropic", "openai"}
    assert prices.known("anthropic", "claude-haiku-4-5") and prices.known("openai", "gpt-5-mini")
    assert prices.cost("anthropic", "claude-haiku-4-5", 1_000_000, 1_000_000) == pytest.approx(6.0)


def test_unknown_and_offline_cost_nothing_and_say_so() -> None:
    prices = PriceTable()
    assert prices.cost("offline", "heuristics", 10_000, 10_000) == 0.0
    assert not prices.known("offline", "heuristics")
    assert prices.cost("openai-compatible", "llama3.1:8b", 10_000, 10_000) == 0.0
    assert not prices.known("openai", "gpt-99")


def test_dated_snapshots_use_the_base_price_but_other_variants_do_not() -> None:
    prices = PriceTable({("anthropic", "claude-haiku-4-5"): (1.0, 5.0), ("openai", "gpt-5"): (1.25, 10.0)})
    assert prices.known("anthropic", "claude-haiku-4-5-20251001")
    assert prices.known("openai", "gpt-5-2025-08-07")
    assert not prices.known("openai", "gpt-5-pro")
    assert not prices.known("openai", "gpt-5.1")


def test_save_load_roundtrip_and_edits(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "prices.json"
    assert PriceTable.load(path).rows() == PriceTable().rows()  # no file yet: defaults
    table = PriceTable()
    table.set("openai-compatible", "llama3.1:8b", 0.1, 0.2)
    table.set("anthropic", "claude-haiku-4-5", 0.8, 4.0)
    table.remove("openai", "gpt-5")
    table.save(path)
    loaded = PriceTable.load(path)
    assert loaded.rows() == table.rows()
    assert loaded.cost("anthropic", "claude-haiku-4-5", 1_000_000, 0) == pytest.approx(0.8)
    assert not loaded.known("openai", "gpt-5")
    assert json.loads(path.read_text())["as_of"] == "2026-11"


def test_from_rows_validates() -> None:
    with pytest.raises(ConfigError):
        PriceTable.from_rows([{"provider": "openai", "model": "x", "input_per_m": "cheap", "output_per_m": 1}])
    with pytest.raises(ConfigError):
        PriceTable.from_rows([{"provider": "openai", "model": "", "input_per_m": 1, "output_per_m": 1}])
    with pytest.raises(ConfigError):
        PriceTable().set("openai", "x", -1, 1)


@pytest.mark.parametrize("content", ["{not json", '{"prices": 3}', "[]"])
def test_corrupt_price_file_is_a_config_error_naming_the_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match="prices.json"):
        PriceTable.load(path)
