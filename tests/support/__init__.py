"""Helpers shared by the test packages, imported as ``tests.support.<module>`` (pytest puts the
repo root on sys.path through ``pythonpath = ["."]`` in pyproject.toml; no test edits sys.path):
fake_server (loopback LLM server), fixture_graph (the small hand-built graph), index_fakes
(scripted LLMs and corpora for build tests), golden (trace hashes), imports (the import graph),
methods (a base for stand-in methods), recorded_sample (replays of a recording: no network, the
bundled sample built from its replies)."""
