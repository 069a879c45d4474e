"""The Trace page's widgets and renderers: question, method + parameter form, the cached run, the
step player (kgviz.viz.trace_player: graph and step panel in one iframe that steps in the
browser) and the final context and answer.

Runs are kept in ``st.session_state`` keyed by everything that changes their result (database,
embedder, LLM, method, question, parameters, preset), so replaying or switching back to an
earlier setting never re-runs a method; a changed parameter changes the key and runs just that
method once. Stepping never reruns the script at all. Document and LLM text reaches the page only
through ``md_text``, ``st.code``, dataframes or the player's JSON (all rendered as text).
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from kgviz import run as runner  # looked up at call time, so tests can count run_method calls
from kgviz.methods import algorithm_lines
from kgviz.methods.base import MethodContext, param_choices, param_label
from kgviz.methods.registry import get_method, list_methods
from kgviz.run import Run
from kgviz.ui import actions, resources
from kgviz.ui.render import OFFLINE_LABEL, md_text, plain, usage_frame
from kgviz.evaluate import labels as lb
from kgviz.ui.state import SAMPLE_DIR, AppContext, export_text
from kgviz.viz import trace as vt
from kgviz.viz import trace_player as tp
from kgviz.viz.labels import TraceLinks, fetch_links

K_QUESTION = "kgviz_trace_question"
K_SAMPLE = "kgviz_trace_sample"
K_METHOD = "kgviz_trace_method"
K_PRESET = "kgviz_trace_preset"
K_AUTO = "kgviz_trace_auto"
K_RUNS = "kgviz_trace_runs"  # run key -> Run
K_FRAMES = "kgviz_trace_frames"  # (run key, the run's player page)
K_BUILT = "kgviz_trace_built"  # (run key, the run's frames and labels: the player's and the lesson's)
K_LINKS = "kgviz_trace_links"  # run key -> TraceLinks (its facts' subject/object, from the store)
K_STARTED = "kgviz_trace_started"  # the user has pressed Run at least once
K_PRESENT = "kgviz_trace_present"  # presentation mode (also ?present=1 in the URL)
K_LESSON = "kgviz_trace_lesson"  # the lesson download button
Q_PRESENT = "present"
NO_PRESET = "(defaults)"
MAX_RUNS = 24  # runs kept per session; the oldest goes first
PLAYER = tp.PlayerParams()
# presentation mode: the player (bar, timeline, graph, panel) fits a 1280×720 projector below
# Streamlit's header (about 60 px), so nothing needs scrolling and the controls stay visible
PRESENT_PLAYER = tp.PlayerParams(present=True, height=640)
SAMPLE_QUESTIONS = SAMPLE_DIR.parent / "questions.jsonl"


# --- question ------------------------------------------------------------------------------------
def sample_questions(path: Path = SAMPLE_QUESTIONS) -> list[str]:
    """The sample questions (empty when the file is missing: the page then offers typing only)."""
    if not path.is_file():
        return []
    from kgviz.evaluate.qa import load_questions

    return [q.question for q in load_questions(path)]


def question_input() -> str:
    """A sample-question picker that fills the question box, and the box itself."""
    samples = sample_questions()

    def _pick() -> None:
        if st.session_state.get(K_SAMPLE):
            st.session_state[K_QUESTION] = st.session_state[K_SAMPLE]

    if samples:
        st.selectbox("Pick a sample question (or type your own below)", ["", *samples], key=K_SAMPLE,
                     on_change=_pick, format_func=lambda q: q or "—")
    return str(st.text_input("Question", key=K_QUESTION, placeholder="Ask something the documents answer")).strip()


# --- method and parameters -----------------------------------------------------------------------
@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str  # "bool" | "int" | "float" | "choice" | "text"
    default: Any
    doc: str
    choices: tuple[str, ...] = ()
    label: str = ""  # the field's declared label (kgviz.methods.base.param_label)


def param_specs(params_cls: type) -> list[ParamSpec]:
    """One widget description per field of a method's Params dataclass, in field order: the kind
    of widget from the field's type; label, doc and choices as the field declares them."""
    specs: list[ParamSpec] = []
    for f in dataclasses.fields(params_cls):
        default = f.default if f.default is not dataclasses.MISSING else None
        doc, label = str(f.metadata.get("doc", "")), param_label(params_cls, f.name)
        if isinstance(default, bool):
            specs.append(ParamSpec(f.name, "bool", default, doc, label=label))
        elif isinstance(default, int):
            specs.append(ParamSpec(f.name, "int", default, doc, label=label))
        elif isinstance(default, float):
            specs.append(ParamSpec(f.name, "float", default, doc, label=label))
        elif isinstance(default, str):
            declared = param_choices(params_cls, f.name)
            choices = declared if default in declared else (default, *declared)
            specs.append(ParamSpec(f.name, "choice" if len(choices) > 1 else "text", default, doc, choices, label))
        # other field types (tuples, nested dataclasses) keep the preset's value: no widget
    return specs


