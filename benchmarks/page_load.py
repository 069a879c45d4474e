"""Page times with 1, 3 and 5 browser sessions on one server, before -> after, in one run (issue 28).

Two `streamlit run app.py` servers on copies of one HotpotQA graph (offline LLM, hashing embedder):
"before" from a `git archive` of a revision (default: main), "after" from this checkout. For each
number of sessions N, N headless Chromium sessions (Debian's, through Playwright; one browser,
one context per session) each repeat: Compare with every method on a HotpotQA question with its
gold answer, then Trace one method on that question. Sessions start together and do not wait for
each other. Each session's questions differ from the others' (a server shares nothing between
sessions asking the same thing by chance), and both servers get the same questions.

Timed from the click (Compare / Run) until the result is in the page (every method's verdict and
the "Evidence overlay" heading below the cards; the trace player's frame showing the method's run;
each page is opened afresh, so neither is there before the click) and the app's script has
finished (``data-test-script-state`` back to notRunning). Before measuring, each server answers one Compare and one Trace untimed
(loading the graph's caches). Phases alternate which server goes first. p95 is nearest-rank.

    nice -n 10 python benchmarks/page_load.py --db DIR [--before-rev main] [--sessions 1 3 5] [--rounds 4]

DIR: a workspace built by `python benchmarks/build_hotpotqa.py --keep DIR`; it is copied once per
server (Kùzu lets one process hold a database). Prints JSON, then a table.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.methods.registry import list_methods  # noqa: E402
from tests.support.http_wait import wait_healthy  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]
QUESTIONS = Path("/work/shared/data/hotpotqa/questions.jsonl")
TRACE_METHODS = ["kg-rag", "kg-infused", "ket-rag", "kg-retriever", "text-rag"]
STEP_S = 600  # a generous ceiling per page under load; a timeout is counted as a failure, not a time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(src: Path, db: Path, home: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_DB")}
    env.update(KGVIZ_HOME=str(home), KGVIZ_DB=str(db), KGVIZ_LLM="offline", KGVIZ_EMBEDDER="hashing",
               PYTHONPATH=str(src))  # the checkout's own kgviz, not the one installed in the venv
    out = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
         "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"], cwd=src, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    state = wait_healthy(f"{url}/_stcore/health", 120, exited=lambda: proc.poll() is not None, pause_s=0.5)
    if state == "exited":
        raise RuntimeError(f"server in {src} exited: {log.read_text()[-2000:]}")
    if state != "ok":
        raise RuntimeError(f"server in {src} did not come up")
    return proc, url


def which_kgviz(src: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run([sys.executable, "-c", "import kgviz; print(kgviz.__file__)"], cwd=src, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


async def idle(page: Any) -> None:
    app = page.locator("[data-testid='stApp']")
    await app.and_(page.locator("[data-test-script-state='notRunning']")).wait_for(timeout=STEP_S * 1000)


async def ran(page: Any, click: Any, drawn: Any) -> float:
    """Seconds from the click until ``drawn`` (the page's result is in the DOM; it was not before
    the click) and the script has finished."""
    t0 = time.perf_counter()
    await click()
    await drawn()
    await idle(page)
    return time.perf_counter() - t0


async def open_page(page: Any, url: str, link: str, heading: str) -> None:
    await page.goto(url, timeout=STEP_S * 1000)
    await page.get_by_role("link", name=link).click(timeout=STEP_S * 1000)
    await page.get_by_role("heading", name=heading).wait_for(timeout=STEP_S * 1000)
    await idle(page)


async def compare_once(page: Any, url: str, item: dict[str, Any], n_methods: int) -> float:
    await open_page(page, url, "Compare", "Compare methods")
    await page.get_by_role("textbox", name="Question", exact=True).fill(item["question"])
    gold = page.get_by_role("textbox", name="Gold answer(s), optional (separate several with |)")
    await gold.fill(" | ".join(item["answers"]))
    await gold.press("Enter")
    await idle(page)
    button = page.get_by_role("button", name="Compare", exact=True)

    async def drawn() -> None:  # the full comparison: every verdict and the overlay's heading below them
        await page.locator(".kgviz-verdict").nth(n_methods - 1).wait_for(state="attached", timeout=STEP_S * 1000)
        await page.get_by_role("heading", name="Evidence overlay").wait_for(timeout=STEP_S * 1000)

    seconds = await ran(page, lambda: button.click(timeout=STEP_S * 1000), drawn)
    got = await page.locator(".kgviz-verdict").count()
    if got != n_methods:
        raise RuntimeError(f"Compare drew {got} verdicts, expected {n_methods}")
    return seconds


async def trace_once(page: Any, url: str, item: dict[str, Any], method: str) -> float:
    await open_page(page, url, "Trace", "Trace a method")
    label = page.locator("label", has_text="Re-run when an input changes")
    if await label.locator("input").is_checked(timeout=STEP_S * 1000):  # so that only the Run click starts a run
        await label.click()
        await idle(page)
    box = page.get_by_role("combobox", name="Method")
    await box.click()
    await page.keyboard.type(f"— {method}")
    # click the option itself: Enter picks whatever the list highlights, which under load can still be
    # an earlier match of the typed prefix ("— kg-r" -> kg-rag for kg-retriever), and the player then
    # never shows the method waited for (a 600 s timeout, as four Trace pages had)
    await page.get_by_role("option", name=re.compile(rf"— {re.escape(method)}$")).click(timeout=STEP_S * 1000)
    await idle(page)
    shown = await box.input_value(timeout=STEP_S * 1000)  # the picker's input holds the chosen label
    if not shown.endswith(f"— {method}"):
        raise RuntimeError(f"Trace: the method picker shows {shown!r}, not {method}")
    q = page.get_by_role("textbox", name="Question", exact=True)
    await q.fill(item["question"])
    await q.press("Enter")
    await idle(page)
    run = page.get_by_role("button", name="Run", exact=True)
    player = page.frame_locator("iframe").first.locator(f"body[data-kgviz-run='{method}']")
    return await ran(page, lambda: run.click(timeout=STEP_S * 1000),
                     lambda: player.wait_for(state="attached", timeout=STEP_S * 1000))


async def session(browser: Any, url: str, items: list[dict[str, Any]], n_methods: int,
                  out: dict[str, list[float]], errors: list[str]) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    try:
        for i, item in enumerate(items):
            for name, job in (("compare", lambda: compare_once(page, url, item, n_methods)),
                              ("trace", lambda: trace_once(page, url, item, TRACE_METHODS[i % len(TRACE_METHODS)]))):
                try:
                    out[name].append(await job())
                except Exception as exc:  # noqa: BLE001 - a failed page is counted and reported, never timed
                    errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        await context.close()


async def phase(url: str, n: int, rounds: int, questions: list[dict[str, Any]], n_methods: int) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    out: dict[str, list[float]] = {"compare": [], "trace": []}
    errors: list[str] = []
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            await asyncio.gather(*(session(browser, url, questions[s * rounds:(s + 1) * rounds], n_methods, out, errors)
                                   for s in range(n)))
        finally:
            await browser.close()
    return {"sessions": n, "samples": out, "errors": errors, "wall_s": round(time.perf_counter() - t0, 1),
            "load_1m_start": round(load0, 2), "load_1m_end": round(os.getloadavg()[0], 2)}


def pct(xs: list[float], q: float) -> float | None:
    """Nearest-rank percentile."""
    if not xs:
        return None
    s = sorted(xs)
    return round(s[max(0, math.ceil(q * len(s)) - 1)], 2)


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup (servers, copies) on kill
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="a built HotpotQA workspace folder")
    ap.add_argument("--before-rev", default="main", help="git revision served as 'before'")
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 3, 5])
    ap.add_argument("--rounds", type=int, default=4, help="Compare + Trace pairs per session and phase")
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--offset", type=int, default=100, help="first question used (the warm-up takes the one before)")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    questions = rows[args.offset: args.offset + max(args.sessions) * args.rounds]
    warm = rows[args.offset - 1]
    n_methods = len(list_methods())
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.before_rev], capture_output=True,
                         text=True, check=True).stdout.strip()
    after_rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                               text=True, check=True).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="kgviz_page_load_"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        before_src = tmp / "before-src"
        before_src.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before_rev], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(before_src)], input=archive.stdout, check=True)
        urls: dict[str, str] = {}
        for name, src in (("before", before_src), ("after", ROOT)):
            db = tmp / f"db-{name}"
            shutil.copytree(args.db, db)
            found = which_kgviz(src)
            if not found.startswith(str(src)):
                raise RuntimeError(f"{name}: kgviz imports from {found}, not {src}")
            proc, url = start_server(src, db, tmp / f"home-{name}", tmp / f"{name}.log")
            procs.append(proc)
            urls[name] = url
        for name, url in urls.items():  # untimed warm-up: caches of the graph, first imports
            asyncio.run(phase(url, 1, 1, [warm], n_methods))
        results: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for k, n in enumerate(args.sessions):
            order = ["before", "after"] if k % 2 == 0 else ["after", "before"]
            for name in order:
                results[name].append(asyncio.run(phase(urls[name], n, args.rounds, questions, n_methods)))
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    table = []
    for page in ("compare", "trace"):
        for i, n in enumerate(args.sessions):
            b, a = results["before"][i], results["after"][i]
            table.append({"page": page, "sessions": n,
                          "before_p50": pct(b["samples"][page], 0.5), "before_p95": pct(b["samples"][page], 0.95),
                          "after_p50": pct(a["samples"][page], 0.5), "after_p95": pct(a["samples"][page], 0.95),
                          "n_before": len(b["samples"][page]), "n_after": len(a["samples"][page])})
    report = {"before_rev": rev, "after_rev": after_rev, "db": str(args.db), "rounds": args.rounds,
              "methods": n_methods, "table": table, "phases": results}
    print(json.dumps(report, indent=1))
    print(f"\n{'page':8} {'sessions':>8} {'before p50/p95 s':>18} {'after p50/p95 s':>18}  n")
    for r in table:
        print(f"{r['page']:8} {r['sessions']:>8} {r['before_p50']!s:>8} / {r['before_p95']!s:<7} "
              f"{r['after_p50']!s:>8} / {r['after_p95']!s:<7} {r['n_before']}/{r['n_after']}")
    for name in ("before", "after"):
        for ph in results[name]:
            if ph["errors"]:
                print(f"{name} x{ph['sessions']}: {len(ph['errors'])} failed pages, first: {ph['errors'][0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
