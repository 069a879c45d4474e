"""kgviz.index.extract_sample: calibration runs the extraction on a few chunks of the corpus, and
the estimate uses what they show: the model's output length, the server's token count and the
prompt tokens its cache skips (issue 23: the estimate missed a 0.5B build by its output tokens)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.fake_server import FakeServer, Recorded, Reply, chat_stream
from tests.support.index_fakes import corpus

from kgviz.config import Settings
from kgviz.index.estimate import calibrate_spec, estimate_cost, processed_prompt_tokens
from kgviz.index.extract_sample import SAMPLE_FILE, SampleCall, corpus_chunks, load_sample, pick_chunks, shape
from kgviz.index.params import BuildParams
from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM
from kgviz.providers.speed import SPEED_FILE, load_speed

FULL_PROMPT, REUSED = 1200, 950  # server tokens of an extraction prompt; what its prompt cache keeps


def call(chunk_tokens: int, out: int, processed: int = FULL_PROMPT, counted: int = 1000) -> SampleCall:
    return SampleCall(chunk_tokens, counted, FULL_PROMPT, processed, out, 10.0, 0.0, 2.0)


def test_the_sample_shows_output_length_token_scale_and_prompt_reuse() -> None:
    s = shape([call(200, 500), call(300, 250, processed=FULL_PROMPT - REUSED)])
    assert s is not None and s.calls == 2
    assert s.output_ratio == pytest.approx(750 / 500)
    assert s.token_scale == pytest.approx(2 * FULL_PROMPT / 2000)
    assert s.reused_tokens == REUSED and "reused 950 prompt tokens" in s.describe()
    assert shape([call(200, 500), call(300, 250)]).reused_tokens == 0  # a server that re-reads every prompt
    assert shape([]) is None


def test_chunks_are_picked_across_lengths_and_always_the_same() -> None:
    chunks = corpus_chunks(corpus(), BuildParams(chunk_tokens=24, chunk_overlap=0))
    assert len(chunks) > 4
    picked = pick_chunks(chunks, 2)
    assert picked == pick_chunks(list(reversed(chunks)), 2) and len({c.id for c in picked}) == 2
    lengths = sorted(c.n_tokens for c in chunks)
    assert lengths[0] <= picked[0].n_tokens <= picked[1].n_tokens <= lengths[-1]
    assert pick_chunks(chunks[:1], 2) == chunks[:1]


SEEN: list[Recorded] = []


def reply_for(rec: Recorded) -> Reply:
    """A llama.cpp-like server: extraction calls write 40 triples and say how many prompt tokens
    they processed (all for the first, all but the cached prefix after it); other calls are the
    calibration's short ones."""
    if rec.json["messages"][0]["content"] == EXTRACT_TRIPLES_SYSTEM:
        first = not SEEN
        SEEN.append(rec)
        processed = FULL_PROMPT if first else FULL_PROMPT - REUSED
        facts = [f"({who}; {did}; the harbour)\n" for who in ("Agnes Vohl", "Edda Lunn", "Aster Wren", "Kellhaven", "Tarrow")
                 for did in ("visited", "described", "named", "crossed", "mapped", "praised", "drew", "met")]
        return chat_stream(facts, FULL_PROMPT, 120,
                           delay_s=0.05, piece_delay_s=0.003,
                           timings={"prompt_n": processed, "prompt_ms": 50.0, "predicted_n": 120, "predicted_ms": 117.0})
    return chat_stream([f"{i}\n" for i in range(1, 71)], 150, delay_s=0.05, piece_delay_s=0.003)


