from __future__ import annotations

import pytest
from pydantic import ValidationError

from retrieval.config import RetrievalConfig


def test_defaults_and_forbidden_extras() -> None:
    cfg = RetrievalConfig()
    assert cfg.index_type == "auto" and cfg.default_k == 5 and cfg.device == "cpu"
    with pytest.raises(ValidationError):
        RetrievalConfig(unknown_field=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        RetrievalConfig(chunk_size=200, chunk_overlap=200)
    assert RetrievalConfig.model_validate({"hnsw_ef_search": 128, "device": "cuda"}).hnsw_ef_search == 128


def test_package_import_is_free_of_heavy_work() -> None:
    import subprocess
    import sys

    code = (
        "import sys, retrieval; print('faiss' in sys.modules, 'torch' in sys.modules, retrieval.KnowledgeBase.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "KnowledgeBase"]


def test_fake_embedder_satisfies_protocol() -> None:
    from retrieval.embedder import Embedder
    from tests.retrieval.fakes import HashingEmbedder

    assert isinstance(HashingEmbedder(), Embedder)
