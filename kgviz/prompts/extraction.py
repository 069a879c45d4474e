"""Prompts for triple extraction (task "extract_triples").

Written for kgviz. Shape taken from the papers: few-shot extraction with six examples (KG-RAG,
§3.1 uses 6-shot prompting), output as ``(entity; relationship; entity)`` triples (KG-Retriever,
Appendix Tables 3–4), and triple hypernodes written as nested parentheses (KG-RAG §4.1:
h* = (h1, r1, h2) where h1 or h2 may be a triple). One triple per line (ours: it lets the parser
count malformed lines). The examples are original fiction so no model knows them.
"""
from __future__ import annotations

import re

EXTRACT_TRIPLES_SYSTEM = (
    "You turn text into knowledge-graph triples. You answer with triples only, one per line, "
    "with no numbering, no commentary and no code fences."
)

EXTRACT_TRIPLES_EXAMPLES = """Text: Ana Pell was born in Dorrow in 1874. She founded Pell Glassworks in 1911.
Triples:
(Ana Pell; was born in; Dorrow)
((Ana Pell; was born in; Dorrow); in year; 1874)
(Ana Pell; founded; Pell Glassworks)
((Ana Pell; founded; Pell Glassworks); in year; 1911)

Text: The Vey Dam, which holds back the River Sarn, was designed by Oskar Linde. It is located near Halberg.
Triples:
(Vey Dam; holds back; River Sarn)
(Oskar Linde; designed; Vey Dam)
(Vey Dam; is located near; Halberg)

Text: In 1962 the inspector Jon Mair said that the Vey Dam was unsafe. Linde denied it.
Triples:
(Jon Mair; is a; inspector)
(Jon Mair; said; (Vey Dam; was; unsafe))
((Jon Mair; said; (Vey Dam; was; unsafe)); in year; 1962)
(Oskar Linde; denied; (Vey Dam; was; unsafe))

Text: Halberg is the capital of Norrland and has 48,000 inhabitants. The city lies 12 kilometres from the coast.
Triples:
(Halberg; is the capital of; Norrland)
(Halberg; has inhabitants; 48,000)
(Halberg; lies from the coast; 12 kilometres)

Text: Mara Quill, a chemist from Dorrow, married the composer Teo Brandt. Quill worked for the Halberg Institute of Chemistry until 1950.
Triples:
(Mara Quill; is a; chemist)
(Mara Quill; is from; Dorrow)
(Mara Quill; married; Teo Brandt)
(Teo Brandt; is a; composer)
(Mara Quill; worked for; Halberg Institute of Chemistry)
((Mara Quill; worked for; Halberg Institute of Chemistry); until year; 1950)

Text: Teo Brandt studied at the Dorrow Conservatory. His opera "The Salt Road" premiered at the Halberg Opera House in 1931 and was directed by Ilse Varga.
Triples:
(Teo Brandt; studied at; Dorrow Conservatory)
(Teo Brandt; composed; The Salt Road)
(The Salt Road; is a; opera)
(The Salt Road; premiered at; Halberg Opera House)
((The Salt Road; premiered at; Halberg Opera House); in year; 1931)
(Ilse Varga; directed; The Salt Road)"""

# {examples} and {text} are the only placeholders; the chunk text is inserted as a value, so
# braces inside it are harmless.
EXTRACT_TRIPLES = """Extract every fact stated in the text as knowledge-graph triples.

Rules:
- Write one triple per line, as (subject; relation; object), with semicolons between the parts.
- Subjects and objects are short names as the text writes them: people, places, organisations,
  works, dates, numbers or short attributes. Write a person's or thing's full name, not a pronoun
  or a surname alone, when the text gives the full name anywhere.
- Relations are short verb phrases from the text, such as "was born in", "founded",
  "is the capital of".
- When a fact is about another fact (a date or place qualifies it, or someone said, denied or
  believed it), put the inner triple, in parentheses, in place of the subject or the object:
  ((Ana Pell; founded; Pell Glassworks); in year; 1911)
  (Jon Mair; said; (Vey Dam; was; unsafe))
- Keep parentheses out of names: for "Thomas Aldrick (1889–1966) was born in Ventholm" write
  (Thomas Aldrick; was born in; Ventholm) and give the dates triples of their own.
- A line on its own, such as a heading, is a title: it does not run into the next sentence.
- Write each fact once and stop after the last one; never repeat a line.
- Use only facts stated in the text. If the text states no facts, answer NONE.

{examples}

Text: {text}
Triples:
"""


_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def chunk_text_for_prompt(text: str) -> str:
    """The chunk as the model sees it: runs of spaces collapsed, but line breaks kept (at most one
    blank line), so a Markdown heading stays a line of its own instead of running into the first
    sentence ("Kellhaven Kellhaven was founded ..." made a real model invent doubled names)."""
    lines = [_SPACES.sub(" ", ln).strip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def render_extract_triples(text: str) -> str:
    return EXTRACT_TRIPLES.format(examples=EXTRACT_TRIPLES_EXAMPLES, text=chunk_text_for_prompt(text))
