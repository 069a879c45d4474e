"""The LLM-reply parser: accepted shapes, hypernodes, malformed counting, and fuzzing."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgviz.facts.parse import MAX_DEPTH, parse_triples
from kgviz.facts.triples import ExtractedTriple, Mention
from kgviz.offline.lexicon import split_predicate
from kgviz.prompts.extraction import EXTRACT_TRIPLES_EXAMPLES


def rendered(raw: str) -> list[str]:
    return [t.render() for t in parse_triples(raw).triples]


def test_house_format_one_and_many_per_line() -> None:
    out = parse_triples("(Mira Tesk; was born in; Aldport)\n(a; b; c), (d; e; f)")
    assert [t.render() for t in out.triples] == ["(Mira Tesk; was born in; Aldport)", "(a; b; c)", "(d; e; f)"]
    assert out.n_malformed == 0 and out.status == "ok"


def test_hypernodes_parse_recursively() -> None:
    out = parse_triples("((Kell Arden; founded; Tesk Works); in year; 1921)\n(Mira Tesk; said; (Orrin Bridge; was; unsafe))")
    first, second = out.triples
    assert isinstance(first.subject, ExtractedTriple) and first.subject.render() == "(Kell Arden; founded; Tesk Works)"
    assert first.relation == "in year" and first.object == Mention("1921")
    assert isinstance(second.object, ExtractedTriple) and second.object.object == Mention("unsafe")
    assert second.depth() == 2
    assert [t.render() for t in second.nested()] == ["(Orrin Bridge; was; unsafe)", second.render()]


def test_noise_around_triples_is_tolerated() -> None:
    raw = """Sure! Here are the triples (as requested):
