"""Regenerate sample_data/corpus.jsonl from the hand-written files in sample_data/corpus/.

The .md/.txt files are the single source of truth; the jsonl copy exists so the sample can also be
loaded the way the public QA corpora are (one {"id", "title", "text"} object per line).

Title rules (the same a reader would guess from the files):
  * .md  -- the first line is "# Title"; the text is everything after it.
  * .txt -- no title line; the title is the file name ("thomas_aldrick.txt" -> "Thomas Aldrick").
The id is the file name without its extension.

Usage: python3 sample_data/make_jsonl.py          (rewrites sample_data/corpus.jsonl)
       python3 sample_data/make_jsonl.py --check  (exit 1 if the jsonl is stale)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS_DIR = HERE / "corpus"
JSONL_PATH = HERE / "corpus.jsonl"


def read_document(path: Path) -> dict[str, str]:
    raw = path.read_text(encoding="utf-8").strip()
    if path.suffix == ".md":
        first, _, rest = raw.partition("\n")
        if not first.startswith("# "):
            raise ValueError(f"{path.name}: a .md sample document must start with '# Title'")
        title, text = first[2:].strip(), rest.strip()
    elif path.suffix == ".txt":
        title, text = path.stem.replace("_", " ").title(), raw
    else:
        raise ValueError(f"{path.name}: sample documents are .md or .txt")
    return {"id": path.stem, "title": title, "text": text}


def build_records(corpus_dir: Path = CORPUS_DIR) -> list[dict[str, str]]:
    paths = sorted(p for p in corpus_dir.iterdir() if p.suffix in {".md", ".txt"})
    return [read_document(p) for p in paths]


def render(records: list[dict[str, str]]) -> str:
    # ensure_ascii=False keeps the en dashes in life dates readable in the committed file.
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main(argv: list[str]) -> int:
    content = render(build_records())
    if "--check" in argv:
        current = JSONL_PATH.read_text(encoding="utf-8") if JSONL_PATH.exists() else ""
        if current != content:
            print(f"{JSONL_PATH} is stale: run python3 {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    JSONL_PATH.write_text(content, encoding="utf-8")
    print(f"wrote {JSONL_PATH} ({content.count(chr(10))} documents)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
