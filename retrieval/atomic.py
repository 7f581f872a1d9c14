"""Atomic file replacement: readers see the old content or the new one, never a torn file.

Index files are private: written through `tempfile.mkstemp` (mode 0600), in folders created 0700."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not supported on every platform/filesystem
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def private_folder(path: Path, root: Path | None = None) -> None:
    """Create `path` (and missing parents) with mode 0700; with `root`, also make every existing
    folder from `root` down to `path` 0700 (folders an older version created 0755)."""
    missing: list[Path] = []
    current = path
    while not current.exists() and current.parent != current:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    if root is not None and (path == root or root in path.parents):
        for folder in (path, *path.parents):
            os.chmod(folder, 0o700)
            if folder == root:
                break


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old content or the new, never a mix; the file
    is 0600 (mkstemp) and missing folders are created 0700."""
    private_folder(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
