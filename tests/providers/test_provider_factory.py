from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.fake_server import FakeServer, Reply, chat_ok

from kgviz.config import DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL, Settings
from kgviz.errors import ConfigError, MissingKeyError, ProviderError
from kgviz.providers.anthropic_llm import AnthropicLLM
from kgviz.providers.base import LLM
from kgviz.providers.cache import CachedLLM
from kgviz.providers.factory import (
    LOCAL_FREQUENCY_PENALTY,
    LOCAL_TEMPERATURE,
    LOCAL_TIMEOUT_S,
    REMOTE_TIMEOUT_S,
    make_llm,
    parse_llm_spec,
)
from kgviz.providers.offline import OfflineLLM
from kgviz.providers.openai_llm import OpenAIChatLLM, OpenAIResponsesLLM
from kgviz.types import Message


def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", db_dir=tmp_path / "db", timeout_s=7, max_retries=2)


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("offline", ("offline", "heuristics", None)),
        ("anthropic:claude-haiku-4-5", ("anthropic", "claude-haiku-4-5", None)),
        ("openai:gpt-5-mini", ("openai", "gpt-5-mini", None)),
        ("openai:gpt-5-mini@https://gateway.example/v1/", ("openai", "gpt-5-mini", "https://gateway.example/v1")),
        ("openai-compatible:llama3.1:8b@http://localhost:11434/v1",
         ("openai-compatible", "llama3.1:8b", "http://localhost:11434/v1")),
        ("  openai-compatible:qwen@http://10.0.0.2:8000/v1 ", ("openai-compatible", "qwen", "http://10.0.0.2:8000/v1")),
    ],
)
def test_parse_llm_spec(spec: str, expected: tuple) -> None:
    assert parse_llm_spec(spec) == expected


@pytest.mark.parametrize(
    "spec",
    ["", "auto", "claude", "anthropic:", "gemini:pro", "offline:x", "openai-compatible:llama3",
     "openai-compatible:m@localhost:11434", "openai:@http://x"],
)
def test_bad_llm_specs_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse_llm_spec(spec)


def test_offline_spec_and_offline_llm(tmp_path: Path) -> None:
    llm = make_llm("offline", settings(tmp_path))
    assert isinstance(llm, OfflineLLM) and isinstance(llm, LLM)
    assert (llm.provider, llm.model, llm.is_offline) == ("offline", "heuristics", True)
    with pytest.raises(ProviderError, match="heuristic"):
        llm.complete([Message("user", "hi")])


