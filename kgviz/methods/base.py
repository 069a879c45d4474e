"""The method framework: retrieval-only methods that record a step trace.

A method answers nothing itself. ``Method.retrieve(question, ctx, params, tracer)`` returns a
typed ``RetrievedContext``; ``kgviz.answer`` then produces the answer with one shared prompt, so
methods differ only in what they retrieve. Every method records ``TraceStep``s through a
``Tracer``; the viz layer turns them into frames. Nothing here knows about pyvis or Streamlit.
"""
from __future__ import annotations

import functools
import json
import time
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, Callable, ClassVar, Literal, Mapping, Protocol, Sequence, TypeVar

from kgviz.errors import ConfigError
from kgviz.graph.protocol import GraphStore
from kgviz.reasoning import LLMCall, Reasoner, TaskResult
from kgviz.types import Usage


StepKind = Literal["seed", "expand", "score", "select", "prune", "llm", "context", "answer", "error"]
Role = Literal["candidate", "chosen", "rejected", "seed", "context"]


@dataclass
class NodeRef:
    """A graph element a step touched. ``table`` is the Kùzu table (Entity, Triple, Chunk,
    SubChunk, Document, Keyword); ``role`` says what the step did with it.

    On a step that chooses (select / score, and any step with chosen and rejected nodes) ``score``
    is the number that decided the node's fate, the same one ``TraceStep.scores`` holds for it;
    ``score_parts`` names its terms where it is a formula (similarity, bonus, penalty …: they add
    up to ``score`` unless the step says otherwise), ``rank`` is the node's place (1 = first) in
    the order the choice was made, and ``reason`` says why a node was not taken although it
    shows a higher score than a taken one (over budget, below λ, the chooser's pick …), or why
    a node was taken out of score order."""

    id: str
    table: str
    role: Role = "candidate"
    label: str = ""
    score: float | None = None
    score_parts: dict[str, float] = field(default_factory=dict)
    rank: int | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in _OPTIONAL_NODE_KEYS:  # absent unless set: traces saved before the fields stay comparable
            if not d[key]:
                del d[key]
        return d


_OPTIONAL_NODE_KEYS = ("score_parts", "rank", "reason")


@dataclass
class EdgeRef:
    """An edge a step touched, between two node ids. ``rel`` is the relation label or rel table."""

    source: str
    target: str
    rel: str
    role: Role = "candidate"
    score: float | None = None


def record_data(record: Any) -> dict[str, Any]:
    """A typed step record as ``TraceStep.record``: its type, the algorithm line it names (``LINE``)
    and its fields, in the shapes JSON reads back (tuples as lists, keys as strings), so a step
    equals itself after a saved trace's round trip. It is what ``json.loads(json.dumps(...))``
    gave, made in one walk (``_plain``): ``asdict`` deep-copied every candidate a record lists
    before the round trip copied it again (issue 28), and the round trip itself was ~10% of
    kg-rag's retrieval on HotpotQA (issue 29)."""
    data: dict[str, Any] = _plain({"type": type(record).__name__, "line": record.LINE, **_fields(record)})
    return data


def _fields(obj: Any) -> dict[str, Any]:
    """A dataclass instance's fields by name, in their order, values as they are (``_plain``
    comes back here for a nested one); anything else is not JSON, as it was not before."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in fields(obj)}
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _plain(obj: Any) -> Any:
    """``obj`` as a JSON round trip returns it (``json.dumps(obj, default=_fields)`` then
    ``json.loads``), the way Python's encoder reads each type: a subclass of str, int or float
    comes back as the plain value, a list, tuple or NamedTuple as a list, a dict with its keys
    as ``_key`` writes them, a dataclass as its fields; anything else is a TypeError."""
    if type(obj) in _LEAVES:
        return obj
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, int):
        return int.__int__(obj)
    if isinstance(obj, float):
        return float.__float__(obj)
    if isinstance(obj, (list, tuple)):
        return [v if type(v) in _LEAVES else _plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k if type(k) is str else _key(k): v if type(v) in _LEAVES else _plain(v) for k, v in obj.items()}
    return _plain(_fields(obj))


_LEAVES = frozenset({str, int, float, bool, type(None)})  # values JSON gives back as they are


def _key(key: Any) -> str:
    """A dict key as JSON writes it (the encoder's rules, in its order)."""
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, float):
        return json.dumps(float.__float__(key))  # repr, or NaN / Infinity / -Infinity
    if key is True or key is False or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