```
1. (Mira Tesk; was born in; Aldport)
- (Kell Arden; founded; Tesk Works)
* 2) "Orrin Bridge"; spans; "River Vell"
```
Let me know if you need more."""
    out = parse_triples(raw)
    assert rendered(raw) == [
        "(Mira Tesk; was born in; Aldport)", "(Kell Arden; founded; Tesk Works)", "(Orrin Bridge; spans; River Vell)",
    ]
    assert out.n_malformed == 0  # prose lines and a parenthetical remark are not failed triples


def test_json_whole_reply_and_json_lines() -> None:
    whole = '{"triples": [["a", "b", "c"], {"head": "h", "relation": "r", "tail": ["x", "y", "z"]}, 7]}'
    out = parse_triples(whole)
    assert [t.render() for t in out.triples] == ["(a; b; c)", "(h; r; (x; y; z))"]
    assert out.n_malformed == 1
    assert rendered('["p", "q", "r"]\n{"subject": "s", "predicate": "v", "object": "o"}') == ["(p; q; r)", "(s; v; o)"]


def test_separator_fallbacks_types_and_arrows() -> None:
    assert rendered("(Paris, capital of, France)") == ["(Paris; capital of; France)"]
    assert rendered("(Paris | capital of | France)") == ["(Paris; capital of; France)"]
    assert rendered("(Tesk Works [organisation]; is in; Aldport [place])") == [
        "(Tesk Works [organisation]; is in; Aldport [place])"
    ]
    assert rendered("(Mira)-[designed]->(Orrin Bridge)") == ["(Mira; designed; Orrin Bridge)"]
    out = parse_triples("(a; b; c; d)")  # changed (issue 15): four parts are rejected, not folded
    assert out.triples == [] and out.n_malformed == 1 and "4 parts" in out.warnings[0]


def test_unbalanced_parentheses_are_repaired_with_a_warning() -> None:
    out = parse_triples("((Mira Tesk; said; (Orrin Bridge; was; unsafe))")
    assert [t.render() for t in out.triples] == ["(Mira Tesk; said; (Orrin Bridge; was; unsafe))"]
    assert any("unbalanced" in w for w in out.warnings)
    out = parse_triples("(a; b; c))) (d; e; f")
    assert [t.render() for t in out.triples] == ["(a; b; c)", "(d; e; f)"]


def test_malformed_lines_are_counted_not_raised() -> None:
    out = parse_triples("(a; b; c)\n(only; two)\n(; empty; subject)\n(x; y; z)")
    assert [t.render() for t in out.triples] == ["(a; b; c)", "(x; y; z)"]
    assert out.n_malformed == 2 and out.status == "partial"


def test_no_triples_none_and_empty() -> None:
    assert parse_triples("NONE").status == "ok" and parse_triples("NONE").triples == []
    empty = parse_triples("")  # changed (issue 15): an empty reply is a failure, not "no facts"
    assert empty.status == "failed" and empty.warnings == ["the reply was empty"]
    assert parse_triples("  \n ").status == "failed"
    prose = parse_triples("The text talks about a bridge.")
    assert prose.status == "failed" and prose.triples == []


def test_duplicates_collapse_and_cap() -> None:
    out = parse_triples("(a; b; c)\n(A; B; C)\n(d; e; f)", max_triples=1)
    assert [t.render() for t in out.triples] == ["(a; b; c)"]
    assert any("kept the first 1" in w for w in out.warnings)


def test_depth_limit() -> None:
    deep = "(a; r; " * (MAX_DEPTH + 2) + "z" + ")" * (MAX_DEPTH + 2)
    out = parse_triples(deep)
    assert out.triples == [] and out.n_malformed == 1


def test_prompt_examples_parse_back_to_their_triples() -> None:
    blocks = EXTRACT_TRIPLES_EXAMPLES.split("\n\nText: ")
    assert len(blocks) == 6  # KG-RAG §3.1: six-shot
    for block in blocks:
        lines = block.split("Triples:\n", 1)[1].splitlines()
        out = parse_triples("\n".join(lines))
        assert out.n_malformed == 0 and len(out.triples) == len(lines), block


_ALPHABET = st.sampled_from(list("();|[]{}\"'`,:-*•#>\n\t 1.") + ["a", "B", "é", "NONE", "```", "->", "→", "（", "）", "\\", "\x00",
                                                                       " was born in ", " Ana Pell ", " 1889", " and "])


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=120).map("".join), st.booleans())
def test_fuzz_structured_garbage_never_raises(raw: str, splitter: bool) -> None:
    out = parse_triples(raw, split_predicate=split_predicate if splitter else None)
    assert out.n_malformed >= 0 and out.status in ("ok", "partial", "failed")
    for t in out.triples:
        assert t.relation and t.depth() <= MAX_DEPTH
        assert all(m.text and ";" not in m.text for m in t.mentions())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_arbitrary_text_never_raises(raw: str) -> None:
    parse_triples(raw)


@settings(max_examples=100, deadline=None)
@given(st.recursive(
    st.one_of(st.text(max_size=5), st.integers(), st.none(), st.booleans()),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(["subject", "head", "relation", "object", "tail", "x"]), kids, max_size=4),
    max_leaves=20,
))
def test_fuzz_json_shapes_never_raise(data: object) -> None:
    import json

    parse_triples(json.dumps(data))
    parse_triples(None)


# --- what a real 1.5B model wrote (issue 15) --------------------------------------------------------
def test_bare_triples_with_parentheses_inside_names() -> None:
    raw = ("1. Thomas Aldrick (1889–1966); was born in; Ventholm\n"
           "2. Thomas Aldrick (1889–1966); studied at; Ventholm College\n"
           "3. (Ventholm College (founded 1801); is in; Ventholm)\n"
           "4. Paris (Texas); is in; Lamar County")
    out = parse_triples(raw)
    assert [t.render() for t in out.triples] == [
        "(Thomas Aldrick; was born in; Ventholm)",
        "(Thomas Aldrick; studied at; Ventholm College)",
        "(Ventholm College; is in; Ventholm)",
        "(Paris (Texas); is in; Lamar County)",  # no digit: a disambiguation, kept
    ]
    assert out.n_malformed == 0 and out.status == "ok"


def test_more_than_three_parts_is_rejected_with_a_reason() -> None:
    out = parse_triples("Kell Arden; in year; 1885; in year; 2023\n(a; b; c)")
    assert [t.render() for t in out.triples] == ["(a; b; c)"]
    assert out.n_malformed == 1 and "5 parts, a triple has 3" in out.warnings[0]


def test_stopword_objects_are_rejected_with_a_reason() -> None:
    out = parse_triples("(Mira Tesk; married; and)\n(it; is; a city)\n(Mira Tesk; was born in; Aldport)")
    assert [t.render() for t in out.triples] == ["(Mira Tesk; was born in; Aldport)"]
    assert out.n_malformed == 2
    assert "'and' is not a name" in out.warnings[0] and "'it' is not a name" in out.warnings[1]


def test_two_part_hypernode_with_a_date_is_a_fact() -> None:
    out = parse_triples("((Vey Dam; was built by; Oskar Linde); 1957)\n((a; b; c); March 1931)\n((a; b; c); blue)")
    # no date: the qualifier is kept whole with the fact (issue 23; it was a malformed line)
    assert [t.render() for t in out.triples] == [
        "((Vey Dam; was built by; Oskar Linde); in year; 1957)", "((a; b; c); on date; March 1931)",
        "((a; b; c); qualified by; blue)"]
    assert out.n_malformed == 0


def test_runaway_repetition_is_cut_off() -> None:
    raw = "(a; b; c)\n" + "(Kellhaven; is in; Norrland)\n(Kellhaven; has; port)\n" * 200
    out = parse_triples(raw)
    assert [t.render() for t in out.triples] == ["(a; b; c)", "(Kellhaven; is in; Norrland)", "(Kellhaven; has; port)"]
    assert out.n_malformed == 1 and out.status == "partial"
    assert any("repeats" in w and "stopped reading" in w for w in out.warnings)


def test_think_blocks_bold_and_numbered_lines() -> None:
    raw = ("<think>The text says (x; y; z) maybe.</think>\n"
           "**1.** **(Mira Tesk; was born in; Aldport)**\n2) Kell Arden; founded; Tesk Works")
    assert rendered(raw) == ["(Mira Tesk; was born in; Aldport)", "(Kell Arden; founded; Tesk Works)"]
    assert rendered("<think>unterminated (x; y; z)") == []


def test_fenced_json_reply() -> None:
    raw = '```json\n[["Ana Pell", "founded", "Pell Glassworks"]]\n```'
    assert rendered(raw) == ["(Ana Pell; founded; Pell Glassworks)"]


# -- (name; predicate phrase) groups: what a 1.5B model writes most (issue 15) ------------------------

def test_two_part_predicate_groups_need_a_splitter() -> None:
    reply = "(Edda Lunn; designed Orrin Bridge)\n(Kellhaven; is located at the mouth of the River Ossel)"
    bare = parse_triples(reply)
    assert bare.triples == [] and bare.n_malformed == 2
    read = parse_triples(reply, split_predicate=split_predicate)
    assert [(t.subject.text, t.relation, t.object.text) for t in read.triples] == [
        ("Edda Lunn", "designed", "Orrin Bridge"), ("Kellhaven", "is located at", "the mouth of the River Ossel")]
    assert read.n_malformed == 0


def test_a_phrase_that_is_no_predicate_stays_malformed_with_its_reason() -> None:
    out = parse_triples("(Tidewell Line; the largest shipping company on the coast, has its headquarters)",
                        split_predicate=split_predicate)
    assert out.triples == [] and out.n_malformed == 1
    assert "no predicate phrase" in out.warnings[0]


def test_split_predicate_cuts_a_verb_group_through_its_first_preposition() -> None:
    assert split_predicate("worked first for the provincial roads office") == ("worked first for",
                                                                               "the provincial roads office")
    assert split_predicate("was founded in 1868") == ("was founded in", "1868")
    assert split_predicate("has five granite arches") == ("has", "five granite arches")
    assert split_predicate("designed more than forty bridges") == ("designed", "more than forty bridges")
    for phrase in ("its emblem is a gull", "the first ship", "died", "visitors can see it", ""):
        assert split_predicate(phrase) is None, phrase


def test_a_triple_split_over_two_groups_is_joined() -> None:
    out = parse_triples("(Tomas Aldric; succeeded by) (Oskar Linde)")
    assert [(t.subject.text, t.relation, t.object.text) for t in out.triples] == [
        ("Tomas Aldric", "succeeded by", "Oskar Linde")]
    # two whole triples side by side are not joined
    two = parse_triples("(A Corp; founded; B Town) (C Corp; founded; D Town)")
    assert len(two.triples) == 2


def test_an_unfinished_qualifier_leaves_the_fact_standing() -> None:
    out = parse_triples("((Tidewell Line; built; An Aster Wren); for)")
    assert [(t.subject.text, t.relation, t.object.text) for t in out.triples] == [
        ("Tidewell Line", "built", "An Aster Wren")]
    assert out.n_malformed == 0


def test_a_dangling_and_object_is_read_as_a_predicate_phrase() -> None:
    reply = "((An Aster Wren; is 54 metres long; and))"
    assert parse_triples(reply).n_malformed == 1  # without a splitter: 'and' is no name
    out = parse_triples(reply, split_predicate=split_predicate)
    assert [(t.subject.text, t.relation, t.object.text) for t in out.triples] == [
        ("An Aster Wren", "is", "54 metres long")]


# -- more shapes from the recorded 1.5B extraction (sample_recorded/, issue 15) ---------------------

def triples_of(reply: str) -> list[str]:
    return [t.render() for t in parse_triples(reply, split_predicate=split_predicate).triples]


def test_a_parenthesised_name_closed_before_the_relation_is_a_bare_triple() -> None:
    out = parse_triples("(Thomas Aldrick (1889–1966)); was a; lighthouse keeper")
    assert [t.render() for t in out.triples] == ["(Thomas Aldrick; was a; lighthouse keeper)"]
    assert out.n_malformed == 0
    # a first group that is a triple keeps the group reading
    assert rendered("((a; b; c); in year; 1900)") == ["((a; b; c); in year; 1900)"]


def test_a_predicate_phrase_with_a_flattened_date_qualifier() -> None:
    reply = "(Edda Lunn; worked for the provincial roads office; until year; 1889)"
    assert triples_of(reply) == ["((Edda Lunn; worked for; the provincial roads office); until year; 1889)"]
    assert parse_triples(reply).n_malformed == 1  # without a splitter it stays a four-part line
    # not a date in the last part: still two facts run together, rejected
    assert triples_of("(Edda Lunn; worked for the office; in place of; Ivo Harn)") == []


def test_a_nested_name_and_predicate_fact_is_read_inside_a_hypernode() -> None:
    assert triples_of("((Tarrow; holds the Saltwind Fair every May); began in 1887)") == [
        "((Tarrow; holds; the Saltwind Fair every May); began in; 1887)"]
    assert triples_of("(((Edda Lunn; designed Orrin Bridge); was built at); Tarrow)") == [
        "((Edda Lunn; designed; Orrin Bridge); was built at; Tarrow)"]
    # a fact followed by a qualifier that is no predicate phrase: the qualifier's preposition is the
    # relation (issue 23; before, the line was malformed and the fact lost), never a junk relation
    out = parse_triples("((Orrin Bridge; closed to heavy lorries); after newspaper reports about cracks)",
                        split_predicate=split_predicate)
    assert [t.render() for t in out.triples] == [
        "((Orrin Bridge; closed to; heavy lorries); after; newspaper reports about cracks)"]
    assert out.n_malformed == 0


def test_no_name_ever_holds_a_semicolon() -> None:
    # "(Ange Vohl; retired in 1947)" was once kept whole as one subject name
    for t in parse_triples("((Ange Vohl; retired in 1947); in place of; Henrik Saal)\n"
                           "((x; y); z; w)").triples:
        assert all(";" not in m.text for m in t.mentions()), t.render()


def test_a_missing_opening_parenthesis_is_added_at_the_start() -> None:
    out = parse_triples("((Edda Lunn; designed Skellan Point Lighthouse); was built on); headland outside Ventholm)",
                        split_predicate=split_predicate)
    assert [t.render() for t in out.triples] == [
        "((Edda Lunn; designed; Skellan Point Lighthouse); was built on; headland outside Ventholm)"]
    assert out.n_malformed == 0 and "added 1 '(' at the start" in out.warnings[0]


def test_a_whole_sentence_in_one_group_is_cut_at_its_verb_when_it_opens_with_a_name() -> None:
    assert triples_of("(Ivo Harn was the rector of the university from 1919 to 1938)") == [
        "(Ivo Harn; was; the rector of the university from 1919 to 1938)"]
    for prose in ("(Lighthouse automation in 1968)", "(Cottage supplies came by boat from the town)"):
        out = parse_triples(prose, split_predicate=split_predicate)
        assert out.triples == [] and out.n_malformed == 1, prose
    assert parse_triples("(Ivo Harn was the rector)").n_malformed == 1  # no splitter, no reading


def test_split_predicate_takes_an_adverb_or_modal_first() -> None:
    assert split_predicate("once carried grain and wool") == ("once carried", "grain and wool")
    assert split_predicate("can carry twenty scientists") == ("can carry", "twenty scientists")
    assert split_predicate("carries timber") == ("carries", "timber")
    assert split_predicate("once upon a time") is None


def test_nested_and_qualified_facts_are_read_with_their_qualifier() -> None:
    """Issue 23: a 1.5B model's ``((Charles Bridge; crosses; the Vltava); in Prague)`` was malformed
    and the paragraph's only fact was lost; the prompt's own hypernode forms keep every part."""
    cases = {
        "((Charles Bridge; crosses; the Vltava); in Prague)": "((Charles Bridge; crosses; the Vltava); in; Prague)",
        "((Charles Bridge; crosses; the Vltava); until 1870)": "((Charles Bridge; crosses; the Vltava); until year; 1870)",
        "((Charles Bridge; crosses; the Vltava); a Gothic landmark)":
            "((Charles Bridge; crosses; the Vltava); qualified by; a Gothic landmark)",
        "((Charles Bridge; crosses; the Vltava); was built by; Peter Parler)":
            "((Charles Bridge; crosses; the Vltava); was built by; Peter Parler)",
        # the hypernode written without its outer parentheses: the tail was silently dropped
        "(Charles Bridge; crosses; the Vltava); was built by; Peter Parler":
            "((Charles Bridge; crosses; the Vltava); was built by; Peter Parler)",
        "(Charles Bridge; crosses; the Vltava); in 1357": "((Charles Bridge; crosses; the Vltava); in year; 1357)",
    }
    for reply, want in cases.items():
        for splitter in (None, split_predicate):
            out = parse_triples(reply, split_predicate=splitter)
            assert [t.render() for t in out.triples] == [want] and out.n_malformed == 0, (reply, splitter)
    # two facts on a line stay two facts, a qualifier of stopwords still just ends the fact
    assert triples_of("(a; b; c); (d; e; f)") == ["(a; b; c)", "(d; e; f)"]
    assert triples_of("((a; b; c); for)") == ["(a; b; c)"]


def test_a_counting_loop_stops_the_parser_like_a_repeated_line() -> None:
    lines = [f"((Ossel Marine Institute; was director for; twenty-six years); in year; {y})" for y in range(1921, 1927)]
    out = parse_triples("(Agnes Vohl; founded; Ossel Marine Institute)\n" + "\n".join(lines))
    assert [t.render() for t in out.triples][1:] == lines[:3]
    assert out.n_malformed == 1 and "counts on with" in out.warnings[0] and "3 looping line(s)" in out.warnings[0]


def test_a_part_ending_in_an_abbreviation_keeps_its_full_stop() -> None:
    """The offline extractor writes names such as "Tottenham Hotspur L.F.C." or an initial "B.";
    its raw text must read back as it was (found by the offline round-trip fuzz test), while a
    sentence's full stop after an ordinary word is still dropped."""
    def parts(raw: str) -> list[str]:
        return [t.render() for t in parse_triples(raw).triples]

    assert parts("(Tottenham Hotspur L.F.C.; played at; White Hart Lane.)") == [
        "(Tottenham Hotspur L.F.C.; played at; White Hart Lane)"]
    assert parts("(B.; in same sentence as; 0 [number])") == ["(B.; in same sentence as; 0 [number])"]
    assert parts("(Sammy Davis Jr.; sang in; Washington, D.C.,)") == ["(Sammy Davis Jr.; sang in; Washington, D.C.)"]
    assert parts("(Mira Tesk; said; Orrin Bridge.)") == ["(Mira Tesk; said; Orrin Bridge)"]
