"""Replaying a recording in a test: no model, no server and no network (a socket that tries to
connect fails the test), and the bundled sample (sample_recorded) built from its replies.

``no_network()`` guards any replay; ``replayed_sample(folder)`` opens a session at ``folder``, builds
the sample from the bundled recording (``described``, the default: the recorded sample's own build,
with the skeleton's descriptions; off: the same graph with source sentences) and closes the session when the block ends. A request the recording lacks raises
RecordingMissError, as in the app.
"""
from __future__ import annotations

import socket
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from kgviz.index.params import BuildReport
from kgviz.providers.recorded import RecordedLLM, load_recording
from kgviz.replay import SAMPLE_RECORDING, Session, build_sample, open_session


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError(f"a replay tried to open a network connection: {args!r}")


@contextmanager
def no_network() -> Iterator[None]:
    """Inside the block every socket connect fails the test (module fixtures use this; a test can
    use the ``no_network`` fixture of tests/conftest.py)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _refuse)
        mp.setattr(socket.socket, "connect_ex", _refuse)
        yield


@dataclass
class SampleReplay:
    llm: RecordedLLM  # hits / misses: what the replay asked of the recording
    session: Session
    report: BuildReport


@contextmanager
def replayed_sample(folder: Path, *, described: bool = True) -> Iterator[SampleReplay]:
    """The sample built at ``folder`` from the bundled recording, the session open inside the block."""
    with no_network():
        llm = RecordedLLM(SAMPLE_RECORDING, load_recording(SAMPLE_RECORDING))
        session = open_session(folder, llm)
        try:
            yield SampleReplay(llm, session, build_sample(session, described=described))
        finally:
            session.close()
