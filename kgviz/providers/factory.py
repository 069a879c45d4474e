"""Spec strings -> providers.

LLM specs:
  offline                               deterministic task heuristics, no model
  anthropic:<model>[@<base_url>]        Anthropic Messages API (key: ANTHROPIC_API_KEY)
  openai:<model>[@<base_url>]           OpenAI Responses API (key: OPENAI_API_KEY)
  openai-compatible:<model>@<base_url>  Chat Completions on Ollama / vLLM / LM Studio (key optional)
  recorded:<file or folder>             replay recorded replies of a real model, nothing else
                                        (kgviz.providers.recorded; e.g. recorded:sample_recorded)
  auto                                  see kgviz.config.resolve_llm_spec
The optional ``@<base_url>`` on the first two is for gateways and proxies. Model names may hold
``:`` (Ollama's ``llama3.1:8b``), so only the first ``:`` separates the kind and only the first
``@`` separates the base URL.

Embedder specs: ``auto`` (the default: a local fastembed model if one loads, else hashing with a
notice; kgviz.providers.embedder_auto), ``hashing``, ``hashing:<dim>``, ``fastembed:<model>``,
``fastembed:<model>@<dir>``, ``fastembed:<model>+int8-activations@<dir>`` (the integer variant
kgviz makes locally, kgviz.providers.int8_activations). The spec parsers live in ``kgviz.provider_specs`` and are
re-exported here.

Patience (issue 15): a 1.5B model on a busy CPU core took 60–513 s per extraction call, so an
``openai-compatible`` server on a loopback address gets ``LOCAL_TIMEOUT_S`` unless
``KGVIZ_TIMEOUT_S`` says otherwise; remote APIs keep ``REMOTE_TIMEOUT_S``. Local chat servers
also get a mild ``frequency_penalty`` (``LOCAL_FREQUENCY_PENALTY``) against replies that loop
one line until max_tokens, and temperature 0 (``LOCAL_TEMPERATURE``: greedy decoding, so the same
chunk gives the same reply build after build; left unset, llama-server samples at its own default
and four sample paragraphs got 1,319 and 1,194 output tokens in two builds). Both are adapter
settings, not part of the cache key.
They are also streamed (``kgviz.providers.chat_stream``): a looping reply is cut early and the
time to the first token is kept for the build's time estimate (``kgviz.providers.speed``).

Keys come from the environment or from ``api_key`` (typed in the app for one session). They are
handed to the SDK client and nowhere else: not to the cache, traces, logs or reprs.
"""
from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import urlsplit
from typing import Mapping

from kgviz.config import Settings, resolve_llm_spec
from kgviz.errors import EmbedderUnavailableError
from kgviz.provider_specs import AUTO_LOAD_TIMEOUT_S, AutoEmbedderParams, parse_embedder_spec, parse_llm_spec  # parsers re-exported: callers parse specs here
from kgviz.providers import anthropic_llm, openai_llm
from kgviz.providers.base import LLM, Embedder
from kgviz.providers.cache import CachedLLM, open_cache
from kgviz.providers.embedder_auto import RecordedEmbedder, load_recorded, resolve_auto
from kgviz.providers.embedders import (
    DEFAULT_LOAD_TIMEOUT_S,
    FastEmbedEmbedder,
    HashingEmbedder,
)
from kgviz.providers.offline import OfflineLLM
from kgviz.providers.recorded import RecordedLLM
from kgviz.providers.retry import CallPolicy

KEY_VARS = {"anthropic": anthropic_llm.KEY_VAR, "openai": openai_llm.KEY_VAR, "openai-compatible": openai_llm.KEY_VAR}


REMOTE_TIMEOUT_S = 60.0  # hosted APIs answer an extraction call in seconds
LOCAL_TIMEOUT_S = 900.0  # ours: ~2x the slowest call measured on a CPU model (513 s)
LOCAL_FREQUENCY_PENALTY = 0.3  # ours: mild; triples repeat names, so more would hurt extraction
LOCAL_TEMPERATURE = 0.0  # ours: greedy on local servers (repeatable builds, a stable time estimate)


def is_loopback(base_url: str | None) -> bool:
    host = (urlsplit(base_url).hostname or "") if base_url else ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_timeout_s(kind: str, base_url: str | None) -> float:
    """Per-request timeout when KGVIZ_TIMEOUT_S is not set."""
    return LOCAL_TIMEOUT_S if kind == "openai-compatible" and is_loopback(base_url) else REMOTE_TIMEOUT_S


