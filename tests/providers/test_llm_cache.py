"""The sqlite completion cache, end to end through make_llm and the real anthropic SDK."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fake_server import FakeServer, Reply, anthropic_ok, chat_ok

from kgviz.config import Settings
from kgviz.errors import ProviderResponseError
from kgviz.providers.cache import CACHE_FILE, CachedLLM, CompletionCache, cache_key, open_cache
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.factory import make_llm
from kgviz.providers.offline import OfflineLLM
from kgviz.providers.pricing import PriceTable
from kgviz.providers.usage import UsageLedger
from kgviz.reasoning import Reasoner, Task, register
from kgviz.types import Message

KEY = "sk-ant-api03-CACHE-TEST-SECRET-abcdef"
Q = [Message("user", "Who wrote Hamlet?")]


def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", db_dir=tmp_path / "db", timeout_s=5, max_retries=1)


def ask(llm, messages=Q, **kw):  # noqa: ANN001, ANN201 - test helper
    """complete + accept, as the Reasoner does after parsing a reply."""
    c = llm.complete(messages, **kw)
    llm.accept(c)
    return c


def cache_bytes(s: Settings) -> bytes:
    return b"".join(p.read_bytes() for p in s.cache_dir.iterdir() if p.is_file())


def test_second_identical_call_is_free_and_marked_cached(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, anthropic_ok("Shakespeare.", 40, 5)))
    llm = make_llm(f"anthropic:claude-haiku-4-5@{server.url}", s, api_key=KEY)
    assert isinstance(llm, CachedLLM)
    first = ask(llm, system="Be brief.", max_tokens=50)
    second = llm.complete(Q, system="Be brief.", max_tokens=50)
    assert len(server.requests) == 1
    assert first.cached is False and first.usage.total_tokens == 45 and first.usage.calls == 1
    assert second.cached is True and second.text == "Shakespeare."
    u = second.usage
    assert (u.input_tokens, u.output_tokens, u.calls, u.cached_calls) == (0, 0, 0, 1)
    assert second.latency_s < 0.05
    assert second.raw["cached_usage"]["input_tokens"] == 40
    assert (s.cache_dir / CACHE_FILE).exists()


def test_cache_file_never_contains_the_key(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, anthropic_ok("x")))
    llm = make_llm(f"anthropic:claude-haiku-4-5@{server.url}", s, api_key=KEY)
    llm.complete(Q)
    assert KEY in server.requests[0].headers.get("authorization", "") + server.requests[0].headers.get("x-api-key", "")
    blob = cache_bytes(s)
    assert KEY.encode() not in blob and b"CACHE-TEST-SECRET" not in blob
    assert KEY not in repr(llm)


def test_key_is_not_part_of_the_cache_key(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, anthropic_ok("x")))
    ask(make_llm(f"anthropic:claude-haiku-4-5@{server.url}", s, api_key=KEY))
    again = make_llm(f"anthropic:claude-haiku-4-5@{server.url}", s, api_key="another-key-0000").complete(Q)
    assert again.cached and len(server.requests) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"system": "Be verbose."},
        {"max_tokens": 51},
        {"json_schema": {"type": "object"}},
        {"messages": [Message("user", "Who wrote Macbeth?")]},
    ],
)
def test_any_request_change_is_a_miss(server: FakeServer, tmp_path: Path, change: dict) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, anthropic_ok("{}")))
    llm = make_llm(f"anthropic:claude-haiku-4-5@{server.url}", s, api_key=KEY)
    base = {"messages": Q, "system": "Be brief.", "max_tokens": 50, "json_schema": None}
    llm.complete(**base)
    c = llm.complete(**{**base, **change})
    assert c.cached is False and len(server.requests) == 2


def test_model_and_base_url_are_part_of_the_key() -> None:
    args = dict(system=None, messages=Q, max_tokens=10, json_schema=None)
    k = cache_key(provider="openai-compatible", model="m", base_url="http://a/v1", **args)
    assert k != cache_key(provider="openai-compatible", model="m", base_url="http://b/v1", **args)
    assert k != cache_key(provider="openai-compatible", model="m2", base_url="http://a/v1", **args)
    assert k != cache_key(provider="openai", model="m", base_url="http://a/v1", **args)
    assert k == cache_key(provider="openai-compatible", model="m", base_url="http://a/v1", **args)


def test_errors_are_not_cached(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(500, {"error": {"message": "boom"}}, headers={"retry-after-ms": "1"}),
                  Reply(500, {"error": {"message": "boom"}}, headers={"retry-after-ms": "1"}),
                  Reply(200, anthropic_ok("fine")))
    llm = make_llm(f"anthropic:claude-haiku-4-5@{server.url}", s, api_key=KEY)
    with pytest.raises(ProviderResponseError):
        llm.complete(Q)
    c = llm.complete(Q)
    assert c.text == "fine" and not c.cached


def test_cache_survives_reopening(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, chat_ok("persisted")))
    spec = f"openai-compatible:llama3.1:8b@{server.url}"
    ask(make_llm(spec, s))
    open_cache(s.cache_dir).close()  # drop the process-wide connection, as a new process would
    c = make_llm(spec, s).complete(Q)
    assert c.cached and c.text == "persisted" and len(server.requests) == 1


def test_concurrent_calls_are_safe(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, chat_ok("same reply", 3, 2)))
    llm = make_llm(f"openai-compatible:m@{server.url}", s)
    prompts = [[Message("user", f"question {i}")] for i in range(40)]
    errors: list[BaseException] = []

    def work(chunk: list[list[Message]]) -> None:
        try:
            for p in chunk:
                ask(llm, p)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(prompts[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(server.requests) == 40
    assert all(llm.complete(p).cached for p in prompts)
    assert len(server.requests) == 40
    assert open_cache(s.cache_dir).stats()["entries"] == 40


def test_offline_is_not_cached(tmp_path: Path) -> None:
    s = settings(tmp_path)
    llm = make_llm("offline", s)
    assert isinstance(llm, OfflineLLM)
    with pytest.raises(ValueError):
        CachedLLM(llm, CompletionCache(tmp_path / "c.sqlite3"))


# --- the Reasoner's view: ledger + prices through the cache ----------------------------------
_ECHO = register(
    Task(
        name="providers_test_echo",
        prompt_name="PROVIDERS_TEST_ECHO",
        render=lambda inputs: f"Echo: {inputs['text']}",
        parse=lambda raw, inputs: raw.strip(),
        offline=lambda inputs, embedder: (inputs["text"], "identity"),
    )
)


def test_reasoner_accounts_real_and_cached_calls(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, anthropic_ok("hello", 1_000_000, 100_000)))
    llm = make_llm(f"anthropic:claude-haiku-4-5@{server.url}", s, api_key=KEY)
    ledger, prices = UsageLedger(), PriceTable()
    r = Reasoner(llm, HashingEmbedder(64), ledger=ledger, prices=prices)
    first = r.run("providers_test_echo", step="extract", text="hello")
    again = r.run("providers_test_echo", step="extract", text="hello")
    assert first.value == again.value == "hello"
    assert first.call.usage.cost_usd == pytest.approx(1.0 + 0.5)  # haiku 4.5: $1 in, $5 out per 1M
    assert again.call.cached and again.call.usage.cost_usd == 0
    step = ledger.by_step()["extract"]
    assert (step.calls, step.cached_calls, step.input_tokens) == (1, 1, 1_000_000)
    assert step.cost_usd == pytest.approx(1.5)


# --- issue 15: only accepted replies are replayed ------------------------------------------------
def _strict_parse(raw: str, inputs: dict) -> str:
    from kgviz.errors import LLMOutputError

    if not raw.strip().startswith("OK"):
        raise LLMOutputError(f"not an OK reply: {raw[:40]!r}")
    return raw.strip()


_STRICT = register(
    Task(
        name="providers_test_strict",
        prompt_name="PROVIDERS_TEST_STRICT",
        render=lambda inputs: f"Say OK about {inputs['text']}",
        parse=_strict_parse,
        offline=lambda inputs, embedder: ("OK", "identity"),
        usable=lambda value: "" if value != "OK maybe" else "the model hedged",
    )
)


def test_unaccepted_reply_is_kept_on_disk_but_never_replayed(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, chat_ok("first")), Reply(200, chat_ok("second")))
    llm = make_llm(f"openai-compatible:m@{server.url}", s)
    assert llm.complete(Q).text == "first"  # nobody accepted it
    again = llm.complete(Q)
    assert again.text == "second" and not again.cached and len(server.requests) == 2
    cache = open_cache(s.cache_dir)
    assert cache.stats()["entries"] == 0 and cache.stats()["unaccepted"] == 1
    assert [text for _, text, _ in cache.rejected()] == ["second"]  # the failed reply is not lost


def test_reasoner_caches_only_replies_its_task_parsed(server: FakeServer, tmp_path: Path) -> None:
    from kgviz.errors import LLMOutputError

    s = settings(tmp_path)
    server.script(Reply(200, chat_ok("garbage")), Reply(200, chat_ok("OK fine")))
    r = Reasoner(make_llm(f"openai-compatible:m@{server.url}", s), HashingEmbedder(64))
    with pytest.raises(LLMOutputError) as info:
        r.run("providers_test_strict", text="x")
    assert info.value.call.raw_output == "garbage"  # type: ignore[attr-defined]
    assert [reason for _, _, reason in open_cache(s.cache_dir).rejected()] == ["not an OK reply: 'garbage'"]
    assert r.run("providers_test_strict", text="x").value == "OK fine"  # the server was asked again
    replay = r.run("providers_test_strict", text="x")
    assert replay.call.cached and replay.value == "OK fine" and len(server.requests) == 2


def test_a_value_the_task_calls_unusable_is_not_replayed(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, chat_ok("OK maybe")), Reply(200, chat_ok("OK")))
    r = Reasoner(make_llm(f"openai-compatible:m@{server.url}", s), HashingEmbedder(64))
    assert r.run("providers_test_strict", text="y").value == "OK maybe"  # returned, not cached
    assert r.run("providers_test_strict", text="y").value == "OK"
    assert len(server.requests) == 2


def test_legacy_cached_failure_is_rejected_and_reasked_in_the_same_run(server: FakeServer, tmp_path: Path) -> None:
    import sqlite3

    s = settings(tmp_path)
    spec = f"openai-compatible:m@{server.url}"
    server.script(Reply(200, chat_ok("garbage from an old kgviz")), Reply(200, chat_ok("OK now")))
    llm = make_llm(spec, s)
    c = llm.complete([Message("user", "Say OK about z")], max_tokens=1024)
    cache = open_cache(s.cache_dir)
    path = cache.path
    cache.close()
    # rebuild the file as an older kgviz wrote it: no accepted/rejection columns, every row replayed
    con = sqlite3.connect(path)
    rows = con.execute("SELECT key, provider, model, text, reply_model, input_tokens, output_tokens, latency_s, raw, "
                       "created FROM completions").fetchall()
    con.execute("DROP TABLE completions")
    con.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, "
                "text TEXT NOT NULL, reply_model TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER "
                "NOT NULL, latency_s REAL NOT NULL, raw TEXT NOT NULL, created REAL NOT NULL)")
    con.executemany("INSERT INTO completions VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    assert c.text == "garbage from an old kgviz"
    r = Reasoner(make_llm(spec, s), HashingEmbedder(64))
    res = r.run("providers_test_strict", text="z")
    assert res.value == "OK now" and not res.call.cached and len(server.requests) == 2
    assert r.run("providers_test_strict", text="z").call.cached


def test_refresh_reasks_but_a_failed_refresh_keeps_the_good_answer(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    spec = f"openai-compatible:m@{server.url}"
    server.script(Reply(200, chat_ok("good")), Reply(200, chat_ok("worse")))
    ask(make_llm(spec, s))
    fresh = make_llm(spec, s, refresh=True)
    assert fresh.complete(Q).text == "worse" and len(server.requests) == 2  # asked despite the cache
    replay = make_llm(spec, s).complete(Q)  # "worse" was never accepted: the good answer stays
    assert replay.cached and replay.text == "good"
