"""Renderers shared by the pages: errors, usage/cost tables, ingest problems, build reports,
graphs and entity details. Pages pass kgviz objects in; nothing here computes results.

Document/LLM text is shown with ``st.text``/``st.code``/dataframes (rendered as text), never as
markdown or HTML, so it cannot inject markup.
"""
from __future__ import annotations

import logging
import traceback
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

import pandas as pd
import streamlit as st

from kgviz.errors import KgvizError
from kgviz.index.ground import fact_names, grounding_note
from kgviz.index.params import BuildReport, CostEstimate
from kgviz.ingest import LoadResult
from kgviz.ingest.loaders import skipped_line
from kgviz.safe_text import safe_text
from kgviz.types import Usage
from kgviz.viz import charts
from kgviz.viz.explore import EntityDetails
from kgviz.viz.graph_html import iframe_height

_log = logging.getLogger("kgviz.ui")

OFFLINE_LABEL = "offline heuristics — no LLM"
_MD_SPECIAL = set("\\`*_{}[]()#+!|<>~$")


def md_text(text: object) -> str:
    """Text from documents, LLMs, file names or error messages, made literal for Streamlit's
    markdown (alerts, captions and labels render markdown): no links, images, emphasis or
    colour directives can come from it, and paths keep their underscores. Control and bidi
    characters are shown escaped first (kgviz.safe_text), so a name cannot display reversed."""
    text = safe_text(" ".join(str(text).split()))
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


def plain(text: object) -> str:
    """Text shown verbatim (dataframe cells, select options, st.text/st.code): no markdown to
    neutralise, but bidi and control characters are still shown escaped."""
    return safe_text(text)


@contextmanager
def error_boundary(what: str = "") -> Iterator[None]:
    """Every page body runs inside one. An expected error (KgvizError: a locked database, a bad
    setting, a missing key ...) is one line a user can act on. Anything else is a bug: a short
    message, and the traceback in a collapsed expander for the report, instead of Streamlit's
    full-page trace. Streamlit's own st.stop/st.rerun are BaseExceptions and pass through."""
    prefix = f"{what}: " if what else ""
    try:
        yield
    except KgvizError as exc:
        st.error(prefix + md_text(exc.user_message()))
    except Exception as exc:  # noqa: BLE001 - the boundary: shown, not swallowed silently
        detail = traceback.format_exc()
        # logged as well, so the server log has it and tests can fail on a bug the page absorbed
        _log.error("unexpected error in %s", what or "a page", exc_info=exc)
        st.error(prefix + md_text(f"unexpected error ({type(exc).__name__}: {_first_line(exc)}). "
                                  "This is a kgviz bug; the details below help to report it."))
        with st.expander("Details"):
            st.code(safe_text(detail), language=None)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 200 else line[:199] + "…"


def mode_label(spec: str) -> str:
    return OFFLINE_LABEL if spec == "offline" else spec


# --- usage & cost --------------------------------------------------------------------------------
def usage_frame(by_step: Mapping[str, Usage], *, total: bool = True) -> pd.DataFrame:
    rows = [_usage_row(step, u) for step, u in by_step.items()]
    if total and rows:
        t = Usage()
        for u in by_step.values():
            t = t + u
        rows.append(_usage_row("total", t))
    return pd.DataFrame(rows, columns=["step", "calls", "cached", "input tokens", "output tokens", "$", "seconds"])


def _usage_row(step: str, u: Usage) -> dict[str, Any]:
    return {"step": step, "calls": u.calls, "cached": u.cached_calls, "input tokens": u.input_tokens,
            "output tokens": u.output_tokens, "$": round(u.cost_usd, 6), "seconds": round(u.latency_s, 3)}


def usage_table(by_step: Mapping[str, Usage], *, caption: str = "") -> None:
    if caption:
        st.caption(caption)
    st.dataframe(usage_frame(by_step), hide_index=True, width="stretch")


