from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.collection import ChunkDraft, Collection
from retrieval.config import RetrievalConfig
from retrieval.errors import (
    CollectionExistsError,
    CollectionNotFoundError,
    IndexCorruptError,
    IndexMismatchError,
    InvalidNameError,
)
from retrieval.store import MANIFEST, CollectionRef, IndexStore
from tests.retrieval.fakes import HashingEmbedder

TEXTS = ["The per diem in Paris is 75 euros.", "Hotel cap in Berlin is 140 euros.", "Music ends at 23:00."]


def _saved(store: IndexStore, embedder: HashingEmbedder, ref: CollectionRef, **kwargs: object) -> Collection:
    c = store.create(ref, dim=embedder.dim, model_name=embedder.name, domain="travel", **kwargs)  # type: ignore[arg-type]
    c.add([ChunkDraft(t, f"doc{i}.md", position=i) for i, t in enumerate(TEXTS)], embedder.embed(TEXTS))
    store.save(c)
    return c


def _fresh(store: IndexStore) -> IndexStore:
    """Another process's view of the same folder (no in-memory cache)."""
    return IndexStore(store.root, store.config)


@pytest.mark.parametrize("index_type", ["flat", "hnsw"])
def test_round_trip(store: IndexStore, embedder: HashingEmbedder, index_type: str) -> None:
    ref = CollectionRef("travel")
    original = _saved(store, embedder, ref, index_type=index_type)
    original.delete_document("doc2.md")
    manifest = store.save(original)
    assert manifest.count == 2 and manifest.index_type == index_type and manifest.model_name == embedder.name
    assert manifest.dim == embedder.dim and len(manifest.index_file.sha256) == 64

    loaded = _fresh(store).open(ref, model_name=embedder.name, dim=embedder.dim)
    assert loaded is not original
    assert sorted(r.text for r in loaded.records()) == sorted(TEXTS[:2])
    assert loaded.index_type == index_type and loaded.domain == "travel"
    hit = loaded.search(embedder.embed(["per diem Paris"]), 1)[0][0]
    assert hit.record.source == "doc0.md" and hit.record.chunk_id == 0
    assert loaded.documents() == original.documents()
    # ids keep growing after a reload
    added = loaded.add([ChunkDraft("new fact", "doc9.md")], embedder.embed(["new fact"])).added
    assert added == [3]


def test_save_is_atomic_and_keeps_one_previous_generation(store: IndexStore, embedder: HashingEmbedder) -> None:
    ref = CollectionRef("travel")
    c = _saved(store, embedder, ref)
    for i in range(3):
        c.add([ChunkDraft(f"fact {i}", f"more{i}.md")], embedder.embed([f"fact {i}"]))
        store.save(c)
    files = sorted(p.name for p in store.path(ref).iterdir())
    assert files == [".lock", "chunks.3.json", "chunks.4.json", "index.3.faiss", "index.4.faiss", MANIFEST]
    assert not [p for p in store.path(ref).iterdir() if p.name.endswith(".tmp")]
    assert _fresh(store).open(ref).count == 6


def test_open_is_lazy_and_cached(store: IndexStore, embedder: HashingEmbedder) -> None:
    ref = CollectionRef("travel")
    _saved(store, embedder, ref)
    reader = _fresh(store)
    first = reader.open(ref)
    assert reader.open(ref) is first
    writer = _fresh(store)
    c = writer.open(ref)
    c.add([ChunkDraft("late fact", "late.md")], embedder.embed(["late fact"]))
    writer.save(c)
    assert reader.open(ref).count == 4  # the changed manifest is noticed and the collection reloaded