@dataclass
class TraceStep:
    index: int
    kind: StepKind
    title: str
    detail: str = ""
    nodes: list[NodeRef] = field(default_factory=list)
    edges: list[EdgeRef] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    llm: LLMCall | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)  # method-specific extras (budgets, round no.)
    # why this step departs from the method's paper, in one line ("" = the step is the paper's):
    # a choice of ours, a reconstruction, or a paper step the graph or settings cannot follow
    ours: str = ""
    # the typed step record the step narrates, serialised (type, algorithm line, fields; e.g.
    # kgviz.methods.ket_records); {} for a step written without one
    record: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        # the record is in JSON's shapes already (record_data): copied by a JSON round trip, since
        # asdict's deep copy of every candidate it lists was half the time of a run's to_dict (the
        # case file's JSON on the Compare page, issue 28)
        d = asdict(replace(self, nodes=[], record={}))
        del d["record"]
        if self.record:  # absent unless set: traces of steps without a record stay as they were
            d["record"] = json.loads(json.dumps(self.record))
        d["nodes"] = [n.to_dict() for n in self.nodes]
        d["llm"] = self.llm.to_dict() if self.llm else None
        d["usage"] = self.usage.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TraceStep":
        d = dict(d)
        usage = Usage.from_dict(d.pop("usage", {}))
        llm = d.pop("llm", None)
        return cls(
            nodes=[NodeRef(**n) for n in d.pop("nodes", [])],
            edges=[EdgeRef(**e) for e in d.pop("edges", [])],
            llm=LLMCall.from_dict(llm) if llm else None,
            usage=usage,
            **d,
        )


def mark_ours(step: TraceStep, *reasons: str) -> None:
    """Add reasons (empty ones skipped) to ``step.ours``, joined by '; ' and each kept once."""
    have = [r for r in step.ours.split("; ") if r]
    step.ours = "; ".join(dict.fromkeys(have + [r for r in reasons if r]))


class Tracer:
    """Collects steps. ``reason`` wraps ``Reasoner.run`` so the LLM call lands in the step."""

    def __init__(self, reasoner: Reasoner | None = None) -> None:
        self.steps: list[TraceStep] = []
        self.reasoner = reasoner
        self._t = time.perf_counter()

    def step(self, kind: StepKind, title: str, detail: str = "", **kw: Any) -> TraceStep:
        now = time.perf_counter()
        llm: LLMCall | None = kw.pop("llm", None)
        s = TraceStep(len(self.steps), kind, title, detail, llm=llm, latency_s=now - self._t, **kw)
        if llm is not None:
            s.usage = s.usage + llm.usage
        self._t = now
        self.steps.append(s)
        return s

    def reason(self, task: str, *, title: str, detail: str = "", kind: StepKind = "llm",
               nodes: list[NodeRef] | None = None, edges: list[EdgeRef] | None = None,
               ours: str = "", **inputs: Any) -> tuple[Any, TraceStep]:
        """Run a reasoning task and record it as one step. Parse errors still record the step
        (with the raw output) before re-raising."""
        if self.reasoner is None:
            raise RuntimeError("Tracer has no reasoner")
        try:
            res: TaskResult = self.reasoner.run(task, step=task, **inputs)
        except Exception as exc:
            call = getattr(exc, "call", None)
            self.step("error", f"{title} failed", str(exc), llm=call)
            raise
        s = self.step(kind, title, detail, llm=res.call, nodes=nodes or [], edges=edges or [], ours=ours)
        return res.value, s

    @property
    def usage(self) -> Usage:
        total = Usage()
        for s in self.steps:
            total = total + s.usage
        return total


@dataclass
class ContextItem:
    """One piece of retrieved evidence. ``kind`` is chunk | subchunk | triple | entity | note."""

    id: str
    kind: str
    text: str
    score: float | None = None
    n_tokens: int = 0
    source: str = ""  # provenance: chunk id / doc title


@dataclass
class RetrievedContext:
    items: list[ContextItem] = field(default_factory=list)
    node_ids: list[str] = field(default_factory=list)  # every graph node the context came from
    notes: dict[str, str] = field(default_factory=dict)  # e.g. KG-Infused notes, expanded query
    # source text the method read to write its own words (a "note" item) but did not hand to the
    # answer step: never rendered for the answer, only the claim judge's evidence for the note
    sources: list[ContextItem] = field(default_factory=list)

    @property
    def n_tokens(self) -> int:
        return sum(i.n_tokens for i in self.items)

    def render(self) -> str:
        """The text block the shared answer step sees (numbered evidence)."""
        return "\n".join(f"[{n}] {i.text}" for n, i in enumerate(self.items, 1))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["n_tokens"] = self.n_tokens
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RetrievedContext":
        return cls(items=[ContextItem(**i) for i in d.get("items", [])],
                   node_ids=list(d.get("node_ids", [])), notes=dict(d.get("notes", {})),
                   sources=[ContextItem(**i) for i in d.get("sources", [])])


@dataclass
class MethodContext:
    """What a method may use: the graph store, the reasoner (LLM or offline), the embedder."""

    store: GraphStore  # the Protocol of kgviz.graph.protocol: methods never import store.py (kuzu)
    reasoner: Reasoner

    @property
    def embedder(self) -> Any:
        return self.reasoner.embedder


P = TypeVar("P")