def cost_estimate(est: CostEstimate) -> None:
    """A CostEstimate from kgviz.index.pipeline.estimate_cost, shown before building."""
    cols = st.columns(4)
    cols[0].metric("chunks", f"{est.chunks:,}")
    cols[1].metric("LLM calls", f"{est.calls:,}")
    if est.offline:  # nothing is sent offline: "0 / 0" hid what an LLM build would take
        cols[2].metric("tokens if built with an LLM (in / out)",
                       f"{est.llm_input_tokens:,} / {est.llm_output_tokens:,}", help="An estimate of the extraction prompts and replies with an LLM. Offline sends none.")
    else:
        cols[2].metric("tokens (in / out)", f"{est.input_tokens:,} / {est.output_tokens:,}")
    if est.offline:
        cost = "$0 (offline)"
    elif est.local:
        cost = "$0 (local model)"
    elif not est.price_known:
        cost = "price unknown"
    else:
        cost = f"${est.usd:.4f}"
    cols[3].metric("estimated cost", cost)
    if est.descriptions is not None:  # counted in the figures above
        d = est.descriptions
        st.caption(f"Of these, the KET skeleton's descriptions (Alg. 1 line 3, one call per entity and relationship "
                   f"of an extracted chunk): " + ("" if d.offline else f"about {d.calls:,} calls, ")
                   + f"{d.llm_input_tokens:,} / {d.llm_output_tokens:,} tokens"
                   + (" if built with an LLM" if d.offline else "") + ". `kgviz build --no-ket-descriptions` "
                   "builds without them.")
    if est.full is not None:  # KET-RAG skeleton: only the core chunks are extracted
        full = est.full
        full_cost = "$0" if est.offline else (f"${full.usd:.4f}" if full.price_known else "price unknown")
        tokens = (f" {full.llm_input_tokens:,} / {full.llm_output_tokens:,} tokens with an LLM," if est.offline
                  else f" {full.input_tokens:,} / {full.output_tokens:,} tokens,")
        st.caption(f"KET-RAG skeleton, β={est.beta:g}: {est.chunks:,} of {full.chunks:,} chunks are extracted (the core "
                   f"chunks by PageRank). A full KG (β=1) would take{tokens} {full.chunks:,} extractions, {full_cost}.")
    if est.offline:
        st.caption(f"Mode: {OFFLINE_LABEL}. Extraction uses pattern heuristics; nothing is sent anywhere, so it costs "
                   "$0. The tokens are what the same build would use with an LLM (approximate counts).")
    elif est.local:  # a model on this machine: time is the cost, from measured tokens/s only
        from kgviz.index.estimate import format_duration, range_text

        if est.seconds is None:
            st.info(f"Time with {md_text(est.model)}: unknown until measured. Press **Calibrate** to time a few "
                    "short calls to the server, or build a few chunks first; kgviz never guesses a rate.")
        else:
            st.metric("estimated time", format_duration(est.seconds))
            st.caption(f"Model: {md_text(est.model)}, running locally. Time{md_text(range_text(est))} "
                       f"{md_text(est.time_source)}. Cached chunks take no time.")
    else:
        st.caption(f"Model: {md_text(est.model)}. An estimate from approximate token counts; cached calls cost nothing.")
        if est.batch_usd is not None:
            # the skeleton's description calls are interactive calls, also in a batch build
            desc = ("" if est.descriptions is None else
                    f"; the KET skeleton's description calls stay interactive (${est.descriptions.usd:.4f} of it)")
            st.caption(f"Through the provider's batch API (option **Batch API** above): ${est.batch_usd:.4f}, the "
                       f"extraction at half the interactive price{desc}, replies within 24 hours.")
        if not est.price_known:
            st.warning(f"{md_text(est.model)} is not in the price table, so its cost cannot be estimated. "
                       "Add its price to the table to see dollars.")


