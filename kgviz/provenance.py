"""Where a result came from: the workspace, LLM and embedder it was made with, and when.

A result the app keeps (a build report, a comparison, an evaluation, a trace run) is only true
for the settings it was made under: the same question in another workspace, or judged by another
model, has another answer. ``Provenance`` records those settings; ``changes`` names what differs
from the settings in force now (empty: the result is current). The names of exported files come
from here too (``export_name``): a question and a time, so a second export never overwrites the
first. No streamlit here: kgviz.ui keeps and shows these values.
"""
from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Provenance:
    """The settings a result was made with.

    ``workspace`` is the database folder (resolved, so two spellings of one folder agree);
    ``llm`` the resolved LLM spec ("offline", "anthropic:<model>", "recorded:<path>" …);
    ``embedder`` the embedder's id as loaded (what "auto" became), or its spec when it could not
    be loaded; ``made_at`` seconds since the epoch (None when unknown); ``embedder_spec`` what
    was asked for ("auto", "hashing" …), so the settings can be chosen again."""

    workspace: str
    llm: str
    embedder: str
    made_at: float | None = None
    embedder_spec: str = ""

    @classmethod
    def of(cls, workspace: str | Path, llm: str, embedder: str, made_at: float | None = None, *,
           embedder_spec: str = "") -> "Provenance":
        return cls(str(Path(workspace).resolve()), llm, embedder, made_at, embedder_spec)

    @property
    def workspace_name(self) -> str:
        return Path(self.workspace).name or self.workspace

    def settings(self) -> tuple[str, str, str]:
        """What decides whether a result still holds: time does not."""
        return self.workspace, self.llm, self.embedder


def changes(made: Provenance, now: Provenance) -> list[str]:
    """What differs between the settings a result was made with and the current ones, as short
    phrases ("workspace sample-recorded → default"); empty when the result is current."""
    out = []
    if made.workspace != now.workspace:
        out.append(f"workspace {made.workspace_name} → {now.workspace_name}")
    if made.llm != now.llm:
        out.append(f"LLM {llm_label(made.llm)} → {llm_label(now.llm)}")
    if made.embedder != now.embedder:
        out.append(f"embedder {made.embedder} → {now.embedder}")
    return out


def llm_label(spec: str) -> str:
    """A short name for an LLM spec: a recording is named by its file, not its full path."""
    if spec.startswith("recorded:"):
        return f"recorded:{Path(spec.split(':', 1)[1]).name}"
    return spec


def describe(p: Provenance) -> str:
    """'workspace X · LLM Y · embedder Z · made 18:42:07 UTC' (the time only when known)."""
    when = f" · made {time.strftime('%H:%M:%S', time.gmtime(p.made_at))} UTC" if p.made_at is not None else ""
    return f"workspace {p.workspace_name} · LLM {llm_label(p.llm)} · embedder {p.embedder}{when}"


# --- names of exported files -----------------------------------------------------------------------
SLUG_MAX = 48  # ours: long enough to tell questions apart, short enough for a file name


def slug(text: str, *, max_len: int = SLUG_MAX) -> str:
    """Lower-case ASCII words joined by '-', cut at a word boundary within ``max_len``;
    'question' when nothing is left (a question in another script, or only punctuation)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    out = ""
    for w in words:
        nxt = f"{out}-{w}" if out else w
        if len(nxt) > max_len:
            if not out:
                out = w[:max_len]
            break
        out = nxt
    return out or "question"


def export_name(kind: str, question: str, made_at: float | None, ext: str) -> str:
    """'kgviz_<kind>_<question slug>_<YYYYMMDD-HHMMSS>.<ext>' with the time (UTC) the result was
    made: two cases never share a name, and a result exported twice keeps its name."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(made_at)) if made_at is not None else "undated"
    return f"kgviz_{kind}_{slug(question)}_{stamp}.{ext.lstrip('.')}"
