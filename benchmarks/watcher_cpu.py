"""Server CPU while files churn inside a virtualenv in the checkout (prints JSON figures).

Streamlit's file watcher starts with the first browser session. With the default watcher
("auto": a recursive inotify watch on the whole checkout) pip/pytest churn inside ``.venv``
overflows the inotify queue and the server spins "reconciling recursive watches". This script
starts ``streamlit run app.py`` from the checkout, opens one headless Chromium session, churns
files in ``.venv/kgviz-bench-churn`` for ``--seconds`` and reports the server's CPU (user + system
time from /proc) as a percentage of one core.

    python benchmarks/watcher_cpu.py                    # the checkout's .streamlit/config.toml
    python benchmarks/watcher_cpu.py --watcher auto     # the old default, for comparison
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _churn(folder: Path, stop: threading.Event, counter: list[int]) -> None:
    """Write and delete small files in bursts, like pip unpacking a wheel."""
    folder.mkdir(parents=True, exist_ok=True)
    while not stop.is_set():
        for i in range(200):
            (folder / f"f{i}.py").write_text("x = 1\n")
        for i in range(200):
            (folder / f"f{i}.py").unlink()
        counter[0] += 400
        time.sleep(0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--watcher", default="config", help="'config' (the checkout's config) or a fileWatcherType")
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="kgviz-watch-"))
    made_venv = not (ROOT / ".venv").exists()
    churn_dir = ROOT / ".venv" / "kgviz-bench-churn"
    port = _port()
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true"]
    if args.watcher != "config":
        cmd += ["--server.fileWatcherType", args.watcher]
    env = {**os.environ, "KGVIZ_HOME": str(home), "KGVIZ_LLM": "offline", "KGVIZ_EMBEDDER": "hashing"}
    log = home / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    stop = threading.Event()
    churned = [0]
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            page.goto(url)  # the first session starts the file watcher
            page.get_by_text("kgviz").first.wait_for(timeout=60_000)
            time.sleep(3)  # let the first run settle
            worker = threading.Thread(target=_churn, args=(churn_dir, stop, churned), daemon=True)
            before, t0 = _cpu_seconds(proc.pid), time.monotonic()
            worker.start()
            time.sleep(args.seconds)
            stop.set()
            worker.join()
            cpu, wall = _cpu_seconds(proc.pid) - before, time.monotonic() - t0
            browser.close()
    finally:
        stop.set()
        proc.terminate()
        proc.wait(timeout=15)
        shutil.rmtree(churn_dir, ignore_errors=True)
        if made_venv:
            shutil.rmtree(ROOT / ".venv", ignore_errors=True)
    text = log.read_text(errors="replace")
    print(json.dumps({"watcher": args.watcher, "seconds": round(wall, 1), "server_cpu_percent_of_one_core":
                      round(100 * cpu / wall, 1), "files_churned": churned[0],
                      "inotify_overflow_lines": text.count("Inotify queue overflowed")}))
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
