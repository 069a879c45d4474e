"""The Trace player on a big graph (opt-in; prints JSON figures): every method on a few questions
of a built corpus, e.g. the 1,965-passage HotpotQA graph.

For each run: steps, nodes and edges drawn, page size, seconds to build the page, and with
``--browser`` (Debian chromium) the player's own measurements in a frame the size of the Trace
page's iframe at 1280×720: the zoom after the first view and after every Next (it must not
change) and the on-screen label size, scale × font size (target ≥ 12 px).

    python benchmarks/build_hotpotqa.py --corpus ../shared/data/hotpotqa/corpus.jsonl --keep /tmp/hq
    python benchmarks/trace_player_corpus.py --db /tmp/hq --questions ../shared/data/hotpotqa/questions.jsonl --browser
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.config import Settings  # noqa: E402
from kgviz.evaluate.qa import load_questions  # noqa: E402
from kgviz.methods.registry import list_methods  # noqa: E402
from kgviz.run import run_method  # noqa: E402
from kgviz.viz import trace_player as tp  # noqa: E402
from kgviz.workspace import open_workspace  # noqa: E402

FRAME = {"width": 820, "height": 564}  # the player's iframe on the Trace page at 1280×720


def _measure(page_html: str, browser: object) -> dict[str, object]:
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as f:
        f.write(page_html)
    page = browser.new_page(viewport=FRAME)  # type: ignore[attr-defined]
    try:
        page.goto(f"file://{f.name}")
        page.wait_for_function("window.kgvizPlayer !== undefined")
        total = page.evaluate("kgvizPlayer.total")
        scales, px = [], []
        for k in range(1, total + 1):
            if k > 1:
                page.evaluate(f"kgvizPlayer.go({k - 1}, false)")
            if page.evaluate("kgvizPlayer.focus().length"):
                scales.append(page.evaluate("kgvizPlayer.network.getScale()"))
                px.append(page.evaluate("kgvizPlayer.labelPx()"))
        return {"zoom_changes_on_next": len({round(s, 6) for s in scales}) > 1,
                "min_label_px": round(min(px), 1) if px else None}
    finally:
        page.close()
        Path(f.name).unlink(missing_ok=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--n", type=int, default=2, help="questions per method")
    ap.add_argument("--methods", default="kg-rag,kg-retriever,kg-infused,ket-rag,text-rag")
    ap.add_argument("--browser", action="store_true", help="measure zoom and label size in chromium")
    args = ap.parse_args()
    ws = open_workspace(Settings.from_env(), db_dir=args.db, llm_spec="offline", embedder_spec=None)
    mctx = ws.method_context()
    questions = load_questions(Path(args.questions))[: args.n]
    methods = [m for m in args.methods.split(",") if m in list_methods()]
    browser = pw = None
    if args.browser:
        from playwright.sync_api import sync_playwright

        pw = sync_playwright().start()
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
    rows = []
    try:
        for q in questions:
            for m in methods:
                run = run_method(m, q.question, mctx)
                t0 = time.perf_counter()
                page = tp.run_page(run.trace, mctx.store, method=m)
                built = time.perf_counter() - t0
                data = json.loads(page.split('id="kp-data">', 1)[1].split("</script>", 1)[0])
                row = {"question": q.id, "method": m, "steps": len(run.trace), "nodes": len(data["nodes"]),
                       "edges": len(data["edges"]), "page_kb": round(len(page.encode()) / 1024),
                       "page_seconds": round(built, 3)}
                if browser is not None:
                    row.update(_measure(page, browser))
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if browser is not None:
            browser.close()
            pw.stop()
    print(json.dumps({"runs": len(rows), "max_page_seconds": max(r["page_seconds"] for r in rows),
                      "max_nodes": max(r["nodes"] for r in rows), "max_page_kb": max(r["page_kb"] for r in rows),
                      "min_label_px": min((r["min_label_px"] for r in rows if r.get("min_label_px")), default=None),
                      "zoom_changed_in_any_run": any(r.get("zoom_changes_on_next") for r in rows)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
