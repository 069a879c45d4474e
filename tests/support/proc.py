"""The child processes of a process, read from /proc (Linux; the kill and worker tests)."""
from __future__ import annotations

from pathlib import Path


def child_pids(pid: int, *, zombies: bool = True) -> list[int]:
    """Pids whose parent is ``pid``; ``zombies=False`` leaves out those that have ended but are
    not reaped yet. A process that goes away while it is read is skipped."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
                if int(parent) == pid and (zombies or state != "Z"):
                    kids.append(int(entry.name))
            except (OSError, IndexError, ValueError):  # gone meanwhile
                pass
    return kids
