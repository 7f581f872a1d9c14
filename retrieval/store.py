"""On-disk persistence of collections under a root folder (the gateway passes <PLANSTACK_HOME>/indexes).

Layout::

    <root>/shared/<collection>/           public collections (domain knowledge)
    <root>/tenants/<tenant>/<collection>/ collections private to one tenant
        manifest.json                     written last: the commit point of a save
        index.<generation>.faiss          serialised FAISS index
        chunks.<generation>.json          chunk id map and metadata

Every file is written atomically (temp file, fsync, os.replace, fsync of the folder). The manifest
names the files of its generation with their SHA-256, so a reader sees either the old or the new
set, and the previous generation's files are kept one save longer for readers mid-load. On load,
the format version, the embedder (model name and dimension), the checksums and the counts are
checked; any problem raises a typed error whose message says how to fix it.

Tenant privacy is structural: a tenant's collections are only reachable through paths built from
that tenant's validated id, and a manifest must name the tenant of the folder it lies in.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from retrieval.atomic import atomic_write, private_folder, sha256_hex
from retrieval.collection import Collection, ConcreteIndexType, HnswParams
from retrieval.config import IndexType, RetrievalConfig
from retrieval.errors import (
    CollectionExistsError,
    CollectionNotFoundError,
    IndexCorruptError,
    IndexMismatchError,
    InvalidNameError,
    rebuild_hint,
)

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# Tenants are the gateway's (serving/auth.py): letters, digits, '_', '.', '-', never starting with a dot.
_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_name(value: str, what: str = "collection") -> str:
    """A collection name (lowercase letters, digits, '_', '-') or a tenant id (as the gateway's API
    keys allow: letters, digits, '_', '.', '-'); at most 64 characters, starting with a letter or digit,
    so that neither can name a path outside its folder."""
    if what == "tenant":
        pattern, allowed = _TENANT, "A-Z, a-z, 0-9, '_', '.' or '-'"
    else:
        pattern, allowed = _NAME, "a-z, 0-9, '_' or '-'"
    if not isinstance(value, str) or not pattern.fullmatch(value) or ".." in value:
        raise InvalidNameError(
            f"invalid {what} name {value!r}",
            hint=f"use 1-64 characters of {allowed}, starting with a letter or digit",
        )
    return value


@dataclass(frozen=True, slots=True, order=True)
class CollectionRef:
    """A collection's address: its name and, for a private one, its tenant."""

    name: str
    tenant: str | None = None

    def __str__(self) -> str:
        return self.name if self.tenant is None else f"{self.tenant}/{self.name}"


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    sha256: str
    bytes: int


class Manifest(BaseModel):
    """What a saved collection is: read first on load and checked against the embedder in use."""

    model_config = ConfigDict(extra="ignore")
    format_version: int
    name: str
    tenant: str | None
    domain: str | None
    model_name: str
    dim: int
    index_type: ConcreteIndexType
    requested_index_type: IndexType
    hnsw_threshold: int
    hnsw_m: int
    hnsw_ef_construction: int
    hnsw_ef_search: int
    count: int
    generation: int
    updated_at: str
    index_file: FileEntry
    chunks_file: FileEntry


