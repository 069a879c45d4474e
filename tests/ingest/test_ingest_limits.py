"""Loader hardening (issue 10): every bad input is a typed error for its file or .jsonl line, and
the good files and lines of the same batch still load."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.errors import BinaryFileError, DecodeError, IngestError, LimitExceededError
from kgviz.ingest import LoadLimits, load_bytes, load_paths, load_uploads
from kgviz.ingest.loaders import skipped_line

GOOD = json.dumps({"id": "g", "title": "Good", "text": "Marta Ruiz designed the Harbour Library."})


def jsonl(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_deeply_nested_line_is_a_line_error_not_a_recursion_error() -> None:
    deep = '{"id": "d", "text": "x", "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    errors: list[IngestError] = []
    docs = load_bytes("c.jsonl", jsonl(GOOD, deep, GOOD.replace('"g"', '"h"').replace("Marta", "Ana")),
                      errors=errors)
    assert [d.title for d in docs] == ["Good", "Good"]
    [err] = errors
    assert isinstance(err, LimitExceededError) and skipped_line(err) == 2
    assert "nested deeper than the limit of 32" in err.reason
    # brackets inside strings are text, not nesting
    ok = load_bytes("s.jsonl", jsonl(json.dumps({"id": "s", "text": "[" * 500 + " brackets"})))
    assert ok[0].text.startswith("[[[")


def test_oversized_line_is_rejected_before_parsing() -> None:
    big = json.dumps({"id": "b", "text": "word " * 400})
    errors: list[IngestError] = []
    docs = load_bytes("c.jsonl", jsonl(big, GOOD), errors=errors, limits=LoadLimits(max_json_line_chars=1_000))
    assert [d.title for d in docs] == ["Good"]
    assert isinstance(errors[0], LimitExceededError) and errors[0].reason.startswith("line 1: line is 2,0")


def test_huge_integer_id_is_a_line_error_and_integer_ids_stay_strings() -> None:
    digits = "9" * 5_000
    long_id = '{"id": ' + digits + ', "text": "Too long an id."}'
    mid = '{"id": ' + "1" * 100 + ', "title": "Mid", "text": "A hundred digits."}'
    errors: list[IngestError] = []
    docs = load_bytes("c.jsonl", jsonl(long_id, mid, GOOD), errors=errors)
    assert [d.source for d in docs] == ["c.jsonl#" + "1" * 100, "c.jsonl#g"]
    [err] = errors
    assert isinstance(err, LimitExceededError) and "'id' is 5,000 characters" in err.reason
    # a number is not text: {"text": 5} is still rejected
    with pytest.raises(DecodeError, match="non-string 'text'"):
        load_bytes("n.jsonl", jsonl('{"id": 1, "text": 5}'))


def test_giant_single_token_file_is_rejected_and_the_good_file_loads(tmp_path: Path) -> None:
    (tmp_path / "blob.txt").write_bytes(b"A" * (15 * 1024 * 1024))
    (tmp_path / "good.txt").write_text("Marta Ruiz designed the Harbour Library.", encoding="utf-8")
    result = load_paths([tmp_path])
    assert [d.source for d in result.documents] == ["good.txt"]
    [err] = result.errors
    assert isinstance(err, LimitExceededError) and err.path.endswith("blob.txt")
    assert "a 'word' of 15,728,640 characters" in err.reason and "limit 1,000" in err.reason


def test_chunk_count_limit_names_the_numbers() -> None:
    text = ("Marta Ruiz designed a library. " * 40).encode()  # 240 tokens
    limits = LoadLimits(max_chunks_per_document=3, chunk_tokens=50)
    with pytest.raises(LimitExceededError, match=r"240 tokens need at least 5 chunks of 50 tokens.*limit of 3"):
        load_bytes("long.txt", text, limits=limits)
    assert load_bytes("long.txt", text, limits=LoadLimits(max_chunks_per_document=5, chunk_tokens=50))


def test_text_without_spaces_between_cjk_clauses_is_not_junk() -> None:
    clause = "图书馆由玛尔塔设计" * 10  # 90 characters per clause
    text = "，".join([clause] * 30) + "。"  # 2,700 characters without one space
    [doc] = load_bytes("zh.txt", text.encode())
    assert doc.text == text


def test_mixed_batch_loses_no_good_file() -> None:
    uploads = [
        ("good.txt", b"Marta Ruiz designed the Harbour Library."),
        ("deep.jsonl", jsonl('{"text": ' + "[" * 50_000 + "]" * 50_000 + "}")),
        ("ids.jsonl", jsonl('{"id": ' + "7" * 5_000 + ', "text": "x"}', GOOD.replace("Marta", "Eva"))),
        ("latin.jsonl", jsonl(GOOD.replace("Good", "Gr\u00fcn")).replace(b"\xc3\xbc", b"\xfc")),
        ("bin.txt", b"\x00\x01\x02"),
        ("blob.md", b"# Blob\n\n" + b"x" * 5_000),
        ("other.md", b"# Other\n\nAna Lunn built the quay."),
    ]
    result = load_uploads(uploads)
    assert sorted(d.source for d in result.documents) == ["good.txt", "ids.jsonl#g", "other.md"]
    by_file = {e.path: type(e) for e in result.errors}
    assert by_file == {"deep.jsonl": DecodeError, "ids.jsonl": LimitExceededError, "latin.jsonl": DecodeError,
                       "bin.txt": BinaryFileError, "blob.md": LimitExceededError}


def test_an_unexpected_decoder_failure_costs_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kgviz.ingest.loaders as loaders

    real = loaders.load_data

    def flaky(name: str, *a: object, **k: object):  # type: ignore[no-untyped-def]
        if name.endswith("b.txt"):
            raise RecursionError("maximum recursion depth exceeded")
        return real(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(loaders, "load_data", flaky)
    for n in "abc":
        (tmp_path / f"{n}.txt").write_text(f"Document {n} is here.", encoding="utf-8")
    result = load_paths([tmp_path])
    assert [d.source for d in result.documents] == ["a.txt", "c.txt"]
    [err] = result.errors
    assert type(err) is IngestError and "RecursionError" in err.reason and err.path.endswith("b.txt")


def test_limits_are_validated() -> None:
    from kgviz.errors import ConfigError

    with pytest.raises(ConfigError, match="max_word_chars"):
        LoadLimits(max_word_chars=0)