def _flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("target", ["index", "chunks"])
def test_flipped_bytes_are_detected(store: IndexStore, embedder: HashingEmbedder, target: str) -> None:
    ref = CollectionRef("travel")
    _saved(store, embedder, ref)
    manifest = store.manifest(ref)
    entry = manifest.index_file if target == "index" else manifest.chunks_file
    _flip_byte(store.path(ref) / entry.name, entry.bytes // 2)
    with pytest.raises(IndexCorruptError) as err:
        _fresh(store).open(ref)
    assert "checksum" in str(err.value)
    assert "planstack index build --collection travel" in str(err.value)


def test_truncated_and_missing_files_are_detected(store: IndexStore, embedder: HashingEmbedder) -> None:
    ref = CollectionRef("travel")
    _saved(store, embedder, ref)
    manifest = store.manifest(ref)
    (store.path(ref) / manifest.index_file.name).write_bytes(b"")
    with pytest.raises(IndexCorruptError):
        _fresh(store).open(ref)
    (store.path(ref) / manifest.index_file.name).unlink()
    with pytest.raises(IndexCorruptError, match="cannot read"):
        _fresh(store).open(ref)
    (store.path(ref) / MANIFEST).write_text("{not json")
    with pytest.raises(IndexCorruptError, match="rebuild with"):
        _fresh(store).open(ref)


def test_consistent_checksums_but_wrong_dimension_in_manifest(store: IndexStore, embedder: HashingEmbedder) -> None:
    ref = CollectionRef("travel")
    _saved(store, embedder, ref)
    path = store.path(ref) / MANIFEST
    data = json.loads(path.read_text())
    data["dim"] = 384
    path.write_text(json.dumps(data))
    with pytest.raises(IndexCorruptError, match="dimension"):
        _fresh(store).open(ref)


def test_wrong_model_name_or_dimension_is_a_mismatch(store: IndexStore, embedder: HashingEmbedder) -> None:
    ref = CollectionRef("travel")
    _saved(store, embedder, ref)
    with pytest.raises(IndexMismatchError) as err:
        _fresh(store).open(ref, model_name="sentence-transformers/all-MiniLM-L6-v2")
    assert "test-hashing" in str(err.value) and "planstack index build --collection travel" in str(err.value)
    assert err.value.hint is not None
    with pytest.raises(IndexMismatchError, match="dimension 64"):
        _fresh(store).open(ref, model_name=embedder.name, dim=384)


def test_other_format_version_is_a_mismatch(store: IndexStore, embedder: HashingEmbedder) -> None:
    ref = CollectionRef("travel")
    _saved(store, embedder, ref)
    path = store.path(ref) / MANIFEST
    data = json.loads(path.read_text())
    data["format_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(IndexMismatchError, match="format version 99"):
        _fresh(store).open(ref)


def test_manifest_of_another_collection_is_refused(store: IndexStore, embedder: HashingEmbedder) -> None:
    _saved(store, embedder, CollectionRef("travel"))
    copy = store.path(CollectionRef("venues"))
    copy.mkdir(parents=True)
    for p in store.path(CollectionRef("travel")).iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    with pytest.raises(IndexCorruptError, match="belongs to collection travel"):
        _fresh(store).open(CollectionRef("venues"))


@pytest.mark.parametrize("name", ["A", "a.b", "Tenant.A"])
def test_tenant_ids_follow_the_gateway_but_collection_names_stay_lowercase(store: IndexStore, name: str) -> None:
    assert store.ref("ok", tenant=name).tenant == name
    with pytest.raises(InvalidNameError):
        store.ref(name)


@pytest.mark.parametrize(
    "name", ["../x", "..", "a/b", "", "-lead", "x" * 65, "with space", "a\x00b", "/abs", "é", ".hidden", "a..b"]
)
def test_invalid_collection_and_tenant_names(store: IndexStore, name: str) -> None:
    with pytest.raises(InvalidNameError):
        store.ref(name)
    with pytest.raises(InvalidNameError):
        store.ref("ok", tenant=name)
    with pytest.raises(InvalidNameError):
        store.path(CollectionRef(name))  # refs built by hand are re-validated
    with pytest.raises(InvalidNameError):
        store.list(tenant=name)


def test_tenant_privacy(store: IndexStore, embedder: HashingEmbedder) -> None:
    _saved(store, embedder, CollectionRef("travel"))
    _saved(store, embedder, CollectionRef("notes", "acme"))
    _saved(store, embedder, CollectionRef("notes", "globex"))
    assert [str(r) for r in store.list()] == ["travel"]
    assert [str(r) for r in store.list(tenant="acme")] == ["travel", "acme/notes"]
    assert [str(r) for r in store.list(tenant="globex", include_shared=False)] == ["globex/notes"]
    assert store.path(CollectionRef("notes", "acme")) != store.path(CollectionRef("notes", "globex"))
    with pytest.raises(CollectionNotFoundError):
        store.open(CollectionRef("notes", "initech"))
    # a private collection copied into another tenant's folder is refused, not served
    src, dst = store.path(CollectionRef("notes", "acme")), store.path(CollectionRef("stolen", "initech"))
    dst.mkdir(parents=True)
    for p in src.iterdir():
        (dst / p.name).write_bytes(p.read_bytes())
    with pytest.raises(IndexCorruptError):
        _fresh(store).open(CollectionRef("stolen", "initech"))


def test_create_existing_and_drop(store: IndexStore, embedder: HashingEmbedder) -> None:
    ref = CollectionRef("travel")
    _saved(store, embedder, ref)
    with pytest.raises(CollectionExistsError):
        store.create(ref, dim=embedder.dim, model_name=embedder.name)
    assert store.drop(ref) and not store.exists(ref) and not store.drop(ref)
    with pytest.raises(CollectionNotFoundError):
        store.open(ref)


def test_config_drives_new_collections(tmp_path: Path, embedder: HashingEmbedder) -> None:
    store = IndexStore(tmp_path, RetrievalConfig(index_type="hnsw", hnsw_m=8, hnsw_ef_search=16))
    c = store.create(CollectionRef("x"), dim=embedder.dim, model_name=embedder.name)
    assert c.index_type == "hnsw" and c.hnsw.m == 8 and c.hnsw.ef_search == 16


def test_failed_write_leaves_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from retrieval.atomic import atomic_write

    target = tmp_path / "f.json"
    atomic_write(target, b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
