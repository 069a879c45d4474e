"""Explore and Trace page times in a browser on a large graph (issue 29: "Explore/Trace page p95
in a browser" per size; benchmarks/scale.py measures the rest).

Builds the scale corpus of ``--passages N`` (benchmarks/scale.py's: the shared corpora's real
passages, then renamed copies; offline, hashing embedder) into a workspace, or takes a built one
(``--db DIR``), serves this checkout's app on it (offline LLM) and drives one headless Chromium
session (Debian's, through Playwright) over ``--rounds`` HotpotQA questions. Each round:

* **Explore**: the page opened afresh, an entity searched by a name the question mentions (its
  longest capitalised phrase), timed from Enter until the neighbourhood graph is on the page and
  the app's script has finished;
* **Trace**: every method of ``page_load.TRACE_METHODS`` run on the question, each timed from the
  Run click until the player shows that method's run (``page_load.trace_once``).

Before measuring, one untimed round loads the graph's caches. p95 is nearest-rank. Prints JSON.

    nice -n 10 python benchmarks/scale_pages.py --passages 10000 [--rounds 5] [--keep DIR]
    python benchmarks/scale_pages.py --db DIR
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import page_load  # noqa: E402  (benchmarks/page_load.py)
import scale  # noqa: E402  (benchmarks/scale.py)

_NAME = re.compile(r"(?:[A-Z][\w'’.-]+)(?:\s+(?:of|the|de|von|van|[A-Z][\w'’.-]+))*")


def search_term(question: str) -> str:
    """The longest capitalised phrase of ``question`` past its first word (a name it mentions)."""
    words = question.split(maxsplit=1)
    rest = words[1] if len(words) > 1 else question
    names = sorted(_NAME.findall(rest), key=len, reverse=True)
    return names[0] if names else words[0]


def build_workspace(n: int, db: Path) -> dict[str, Any]:
    """The scale corpus of ``n`` passages built offline into ``db`` (benchmarks/scale.py's build)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    corpus_file = db.parent / f"corpus_{n}.jsonl"
    corpus_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in scale.corpus(n)), "utf-8")
    ctx, report, seconds = scale._build(corpus_file, db)
    ctx.store.close()
    return {"build_s": round(seconds, 1), "counts": {k: v for k, v in report.counts.items()
                                                       if k in ("Document", "Chunk", "Entity", "Triple")}}


async def explore_once(page: Any, url: str, term: str) -> float:
    await page_load.open_page(page, url, "Explore", "Explore the graph")
    box = page.get_by_role("textbox", name="Search an entity", exact=True)
    await box.fill(term)

    async def drawn() -> None:  # the neighbourhood's graph (an iframe) and its "Details for node" picker
        await page.locator("iframe").first.wait_for(state="attached", timeout=page_load.STEP_S * 1000)
        await page.get_by_text("Details for node").wait_for(timeout=page_load.STEP_S * 1000)

    return await page_load.ran(page, lambda: box.press("Enter"), drawn)


async def drive(url: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    times: dict[str, list[float]] = {"explore": [], **{m: [] for m in page_load.TRACE_METHODS}}
    errors: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=page_load.CHROMIUM, args=page_load.LAUNCH_ARGS)
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await context.new_page()
        for i, item in enumerate(items):
            jobs = [("explore", lambda: explore_once(page, url, search_term(item["question"])))]
            jobs += [(m, lambda m=m: page_load.trace_once(page, url, item, m)) for m in page_load.TRACE_METHODS]
            for name, job in jobs:
                try:
                    seconds = await job()
                    if i > 0:  # the first round warms the caches, untimed
                        times[name].append(seconds)
                except Exception as exc:  # noqa: BLE001 - a failed page is counted and reported, never timed
                    errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
        await browser.close()
    trace_all = [t for m in page_load.TRACE_METHODS for t in times[m]]
    return {
        "explore": {"n": len(times["explore"]), "p50_s": page_load.pct(times["explore"], 0.5),
                    "p95_s": page_load.pct(times["explore"], 0.95)},
        "trace": {"n": len(trace_all), "p50_s": page_load.pct(trace_all, 0.5), "p95_s": page_load.pct(trace_all, 0.95),
                  "per_method_p50_s": {m: page_load.pct(times[m], 0.5) for m in page_load.TRACE_METHODS}},
        "errors": errors,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, help="build the scale corpus of this size")
    ap.add_argument("--db", type=Path, help="a built workspace's database folder instead")
    ap.add_argument("--keep", type=Path, help="with --passages: build into this folder and keep it")
    ap.add_argument("--rounds", type=int, default=5, help="questions timed (one more warms up)")
    ap.add_argument("--offset", type=int, default=100, help="first HotpotQA question used")
    args = ap.parse_args()
    if (args.passages is None) == (args.db is None):
        ap.error("give --passages N or --db DIR")
    work = Path(tempfile.mkdtemp(prefix="kgviz_scale_pages_"))
    out: dict[str, Any] = {"load_start": os.getloadavg()}
    proc = None
    try:
        if args.db is None:
            db = (args.keep or work) / "db"
            out.update(passages=args.passages, **build_workspace(args.passages, db))
        else:
            db = args.db
        questions = [json.loads(ln) for ln in page_load.QUESTIONS.read_text("utf-8").splitlines() if ln.strip()]
        items = questions[args.offset:args.offset + args.rounds + 1]
        proc, url = page_load.start_server(ROOT, db, work / "home", work / "server.log")
        t0 = time.perf_counter()
        out.update(asyncio.run(drive(url, items)))
        out["drive_s"] = round(time.perf_counter() - t0, 1)
        out["load_end"] = os.getloadavg()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))
    return 0 if not out.get("errors") else 3


if __name__ == "__main__":
    raise SystemExit(main())
