"""run_method / run_methods: the Run record, params resolution, error isolation, JSON round-trip.
Methods here are small stand-ins registered for the test; the real methods run on a real graph in
tests/methods/."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from kgviz.errors import ConfigError, GraphStoreError, UnknownMethodError
from kgviz.methods import base
from kgviz.methods.base import ContextItem, MethodContext, NodeRef, RetrievedContext, Tracer, param
from kgviz.methods.kg_retriever import KGRetrieverParams
from kgviz.methods.registry import get_method, list_methods
from kgviz.prompts.answer import INSUFFICIENT
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import Run, resolve_params, run_method, run_methods
from kgviz.types import Usage
from tests.support.methods import StandInMethod


@dataclass(frozen=True)
class EchoParams:
    n: int = param(2, "items returned (test)")
    loud: bool = param(False, "upper-case the items (test)")
    ratio: float = param(0.5, "unused (test)")


class Echo(StandInMethod):
    """Returns fixed evidence after one seed step."""

    name: ClassVar[str] = "echo"
    title: ClassVar[str] = "Echo"
    Params: ClassVar[type] = EchoParams
    presets: ClassVar[dict[str, Any]] = {"three": EchoParams(n=3)}

    def retrieve(self, question: str, ctx: MethodContext, params: Any, tracer: Tracer) -> RetrievedContext:
        texts = ["Love in the Ruins was directed by Scott Derrickson.", "It was shot in Los Angeles.",
                 "Scott Derrickson was born in 1966."][: params.n]
        tracer.step("seed", "fixed evidence", nodes=[NodeRef(f"c{i}", "Chunk", "chosen") for i in range(len(texts))])
        return RetrievedContext(items=[ContextItem(f"c{i}", "chunk", t.upper() if params.loud else t)
                                       for i, t in enumerate(texts)])


class Boom(StandInMethod):
    """Records two steps, then fails like a broken database would."""

    name: ClassVar[str] = "boom"
    title: ClassVar[str] = "Boom"
    Params: ClassVar[type] = EchoParams
    exc: ClassVar[Exception] = GraphStoreError("the database went away", hint="reopen the workspace")

    def retrieve(self, question: str, ctx: MethodContext, params: Any, tracer: Tracer) -> RetrievedContext:
        tracer.step("seed", "first")
        tracer.step("expand", "second")
        raise self.exc


class Bug(Boom):
    name: ClassVar[str] = "bug"
    exc: ClassVar[Exception] = ZeroDivisionError("division by zero")


@pytest.fixture
def ctx(monkeypatch: pytest.MonkeyPatch) -> MethodContext:
    for cls in (Echo, Boom, Bug):
        monkeypatch.setitem(base._METHODS, cls.name, cls)
    return MethodContext(store=None, reasoner=Reasoner(OfflineLLM(), HashingEmbedder()))


def test_run_records_answer_trace_usage_and_mode(ctx: MethodContext) -> None:
    run = run_method("echo", "Who directed Love in the Ruins?", ctx)
    assert run.ok and run.error == ""
    assert run.answer == "Scott Derrickson"
    assert [s.kind for s in run.trace] == ["seed", "answer"]
    assert [s.index for s in run.trace] == [0, 1]
    assert run.mode == "offline" and run.params == {"n": 2, "loud": False, "ratio": 0.5}
    assert run.usage.calls == 0  # offline heuristics are not LLM calls
    assert 0 < run.retrieval_seconds <= run.seconds


def test_params_dict_preset_and_instance(ctx: MethodContext) -> None:
    assert run_method("echo", "q?", ctx, preset="three").params["n"] == 3
    assert run_method("echo", "q?", ctx, {"loud": "true", "n": "1"}).params == {"n": 1, "loud": True, "ratio": 0.5}
    assert run_method("echo", "q?", ctx, {"n": 1}, preset="three").params["n"] == 1  # overrides on top
    assert run_method("echo", "q?", ctx, EchoParams(n=1)).context.items[0].id == "c0"
    method = get_method("kg-retriever")
    want = KGRetrieverParams(lam=0.3, strategy="attentive")
    assert resolve_params(method, {"lam": "0.3", "strategy": "attentive"}) == want
    assert resolve_params(method, preset="code").t_caps == "entities"


@pytest.mark.parametrize("params,preset,match", [
    ({"nope": 1}, None, "no parameter nope"),
    ({"n": "many"}, None, "must be a int"),
    ({"loud": "maybe"}, None, "must be a bool"),
    (None, "paper", "no preset 'paper'"),
    ([1, 2], None, "must be EchoParams or a dict"),
])
def test_invalid_params_raise_before_running(ctx: MethodContext, params: Any, preset: str | None, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        run_method("echo", "q?", ctx, params, preset=preset)


def test_method_params_validate_their_own_values() -> None:
    with pytest.raises(ConfigError, match="strategy"):
        resolve_params(get_method("kg-retriever"), {"strategy": "two-hop"})


def test_unknown_method_lists_the_available_ones(ctx: MethodContext) -> None:
    with pytest.raises(UnknownMethodError, match="no-retrieval") as info:
        run_method("kg-magic", "q?", ctx)
    assert "kgviz methods" in info.value.user_message()
    with pytest.raises(ConfigError):
        run_method("echo", "   ", ctx)


def test_registry_lists_the_built_in_methods_in_display_order() -> None:
    names = list_methods()
    for n in ("kg-retriever", "text-rag", "no-retrieval"):
        assert n in names
    assert names.index("kg-retriever") < names.index("text-rag") < names.index("no-retrieval")
    for n in names:
        m = get_method(n)
        assert m.name == n and m.Params() is not None  # every method's defaults construct
        assert all(isinstance(v, m.Params) for v in m.presets.values())


def test_a_failing_method_returns_its_partial_trace_and_a_readable_error(ctx: MethodContext) -> None:
    run = run_method("boom", "q?", ctx)
    assert not run.ok and run.answer == ""
    assert run.error == "the database went away — reopen the workspace"
    assert [s.kind for s in run.trace] == ["seed", "expand", "error"]
    assert run.trace[-1].detail == run.error
    bug = run_method("bug", "q?", ctx)
    assert bug.error == "ZeroDivisionError: division by zero"


def test_one_failure_does_not_stop_the_others(ctx: MethodContext) -> None:
    runs = run_methods(["echo", "boom", "bug", "no-retrieval"], "Who directed Love in the Ruins?", ctx)
    assert [r.method for r in runs] == ["echo", "boom", "bug", "no-retrieval"]
    assert [bool(r.error) for r in runs] == [False, True, True, False]
    assert runs[0].answer == "Scott Derrickson" and runs[3].answer == INSUFFICIENT


def test_run_methods_validates_everything_first(ctx: MethodContext) -> None:
    with pytest.raises(UnknownMethodError):
        run_methods(["echo", "kg-magic"], "q?", ctx)
    with pytest.raises(ConfigError, match="not among"):
        run_methods(["echo"], "q?", ctx, params={"boom": {"n": 1}})
    with pytest.raises(ConfigError, match="no parameter"):
        run_methods(["echo", "boom"], "q?", ctx, params={"boom": {"x": 1}})


def test_budget_reaches_the_answer_step(ctx: MethodContext) -> None:
    run = run_method("echo", "Who directed Love in the Ruins?", ctx, {"n": 3}, budget_tokens=12)
    data = run.trace[-1].data
    assert data["budget_tokens"] == 12 and data["used_tokens"] <= 12 and data["dropped"]


def test_no_retrieval_shows_one_step_then_answers_without_context(ctx: MethodContext) -> None:
    run = run_method("no-retrieval", "Who directed Love in the Ruins?", ctx)
    assert [s.kind for s in run.trace] == ["context", "answer"]
    assert "No retrieval" in run.trace[0].title and not run.context.items
    assert run.trace[1].llm is not None and run.trace[1].llm.prompt_name == "NO_CONTEXT"
    assert run.answer == INSUFFICIENT


def test_json_round_trip(ctx: MethodContext) -> None:
    for run in run_methods(["echo", "boom"], "Who directed Love in the Ruins?", ctx):
        back = Run.from_dict(json.loads(json.dumps(run.to_dict())))
        assert back == run
        assert back.to_dict() == run.to_dict()


def test_usage_round_trips_through_its_dict() -> None:
    u = Usage(input_tokens=7, output_tokens=3, calls=2, cached_calls=1, latency_s=0.25, cost_usd=0.01)
    d = u.to_dict()
    assert d["total_tokens"] == 10 and Usage.from_dict(d) == u
