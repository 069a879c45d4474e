"""Measured local-model speed: rates from timed calls, parallelism from overlapping calls, and
the LLM cache rows as a source. Figures are computed from given numbers, never from a clock."""
from __future__ import annotations

from pathlib import Path

import pytest

from kgviz.providers.cache import CompletionCache, CACHE_FILE
import kgviz.providers.speed as speed_module
from kgviz.errors import ProviderError
from kgviz.prompts.calibration import render_calibration
from kgviz.providers.speed import MAX_ROUNDS, TimedCall, calibrate, history_calls, measure
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


# --- how far to trust a measurement (issue 23) --------------------------------------------------
class TimedLLM:
    """An LLM whose calls take scripted times: ``shapes`` gives, per call in order, (prompt rate,
    generation rate, output tokens); the call's latency and time to the first token follow."""

    provider, model, base_url = "openai-compatible", "m", "http://127.0.0.1:1/v1"

    def __init__(self, shapes: list[tuple[float, float, int]]) -> None:
        self.shapes = shapes
        self.prompts: list[str] = []
        self.clock = [1000.0]

    def complete(self, messages, max_tokens: int = 0):  # noqa: ANN001, ANN201
        pr, gr, tout = self.shapes[len(self.prompts)]
        self.prompts.append(messages[-1].content)
        tin = 150
        p, g = tin / pr, tout / gr
        self.clock[0] += p + g  # the calls run one after another, as calibration makes them
        return Completion("1\n2", Usage(tin, tout, calls=1, latency_s=p + g), "m", self.provider,
                          latency_s=p + g, raw={"prompt_s": p})


@pytest.fixture
def timed(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """A TimedLLM whose calls end on its own clock (calibrate reads time.time() for each end)."""
    def make(shapes: list[tuple[float, float, int]]) -> TimedLLM:
        llm = TimedLLM(shapes)
        monkeypatch.setattr(speed_module.time, "time", lambda: llm.clock[0])
        return llm
    return make


def test_a_short_reply_does_not_time_generation() -> None:
    # a 2-token reply (issue 23's calibration) next to a long one: the rate is the long one's
    short, long = call(150, 2, 40.0, 0.5, end=10.0, split=True), call(150, 96, 40.0, 8.0, end=30.0, split=True)
    speed = measure([short, long])
    assert speed is not None and speed.gen_tps == pytest.approx(8.0)
    assert speed.spread is None and "fewer than two calls of 64+ tokens" in speed.describe(1)


def test_calibration_repeats_until_two_calls_agree(tmp_path: Path, timed) -> None:  # noqa: ANN001
    llm = timed([(40.0, 4.0, 96), (40.0, 8.0, 96), (42.0, 8.5, 96), (40.0, 8.0, 96)])
    speed = calibrate(llm, tmp_path, workers=1)
    assert len(llm.prompts) == 3 and len(set(llm.prompts)) == 3  # the third agreed with the second
    assert speed is not None and speed.agreed and speed.ranged_calls == 3
    assert speed.gen_range == (pytest.approx(4.0), pytest.approx(8.5)) and speed.spread == pytest.approx(8.5 / 4.0)
    assert "two of 3 timed calls agreed within 20%" in speed.describe(1)
    fast, slow = speed.call_seconds_range(1000, 500)
    assert fast == pytest.approx(1000 / 42.0 + 500 / 8.5) and slow == pytest.approx(1000 / 40.0 + 500 / 4.0)
    assert fast <= speed.call_seconds(1000, 500) <= slow


def test_calibration_that_never_agrees_says_how_much_the_calls_vary(tmp_path: Path, timed) -> None:  # noqa: ANN001
    llm = timed([(40.0, 4.0, 96), (40.0, 8.0, 96), (80.0, 16.0, 96), (20.0, 2.0, 96)])
    speed = calibrate(llm, tmp_path, workers=1)
    assert len(llm.prompts) == MAX_ROUNDS and speed is not None and not speed.agreed
    assert speed.spread == pytest.approx(8.0)
    assert "no two of 4 timed calls agreed within 20%: their rates vary 8.0×" in speed.describe(1)


def test_calibration_calls_that_write_too_little_are_refused(tmp_path: Path, timed) -> None:  # noqa: ANN001
    llm = timed([(40.0, 8.0, 2)] * MAX_ROUNDS)
    with pytest.raises(ProviderError, match="wrote at most 2 tokens; timing generation needs 64"):
        calibrate(llm, tmp_path, workers=1)
    assert len(llm.prompts) == MAX_ROUNDS


class CachingLLM(TimedLLM):
    """A llama.cpp-like server that keeps the prompts it has seen: a prompt asked again is not
    processed again (``timings.prompt_n`` = 1 and a near-zero time to the first token)."""

    def complete(self, messages, max_tokens: int = 0):  # noqa: ANN001, ANN201
        prompt = messages[-1].content
        seen = prompt in self.prompts
        c = super().complete(messages, max_tokens)
        processed = 1 if seen else c.usage.input_tokens
        p = processed / self.shapes[len(self.prompts) - 1][0]
        c.raw.update({"prompt_s": p, "timings": {"prompt_n": processed}})
        return c


def test_a_second_calibration_asks_new_prompts_and_counts_the_tokens_processed(tmp_path: Path, timed) -> None:  # noqa: ANN001
    llm = timed([(40.0, 8.0, 96)] * 4)
    calibrate(llm, tmp_path, workers=1)
    llm.clock[0] += 60.0  # the next calibration, a minute later
    speed = calibrate(llm, tmp_path, workers=1)
    assert len(set(llm.prompts)) == 4  # no prompt repeated: the server's prompt cache cannot skip one
    assert speed is not None and speed.prompt_tps == pytest.approx(40.0)
    # a server that says it processed one token of a prompt it kept: the call counts that one
    cached = CachingLLM([(40.0, 8.0, 96)] * 3)
    cached.prompts.append(render_calibration("x"))  # as if asked before
    c = speed_module._timed(cached, "x")
    assert c.input_tokens == 1 and c.prompt_s == pytest.approx(1 / 40.0)
