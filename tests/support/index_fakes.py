"""Test doubles for the index tests: a scripted LLM (is_offline False) and a tiny corpus."""
from __future__ import annotations

from typing import Callable, Sequence

from kgviz.errors import ProviderError
from kgviz.offline.extract import extract_offline
from kgviz.ingest import document_from_text
from kgviz.prompts.ket_describe import DESCRIBE_SKELETON
from kgviz.providers import scripted
from kgviz.text import split_sentences
from kgviz.types import Document

STORIES = {
    "Orrin Bridge": (
        "The Orrin Bridge crosses the River Vell at Dunmore. It was designed by Mira Tesk. "
        "Tesk founded Tesk Works in 1921. In 1949 Kell Arden said that the Orrin Bridge was unsafe."
    ),
    "Mira Tesk": (
        "Mira Tesk was born in Aldport in 1890. She studied at the University of Aldport. "
        "Tesk married Jon Varr in 1915. Mira Tesk died in Dunmore in 1960."
    ),
    "Kell Arden": (
        "Kell Arden was a journalist from Aldport. Arden works for the Dunmore Courier. "
        "Kell Arden was born in Dunmore in 1902."
    ),
    "Aldport": (
        "Aldport is the capital of Veyn. Aldport is located on the coast. "
        "The University of Aldport was founded in 1850."
    ),
}


def corpus(names: Sequence[str] | None = None) -> list[Document]:
    return [document_from_text(STORIES[n], title=n, source=f"{n}.txt") for n in (names or STORIES)]


def chunk_text_of(prompt: str) -> str:
    """The chunk text inside a rendered EXTRACT_TRIPLES prompt."""
    return prompt.rsplit("Text: ", 1)[1].rsplit("\nTriples:", 1)[0]


def offline_reply(text: str) -> str:
    return "\n".join(t.render() for t in extract_offline(text).triples)


DESCRIBE_MARK = DESCRIBE_SKELETON.split("{text}")[1].split("{what}")[0]  # what only that prompt holds


def describe_reply(prompt: str) -> str:
    """A reply to DESCRIBE_SKELETON (KET Alg. 1 line 3): the first sentence of the chunk that holds
    the item's name (a relationship's subject), so every description is grounded; "" when none does."""
    text = prompt.split("Text:\n", 1)[1].split(DESCRIBE_MARK, 1)[0]
    name = prompt.rsplit('"', 2)[-2].split(" | ")[0]
    return next((s for s in split_sentences(text) if name.lower() in s.lower()), "")


class ScriptedLLM(scripted.ScriptedLLM):
    """Answers extraction prompts with ``script(chunk_text)`` (default: the offline extractor's
    triples, so the LLM path yields real graphs), and the skeleton's description prompts with
    ``describe(prompt)`` (default ``describe_reply``). A script may raise ProviderError."""

    def __init__(self, script: Callable[[str], str] | None = None, delay_s: float = 0.0,
                 describe: Callable[[str], str] = describe_reply) -> None:
        by_chunk = script or offline_reply

        def reply(prompt: str) -> str:
            if DESCRIBE_MARK in prompt:
                return describe(prompt)
            return by_chunk(chunk_text_of(prompt))

        super().__init__(reply, delay_s=delay_s)


def failing_for(marker: str, inner: Callable[[str], str] = offline_reply) -> Callable[[str], str]:
    def script(text: str) -> str:
        if marker in text:
            raise ProviderError(f"HTTP 529 overloaded while extracting ({marker})")
        return inner(text)

    return script