def test_auto_resolves_from_the_environment(tmp_path: Path) -> None:
    s = settings(tmp_path)
    assert isinstance(make_llm("auto", s, env={}), OfflineLLM)
    llm = make_llm("auto", s, env={"OPENAI_API_KEY": "sk-o"}, use_cache=False)
    assert isinstance(llm, OpenAIResponsesLLM) and llm.model == DEFAULT_OPENAI_MODEL
    llm = make_llm("auto", s, env={"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}, use_cache=False)
    assert isinstance(llm, AnthropicLLM) and llm.model == DEFAULT_ANTHROPIC_MODEL


@pytest.mark.parametrize("spec, var", [("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY"), ("openai:gpt-5-mini", "OPENAI_API_KEY")])
def test_missing_key_names_the_variable(tmp_path: Path, spec: str, var: str) -> None:
    with pytest.raises(MissingKeyError) as info:
        make_llm(spec, settings(tmp_path), env={})
    assert var in info.value.user_message()


def test_session_key_argument_and_settings_reach_the_client(tmp_path: Path) -> None:
    llm = make_llm("anthropic:claude-haiku-4-5", settings(tmp_path), api_key="sk-typed-in-app", env={}, use_cache=False)
    assert isinstance(llm, AnthropicLLM)
    assert llm._client.max_retries == 2
    assert "sk-typed-in-app" not in repr(llm)


def test_cache_wraps_online_llms_by_default(tmp_path: Path) -> None:
    s = settings(tmp_path)
    llm = make_llm("openai:gpt-5-mini", s, env={"OPENAI_API_KEY": "sk-env-key"})
    assert isinstance(llm, CachedLLM) and isinstance(llm, LLM)
    assert (llm.provider, llm.model, llm.is_offline) == ("openai", "gpt-5-mini", False)
    assert "sk-env-key" not in repr(llm)
    assert isinstance(make_llm("openai:gpt-5-mini", s, env={"OPENAI_API_KEY": "k"}, use_cache=False), OpenAIResponsesLLM)


def test_openai_compatible_key_is_optional_but_used_when_set(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, chat_ok("a")), Reply(200, chat_ok("b")))
    spec = f"openai-compatible:llama3.1:8b@{server.url}"
    plain = make_llm(spec, s, env={}, use_cache=False)
    assert isinstance(plain, OpenAIChatLLM)
    plain.complete([Message("user", "x")])
    keyed = make_llm(spec, s, env={"OPENAI_API_KEY": "sk-local-proxy"}, use_cache=False)
    keyed.complete([Message("user", "x")])
    auths = [r.headers["authorization"] for r in server.requests]
    assert auths == ["Bearer not-needed", "Bearer sk-local-proxy"]
    assert all(r.path == "/chat/completions" for r in server.requests)


def test_embedder_spec_accepts_an_embedder_id() -> None:
    # regression: messages name embedders by id ("hashing-768") and the parser rejected it
    from kgviz.providers.factory import make_embedder, parse_embedder_spec

    assert parse_embedder_spec("hashing-768") == ("hashing", 768, None)
    assert parse_embedder_spec(" hashing-64 ") == parse_embedder_spec("hashing:64")
    emb, notice = make_embedder("hashing-64")
    assert emb.id == "hashing-64" and notice is None
    assert parse_embedder_spec(emb.id)[:2] == ("hashing", 64)
    # fastembed ids are specs already
    assert parse_embedder_spec("fastembed:BAAI/bge-small-en-v1.5") == ("fastembed", "BAAI/bge-small-en-v1.5", None)
    for bad in ("hashing-", "hashing-abc", "hashing-8", "hashing-768x"):
        with pytest.raises(ConfigError, match="hashing dimension"):
            parse_embedder_spec(bad)
    with pytest.raises(ConfigError) as info:
        parse_embedder_spec("hash-768")
    assert "hashing-<dim>" in info.value.user_message()


# --- issue 15: patience and loop damping for local CPU servers ------------------------------------
@pytest.mark.parametrize(
    "spec, want",
    [
        ("openai-compatible:qwen@http://127.0.0.1:8080/v1", LOCAL_TIMEOUT_S),
        ("openai-compatible:qwen@http://localhost:11434/v1", LOCAL_TIMEOUT_S),
        ("openai-compatible:qwen@http://[::1]:8080/v1", LOCAL_TIMEOUT_S),
        ("openai-compatible:qwen@http://10.0.0.2:8000/v1", REMOTE_TIMEOUT_S),  # a GPU box elsewhere
        ("anthropic:claude-haiku-4-5", REMOTE_TIMEOUT_S),
    ],
)
def test_default_timeout_depends_on_where_the_model_runs(tmp_path: Path, spec: str, want: float) -> None:
    unset = Settings(home=tmp_path / "home", db_dir=tmp_path / "db", max_retries=0)
    assert unset.timeout_s is None
    llm = make_llm(spec, unset, env={"ANTHROPIC_API_KEY": "k"}, use_cache=False)
    assert llm._client.timeout == want  # type: ignore[attr-defined]
    explicit = make_llm(spec, settings(tmp_path), env={"ANTHROPIC_API_KEY": "k"}, use_cache=False)
    assert explicit._client.timeout == 7  # type: ignore[attr-defined]  # KGVIZ_TIMEOUT_S wins


def test_settings_read_the_timeout_only_when_set() -> None:
    assert Settings.from_env({"KGVIZ_HOME": "/tmp/x"}).timeout_s is None
    assert Settings.from_env({"KGVIZ_HOME": "/tmp/x", "KGVIZ_TIMEOUT_S": "120"}).timeout_s == 120.0


def test_local_chat_requests_carry_a_frequency_penalty_and_greedy_decoding(server: FakeServer, tmp_path: Path) -> None:
    server.script(Reply(200, chat_ok("a")))
    local = make_llm(f"openai-compatible:qwen@{server.url}/v1", settings(tmp_path), env={}, use_cache=False)
    local.complete([Message("user", "x")])
    assert server.requests[0].json["frequency_penalty"] == LOCAL_FREQUENCY_PENALTY
    assert server.requests[0].json["temperature"] == LOCAL_TEMPERATURE == 0.0
    remote = OpenAIChatLLM("qwen", base_url=f"{server.url}/v1")  # the default adapter sends none
    remote.complete([Message("user", "x")])
    assert "frequency_penalty" not in server.requests[1].json
    assert "temperature" not in server.requests[1].json
