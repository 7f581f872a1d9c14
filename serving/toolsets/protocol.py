"""Request bodies of the toolset endpoints, and a toolset as the API shows it (never its secret)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, SecretStr

from executors.sources.credentials import MAX_SECRET_CHARS
from executors.stores import ToolsetKind, ToolsetRecord
from executors.stores.tool_records import TOOLSET_NAME_PATTERN

MAX_URL_CHARS = 2048
MAX_DOCUMENT_CHARS = 64 * 1024 * 1024  # the real bound is `tools.max_document_bytes`, checked on the body
TOOL_NAME_CHARS = 64
RESERVED = {"builtin": "the gateway's own tools", "llm": "llm_generate and llm_extract", "ask_user": "ask_user"}
"""Names every tenant has: they cannot be registered, and a run or plan may name them in `toolsets`."""


class AuthCreate(BaseModel):
    """How the toolset authenticates: `bearer` (Authorization: Bearer <secret>), `api_key_header`
    (<header>: <secret>), `basic` (`username` + the secret as password). The secret is write-only."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["none", "bearer", "api_key_header", "basic"] = "none"
    header: str | None = Field(None, max_length=64, description="The header of an `api_key_header` key.")
    username: str | None = Field(None, max_length=256, description="The user of `basic`.")
    secret: SecretStr | None = Field(
        None, max_length=MAX_SECRET_CHARS, description="Token, key or password: sealed at once, never returned."
    )


class ToolsetCreate(BaseModel):
    """POST /v1/toolsets: an MCP server (streamable-HTTP `url`, or an operator-configured stdio `server`) or
    an OpenAPI service (`document` + `base_url`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOLSET_NAME_PATTERN, description="Unique per tenant: a-z, 0-9, '_', '-' (≤ 48).")
    kind: ToolsetKind
    url: str | None = Field(None, max_length=MAX_URL_CHARS, description="MCP: the server's streamable-HTTP endpoint.")
    server: str | None = Field(
        None, max_length=64, description="MCP: the name of a stdio server of the operator's `tools.stdio_servers`."
    )
    document: (
        Annotated[str, Field(max_length=MAX_DOCUMENT_CHARS)]
        | Annotated[dict[str, JsonValue], Field(max_length=10_000)]
        | None
    ) = Field(None, description="OpenAPI 3.0/3.1: the document (JSON or YAML text, or a JSON object).")
    base_url: str | None = Field(None, max_length=MAX_URL_CHARS, description="OpenAPI: where the operations live.")
    auth: AuthCreate | None = None
    require_approval: list[Annotated[str, Field(min_length=1, max_length=TOOL_NAME_CHARS)]] = Field(
        default_factory=list,
        max_length=500,
        description="Tools whose every call waits for a person's approval ('*' = all), on top of the "
        "server's annotations (destructiveHint).",
    )
    timeout_s: float | None = Field(None, gt=0, le=3600, description="One call's timeout (≤ tools.max_timeout_s).")
    description: str | None = Field(None, max_length=500)


def tool_summary(tool: dict[str, Any]) -> dict[str, Any]:
    """One tool of a toolset as lists show it (no schemas)."""
    policy = tool.get("policy") or {}
    binding = tool.get("binding") or {}
    summary: dict[str, Any] = {
        "name": tool.get("name"),
        "description": tool.get("description"),
        "approval": policy.get("approval", "none"),
        "retryable": policy.get("retryable", False),
        "timeout_s": policy.get("timeout_s"),
    }
    if tool.get("annotations"):
        summary["annotations"] = tool["annotations"]
    if binding:
        summary["http"] = f"{binding.get('method')} {binding.get('path')}"
    return summary


def toolset_view(record: ToolsetRecord, *, definitions: bool = False) -> dict[str, Any]:
    """A toolset as the API answers it. The credential never appears: only whether one is set."""
    config = record.config
    auth = dict(config.get("auth") or {"kind": "none"})
    auth["secret"] = "set" if record.credential else None
    view: dict[str, Any] = {
        "id": record.toolset_id,
        "object": "toolset",
        "name": record.name,
        "kind": record.kind,
        "description": config.get("description"),
        "auth": auth,
        "require_approval": config.get("require_approval", []),
        "timeout_s": config.get("timeout_s"),
        "version": record.version,
        "revision": record.revision,
        "tool_count": len(record.tools),
        "tools": record.tools if definitions else [tool_summary(tool) for tool in record.tools],
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "refreshed_at": record.refreshed_at,
    }
    for key in ("url", "server", "base_url", "title", "skipped"):
        if config.get(key) is not None:
            view[key] = config[key]
    return view


def builtin_views(names: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The reserved toolsets every tenant has (the gateway's own tools, the model's steps, ask_user)."""
    return [
        {
            "id": name,
            "object": "toolset",
            "name": name,
            "kind": "builtin",
            "description": RESERVED[name],
            "tool_count": len(tools),
            "tools": [{"name": t["function"]["name"], "description": t["function"].get("description")} for t in tools],
        }
        for name, tools in names.items()
    ]
