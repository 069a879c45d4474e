"""record_data: a typed step record in JSON's shapes, equal to what ``asdict`` followed by a JSON round
trip gave (the former definition), without the deep copy."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pytest

from kgviz.methods.base import record_data


class Pair(NamedTuple):
    left: str
    right: float


@dataclass(frozen=True)
class Candidate:
    id: str
    score: float
    parts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranking:
    LINE = "Alg. 1 line 4"
    type: str  # a field named like the key record_data puts first: the field wins, as before
    candidates: tuple[Candidate, ...]
    by_round: dict[int, list[Candidate]]
    pairs: list[Pair]
    nested: dict[str, tuple[tuple[str, int], ...]]
    best: Candidate | None = None
    score64: float = 0.0


def former(record: Any) -> dict:
    return json.loads(json.dumps({"type": type(record).__name__, "line": record.LINE, **asdict(record)}))


def test_nested_records_read_as_asdict_and_a_json_round_trip_made_them() -> None:
    a, b = Candidate("e1", 0.5, {"cos": 0.25, "bonus": 0.25}), Candidate("e2", float("nan"))
    rec = Ranking("ranking", (a, b), {1: [a], 2: [b, a]}, [Pair("x", 1.5)], {"k": (("s", 1), ("t", 2))},
                  best=a, score64=np.float64(0.1) * 3)
    got = record_data(rec)
    want = former(rec)
    assert json.dumps(got, sort_keys=False) == json.dumps(want, sort_keys=False)  # keys, order, NaN and all
    assert list(got)[:2] == ["type", "line"] and got["type"] == "ranking"
    assert got["by_round"]["2"][1]["id"] == "e1" and got["pairs"] == [["x", 1.5]]
    assert type(got["score64"]) is float


def test_a_value_json_cannot_hold_still_fails() -> None:
    @dataclass(frozen=True)
    class Bad:
        LINE = "l"
        ids: set[str]

    with pytest.raises(TypeError, match="set is not JSON serializable"):
        record_data(Bad({"a"}))



def test_a_steps_dict_holds_a_copy_of_its_record_in_the_former_shape() -> None:
    from kgviz.methods.base import NodeRef, TraceStep

    a = Candidate("e1", 0.5, {"cos": 0.5})
    rec = Ranking("r", (a,), {1: [a]}, [], {}, best=a)
    step = TraceStep(3, "score", "rank", nodes=[NodeRef("e1", "Entity", "chosen", score=0.5)],
                     scores={"e1": 0.5}, record=record_data(rec))
    d = step.to_dict()
    want = asdict(step)  # the former to_dict: asdict, then the nodes, llm and usage as their own dicts
    want.update(nodes=[n.to_dict() for n in step.nodes], llm=None, usage=step.usage.to_dict())
    assert json.dumps(d) == json.dumps(want)  # same keys in the same order, same values
    d["record"]["candidates"][0]["id"] = "changed"
    assert step.record["candidates"][0]["id"] == "e1"  # the dict's record is a copy
    bare = TraceStep(0, "seed", "seeds").to_dict()
    assert "record" not in bare and list(bare)[-1] == "ours"
    assert TraceStep.from_dict(d | {"record": step.record}) == step


def test_keys_and_subclassed_values_come_back_as_the_json_round_trip_gives_them() -> None:
    from enum import Enum, IntEnum

    class Colour(str, Enum):
        RED = "red"

    class Level(IntEnum):
        HIGH = 3

    @dataclass(frozen=True)
    class Mixed:
        LINE = "l"
        by_key: dict[Any, Any]
        values: tuple[Any, ...]

    keys = {"s": 1, 2: "int", 2.5: "float", float("nan"): 0, float("inf"): 1, -float("inf"): 2, True: "t",
            None: "n", np.float64(0.1): "f64", Level.HIGH: "enum", Colour.RED: "str enum"}
    rec = Mixed({**keys, False: (1, [2, (3,)])}, (Colour.RED, Level.HIGH, np.float64(1.5), True, None, -0.0))
    got, want = record_data(rec), former(rec)
    assert json.dumps(got) == json.dumps(want)
    assert [type(v) for v in got["values"]] == [type(v) for v in want["values"]] == [str, int, float, bool,
                                                                                      type(None), float]


def test_a_key_json_cannot_write_still_fails() -> None:
    @dataclass(frozen=True)
    class Keyed:
        LINE = "l"
        by_pair: dict[tuple[str, str], int]

    with pytest.raises(TypeError, match="keys must be str, int, float, bool or None"):
        record_data(Keyed({("a", "b"): 1}))
    with pytest.raises(TypeError, match="float32 is not JSON serializable"):
        record_data(Keyed({"a": np.float32(1.0)}))  # type: ignore[dict-item]
