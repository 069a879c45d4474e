"""LoopGuard: the streamed reply is cut by the triple parser's own loop rule."""
from __future__ import annotations

from kgviz.facts.loops import LoopCounter
from kgviz.facts.parse import MAX_LINE_REPEATS, parse_triples
from kgviz.providers.loop_guard import MAX_LINE_REPEATS as GUARD_REPEATS
from kgviz.providers.loop_guard import LoopGuard


def feed_all(guard: LoopGuard, pieces: list[str]) -> int:
    """Feed until the guard says stop; -> pieces read."""
    for i, p in enumerate(pieces, 1):
        if not guard.feed(p):
            return i
    return len(pieces)


def test_the_guard_and_the_parser_share_one_rule() -> None:
    assert GUARD_REPEATS == MAX_LINE_REPEATS


def test_cut_after_the_fourth_copy_of_a_line_and_the_parse_is_unchanged() -> None:
    reply = "(Ada; born in; Leeds)\n" + "(Ada; wrote; Notes)\n" * 40
    pieces = [w for w in reply.replace(" ", " \0").replace("\n", "\n\0").split("\0") if w]
    guard = LoopGuard(max_tokens=10_000)
    read = feed_all(guard, pieces)
    assert read < len(pieces) and guard.pieces == read
    assert guard.cut == f"reply cut: repetition after {read} tokens"
    assert guard.text == "(Ada; born in; Leeds)\n" + "(Ada; wrote; Notes)\n" * 3 + "(Ada; wrote; Notes)"
    whole, cut = parse_triples(reply), parse_triples(guard.text)
    assert [t.render() for t in cut.triples] == [t.render() for t in whole.triples]
    assert cut.n_malformed == whole.n_malformed == 1  # the parser counts the looping line either way


def test_lines_compare_like_the_parser_and_may_span_pieces() -> None:
    guard = LoopGuard(max_tokens=10_000)
    pieces = ["(a; r; b)\n", "(A;  R; B)\n", "  (a; r;", " b)  \n", "(a; r; b)\nmore\n", "never read"]
    assert feed_all(guard, pieces) == 5
    assert guard.text.endswith("(a; r; b)") and "more" not in guard.text


def test_three_copies_are_not_a_loop_and_blank_lines_never_count() -> None:
    guard = LoopGuard(max_tokens=10_000)
    pieces = ["x\n", "\n", "x\n", "\n\n", "x\n", "\n", "y"]
    assert feed_all(guard, pieces) == len(pieces) and guard.cut == ""
    assert guard.text == "".join(pieces)


def test_past_max_tokens_is_cut_and_keeps_what_came() -> None:
    guard = LoopGuard(max_tokens=5)
    pieces = [f"w{i} " for i in range(20)]
    assert feed_all(guard, pieces) == 6
    assert guard.cut == "reply cut: longer than max_tokens=5 after 6 tokens"
    assert guard.text == "".join(pieces[:6])


def test_a_json_reply_is_read_whole_like_the_parser_does() -> None:
    items = [{"subject": f"Ship {i}", "relation": "was built in", "object": "Kellhaven"} for i in range(6)]
    import json

    for reply in (json.dumps(items, indent=2), "```json\n" + json.dumps(items, indent=2) + "\n```"):
        pieces = [p for p in reply.replace("\n", "\n\0").split("\0") if p]
        guard = LoopGuard(max_tokens=10_000)
        # '"relation": "was built in",' comes six times: a loop for lines, not for one JSON value
        assert feed_all(guard, pieces) == len(pieces) and guard.cut == "" and guard.text == reply
        assert len(parse_triples(guard.text).triples) == 6


def test_a_fence_split_across_pieces_before_a_line_reply_still_counts_lines() -> None:
    guard = LoopGuard(max_tokens=10_000)
    pieces = ["``", "`\n", "(a; r; b)\n"] + ["(c; r; d)\n"] * 5
    assert feed_all(guard, pieces) == 7 and guard.cut.startswith("reply cut: repetition")


def test_a_counting_loop_is_cut_like_a_repeated_line_and_parses_the_same() -> None:
    lines = [f"((Ossel Marine Institute; was director for; twenty-six years); in year; {y})\n" for y in range(1921, 1960)]
    reply = "(Ada; born in; Leeds)\n" + "".join(lines)
    guard = LoopGuard(max_tokens=10_000)
    read = feed_all(guard, [ln for ln in reply.splitlines(keepends=True)])
    assert read == 5 and guard.cut == "reply cut: counting loop after 5 tokens"
    assert guard.text == reply[: reply.index("1924)") + len("1924)")]
    whole, cut = parse_triples(reply), parse_triples(guard.text)
    assert [t.render() for t in cut.triples] == [t.render() for t in whole.triples]
    assert len(whole.triples) == 4 and whole.n_malformed == cut.n_malformed == 1


def test_what_is_not_a_counting_loop() -> None:
    def loops(*lines: str) -> list[str]:
        counter = LoopCounter(3)
        return [counter.see(ln) for ln in lines]

    # numbers alone (a plain list), different facts, steps other than one
    assert loops("1", "2", "3", "4", "5") == [""] * 5
    assert loops(*(f"(Fair {i}; held in; Tarrow)" for i in (1887, 1890, 1893, 1896, 1899))) == [""] * 5
    assert loops("(a; r; 1)", "(b; r; 2)", "(c; r; 3)", "(d; r; 4)") == [""] * 4
    # a running list number on the same fact is one
    assert loops("1. (a; r; b)", "2. (a; r; b)", "3. (a; r; b)", "4. (a; r; b)") == ["", "", "", "counts"]
    # the run restarts when a line breaks it
    assert loops("(a; in; 1)", "(a; in; 2)", "(a; in; 3)", "(a; in; 9)", "(a; in; 10)") == [""] * 5
