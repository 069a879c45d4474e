"""The three named token-budget policies (kgviz.methods.budget) on the same ranking."""
from __future__ import annotations

from kgviz.methods.budget import SkipAndContinue, cut_at_first_overflow, skip_and_continue, stop_at_first_overflow

RANKING = [("a", 40), ("b", 50), ("c", 10), ("d", 5)]


def test_stop_at_first_overflow_keeps_the_prefix_and_rejects_the_rest() -> None:
    assert stop_at_first_overflow(RANKING, 60) == (["a"], ["b", "c", "d"], 40)
    assert stop_at_first_overflow(RANKING, 105) == (["a", "b", "c", "d"], [], 105)  # inclusive limit
    kept, over, used = stop_at_first_overflow([], 10)
    assert (kept, over, used) == ([], [], 0)


def test_skip_and_continue_lets_later_smaller_items_in() -> None:
    assert skip_and_continue(RANKING, 60) == (["a", "c", "d"], ["b"], 55)
    assert skip_and_continue(RANKING, 0) == ([], ["a", "b", "c", "d"], 0)


def test_skip_and_continue_one_at_a_time_matches_the_batch_rule() -> None:
    meter = SkipAndContinue(60)
    taken = [item for item, n in RANKING if meter.take(n)]
    assert taken == ["a", "c", "d"] and meter.used == 55


def test_cut_at_first_overflow_shortens_the_overflowing_item_when_the_room_is_worth_it() -> None:
    def shorten(item: str, room: int) -> tuple[str, int]:
        return f"{item}[:{room}]", room

    fit = cut_at_first_overflow(RANKING, 70, 16, shorten)
    assert fit == (["a", "b[:30]"], ["c", "d"], 70, ["b"])
    small = cut_at_first_overflow(RANKING, 50, 16, shorten)  # 10 tokens of room < 16: dropped whole
    assert small == (["a"], ["b", "c", "d"], 40, [])
    assert cut_at_first_overflow(RANKING, 200, 16, shorten) == (["a", "b", "c", "d"], [], 105, [])