class Method(Protocol[P]):
    """A retrieval method over its own Params type ``P`` (a frozen dataclass): ``retrieve`` gets a
    ``P``, so no method re-declares what its params are. (Class-level attributes; a ClassVar may
    not name a type variable, hence the plain annotations for ``Params`` and ``presets``.)"""

    name: ClassVar[str]
    title: ClassVar[str]  # e.g. "KG-RAG (Chain of Explorations)"
    paper: ClassVar[str]  # e.g. "001" or "baseline"
    Params: type[P]
    presets: Mapping[str, P]  # name -> Params instance ("paper", "code")
    # the Params field that caps the method's context in tokens; None when the method stops on its
    # own (T triples, k_p passages, a note): equal-budget evaluation (kgviz.evaluate.budget) sets
    # this field to B, and the answer step's budget B caps the others
    budget_param: ClassVar[str | None]
    # True only for the no-retrieval baseline: the answer step asks NO_CONTEXT (the model's own
    # memory) instead of ANSWER over a context, and the funnel and scoring read no kept context
    no_context: ClassVar[bool]

    def retrieve(self, question: str, ctx: MethodContext, params: P, tracer: Tracer) -> RetrievedContext: ...


_METHODS: dict[str, Callable[[], Method[Any]]] = {}


# the class attributes of ``Method``: a Protocol is not checked at run time, so ``register`` checks
# them (a missing one would otherwise surface as an AttributeError in the middle of a run)
_DECLARED = ("name", "title", "paper", "Params", "presets", "budget_param", "no_context")


def register(cls: type) -> type:
    """Class decorator: make a method available by its ``name``."""
    missing = [a for a in _DECLARED if not hasattr(cls, a)]
    if missing:
        raise TypeError(f"method class {cls.__name__} does not declare {', '.join(missing)}")
    _METHODS[cls.name] = cls  # type: ignore[attr-defined]
    return cls


def registered() -> dict[str, Callable[[], Method[Any]]]:
    return dict(_METHODS)


def param(default: Any, doc: str, *, label: str = "", choices: Sequence[str] | None = None,
          min: float | None = None, max: float | None = None) -> Any:
    """A Params field with its documentation (paper section, or "ours" where a paper is silent),
    its reader-facing ``label`` (forms show it; the raw field name stays what the CLI, presets and
    a run's JSON use) and the values it accepts: ``choices`` (for a str field typed ``Literal[...]``
    the Literal is the source and ``choices`` may be left out) and an inclusive ``min`` / ``max``.
    ``check_params`` enforces them; ``param_choices`` / ``param_range`` / ``param_label`` read them
    back (for forms and docs)."""
    meta: dict[str, Any] = {"doc": doc}
    if label:
        meta["label"] = label
    if choices is not None:
        meta["choices"] = tuple(choices)
    if min is not None:
        meta["min"] = min
    if max is not None:
        meta["max"] = max
    return field(default=default, metadata=meta)


@functools.lru_cache(maxsize=None)
def _limits(params_cls: type) -> dict[str, tuple[tuple[str, ...], float | None, float | None]]:
    """Field name -> (choices, min, max), read once per Params class (type hints are not cheap)."""
    hints = typing.get_type_hints(params_cls)
    out = {}
    for f in fields(params_cls):
        hint = hints.get(f.name)
        literal = tuple(str(a) for a in typing.get_args(hint)) if typing.get_origin(hint) is Literal else ()
        out[f.name] = (literal or tuple(f.metadata.get("choices", ())), f.metadata.get("min"), f.metadata.get("max"))
    return out


def param_choices(params_cls: type, name: str) -> tuple[str, ...]:
    """The allowed values of a choice field: its ``Literal[...]`` type, else ``choices=``; () if free."""
    return _limits(params_cls)[name][0]


def param_label(params_cls: type, name: str) -> str:
    """The field's declared ``label``, else its name with spaces for underscores, capitalised."""
    f = next((f for f in fields(params_cls) if f.name == name), None)
    if f is None:
        raise KeyError(f"{params_cls.__name__} has no field {name!r}")
    return str(f.metadata.get("label", "")) or name.replace("_", " ").capitalize()


def param_range(params_cls: type, name: str) -> tuple[float | None, float | None]:
    """(min, max) declared for a numeric field; None where unbounded."""
    return _limits(params_cls)[name][1:]


def check_params(params: Any, method: str) -> None:
    """Raise one ConfigError naming every field of ``params`` outside its declared choices or
    range (``param(..., choices=, min=, max=)`` or a ``Literal`` type). Called by __post_init__."""
    problems = []
    params_cls: type = type(params)
    for name, (allowed, low, high) in _limits(params_cls).items():
        value = getattr(params, name)
        if allowed and value not in allowed:
            problems.append(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
            continue
        if (low is not None and value < low) or (high is not None and value > high):
            span = (f"in [{low:g}, {high:g}]" if low is not None and high is not None
                    else f">= {low:g}" if low is not None else f"<= {high:g}")
            problems.append(f"{name} must be {span}, got {value}")
    if problems:
        raise ConfigError(f"{method}: " + "; ".join(problems))


def params_to_dict(params: Any) -> dict[str, Any]:
    return asdict(params) if is_dataclass(params) and not isinstance(params, type) else {}


def params_doc(params_cls: type) -> dict[str, str]:
    """Field name -> its documentation (from ``field(metadata={"doc": ...})``)."""
    return {f.name: str(f.metadata.get("doc", "")) for f in fields(params_cls)}