def method_picker() -> str:
    names = list_methods()
    return str(st.selectbox("Method", names, key=K_METHOD, format_func=lambda n: f"{get_method(n).title} — {n}"))


def preset_picker(method_name: str) -> str:
    """The chosen preset name, or "" for the Params defaults."""
    presets = list(get_method(method_name).presets)
    preset = st.selectbox("Preset", [NO_PRESET, *presets], key=f"{K_PRESET}|{method_name}",
                          help="Parameter sets from the paper or its public code; the fields below start there.")
    return "" if preset == NO_PRESET else str(preset)


def params_form(method_name: str, preset: str) -> dict[str, Any]:
    """Parameter values from one widget per Params field. The widgets start at the preset's values
    (their keys include the preset, so picking another preset resets them)."""
    method = get_method(method_name)
    base = method.presets[preset] if preset else method.Params()
    specs = param_specs(method.Params)
    values: dict[str, Any] = {}
    if not specs:
        st.caption("This method has no parameters.")
        return values
    with st.expander(f"Parameters ({len(specs)})", expanded=False):
        cols = st.columns(3)
        for i, spec in enumerate(specs):
            with cols[i % 3]:
                key = f"kgviz_trace_p|{method_name}|{preset}|{spec.name}"
                values[spec.name] = _param_widget(spec, getattr(base, spec.name), key, str(method.paper))
    return values


PAPER_NAMES = {"001": "the KG-RAG paper", "002": "the KG-Retriever paper", "003": "the KG-Infused RAG paper",
               "004": "the KET-RAG paper"}
_PAPER_REF = re.compile(r"\bpaper (00[1-4])\b")


def param_help(name: str, doc: str, paper: str = "") -> str:
    """The field's doc with "paper 00N" spelled out, the paper named for its § references, and the
    raw field name (what the CLI, presets and the run's JSON use)."""
    text = _PAPER_REF.sub(lambda m: PAPER_NAMES[m.group(1)], doc)
    if paper in PAPER_NAMES and "§" in text:
        text += f" (§ = section of {PAPER_NAMES[paper]})"
    return f"{md_text(text)} — field `{name}`" if text else f"field `{name}`"


def _param_widget(spec: ParamSpec, value: Any, key: str, paper: str = "") -> Any:
    # the starting value goes into session state, not value=: with value= as well, Streamlit warns
    # and a value kept across a page visit (keep_inputs) would fight the default
    label, help_ = md_text(spec.label or spec.name), param_help(spec.name, spec.doc, paper)
    if spec.kind == "bool":
        st.session_state.setdefault(key, bool(value))
        return bool(st.checkbox(label, key=key, help=help_))
    if spec.kind == "int":
        st.session_state.setdefault(key, int(value))
        low = 0 if int(value) >= 0 else None
        return int(st.number_input(label, min_value=low, step=1, key=key, help=help_))
    if spec.kind == "float":
        st.session_state.setdefault(key, float(value))
        if 0.0 <= float(value) <= 1.0:
            return round(float(st.slider(label, 0.0, 1.0, step=0.01, key=key, help=help_)), 4)
        return round(float(st.number_input(label, step=0.1, key=key, help=help_)), 6)
    if spec.kind == "choice":
        options = list(spec.choices) if value in spec.choices else [str(value), *spec.choices]
        st.session_state.setdefault(key, str(value))
        return str(st.selectbox(label, options, key=key, help=help_))
    st.session_state.setdefault(key, str(value))
    return str(st.text_input(label, key=key, help=help_))


# --- runs ----------------------------------------------------------------------------------------
def run_key(ctx: AppContext, method: str, question: str, params: dict[str, Any], preset: str, *,
            budget_tokens: int | None = None) -> str:
    """Everything that changes a run's result; the API key is deliberately not part of it. An
    explicit answer budget (the Compare page's) is its own element, never a key among the params;
    without one the key is the Trace page's, so the two pages share runs."""
    parts: list[Any] = [str(Path(ctx.db_dir).resolve()), ctx.embedder_spec, ctx.llm_spec, method, question,
                        preset, params]
    if budget_tokens is not None:
        parts.append({"answer_budget_tokens": int(budget_tokens)})
    return json.dumps(parts, sort_keys=True, default=str)


