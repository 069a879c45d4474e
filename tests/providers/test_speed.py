"""Measured local-model speed: rates from timed calls, parallelism from overlapping calls, and
the LLM cache rows as a source. Figures are computed from given numbers, never from a clock."""
from __future__ import annotations

from pathlib import Path

import pytest

from kgviz.providers.cache import CompletionCache, CACHE_FILE
from kgviz.providers.speed import TimedCall, history_calls, measure
from kgviz.types import Completion, Usage


def call(tin: int, tout: int, pr: float, gr: float, end: float, *, slow: float = 1.0, split: bool = False) -> TimedCall:
    """A call on a server with prompt rate ``pr`` and generation rate ``gr``, ``slow`` times
    slower than alone (sharing the server)."""
    p, g = tin / pr * slow, tout / gr * slow
    return TimedCall(tin, tout, p + g, end, prompt_s=p if split else None)


def test_rates_from_the_time_to_the_first_token() -> None:
    speed = measure([call(120, 30, 40.0, 7.5, end=100.0, split=True)])
    assert speed is not None and speed.basis == "alone" and speed.n_calls == 1
    assert speed.prompt_tps == pytest.approx(40.0) and speed.gen_tps == pytest.approx(7.5)
    assert speed.parallelism is None and speed.effective_parallelism(4) == 1.0
    assert "counted as 1" in speed.describe(4)


def test_rates_fitted_from_calls_of_different_shapes() -> None:
    speed = measure([call(1200, 40, 40.0, 7.0, end=100.0), call(300, 350, 40.0, 7.0, end=200.0),
                     call(700, 120, 40.0, 7.0, end=300.0)])
    assert speed is not None
    assert speed.prompt_tps == pytest.approx(40.0) and speed.gen_tps == pytest.approx(7.0)
    assert speed.call_seconds(1000, 100) == pytest.approx(1000 / 40 + 100 / 7)


def test_calls_of_one_shape_or_one_unsplit_call_leave_the_speed_unknown() -> None:
    assert measure([call(100, 10, 40.0, 7.0, end=100.0)]) is None
    assert measure([call(100, 10, 40.0, 7.0, end=100.0), call(200, 20, 40.0, 7.0, end=200.0)]) is None
    assert measure([TimedCall(0, 0, 3.0, 10.0)]) is None and measure([]) is None


def test_one_thread_shared_by_two_slots_is_measured_as_no_speed_up() -> None:
    alone = call(400, 50, 40.0, 8.0, end=100.0, split=True)
    # two calls started together, each twice as slow as alone: the server did one at a time
    a, b = call(400, 50, 40.0, 8.0, end=300.0, slow=2.0), call(400, 50, 40.0, 8.0, end=300.0, slow=2.0)
    speed = measure([alone, a, b])
    assert speed is not None and speed.basis == "alone" and speed.n_calls == 1
    assert speed.parallelism == pytest.approx(1.0) and speed.parallel_calls == 2
    assert speed.effective_parallelism(2) == pytest.approx(1.0)


def test_two_real_slots_are_measured_as_two_and_capped_by_the_workers() -> None:
    alone = call(400, 50, 40.0, 8.0, end=100.0, split=True)
    a, b = call(400, 50, 40.0, 8.0, end=300.0), call(400, 50, 40.0, 8.0, end=300.0)
    speed = measure([alone, a, b])
    assert speed is not None and speed.parallelism == pytest.approx(2.0)
    assert speed.effective_parallelism(4) == pytest.approx(2.0) and speed.effective_parallelism(1) == 1.0
    assert "2.00× measured on 2 overlapping calls" in speed.describe(4)


def test_only_overlapping_calls_give_the_throughput_of_that_worker_count() -> None:
    # every call shared a one-thread server with another: per-call rates are halved, and the
    # measured parallelism (2) undoes it, so the time per call pair is right
    calls = [call(400, 50, 40.0, 8.0, end=e, slow=2.0, split=True) for e in (100.0, 100.0, 300.0, 300.0)]
    speed = measure(calls)
    assert speed is not None and speed.basis == "overlapping"
    assert speed.prompt_tps == pytest.approx(20.0) and speed.parallelism == pytest.approx(2.0)
    per_call_alone = 400 / 40 + 50 / 8
    assert speed.call_seconds(400, 50) / speed.effective_parallelism(2) == pytest.approx(per_call_alone)
    assert "~2.0 at a time" in speed.describe(2) and "too long" not in speed.describe(2)
    assert "up to 2.0× too long" in speed.describe(1)  # a call alone may be faster: an upper bound


def test_history_reads_every_timed_row_of_the_model_from_the_llm_cache(tmp_path: Path) -> None:
    cache = CompletionCache(tmp_path / CACHE_FILE)

    def put(key: str, model: str, tin: int, tout: int, seconds: float, raw: dict) -> None:
        c = Completion("x", Usage(tin, tout, 1, 0, seconds), model, "openai-compatible", latency_s=seconds, raw=raw)
        cache.put(key, "openai-compatible", model, c, accepted=key != "k2")

    put("k1", "m", 1200, 40, 35.0, {"prompt_s": 30.0})
    put("k2", "m", 300, 350, 57.5, {})  # pending (never accepted): still a real, timed request
    put("k3", "m", 300, 350, 57.5, {"usage_missing": True})  # tokens unknown: skipped
    put("k4", "other", 10, 10, 1.0, {})
    cache.close()
    calls = history_calls(tmp_path, "openai-compatible", "m")
    assert [(c.input_tokens, c.output_tokens, c.seconds, c.prompt_s) for c in calls] == [
        (1200, 40, 35.0, 30.0), (300, 350, 57.5, None)]
    assert history_calls(tmp_path / "nowhere", "openai-compatible", "m") == []