def make_llm(
    spec: str,
    settings: Settings,
    *,
    api_key: str | None = None,
    use_cache: bool = True,
    refresh: bool = False,
    env: Mapping[str, str] | None = None,
) -> LLM:
    """Build the LLM for ``spec`` ("auto" resolved from the environment), wrapped in the disk
    cache under ``settings.cache_dir`` unless ``use_cache`` is False (then nothing is read or
    written). ``refresh`` skips cache lookups but still stores accepted replies. Offline is never
    cached."""
    env = os.environ if env is None else env
    kind, model, base_url = parse_llm_spec(resolve_llm_spec(spec, env))
    if kind == "offline":
        return OfflineLLM()
    if kind == "recorded":  # a recording is its own cassette: nothing to cache, no key needed
        return RecordedLLM(model)
    key = api_key or env.get(KEY_VARS[kind]) or None
    timeout = settings.timeout_s if settings.timeout_s is not None else default_timeout_s(kind, base_url)
    policy = CallPolicy(timeout_s=timeout, max_retries=settings.max_retries)
    llm: LLM
    if kind == "anthropic":
        llm = anthropic_llm.AnthropicLLM(model, api_key=key, base_url=base_url, policy=policy)
    elif kind == "openai":
        llm = openai_llm.OpenAIResponsesLLM(model, api_key=key, base_url=base_url, policy=policy)
    else:
        assert base_url is not None  # parse_llm_spec guarantees it
        local = is_loopback(base_url)  # streamed: loops cut early, prompt/generation timed (chat_stream)
        llm = openai_llm.OpenAIChatLLM(model, base_url=base_url, api_key=key, policy=policy,
                                       frequency_penalty=LOCAL_FREQUENCY_PENALTY if local else None,
                                       temperature=LOCAL_TEMPERATURE if local else None,
                                       stream=local)
    if use_cache:
        return CachedLLM(llm, open_cache(settings.cache_dir), refresh=refresh)
    return llm


def make_embedder(
    spec: str,
    *,
    load_timeout_s: float | None = None,
    fallback: bool = True,
    cache_dir: str | Path | None = None,
    auto: AutoEmbedderParams | None = None,
    recorded: RecordedEmbedder | None = None,
) -> tuple[Embedder, str | None]:
    """-> (embedder, notice). ``notice`` is None, or a sentence for the UI saying that fastembed
    could not be loaded, why, and that the hashing embedder is used instead. With
    ``fallback=False`` the EmbedderUnavailableError is raised instead. A malformed spec always
    raises ConfigError.

    ``auto`` resolves with ``auto`` (default: from the environment; its own time budget, not
    ``load_timeout_s``). ``load_timeout_s`` None: DEFAULT_LOAD_TIMEOUT_S for a model that may come
    from the hub, auto's budget (AUTO_LOAD_TIMEOUT_S) for a local directory, which downloads nothing
    and only has to be read (a busy machine took over 5 s). With ``recorded`` (what an existing workspace was built with) ``auto``
    loads exactly that embedder, or raises EmbedderUnavailableError: a workspace is never
    queried with another embedder."""
    kind, arg, directory = parse_embedder_spec(spec)
    if kind == "auto":
        params = auto if auto is not None else AutoEmbedderParams.from_env()
        if recorded is not None:
            again = load_recorded(recorded, params)
            if again is not None:
                return again, None
            kind, arg, directory = parse_embedder_spec(recorded.embedder_id)  # ConfigError: not ours
        else:
            emb, notice = resolve_auto(params)
            if notice and not fallback:
                raise EmbedderUnavailableError(notice)
            return emb, notice
    if kind == "hashing":
        return HashingEmbedder(int(arg)), None
    if load_timeout_s is None:
        load_timeout_s = AUTO_LOAD_TIMEOUT_S if directory else DEFAULT_LOAD_TIMEOUT_S
    try:
        return FastEmbedEmbedder(str(arg), directory, load_timeout_s=load_timeout_s, cache_dir=cache_dir), None
    except EmbedderUnavailableError as exc:
        if not fallback:
            raise
        substitute = HashingEmbedder()
        notice = f"Using the offline hashing embedder ({substitute.id}) instead of fastembed:{arg}: {exc}."
        if exc.hint:
            notice += f" To use fastembed: {exc.hint}."
        return substitute, notice