# --- ingest --------------------------------------------------------------------------------------
_FILE_HINT = "Fix the file and upload it again, or leave it out."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def ingest_summary(result: LoadResult) -> str:
    """One sentence on what was not loaded: whole files rejected and single .jsonl lines skipped
    are counted apart, since a file with one bad line still delivers its other lines."""
    rejected = [e for e in result.errors if skipped_line(e) is None]
    lines: dict[str, int] = {}
    for e in result.errors:
        if skipped_line(e) is not None:
            lines[e.path] = lines.get(e.path, 0) + 1
    parts = [_plural(len(rejected), "file") + " rejected"] if rejected else []
    parts += [f"{_plural(n, 'line')} skipped in {path}" for path, n in lines.items()]
    if not parts:
        return ""
    skipped = " or ".join(w for w, present in (("the rejected files", rejected), ("the skipped lines", lines))
                          if present)
    tail = (f"the other {_plural(len(result.documents), 'document')} proceed" if result.documents
            else "nothing is left to build")
    return f"{'; '.join(parts)}. Nothing is loaded from {skipped}; {tail}."


def ingest_problem_rows(result: LoadResult) -> list[dict[str, Any]]:
    """One row per rejected file or skipped line, each with what to do about it."""
    rows = []
    for e in result.errors:
        line = skipped_line(e)
        rows.append({"file": e.path, "line": "" if line is None else str(line),
                     "problem": "line skipped" if line is not None else "file rejected",
                     "reason": e.reason, "what to do": e.hint or _FILE_HINT})
    return rows


def ingest_problems(result: LoadResult) -> None:
    """Files that were rejected and .jsonl lines that were skipped (with the reason and what to
    do), and duplicates, from an ingest LoadResult."""
    if result.errors:
        st.error(md_text(ingest_summary(result)))
        st.dataframe(pd.DataFrame(ingest_problem_rows(result)), hide_index=True, width="stretch")
    left_out = ingest_left_out_rows(result)
    if left_out:
        st.info(f"Left out or flagged: {len(left_out)} (a duplicate is built once; files in a folder that "
                "are not corpus are skipped, name them to load them).")
        st.dataframe(pd.DataFrame(left_out), hide_index=True, width="stretch")


def ingest_left_out_rows(result: LoadResult) -> list[dict[str, Any]]:
    """One row per duplicate (with the source it repeats), near-duplicate and skipped file."""
    rows = [{"file": d.source, "what": "duplicate, built once", "why": f"same text as {d.kept}"}
            for d in result.duplicates]
    rows += [{"file": d.source, "what": "near-duplicate, " + ("left out" if d.skipped else "kept"),
              "why": f"{d.similarity:.0%} overlap with {d.kept}"} for d in result.near_duplicates]
    rows += [{"file": i.path, "what": "skipped", "why": i.reason} for i in result.ignored]
    return rows


# --- build report --------------------------------------------------------------------------------
_INTERNAL_TABLES = ("Meta",)
_NODE_TABLES = ("Document", "Chunk", "SubChunk", "Entity", "Triple", "Keyword", "Extraction", "Meta")


def failure_summary(report: BuildReport, *, first: int = 3) -> str:
    """One warning for a build with failed chunks: how many, the first reasons, what to do."""
    failures = list(report.failures)
    reasons = "; ".join(f"{c}: {e}" for c, e, _ in failures[:first])
    more = f" (and {len(failures) - first} more)" if len(failures) > first else ""
    return (f"Built with failures: {len(failures)} chunk(s) could not be extracted, so the graph is missing "
            f"their facts. {reasons}{more}. Build again to retry exactly these chunks (replies that "
            f"failed are never cached).")


STAGE_TIME_NOTE = ("Wall-clock seconds: how long each stage of this build took, start to end (the one clock of "
                   "this report). Calls are LLM requests (extract) or embedding batches (knn, embed); extraction "
                   "sends several at once, so the model's own reply times are not added up here.")


