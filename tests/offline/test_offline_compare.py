"""The offline judge's comparison reader (issue 22.3): a choice question is decided by both options'
values read from the evidence, never guessed; the verdict quotes the sentence and the words read."""
from __future__ import annotations

import re

import pytest

from kgviz.claims import short_claim
from kgviz.offline.compare import asked, locate, read_dates
from kgviz.offline.judge import CheckResult, check_claim
from kgviz.offline.support import sentences


def _judge(question: str, answer: str, items: list[tuple[str, str]]) -> CheckResult:
    claim = short_claim(question, answer)
    return check_claim(claim.text, items, focus=claim.focus, question=question)


def _quotes_whole_words(res: CheckResult, items: list[tuple[str, str]]) -> None:
    texts = dict(items)
    assert res.quote and res.evidence and res.quote in texts[res.evidence[0]]
    assert f'"{res.quote}"' in res.reason
    for m in res.matched:
        for w in m.split():
            assert re.search(rf"(?<!\w){re.escape(w)}(?!\w)", res.quote), (w, res.quote)


FILMS = [("a", "Kaaka Muttai is a 2014 Indian Tamil-language film."),
         ("b", "En sømand går i land is a 1954 Danish comedy film directed by Lau Lauritzen Jr.")]


@pytest.mark.parametrize("answer, label", [("En Sømand Går I Land", "supported"), ("Kaaka Muttai", "contradicted")])
def test_release_years_from_definitions_decide_which_came_out_first(answer: str, label: str) -> None:
    res = _judge("Which film came out earlier, Kaaka Muttai or En Sømand Går I Land?", answer, FILMS)
    assert res.label == label
    _quotes_whole_words(res, FILMS)
    assert "1954" in res.reason and "2014" in res.reason


def test_a_missing_release_year_is_not_found_even_for_the_right_option() -> None:
    items = [FILMS[1], ("a", "Kaaka Muttai is a Tamil-language film about two brothers.")]
    res = _judge("Which film came out earlier, Kaaka Muttai or En Sømand Går I Land?", "En Sømand Går I Land", items)
    assert res.label == "not_found" and "Kaaka Muttai" in res.reason


def test_full_dates_in_the_parenthesis_decide_within_one_year_and_a_bare_year_does_not() -> None:
    items = [("a", "Harry S. Webb( October 15, 1892 – July 4, 1959) was an American film producer."),
             ("b", "Ann Lee (3 March 1892 – 1 February 1959) was a painter.")]
    q = "Who died later, Harry S. Webb or Ann Lee?"
    res = _judge(q, "Harry S. Webb", items)
    assert res.label == "supported" and "July 4, 1959" in res.reason
    _quotes_whole_words(res, items)
    assert _judge(q, "Ann Lee", items).label == "contradicted"
    vague = [items[0], ("b", "Ann Lee (1892–1959) was a painter.")]  # the whole of 1959: could be either
    res = _judge(q, "Harry S. Webb", vague)
    assert res.label == "not_found" and "too close" in res.reason


def test_a_release_year_stated_by_a_sentence_that_refers_back() -> None:
    items = [("a", "The Sailor's Song is an East German film directed by Kurt Maetzig. It was released in 1958."),
             ("b", "88:88 is a Canadian experimental docudrama film released in 2015.")]
    res = _judge("Which film came out first, The Sailor'S Song or 88:88?", "The Sailor'S Song", items)
    assert res.label == "supported" and res.quote == "It was released in 1958."
    _quotes_whole_words(res, items)


def test_the_reading_that_names_the_option_most_exactly_wins() -> None:
    items = [("a", "Little Shop of Horrors is a 1986 American musical film directed by Frank Oz."),
             ("b", "The Little Shop of Horrors is a 1960 American comedy film directed by Roger Corman."),
             ("c", "And God Created Them is a 1979 Puerto Rican comedy film.")]
    q = "Which film came out first, ...And God Created Them or The Little Shop Of Horrors?"
    res = _judge(q, "The Little Shop Of Horrors", items)
    assert res.label == "supported" and "1960" in res.reason and "1986" not in res.reason


def test_equally_exact_readings_that_disagree_are_ambiguous_not_a_guess() -> None:
    items = [("a", "Bright Leaf is a 1950 American drama film."), ("b", "Bright Leaf is a 1948 novel."),
             ("c", "No Path Through Fire is a 1968 Soviet war film.")]
    res = _judge("Which film was released more recently, No Path Through Fire or Bright Leaf?",
                 "No Path Through Fire", items)
    assert res.label == "not_found" and "ambiguous" in res.reason


def test_a_name_inside_a_longer_name_is_not_the_option() -> None:
    assert locate("The Love & War MasterPeace is an album.", "Love & War") == []
    assert locate("Love& War is the fifth album.", "Love & War")
    items = [("a", "The Love & War MasterPeace is a 2010 album."), ("b", "Don't Freak Me Out is a 1972 album.")]
    res = _judge("Which album was released first, Don'T Freak Me Out or Love & War?", "Don'T Freak Me Out", items)
    assert res.label == "not_found" and "Love & War" in res.reason


HOLDERS = [("a", "Forbidden Ground is a Hungarian film directed by Pál Gábor."),
           ("b", "Pál Gábor (2 November 1932 – 21 October 1987) was a Hungarian film director."),
           ("c", "Free Guy is an upcoming film directed by Shawn Levy."),
           ("d", "Shawn Levy (born July 23, 1968) is a Canadian director.")]