def cached_run(key: str) -> Run | None:
    return st.session_state.get(K_RUNS, {}).get(key)


def get_run(ctx: AppContext, method: str, question: str, params: dict[str, Any], preset: str, *,
            clicked: bool, auto: bool) -> Run | None:
    """The run for these inputs: from this session's cache, else run now when Run was clicked (or
    inputs changed after a first run and ``auto`` is on), else None. A run's facts' links (for the
    graph) are read from the store once and kept with it."""
    key = run_key(ctx, method, question, params, preset)
    found = cached_run(key)
    if found is not None:
        _keep_links(ctx, key, found)
        return found
    if not (clicked or (auto and st.session_state.get(K_STARTED))):
        return None
    mctx = MethodContext(resources.store(ctx), resources.reasoner(ctx))
    # Streamlit 1.67 draws a spinner as a transient that takes no slot, so the previous rerun's
    # "Press Run…" prompt in this slot stayed visible beside "Running…": an empty slot replaces it
    with st.empty().container(), st.spinner(f"Running {method}…"):
        result = runner.run_method(method, question, mctx, params, preset=preset or None)
    runs: dict[str, Run] = st.session_state.setdefault(K_RUNS, {})
    runs[key] = result
    while len(runs) > MAX_RUNS:
        runs.pop(next(iter(runs)))
    st.session_state[K_STARTED] = True
    _keep_links(ctx, key, result)
    return result


# --- facts' subject/object links -----------------------------------------------------------------
def _keep_links(ctx: AppContext, key: str, run: Run) -> None:
    held: dict[str, TraceLinks] = st.session_state.setdefault(K_LINKS, {})
    if key in held:
        return
    ids = vt.triple_ids(run.trace)
    held[key] = fetch_links(resources.store(ctx), ids) if ids else TraceLinks({}, {})
    while len(held) > MAX_RUNS:
        held.pop(next(iter(held)))


# --- the step viewer -----------------------------------------------------------------------------
def presentation_toggle() -> bool:
    """The "Presentation mode" toggle: on when the URL says ``?present=1``; the choice is kept for
    the session and written back into the URL, so a reload or a shared link keeps it."""
    if K_PRESENT not in st.session_state:
        st.session_state[K_PRESENT] = st.query_params.get(Q_PRESENT) == "1"
    on = bool(st.toggle("Presentation mode", key=K_PRESENT,
                        help="For a projector: labels and text at 16 px or more, the player fills the screen, "
                             "busy steps label only their key nodes."))
    if on and st.query_params.get(Q_PRESENT) != "1":
        st.query_params[Q_PRESENT] = "1"
    elif not on and Q_PRESENT in st.query_params:
        del st.query_params[Q_PRESENT]
    return on


def _built(run: Run, key: str, ctx: AppContext) -> tuple[list[vt.Frame], dict[str, str]]:
    """The run's frames and labels (``tp.run_frames``), made once per run and kept for the
    session: the player (in either presentation setting) and the lesson draw the same ones."""
    held = st.session_state.get(K_BUILT)
    if held is None or held[0] != key:
        algorithm_lines.annotate(run.method, run.trace)  # a run saved before steps named their line
        links = st.session_state.get(K_LINKS, {}).get(key)
        held = (key, tp.run_frames(run.trace, resources.store(ctx), links=links))
        st.session_state[K_BUILT] = held
    built: tuple[list[vt.Frame], dict[str, str]] = held[1]
    return built


def _player(run: Run, key: str, ctx: AppContext, params: tp.PlayerParams) -> str:
    """The run's player page, built once per run and presentation setting, kept for the session."""
    held = st.session_state.get(K_FRAMES)
    if held is None or held[0] != (key, params):
        page = tp.run_page(run.trace, resources.store(ctx), method=run.method, params=params,
                           built=_built(run, key, ctx))
        held = ((key, params), page)
        st.session_state[K_FRAMES] = held
    return held[1]


def step_viewer(run: Run, key: str, ctx: AppContext, *, present: bool = False) -> None:
    """The run's steps in one browser-side player (kgviz.viz.trace_player): previous / next /
    timeline / play at a chosen speed, the graph, the paper's algorithm with the step's line lit
    and the step panel all live in the iframe, so stepping never reruns the script, keeps zoom
    and pan, and the panel always matches the graph. In presentation mode the player scrolls
    itself into view and fills it."""
    if not run.trace:
        st.info("The run recorded no steps.")
        return
    params = PRESENT_PLAYER if present else PLAYER
    if not present:
        st.caption("Step with Previous / Next, the timeline, Play or the arrow keys (click the graph first). "
                   "Scroll to zoom, drag to pan: the view keeps your zoom and follows each step's nodes.")
    st.iframe(_player(run, key, ctx, params), height=tp.iframe_height(params))


