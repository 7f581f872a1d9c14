"""What may leave the gateway in a log line or an error body.

- `for_log`: a client-supplied string (a field name, a header) as it may appear in a log line:
  `repr`-escaped (no newline, carriage return, ANSI escape or other control/format character can
  forge or colour a log line) and bounded in length.
- `redact_paths`: server file paths in a message replaced by `<path>` (the error funnel applies it
  to every error body, including error messages relayed from the engine).
- `describe_store_failure`: a run-store failure as a short typed phrase (disk full, read-only, busy,
  I/O error) instead of SQLite's or the OS's own message, which names files and internals; the
  details stay in the server log.
"""

from __future__ import annotations

import errno
import re
import sqlite3

LOG_FIELD_CHARS = 64

_ROOTS = (
    "root|home|tmp|usr|opt|var|srv|etc|mnt|media|work|data|proc|sys|dev|run|lib|lib64|bin|sbin|nix|snap|boot"
    "|Users|private|Library|Volumes"
)
_PATH = re.compile(rf"(?<![\w/.:-])(?:~|/(?:{_ROOTS}))(?:/[^\s'\"`:,;()\[\]{{}}<>]+)+")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\[^\s'\"`:,;()\[\]{}<>]+")


def for_log(value: object, limit: int = LOG_FIELD_CHARS) -> str:
    """`value` as a quoted, escaped, bounded string for a log line."""
    text = value if isinstance(value, str) else str(value)
    shown = repr(text[:limit])
    return shown + "…" if len(text) > limit else shown


def redact_paths(text: str) -> str:
    """`text` with absolute file-system paths replaced by `<path>` (API routes such as /v1/runs stay)."""
    return _WINDOWS_PATH.sub("<path>", _PATH.sub("<path>", text))


_SQLITE_PROBLEMS = (
    ("SQLITE_FULL", "the disk is full"),
    ("SQLITE_READONLY", "it is read-only"),
    ("SQLITE_BUSY", "it is busy"),
    ("SQLITE_LOCKED", "it is busy"),
    ("SQLITE_CANTOPEN", "it cannot be opened"),
    ("SQLITE_IOERR", "an I/O error"),
    ("SQLITE_CORRUPT", "it is damaged"),
    ("SQLITE_NOTADB", "it is damaged"),
)
_OS_PROBLEMS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk is full",
    errno.EROFS: "it is read-only",
    errno.EACCES: "it is not writable",
    errno.EPERM: "it is not writable",
}


def describe_store_failure(exc: BaseException) -> str:
    """What went wrong with the run store, in a few words, from the error and its causes."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            break
        if isinstance(seen, sqlite3.Error):
            name = str(getattr(seen, "sqlite_errorname", "") or "")
            for prefix, problem in _SQLITE_PROBLEMS:
                if name.startswith(prefix):
                    return problem
            text = str(seen).lower()
            if "readonly" in text or "read-only" in text:
                return "it is read-only"
            if "disk is full" in text:
                return "the disk is full"
            return "a database error"
        if isinstance(seen, OSError):
            return _OS_PROBLEMS.get(seen.errno or 0, "an I/O error")
        seen = seen.__cause__ or seen.__context__
    return "a storage error"
