"""Turn Markdown into plain prose for extraction: keep every word a reader would see, drop the
syntax around it. Not a full CommonMark parser; it handles what real notes and READMEs contain.

Kept: heading text (as its own paragraph), link and image text, list item text, table cells,
inline code and the contents of fenced code blocks (verbatim).
Dropped: ``#`` markers, emphasis markers, link URLs, reference-link definitions, horizontal rules,
fence lines, HTML tags and comments, a leading YAML front-matter block.

A Markdown *document* (``split_title``) is a title plus a body. The title is the first heading;
when that heading opens the document (nothing but blank lines before it) it is the document's
name, not its prose, so it is taken out of the body. This keeps the body identical to the same
text stored as a .txt file or a jsonl ``text`` field (one document, one id, whatever the format),
and a title without a period never runs into the first sentence of a chunk. A heading further
down is a section heading: it stays in the body as its own paragraph.
"""
from __future__ import annotations

import re

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_H1_RE = re.compile(r"^ {0,3}=+[ \t]*$")
_RULE_RE = re.compile(r"^ {0,3}([-*_=])(?:[ \t]*\1){2,}[ \t]*$")
_REF_DEF_RE = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*\S+.*$")
_TABLE_CELL = r"[ \t]*:?-{2,}:?[ \t]*"
_TABLE_DELIM_RE = re.compile(rf"^[ \t]*\|?{_TABLE_CELL}(?:\|{_TABLE_CELL})*\|?[ \t]*$")
_QUOTE_RE = re.compile(r"^ {0,3}(?:>[ \t]?)+")
_BULLET_RE = re.compile(r"^([ \t]*)[-*+][ \t]+(?:\[[ xX]\][ \t]+)?")

_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
_ESCAPE_RE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!>~|<])")
_URL_PART = r"\((?:[^()\n]|\([^()\n]*\))*\)"  # one level of parentheses inside URLs
_IMAGE_RE = re.compile(r"!\[([^\]]*)\]" + _URL_PART)
_LINK_RE = re.compile(r"\[([^\]]+)\]" + _URL_PART)
_REF_LINK_RE = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_AUTOLINK_RE = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
_HTML_COMMENT_RE = re.compile(r"[ \t]*<!--.*?-->")
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_STRONG_RE = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_STAR_EM_RE = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")
# Underscore emphasis only at word edges, so snake_case identifiers survive.
_UNDER_EM_RE = re.compile(r"(?<!\w)_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)")
_STRIKE_RE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")

# Escaped characters are parked in the Unicode private-use area while emphasis is stripped, so
# "\*" stays a literal asterisk.
_PARK = 0xE000


def _inline(text: str) -> str:
    text = _ESCAPE_RE.sub(lambda m: chr(_PARK + ord(m.group(1))), text)
    text = _HTML_COMMENT_RE.sub("", text)
    text = _IMAGE_RE.sub(r"\1", text)
    text = _LINK_RE.sub(r"\1", text)
    text = _REF_LINK_RE.sub(r"\1", text)
    text = _AUTOLINK_RE.sub(r"\1", text)
    text = _HTML_TAG_RE.sub("", text)
    for _ in range(3):  # nested emphasis such as ***x*** or **_x_**
        text = _STRONG_RE.sub(r"\2", text)
        text = _STAR_EM_RE.sub(r"\1", text)
        text = _UNDER_EM_RE.sub(r"\1", text)
        text = _STRIKE_RE.sub(r"\1", text)
    return re.sub("[\ue000-\ue07f]", lambda m: chr(ord(m.group()) - _PARK), text)


def _inline_outside_code(line: str) -> str:
    """Strip inline syntax everywhere except inside `code spans`, whose text is kept verbatim."""
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN_RE.finditer(line):
        out.append(_inline(line[pos : m.start()]))
        out.append(m.group(2))
        pos = m.end()
    out.append(_inline(line[pos:]))
    return "".join(out)


def _block_line(line: str) -> str | None:
    """One line outside code fences. None drops the line; "" turns it into a paragraph break."""
    if _REF_DEF_RE.match(line):
        return None
    if _RULE_RE.match(line) or _TABLE_DELIM_RE.match(line):
        return ""
    heading = _HEADING_RE.match(line)
    if heading:
        # Headings rarely end with a period; a blank line on both sides keeps the heading its
        # own sentence instead of gluing it to the paragraph below.
        return "\n" + _inline_outside_code(heading.group(1) or "") + "\n"
    line = _QUOTE_RE.sub("", line)
    line = _BULLET_RE.sub(r"\1", line)
    return _inline_outside_code(line)


def _lines(text: str) -> list[str]:
    return _FRONT_MATTER_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).split("\n")


def _convert(lines: list[str]) -> str:
    out: list[str] = []
    fence = ""
    for line in lines:
        m = _FENCE_RE.match(line)
        if fence:
            closes = m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)
            if m is not None and closes and not line[m.end() :].strip():
                fence = ""
                out.append("")
            else:
                out.append(line)
            continue
        if m:
            fence = m.group(1)
            out.append("")  # the info string ("python") is syntax, not content
            continue
        converted = _block_line(line)
        if converted is not None:
            out.append(converted)
    return "\n".join(out)


def strip_markdown(text: str) -> str:
    """Plain text of a Markdown document (see the module docstring for what is kept)."""
    return _convert(_lines(text))


def _heading_at(lines: list[str], i: int) -> tuple[str, int] | None:
    """(heading text, lines it spans) when an ATX or setext level-1 heading starts at line i."""
    m = _HEADING_RE.match(lines[i])
    if m:
        return _inline_outside_code(m.group(1) or "").strip(), 1
    if lines[i].strip() and i + 1 < len(lines) and _SETEXT_H1_RE.match(lines[i + 1]):
        return _inline_outside_code(lines[i].strip()).strip(), 2
    return None


def split_title(text: str) -> tuple[str | None, str]:
    """(title, plain body) of a Markdown document: the title is the first non-empty heading
    outside code fences (None when there is none). A heading that opens the document is removed
    from the body; a later one stays (see the module docstring)."""
    lines = _lines(text)
    fence = ""
    seen_text = False
    for i, line in enumerate(lines):
        m = _FENCE_RE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            continue
        if m:
            fence, seen_text = m.group(1), True
            continue
        found = _heading_at(lines, i)
        if found and found[0]:
            title, span = found
            if seen_text:
                return title, _convert(lines)
            return title, _convert(lines[i + span :])
        if line.strip():
            seen_text = True
    return None, _convert(lines)
