"""Typed retrieval errors.

Each error carries `retryable` and a `hint` saying how to fix it, plus the HTTP `status`, OpenAI
error `type` and `code` the gateway's error funnel can use as they are. Third-party errors (FAISS,
JSON, OS) are converted to these at the store boundary; nothing else leaves the package.
"""

from __future__ import annotations

from contract.errors import PlanstackBaseError


class RetrievalError(PlanstackBaseError):
    """Base class of every error the retrieval layer raises; its text carries the hint."""

    status: int = 500
    type: str = "server_error"
    code: str = "retrieval_error"

    def __str__(self) -> str:
        return self.explained


class InvalidNameError(RetrievalError):
    """A collection or tenant name is not of the form `^[a-z0-9][a-z0-9_-]{0,63}$`."""

    status = 400
    type = "invalid_request_error"
    code = "invalid_name"


class CollectionNotFoundError(RetrievalError):
    """No such collection (for this tenant: another tenant's private collections are never visible)."""

    status = 404
    type = "invalid_request_error"
    code = "collection_not_found"


class CollectionExistsError(RetrievalError):
    status = 409
    type = "invalid_request_error"
    code = "collection_exists"


class InvalidDemonstrationError(RetrievalError):
    """A demonstration over a bound of the tenant's memory (request or plan too long, no node, larger
    than the whole budget), or with an empty request. Nothing of its batch was stored."""

    status = 400
    type = "invalid_request_error"
    code = "demonstration_too_large"


class IndexCorruptError(RetrievalError):
    """An index on disk is damaged: bad checksum, unreadable file, inconsistent counts."""

    code = "index_corrupt"


class IndexMismatchError(RetrievalError):
    """An index on disk was built for another embedder (model name, dimension) or format version."""

    code = "index_mismatch"


class EmbedderUnavailableError(RetrievalError):
    """The embedding model cannot be found or loaded: what needs it (search, memory) is unavailable."""

    status = 503
    type = "service_unavailable"
    code = "embedder_unavailable"


def rebuild_hint(collection: str, tenant: str | None = None) -> str:
    """The command that rebuilds a collection, quoted in the message of an integrity error."""
    tenant_flag = f" --tenant {tenant}" if tenant else ""
    return f"rebuild with `planstack index build --collection {collection}{tenant_flag}`"