class IndexStore:
    """Creates, lazily loads (and caches), saves, lists and drops collections under `root`."""

    def __init__(self, root: Path | str, config: RetrievalConfig | None = None) -> None:
        self.root = Path(root)
        self.config = config or RetrievalConfig()
        self._cache: dict[CollectionRef, tuple[Collection, tuple[int, int]]] = {}
        self._lock = threading.RLock()

    # -- addressing ------------------------------------------------------------------------------

    def ref(self, name: str, tenant: str | None = None) -> CollectionRef:
        validate_name(name)
        if tenant is not None:
            validate_name(tenant, "tenant")
        return CollectionRef(name, tenant)

    def path(self, ref: CollectionRef) -> Path:
        ref = self.ref(ref.name, ref.tenant)  # re-validate: refs may be built by hand
        base = self.root / "shared" if ref.tenant is None else self.root / "tenants" / ref.tenant
        return base / ref.name

    def list(self, *, tenant: str | None = None, include_shared: bool = True) -> list[CollectionRef]:
        """Shared collections (if asked) and `tenant`'s private ones; never another tenant's."""
        refs: list[CollectionRef] = []
        folders: list[tuple[Path, str | None]] = []
        if include_shared:
            folders.append((self.root / "shared", None))
        if tenant is not None:
            folders.append((self.root / "tenants" / validate_name(tenant, "tenant"), tenant))
        for folder, owner in folders:
            if folder.is_dir():
                refs.extend(
                    CollectionRef(p.name, owner)
                    for p in sorted(folder.iterdir())
                    if _NAME.fullmatch(p.name) and (p / MANIFEST).is_file()
                )
        return refs

    def exists(self, ref: CollectionRef) -> bool:
        return (self.path(ref) / MANIFEST).is_file()

    # -- lifecycle -------------------------------------------------------------------------------

    def create(
        self,
        ref: CollectionRef,
        *,
        dim: int,
        model_name: str,
        domain: str | None = None,
        index_type: IndexType | None = None,
        replace: bool = False,
    ) -> Collection:
        """A new, empty collection (on disk after the first `save`, which replaces the old one if `replace`)."""
        if self.exists(ref) and not replace:
            raise CollectionExistsError(f"collection {ref} already exists", hint="open it, or drop it first")
        cfg = self.config
        collection = Collection(
            ref.name,
            dim=dim,
            model_name=model_name,
            domain=domain,
            tenant=ref.tenant,
            index_type=index_type or cfg.index_type,
            hnsw_threshold=cfg.hnsw_threshold,
            hnsw=HnswParams(cfg.hnsw_m, cfg.hnsw_ef_construction, cfg.hnsw_ef_search),
        )
        self.path(ref)  # validates
        return collection

    def manifest(self, ref: CollectionRef) -> Manifest:
        path = self.path(ref) / MANIFEST
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise CollectionNotFoundError(
                f"collection {ref} does not exist", hint="list them with `planstack index list`"
            ) from None
        try:
            manifest = Manifest.model_validate_json(raw)
        except ValidationError as exc:
            version = _peek_version(raw)
            if version is not None and version != FORMAT_VERSION:
                raise IndexMismatchError(
                    f"collection {ref} has format version {version}, this planstack reads {FORMAT_VERSION}",
                    hint=rebuild_hint(ref.name, ref.tenant),
                ) from exc
            raise IndexCorruptError(
                f"the manifest of collection {ref} is unreadable: {exc.error_count()} invalid field(s)",
                hint=rebuild_hint(ref.name, ref.tenant),
            ) from exc
        if manifest.format_version != FORMAT_VERSION:
            raise IndexMismatchError(
                f"collection {ref} has format version {manifest.format_version}, this planstack reads {FORMAT_VERSION}",
                hint=rebuild_hint(ref.name, ref.tenant),
            )
        if manifest.name != ref.name or manifest.tenant != ref.tenant:
            raise IndexCorruptError(
                f"the manifest in {path.parent} belongs to collection "
                f"{CollectionRef(manifest.name, manifest.tenant)}, not {ref}",
                hint=rebuild_hint(ref.name, ref.tenant),
            )
        return manifest

    def open(self, ref: CollectionRef, *, model_name: str | None = None, dim: int | None = None) -> Collection:
        """Load a collection (once; reloaded when its manifest changes on disk) and verify it.

        `model_name` and `dim`, when given, must match what the collection was built with.
        """
        manifest_path = self.path(ref) / MANIFEST
        with self._lock:
            try:
                st = manifest_path.stat()
                stamp = (st.st_mtime_ns, st.st_size)
            except FileNotFoundError:
                stamp = (-1, -1)
            cached = self._cache.get(ref)
            if cached is not None and (cached[1] == stamp or stamp == (-1, -1)):
                collection = cached[0]
            else:
                collection = self._load(ref)
                self._cache[ref] = (collection, stamp)
        _check_embedder(ref, collection.model_name, collection.dim, model_name, dim)
        return collection

    def open_or_create(self, ref: CollectionRef, *, dim: int, model_name: str, domain: str | None = None) -> Collection:
        if self.exists(ref) or ref in self._cache:
            return self.open(ref, model_name=model_name, dim=dim)
        collection = self.create(ref, dim=dim, model_name=model_name, domain=domain)
        with self._lock:
            self._cache[ref] = (collection, (-1, -1))
        return collection

    def save(self, collection: Collection) -> Manifest:
        ref = self.ref(collection.name, collection.tenant)
        folder = self.path(ref)
        private_folder(folder, self.root)  # 0700 from the root down: other users cannot list or read indexes
        with self._lock, _folder_lock(folder):  # one writer at a time, across processes too
            previous = self._previous_generation(ref)
            generation = previous + 1
            index_bytes, metadata = collection.export_state()
            chunks_bytes = json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode()
            index_name, chunks_name = f"index.{generation}.faiss", f"chunks.{generation}.json"
            atomic_write(folder / index_name, index_bytes)
            atomic_write(folder / chunks_name, chunks_bytes)
            manifest = Manifest(
                format_version=FORMAT_VERSION,
                name=ref.name,
                tenant=ref.tenant,
                domain=collection.domain,
                model_name=collection.model_name,
                dim=collection.dim,
                index_type=collection.index_type,
                requested_index_type=collection.requested_index_type,
                hnsw_threshold=collection.hnsw_threshold,
                hnsw_m=collection.hnsw.m,
                hnsw_ef_construction=collection.hnsw.ef_construction,
                hnsw_ef_search=collection.hnsw.ef_search,
                count=collection.count,
                generation=generation,
                updated_at=datetime.now(UTC).isoformat(timespec="seconds"),
                index_file=FileEntry(name=index_name, sha256=sha256_hex(index_bytes), bytes=len(index_bytes)),
                chunks_file=FileEntry(name=chunks_name, sha256=sha256_hex(chunks_bytes), bytes=len(chunks_bytes)),
            )
            atomic_write(folder / MANIFEST, manifest.model_dump_json(indent=2).encode())
            self._remove_generations_before(folder, generation - 1)
            st = (folder / MANIFEST).stat()
            self._cache[ref] = (collection, (st.st_mtime_ns, st.st_size))
            return manifest

    def drop(self, ref: CollectionRef) -> bool:
        folder = self.path(ref)
        with self._lock:
            self._cache.pop(ref, None)
            if not folder.is_dir():
                return False
            shutil.rmtree(folder)
            return True

    # -- internals -------------------------------------------------------------------------------

    def _load(self, ref: CollectionRef) -> Collection:
        manifest = self.manifest(ref)
        folder = self.path(ref)
        hint = rebuild_hint(ref.name, ref.tenant)
        blobs: dict[str, bytes] = {}
        for entry in (manifest.index_file, manifest.chunks_file):
            if Path(entry.name).name != entry.name or entry.name == MANIFEST:
                raise IndexCorruptError(f"collection {ref}: bad file name {entry.name!r} in manifest", hint=hint)
            try:
                data = (folder / entry.name).read_bytes()
            except OSError as exc:
                raise IndexCorruptError(f"collection {ref}: cannot read {entry.name}: {exc}", hint=hint) from exc
            if len(data) != entry.bytes or sha256_hex(data) != entry.sha256:
                raise IndexCorruptError(
                    f"collection {ref}: checksum mismatch on {entry.name} (the file is damaged or was "
                    "modified outside planstack)",
                    hint=hint,
                )
            blobs[entry.name] = data
        collection = Collection(
            ref.name,
            dim=manifest.dim,
            model_name=manifest.model_name,
            domain=manifest.domain,
            tenant=ref.tenant,
            index_type=manifest.requested_index_type,
            hnsw_threshold=manifest.hnsw_threshold,
            hnsw=HnswParams(manifest.hnsw_m, manifest.hnsw_ef_construction, self.config.hnsw_ef_search),
        )
        try:
            metadata: Any = json.loads(blobs[manifest.chunks_file.name])
            collection.import_state(blobs[manifest.index_file.name], metadata)
        except (ValueError, KeyError, TypeError, RuntimeError) as exc:  # faiss raises RuntimeError
            raise IndexCorruptError(f"collection {ref} is inconsistent: {exc}", hint=hint) from exc
        if collection.count != manifest.count or collection.index_type != manifest.index_type:
            raise IndexCorruptError(
                f"collection {ref}: the manifest says {manifest.count} chunks in a {manifest.index_type} "
                f"index, the files hold {collection.count} in a {collection.index_type} index",
                hint=hint,
            )
        if any(r.tenant != ref.tenant for r in collection.records()):
            raise IndexCorruptError(f"collection {ref} holds chunks of another tenant", hint=hint)
        return collection

    def _previous_generation(self, ref: CollectionRef) -> int:
        try:
            return self.manifest(ref).generation
        except (CollectionNotFoundError, IndexCorruptError, IndexMismatchError):
            folder = self.path(ref)
            gens = [_generation_of(p.name) for p in folder.glob("*.*.*")] if folder.is_dir() else []
            return max((g for g in gens if g is not None), default=0)

    @staticmethod
    def _remove_generations_before(folder: Path, keep_from: int) -> None:
        for p in folder.iterdir():
            gen = _generation_of(p.name)
            if gen is not None and gen < keep_from:
                with contextlib.suppress(OSError):
                    p.unlink()


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    with os.fdopen(os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600), "r+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _generation_of(filename: str) -> int | None:
    match = re.fullmatch(r"(?:index|chunks)\.(\d+)\.(?:faiss|json)", filename)
    return int(match.group(1)) if match else None


def _peek_version(raw: bytes) -> int | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    version = data.get("format_version") if isinstance(data, dict) else None
    return version if isinstance(version, int) else None


def _check_embedder(
    ref: CollectionRef, have_model: str, have_dim: int, want_model: str | None, want_dim: int | None
) -> None:
    if want_model is not None and have_model != want_model:
        raise IndexMismatchError(
            f"collection {ref} was built with embedding model {have_model!r}, the configured model is {want_model!r}",
            hint=rebuild_hint(ref.name, ref.tenant) + " (or configure the model it was built with)",
        )
    if want_dim is not None and have_dim != want_dim:
        raise IndexMismatchError(
            f"collection {ref} holds vectors of dimension {have_dim}, the embedder produces {want_dim}",
            hint=rebuild_hint(ref.name, ref.tenant),
        )
