"""Typed errors. Raised deep inside kgviz, caught only at boundaries (pages, CLI).

Every error carries a message a user can act on: what went wrong, with which file / key /
database, and what to do about it.
"""
from __future__ import annotations


class KgvizError(Exception):
    """Base of every error kgviz raises on purpose."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint

    def user_message(self) -> str:
        msg = str(self)
        return f"{msg} — {self.hint}" if self.hint else msg


class ConfigError(KgvizError):
    """A setting or spec string is invalid."""


# --- providers ---------------------------------------------------------------------------------
class ProviderError(KgvizError):
    """An LLM or embedding provider failed."""


class MissingKeyError(ProviderError):
    """The API key environment variable for a provider is not set."""


class AuthenticationError(ProviderError):
    """The provider rejected the API key."""


class RateLimitError(ProviderError):
    """Still rate limited after the configured retries."""


class ProviderTimeoutError(ProviderError):
    """The provider did not answer within the configured timeout (after retries)."""


class ProviderResponseError(ProviderError):
    """The provider answered with a server error or a body kgviz cannot read."""


class EmbedderUnavailableError(ProviderError):
    """An embedding model could not be loaded (e.g. the model hub is unreachable)."""


class ModelPullError(ProviderError):
    """``kgviz models pull`` could not fetch a model (unreachable hub or index, a digest that
    does not match its pin, a download that did not finish in time)."""


class RecordingMissError(ConfigError):
    """A recorded-replies LLM (``recorded:<path>``) has no reply for a request. A ConfigError
    because the run asks for something the recording does not cover (other documents, options,
    questions or prompts); it also stops a build at once instead of failing chunk by chunk."""


class RecordingError(ConfigError):
    """A recorded-replies file (``recorded:<path>``) cannot be used: it is not a recording, or a
    line of it is malformed (wrong type, not UTF-8, too long or too deeply nested). The message
    names the file and the line."""


class LLMOutputError(KgvizError):
    """An LLM reply could not be parsed for the task that asked for it."""


# --- ingest ------------------------------------------------------------------------------------
class IngestError(KgvizError):
    """A document could not be loaded. ``path`` names the file."""

    def __init__(self, path: str, reason: str, *, hint: str = "") -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}", hint=hint)


class EmptyFileError(IngestError):
    pass


class BinaryFileError(IngestError):
    pass


class DecodeError(IngestError):
    pass


class FileTooLargeError(IngestError):
    pass


class UnsupportedFileError(IngestError):
    pass


class LimitExceededError(IngestError):
    """A file or .jsonl line breaks a loader limit (kgviz.ingest.limits.LoadLimits)."""


# --- graph store -------------------------------------------------------------------------------
class GraphStoreError(KgvizError):
    """The graph database failed or holds something unexpected."""


class DiskFullError(GraphStoreError):
    """The disk filled up while the workspace was being written."""


class DatabaseLockedError(GraphStoreError):
    """Another process holds the database's file lock."""


class EmbedderMismatchError(GraphStoreError):
    """The database was built with another embedder than the one configured."""


class SchemaVersionError(GraphStoreError):
    """The database was written by an incompatible kgviz schema version."""


class WriteConflictError(GraphStoreError):
    """A write transaction is already running in this process."""


# --- build / methods / evaluation --------------------------------------------------------------
class BuildError(KgvizError):
    """The index build failed at a stage."""


class BuildCancelled(BuildError):
    """The build was interrupted; what was written so far is kept and a re-run resumes."""


class MethodError(KgvizError):
    """A retrieval method failed; its partial trace is kept."""


class UnknownMethodError(MethodError):
    """No method is registered under that name."""


class EvaluationError(KgvizError):
    """A QA file or evaluation run is invalid."""
