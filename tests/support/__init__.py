"""Helpers shared by the test packages (import as ``tests.support...``; the repo root is on
sys.path through pytest's rootdir conftest)."""