def stage_frame(report: BuildReport) -> pd.DataFrame:
    """One row per stage in the order they ran: wall-clock seconds (``seconds_by_stage``, the
    report's single timing source) beside the stage's calls, tokens and $ where it made any, and
    a total row. ``Usage.latency_s`` (summed call latency) is left out: next to wall-clock time it
    read as a second, contradicting clock (0.10 s of calls in a 1.8 s stage)."""
    stages = list(report.seconds_by_stage) + [k for k in report.usage_by_stage if k not in report.seconds_by_stage]
    rows = []
    for stage in stages + ["total"]:
        u = report.usage if stage == "total" else report.usage_by_stage.get(stage, Usage())
        secs = sum(report.seconds_by_stage.values()) if stage == "total" else report.seconds_by_stage.get(stage)
        rows.append({"stage": stage, "wall-clock seconds": None if secs is None else round(secs, 3),
                     "calls": u.calls, "cached": u.cached_calls, "input tokens": u.input_tokens,
                     "output tokens": u.output_tokens, "$": round(u.cost_usd, 6)})
    return pd.DataFrame(rows)


def not_following_summary(report: BuildReport) -> str:
    """The error for a build whose model does not follow the extraction prompt (issue 23)."""
    return (f"The model is not following the prompt: in {report.ungrounded_chunks} chunk(s) most facts were not in "
            f"the chunk's text. {report.facts_ungrounded} facts were left out ({report.facts_prompt_examples} copy "
            f"the prompt's examples), {report.facts_accepted} kept. Use a larger model.")


def _facts_table(report: BuildReport) -> None:
    """Facts kept / left out as not in the text / malformed lines, per chunk, and what was left out."""
    rows = list(report.chunk_facts)
    title = (f"Facts: {report.facts_accepted} accepted, {report.facts_ungrounded} not in the text "
             f"({report.facts_prompt_examples} prompt-example copies), {report.n_malformed_lines} malformed line(s)")
    with st.expander(title, expanded=bool(report.facts_ungrounded)):
        if not rows:
            st.write("No chunk was extracted in this build.")
            return
        st.dataframe(pd.DataFrame([{"chunk": r["chunk_id"], "accepted": r["accepted"], "not in the text": r["ungrounded"],
                                    "prompt-example copies": r["prompt_examples"], "malformed lines": r["malformed"]}
                                   for r in rows]), hide_index=True, width="stretch")
        if report.rejected_facts:
            st.dataframe(pd.DataFrame([{"chunk": c, "fact left out": f, "why": w} for c, f, w in report.rejected_facts]),
                         hide_index=True, width="stretch")


def build_report(report: BuildReport, *, degrees: Sequence[int] | None = None) -> None:
    """Counts, extraction failures, merges, usage and seconds per stage, and two charts."""
    st.subheader("Build report")
    st.caption(f"Mode: {md_text(mode_label(report.mode))} · new documents: {report.new_documents} · "
               f"already in the workspace: {report.skipped_documents} · resumed: {report.resumed_documents} · "
               f"chunks extracted: {report.extracted_chunks}, failed: {report.failed_chunks} "
               f"(reused: {report.reused_extractions}) · new entities: {report.new_entities} · "
               f"new triples: {report.new_triples}")
    failures = list(report.failures)
    if failures:
        st.warning(md_text(failure_summary(report)))
    if report.not_following_prompt:
        st.error(md_text(not_following_summary(report)))
    for warning in report.warnings:
        st.warning(md_text(warning))
    # Meta holds kgviz's own bookkeeping (schema version, embedder): not part of the graph a reader built
    counts = {k: v for k, v in report.counts.items() if k not in _INTERNAL_TABLES}
    left, right = st.columns(2)
    with left:
        st.markdown("**Rows per table**")
        st.dataframe(pd.DataFrame({"table": list(counts), "rows": list(counts.values())}),
                     hide_index=True, width="stretch")
    with right:
        groups = {k: ("node table" if k in _NODE_TABLES else "rel table") for k in counts}
        st.plotly_chart(charts.counts_bar(counts, title="Nodes and edges by type", groups=groups),
                        width="stretch")
    if degrees:
        st.plotly_chart(charts.degree_distribution(degrees), width="stretch")

    st.markdown("**Time and usage by stage**")
    st.dataframe(stage_frame(report), hide_index=True, width="stretch")
    st.caption(STAGE_TIME_NOTE + (" Offline heuristics send nothing and cost nothing." if report.mode == "offline"
                                  else ""))

    malformed = report.n_malformed_lines
    with st.expander(f"Extraction failures: {len(failures)} chunk(s), {malformed} malformed line(s)",
                     expanded=bool(failures)):
        if failures:
            st.dataframe(pd.DataFrame([{"chunk": c, "error": plain(e), "raw output (excerpt)": plain(r)} for c, e, r in failures]),
                         hide_index=True, width="stretch")
        else:
            st.write("None.")
    _facts_table(report)
    merges = list(report.merges)
    with st.expander(f"Entity merges: {len(merges)}"):
        if merges:
            st.dataframe(pd.DataFrame([{"canonical": plain(c), "merged names": plain(", ".join(ns)), "mentions": n}
                                       for c, ns, n in merges]), hide_index=True, width="stretch")
        else:
            st.write("No names were merged.")


