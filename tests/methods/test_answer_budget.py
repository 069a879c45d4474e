"""One budget per run (issue 12, item 4): the answer step uses the method's own context budget
(its ``budget_param``) unless a budget is given explicitly, so a preset's context reaches the answer
unchanged — KET's 'paper' preset (λ = 12,000) used to lose its keyword channel to a fixed
4,000-token answer cut."""
from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Iterator

import pytest

from kgviz.answer import DEFAULT_BUDGET_TOKENS
from kgviz.errors import ConfigError
from kgviz.graph.store import GraphStore
from kgviz.index.params import BuildParams
from kgviz.methods.base import MethodContext, TraceStep
from kgviz.methods.registry import get_method, list_methods
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import answer_budget, context_budget, run_method

ROOT = Path(__file__).resolve().parents[2]
EMB = HashingEmbedder(64)
PEOPLE = ["Ana Pell", "Oskar Linde", "Mira Tesk", "Jon Varr", "Kell Arden", "Lena Ostrow", "Ivo Brand", "Rhea Calm"]
TOWNS = ["Aldport", "Dunmore", "Halberg", "Veyn", "Sarnfield", "Castell", "Orrin", "Tarrow"]
FIRMS = ["Tesk Works", "Pell Glassworks", "Linde Foundry", "Varr Press", "Ostrow Mills", "Brand Yard"]


def _docs(n: int) -> list:
    from kgviz.ingest import document_from_text

    rng = random.Random(7)
    out = []
    for i in range(n):
        p, q, t, t2, f = rng.choice(PEOPLE), rng.choice(PEOPLE), rng.choice(TOWNS), rng.choice(TOWNS), rng.choice(FIRMS)
        out.append(document_from_text(
            f"{p} was born in {t} in {1850 + i}. {p} founded {f} in {1900 + i}. {f} is located in {t2}. "
            f"{q} worked for {f} from {1910 + i} to {1930 + i}. {q} married {p} in {1905 + i}. "
            f"The {t2} archive keeps the letters of {q} about the harbour of {t} and the {f} ledger of {1920 + i}.",
            title=f"Ledger {i}", source=f"ledger{i}.txt"))
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MethodContext]:
    """A corpus larger than DEFAULT_BUDGET_TOKENS, so a 12k-token KET context is bigger than the old cut."""
    from kgviz.index.pipeline import build

    store = GraphStore.open(tmp_path_factory.mktemp("big") / "db", embedder_id=EMB.id, dim=EMB.dim)
    build(_docs(90), store, Reasoner(OfflineLLM(), EMB), BuildParams(workers=2))
    yield MethodContext(store, Reasoner(OfflineLLM(), EMB))
    store.close()


def _answer(trace: list[TraceStep]) -> TraceStep:
    (s,) = [s for s in trace if s.kind == "answer"]
    return s


def _keyword_items(trace: list[TraceStep]) -> list[str]:
    (s,) = [s for s in trace if s.kind == "context" and s.data.get("channel") == "keyword"]
    return list(s.data["items"])


QUESTION = "Who founded Tesk Works and where is it located?"


def test_ket_paper_preset_reaches_the_answer_step_whole(big: MethodContext) -> None:
    run = run_method("ket-rag", QUESTION, big, preset="paper")
    assert run.ok, run.error
    assert run.context.n_tokens > DEFAULT_BUDGET_TOKENS  # the old fixed cut would have dropped items here
    step = _answer(run.trace)
    assert step.data["budget_tokens"] == 12000 and step.data["budget_from"] == "param:context_limit"
    assert step.data["dropped"] == [] and step.data["truncated"] == []
    assert step.data["kept"] == [i.id for i in run.context.items]
    keyword = _keyword_items(run.trace)
    assert keyword and set(keyword) <= set(step.data["kept"])  # the θ split survives: keyword channel answered
    assert "the method's own context_limit" in step.detail


def test_an_explicit_budget_overrides_the_method_budget(big: MethodContext) -> None:
    """`--budget-tokens B` (and the Compare page) give every method the same answer budget; here
    one below the context, so the answer step cuts it and says so."""
    run = run_method("ket-rag", QUESTION, big, preset="paper", budget_tokens=DEFAULT_BUDGET_TOKENS)
    step = _answer(run.trace)
    assert step.data["budget_tokens"] == DEFAULT_BUDGET_TOKENS and step.data["budget_from"] == "explicit"
    assert step.data["used_tokens"] <= DEFAULT_BUDGET_TOKENS and step.data["dropped"]
    assert set(_keyword_items(run.trace)) & set(step.data["dropped"])  # the old defect, now only on request
    assert "a budget given for every method" in step.detail


def test_budget_follows_the_method_param_not_a_constant(big: MethodContext) -> None:
    run = run_method("keyword-rag", QUESTION, big, {"context_limit": 6000})
    step = _answer(run.trace)
    assert step.data["budget_tokens"] == 6000 and not step.data["dropped"]
    assert run.context.n_tokens > DEFAULT_BUDGET_TOKENS
    # below the old constant too: the answer step takes the method's 2,000, not 4,000
    run = run_method("ket-full", QUESTION, big, {"context_limit": 2000})
    step = _answer(run.trace)
    assert (step.data["budget_tokens"], step.data["budget_from"]) == (2000, "param:context_limit")
    assert not step.data["dropped"] and 0 < run.context.n_tokens <= 2000


def test_every_declared_budget_param_is_an_int_field() -> None:
    declared = {}
    for name in list_methods():
        method = get_method(name)
        own = context_budget(method, method.Params())
        if own is not None:
            tokens, param = own
            assert param in {f.name for f in dataclasses.fields(method.Params)}
            declared[name] = param
        else:
            assert answer_budget(method, method.Params(), None) == (DEFAULT_BUDGET_TOKENS, "default")
    # text-rag's budget_tokens is declared on the equal-budget branch (kgviz.evaluate.budget)
    assert declared["ket-rag"] == declared["keyword-rag"] == declared["skeleton-rag"] == "context_limit"
    assert declared["kg-rag"] == "max_context_tokens"


def test_a_budget_param_that_is_not_an_int_is_a_config_error() -> None:
    class Odd:
        name = "odd"
        budget_param = "missing"

    with pytest.raises(ConfigError, match="missing"):
        context_budget(Odd(), object())  # type: ignore[arg-type]


def test_no_preset_of_any_method_loses_context_to_the_answer_step(sample_graph: MethodContext) -> None:
    """The general check behind the KET defect: with no explicit budget, no method's context (any
    preset) is larger than what its answer step takes."""
    questions = [json.loads(line)["question"] for line in
                 (ROOT / "sample_data" / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    for name in list_methods():
        for preset in [None, *get_method(name).presets]:
            run = run_method(name, questions[2], sample_graph, preset=preset)
            assert run.ok, (name, preset, run.error)
            step = _answer(run.trace)
            assert not step.data["dropped"] and not step.data["truncated"], (name, preset)
            assert run.context.n_tokens <= step.data["budget_tokens"], (name, preset)
