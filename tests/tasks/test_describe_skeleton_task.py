"""Task "describe_skeleton" (KET Alg. 1 line 3): the prompt puts the chunk first (one chunk's calls
share it as a prefix), the parser takes the description out of the reply, an empty reply is an
error (never cached), and offline there is nothing to describe."""
from __future__ import annotations

import pytest

from kgviz.errors import LLMOutputError
from kgviz.prompts.ket_describe import DESCRIBE_SKELETON_ORIGIN, render_describe_skeleton
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner, get_task
from kgviz.tasks.ket_describe import OFFLINE_HEURISTIC, parse_description

CHUNK = "Mira Tesk designed the Orrin Bridge in 1921. {braces} stay."


def test_one_chunks_prompts_share_the_chunk_as_prefix() -> None:
    a = render_describe_skeleton(CHUNK, "entity", "Mira Tesk")
    b = render_describe_skeleton(CHUNK, "relationship", "Mira Tesk | designed | Orrin Bridge")
    prefix = a[: a.index('"Mira Tesk"')]
    assert b.startswith(prefix.rsplit("describe", 1)[0]) and CHUNK in a
    assert '"Mira Tesk | designed | Orrin Bridge"' in b and "how its two ends are related" in b
    assert "ours, modelled on KET-RAG Alg. 1 line 3" in DESCRIBE_SKELETON_ORIGIN


def test_parse_description() -> None:
    assert parse_description('Description: "Mira Tesk is an engineer.\nShe designed a bridge."') == \
        "Mira Tesk is an engineer. She designed a bridge."
    assert parse_description("**Description:** The Orrin Bridge crosses a river.") == "The Orrin Bridge crosses a river."
    with pytest.raises(LLMOutputError):
        get_task("describe_skeleton").parse(" \n ", {})


def test_offline_writes_no_description() -> None:
    res = Reasoner(OfflineLLM(), HashingEmbedder(64)).run("describe_skeleton", text=CHUNK, kind="entity", item="Mira Tesk")
    assert res.value == "" and res.call.heuristic == OFFLINE_HEURISTIC and res.call.mode == "offline"