# --- graphs & details ----------------------------------------------------------------------------
def graph(page_html: str, *, height: int, legend: bool = True) -> None:
    """A self-contained pyvis page (kgviz.viz.graph_html) in an iframe."""
    st.iframe(page_html, height=iframe_height(height, legend))


def entity_details(details: EntityDetails) -> None:
    """An EntityDetails from kgviz.viz.explore: triples with provenance, chunk text, raw output."""
    e = details.entity
    st.markdown(f"**{md_text(e.get('name') or e['id'])}**")
    facts = {k: e.get(k) for k in ("id", "type", "origin", "n_mentions", "aliases") if e.get(k) not in (None, "")}
    st.dataframe(pd.DataFrame({"field": list(facts), "value": [plain(v) for v in facts.values()]}),
                 hide_index=True, width="stretch")
    if e.get("description"):
        st.text(plain(e["description"]))
    st.markdown(f"**Triples ({len(details.triples)})**")
    if details.triples:
        st.dataframe(pd.DataFrame([{"subject": plain(t["subject"]), "relation": plain(t["relation"]),
                                    "object": plain(t["object"]),
                                    # "sentence": an offline co-occurrence fact, not a stated relation
                                    "kind": plain(t.get("kind") or "relation"),
                                    "sentence (provenance)": plain(t.get("sentence") or ""),
                                    # where the fact's names are in that sentence (kgviz.index.ground)
                                    "grounding": plain(grounding_note(fact_names(t["subject"], t["object"]),
                                                                      t.get("sentence") or "")),
                                    "chunk": t.get("chunk_id") or ""}
                                   for t in details.triples]), hide_index=True, width="stretch")
    else:
        st.write("No triples mention this entity.")
    st.markdown(f"**Source chunks ({len(details.chunks)})**")
    for c in details.chunks:
        with st.expander(md_text(f"{c.id} — {c.doc_title}")):
            st.text(plain(c.text))
            x = c.extraction
            if x:
                st.caption(md_text(f"Extraction: mode {x.get('mode')}, prompt {x.get('prompt_name')}, "
                                   f"status {x.get('status')}, {x.get('n_triples')} triples, "
                                   f"{x.get('n_malformed')} malformed"))
                if x.get("error"):
                    st.warning(md_text(x["error"]))
                st.code(plain(x.get("raw") or "(empty raw output)"), language=None)
            else:
                st.caption("No extraction record for this chunk.")



def workspace_summary(counts: Mapping[str, int] | None) -> None:
    """One line about what the workspace holds (None: no database yet)."""
    if not counts or not counts.get("Document"):
        st.write("Empty: build documents into it (Build page) or load the sample below.")
        return
    st.write(", ".join(f"{counts.get(t, 0):,} {label}" for t, label in
                       (("Document", "documents"), ("Chunk", "chunks"), ("Entity", "entities"),
                        ("Triple", "triples"))))