def lesson_button(run: Run, ctx: AppContext, key: str) -> None:
    """Download this run as a lesson: one HTML file that plays offline, in presentation mode, made
    once per run for this session's reruns (``export_text``) from the frames the player drew
    (``_built``; ``key`` is the run's ``run_key``): only its page is made again."""
    from kgviz.viz.lesson import lesson_html

    store = resources.store(ctx)
    text = export_text(K_LESSON, (id(run), run.method, run.question, run.answer, len(run.trace)),
                       lambda: lesson_html([run], store, built=_built(run, key, ctx)))
    st.download_button("Download lesson (HTML)", text,
                       file_name=f"kgviz-lesson-{run.method}.html", mime="text/html", key=K_LESSON,
                       help="One self-contained file (player, algorithm box, steps; no server, no network) "
                            "to open from a USB stick. For two methods side by side: kgviz lesson … --method A --method B.")


# --- the outcome ---------------------------------------------------------------------------------
def run_error(run: Run) -> None:
    if run.error:
        st.error(md_text(f"{run.method} failed: {run.error}") + " — the trace below is partial.")


def _human(right: bool | None, note: str, yes: str, no: str) -> str:
    return ("no verdict" if right is None else (yes if right else no)) + (f" — {note}" if note else "")


def outcome(run: Run, ctx: AppContext | None = None) -> None:
    """The final context, the answer and the run's total usage; with ``ctx``, the human labels of
    this answer and its context items saved in the workspace (kgviz.evaluate.labels)."""
    labels = lb.load_labels(ctx.db_dir) if ctx is not None else lb.Labels()
    key = lb.label_key(run.question, run.method, run.answer)
    marks = labels.items_of(key)
    st.subheader("Retrieved context")
    items = run.context.items
    if items:
        st.dataframe(pd.DataFrame([{"#": n, "kind": i.kind, "score": i.score, "tokens": i.n_tokens,
                                    "source": plain(i.source), "text": plain(i.text),
                                    "your label": plain(_human(marks[i.id].relevant, marks[i.id].note, "relevant",
                                                               "irrelevant")) if i.id in marks else ""}
                                   for n, i in enumerate(items, 1)]),
                     hide_index=True, width="stretch")
        st.caption(f"{len(items)} item(s), {run.context.n_tokens:,} tokens")
    else:
        st.caption("No context was retrieved.")
    for name, note in run.context.notes.items():
        with st.expander(f"Note: {md_text(name)}"):
            st.text(plain(note))
    st.subheader("Answer")
    mode = OFFLINE_LABEL if run.mode == "offline" else run.mode
    if run.error and not run.answer:  # "Answered by …" would claim an answer that never came
        st.caption(f"No answer: the run failed ({md_text(mode)}).")
    elif run.mode == "offline":
        st.caption(f"{OFFLINE_LABEL}: an extractive answer picked from the context")
    else:
        st.caption(md_text(f"Answered by {run.mode}"))
    if run.answer:
        st.markdown(md_text(run.answer))
    mine, claims = labels.run(run.question, run.method, run.answer), labels.claims_of(key)
    if mine is not None or claims:
        said = [f"this answer {_human(mine.right, mine.note, 'right', 'wrong')}"] if mine is not None else []
        if claims:
            said.append(f"the judge's verdict right on {sum(c.right is True for c in claims)} and wrong on "
                        f"{sum(c.right is False for c in claims)} of its claims")
        st.caption(md_text("Your labels (Compare, Evaluate): " + "; ".join(said)))
    u = run.usage
    st.markdown("**Total usage**")
    c = st.columns(5)
    c[0].metric("LLM calls", u.calls)
    c[1].metric("tokens in / out", f"{u.input_tokens:,} / {u.output_tokens:,}")
    c[2].metric("cost", f"${u.cost_usd:.4f}")
    c[3].metric("retrieval", f"{run.retrieval_seconds:.2f} s")
    c[4].metric("total", f"{run.seconds:.2f} s")
    by_step = {f"{s.index + 1}. {s.title}": s.usage for s in run.trace if s.usage.calls or s.usage.total_tokens}
    if by_step:
        with st.expander("Usage by step"):
            st.dataframe(usage_frame(by_step), hide_index=True, width="stretch")


def check_graph(ctx: AppContext) -> bool:
    """True when the workspace has a graph to trace over; else says what to do."""
    if actions.workspace_has_graph(ctx):
        return True
    st.info("This workspace has no entities yet: build documents or load the sample first (Home or Build).")
    return False
