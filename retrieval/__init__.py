"""planstack retrieval: embeddings, FAISS collections, ingestion and persistence."""
