"""Small secret files in PLANSTACK_HOME (the cache-salt secret, the engine's API key).

A secret file is created atomically and private from its first byte: the content is written to a
temporary file opened with O_CREAT|O_EXCL and mode 0600, fsynced, then hard-linked to its name
(which fails if the name exists: two processes starting at once agree on one value, and nobody ever
reads an empty or half-written file). Its folder is created 0700. An existing file must be a regular
file, readable and writable by its owner only, and not empty; anything else is refused with a
`ConfigError` saying how to fix it, because a secret others could read is no secret.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from serving.errors import ConfigError

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
MAX_SECRET_BYTES = 4096


def ensure_private_dir(path: Path) -> None:
    """Create `path` and its missing parents with mode 0700 (existing folders are left alone)."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, PRIVATE_DIR_MODE)


def read_private_file(path: Path, what: str) -> str | None:
    """The stripped content of an existing private file, None when it does not exist; ConfigError
    when it is not a regular file, is open to group/others, or is empty."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(
            f"cannot read the {what} {path}: {exc.strerror}",
            hint=f"it must be a regular file owned by this user with mode 600 (chmod 600 {path})",
        ) from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"the {what} {path} is not a regular file", hint=f"remove it ({path})")
        if info.st_mode & 0o077:
            raise ConfigError(
                f"the {what} {path} is accessible to group or others (mode {stat.S_IMODE(info.st_mode):03o})",
                hint=f"chmod 600 {path}",
            )
        text = handle.read(MAX_SECRET_BYTES + 1).decode("utf-8", "replace").strip()
    if not text:
        raise ConfigError(
            f"the {what} {path} is empty", hint=f"delete it and a new one is created at the next start (rm {path})"
        )
    return text


def create_private_file(path: Path, content: str, what: str) -> str:
    """Write `content` to a new private file at `path`, atomically; if another process created it
    first, its content wins and is returned."""
    ensure_private_dir(path.parent)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)  # atomic, and never replaces an existing file
        except FileExistsError:
            existing = read_private_file(path, what)
            return existing if existing is not None else content
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return content


def load_or_create_private(path: Path, make: Callable[[], str], what: str) -> str:
    """The content of the private file at `path`, created with `make()` when missing."""
    existing = read_private_file(path, what)
    if existing is not None:
        return existing
    return create_private_file(path, make(), what)