@pytest.mark.parametrize("answer, label", [("Free Guy", "supported"), ("Forbidden Ground", "contradicted")])
def test_a_holders_birth_date_is_read_through_directed_by(answer: str, label: str) -> None:
    res = _judge("Which film whose director is younger, Forbidden Ground or Free Guy?", answer, HOLDERS)
    assert res.label == label
    assert "Pál Gábor" in res.reason and "Shawn Levy" in res.reason and "July 23, 1968" in res.reason
    _quotes_whole_words(res, HOLDERS)


def test_a_holder_whose_dates_are_missing_is_not_found() -> None:
    items = HOLDERS[:3]  # nothing says when Shawn Levy was born
    res = _judge("Which film whose director is younger, Forbidden Ground or Free Guy?", "Free Guy", items)
    assert res.label == "not_found" and "Free Guy" in res.reason


def test_better_known_as_takes_the_opening_parenthesis() -> None:
    s = sentences([("a", "Eedara Veera Venkata Satyanarayana (10 June 1956 – 21 January 2011), better known as "
                         "E. V. V. Satyanarayana, was an Indian film director.")])[0]
    assert [r.shown for r in read_dates(s, "E. V. V. Satyanarayana", "death")] == ["21 January 2011"]


def test_who_lived_longer_compares_life_spans() -> None:
    items = [("a", "Mukat Behari Lal Bhargava( 30 June 1903 – 18 December 1980 in Jaipur) was an Indian politician."),
             ("b", "Salvador J. Lara( July 11, 1920 – September 1, 1945) was a U.S. Army veteran.")]
    q = "Who lived longer, Mukat Behari Lal Bhargava or Salvador J. Lara?"
    assert _judge(q, "Mukat Behari Lal Bhargava", items).label == "supported"
    assert _judge(q, "Salvador J. Lara", items).label == "contradicted"


def test_more_directors_counts_the_names_after_directed_by() -> None:
    items = [("a", "The Sailor's Song is an East German film directed by Kurt Maetzig and Günter Reisch."),
             ("b", "88:88 is a Canadian film, directed by Isiah Medina and released in 2015.")]
    q = "Which film has more directors, The Sailor'S Song or 88:88?"
    res = _judge(q, "The Sailor'S Song", items)
    assert res.label == "supported" and "Günter" in res.matched
    _quotes_whole_words(res, items)
    assert _judge(q, "88:88", items).label == "contradicted"


def test_what_the_question_compares() -> None:
    assert asked("Which film whose director is younger, A or B?").kind == "birth"
    assert asked("Which film whose director is younger, A or B?").holder == "director"
    assert asked("Which film has the director died earlier, A or B?").kind == "death"
    assert asked("Who lived longer, A or B?").kind == "lifespan"
    assert asked("Which film was released more recently, A or B?").kind == "date"
    assert asked("Which film was released more recently, A or B?").way == "larger"
    assert asked("Which film has more directors, A or B?").kind == "count"
    assert asked("Which river is wider, A or B?") is None  # no comparative it can read: no verdict


RIVERS = [("a", "The Orrin River is 1,250 km long and flows into the sea."),
          ("b", "The Vell River is a river in Lessary, 800 miles long.")]


@pytest.mark.parametrize("answer, label", [("Vell River", "supported"), ("Orrin River", "contradicted")])
def test_lengths_are_compared_in_one_unit(answer: str, label: str) -> None:
    # 800 miles is about 1,287 km: the larger number is not the longer river
    res = _judge("Which river is longer, Orrin River or Vell River?", answer, RIVERS)
    assert res.label == label and "800 miles" in res.reason and "1,250 km" in res.reason
    _quotes_whole_words(res, RIVERS)


def test_population_is_read_next_to_its_cue_word_and_a_census_year_is_not_one() -> None:
    items = [("a", "Tarrow is a town with a population of 12,500."),
             ("b", "At the 2006 census, Kellhaven's population was 2.1 million.")]
    q = "Which town has a larger population, Tarrow or Kellhaven?"
    res = _judge(q, "Kellhaven", items)
    assert res.label == "supported" and "2.1 million" in res.reason and "2006" not in res.matched
    assert _judge(q, "Tarrow", items).label == "contradicted"


def test_larger_alone_names_no_measure_so_no_verdict() -> None:
    items = [("a", "Tarrow is a town with a population of 12,500."), ("b", "Kellhaven has 2.1 million inhabitants.")]
    res = _judge("Which town is larger, Tarrow or Kellhaven?", "Kellhaven", items)
    assert res.label == "not_found"


def test_a_name_suffix_stays_with_its_name_and_it_was_directed_by_links_the_holder() -> None:
    items = [("a", "Chatterbox is a 1936 American comedy film. It was directed by George Nicholls, Jr."),
             ("b", "George Nicholls, Jr. (August 3, 1897 – July 13, 1939) was an American film director."),
             ("c", "Swept from the Sea is a 1997 drama film directed by Beeban Kidron."),
             ("d", "Beeban Kidron (born 2 May 1961) is a British film director.")]
    q = "Which film has the director born earlier, Chatterbox or Swept From The Sea?"
    res = _judge(q, "Chatterbox", items)
    assert res.label == "supported", res.reason
    assert "It was directed by George Nicholls, Jr." in res.reason
    assert _judge(q, "Swept From The Sea", items).label == "contradicted"