def test_calibration_on_the_corpus_drives_the_estimate(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", db_dir=tmp_path / "db", timeout_s=10, max_retries=0)
    # the extraction's estimate (the skeleton's description calls: tests/index/test_estimate_describe.py)
    params = BuildParams(workers=1, chunk_tokens=24, chunk_overlap=0, ket_descriptions=False)
    docs = corpus()
    SEEN.clear()
    with FakeServer() as server:
        server.responder = reply_for
        spec = f"openai-compatible:qwen@{server.url}"
        calibrate_spec(spec, settings, workers=1, documents=docs, params=params)
        extraction = [r for r in server.requests if r.json["messages"][0]["content"] == EXTRACT_TRIPLES_SYSTEM]
        assert len(extraction) == 2 and all(r.json["stream"] for r in extraction)
        est = estimate_cost(docs, params, spec, cache_dir=settings.cache_dir)
        plain = estimate_cost(docs, params, spec)  # tokens only, the assumed ratio
    sample = load_sample(settings.cache_dir, "openai-compatible", "qwen", server.url)
    assert [c.processed_tokens for c in sample] == [FULL_PROMPT, FULL_PROMPT - REUSED]
    assert all(c.output_tokens == 120 for c in sample)
    s = shape(sample)
    assert s is not None and s.reused_tokens == REUSED
    # the output tokens follow the measured ratio, not BuildParams.expected_output_ratio
    picked = pick_chunks(corpus_chunks(docs, params))
    assert s.output_ratio == pytest.approx(240 / sum(c.n_tokens for c in picked))
    assert est.output_tokens != plain.output_tokens and est.input_tokens == plain.input_tokens
    # the sample calls are timed calls too, counted with the prompt tokens the server processed
    rows = [json.loads(ln) for ln in (settings.cache_dir / SPEED_FILE).read_text().splitlines()]
    assert [r["input_tokens"] for r in rows[-2:]] == [FULL_PROMPT, FULL_PROMPT - REUSED]
    speed = load_speed(settings.cache_dir, "openai-compatible", "qwen", server.url)
    assert speed is not None
    prompt = est.input_tokens * s.token_scale - (est.calls - 1) * REUSED
    assert processed_prompt_tokens(est, s) == pytest.approx(prompt)
    assert est.seconds == pytest.approx(prompt / speed.prompt_tps + est.output_tokens / speed.gen_tps)
    assert "2 extraction call(s) on the corpus" in est.time_source
    assert (settings.cache_dir / SAMPLE_FILE).read_text().count("\n") == 2


def test_reuse_never_takes_more_than_a_calls_prompt() -> None:
    est = estimate_cost(corpus(), BuildParams(chunk_tokens=24, chunk_overlap=0), "openai-compatible:q@http://127.0.0.1:9/v1")
    s = shape([call(200, 500), call(300, 250, processed=1)])  # a server that skipped nearly all
    assert s is not None and processed_prompt_tokens(est, s) >= est.input_tokens * s.token_scale / est.calls - 1e-6


def test_the_range_spans_the_output_length_of_single_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sampling model writes more or less for the same chunk from run to run, so the estimate's
    range spans the per-call output ratios of the sample, not only the measured rates."""
    import kgviz.index.estimate as estimate
    from kgviz.providers.speed import LocalSpeed

    spread = [call(200, 500), call(300, 250)]  # 2.5 and 0.83 output tokens per chunk token
    even = [call(200, 300), call(300, 450)]  # the same total ratio (1.5) from both calls
    s = shape(spread)
    assert s is not None and (s.output_ratio_low, s.output_ratio_high) == pytest.approx((250 / 300, 500 / 200))
    assert "(one call: 0.83–2.50)" in s.describe()
    assert "one call" not in shape(even).describe()  # type: ignore[union-attr]
    speed = LocalSpeed(100.0, 10.0, 4, "alone", ("calibration",), prompt_range=(90.0, 110.0),
                       gen_range=(9.0, 11.0), ranged_calls=4, agreed=True)
    monkeypatch.setattr(estimate, "load_speed", lambda *a: speed)
    params = BuildParams(chunk_tokens=24, chunk_overlap=0)
    spec = "openai-compatible:q@http://127.0.0.1:9/v1"
    found = {}
    for name, calls in (("spread", spread), ("even", even)):
        monkeypatch.setattr(estimate, "load_sample", lambda *a, calls=calls: calls)
        found[name] = estimate_cost(corpus(), params, spec, cache_dir=Path("unused"))
    a, b = found["spread"], found["even"]
    assert a.seconds == pytest.approx(b.seconds) and a.output_tokens == b.output_tokens  # same point estimate
    assert a.seconds_low < b.seconds_low <= b.seconds <= b.seconds_high < a.seconds_high
    monkeypatch.setattr(estimate, "load_sample", lambda *a: [])  # tokens at the lowest call's ratio
    low_out = estimate_cost(corpus(), BuildParams(chunk_tokens=24, chunk_overlap=0, expected_output_ratio=250 / 300),
                            spec).output_tokens
    prompt = processed_prompt_tokens(a, s)
    assert a.seconds_low == pytest.approx(prompt / 110.0 + low_out / 11.0)
