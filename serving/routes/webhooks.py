"""GET /v1/webhooks/signing-key: the key this tenant's webhooks are signed with (to verify them)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from serving.auth import Principal
from serving.dependencies import principal, services
from serving.isolation import server_secret, webhook_signing_key
from serving.openapi import error_responses

router = APIRouter()


@router.get("/v1/webhooks/signing-key", responses=error_responses(401, 500))
async def signing_key(request: Request, who: Principal = Depends(principal)) -> dict[str, Any]:
    """`X-Planstack-Signature` is `sha256=` + HMAC-SHA256(this key, `<timestamp>.` + body); the key is the
    caller's tenant's own (derived for signing webhooks only)."""
    key = webhook_signing_key(server_secret(services(request).settings), who.tenant)
    return {"object": "webhook.signing_key", "tenant": who.tenant, "algorithm": "HMAC-SHA256", "key": key.hex()}
