"""What toolsets get from the gateway's security layer: schema checkers that cannot stall the event loop,
and the sealer of their credentials.

- `tool_schema_check`: a tenant's tool schema as a checker of values (arguments, outputs), through the
  gateway's one validator of client schemas (serving/toolcalls/validation.py: every regex matched by
  RE2); a schema it refuses is a `ValueError`, as the executors' sources expect.
- `credential_sealer`: AES-GCM keys for toolset credentials, derived from the server secret for this
  purpose only (the same secret also salts caches and signs webhooks; a key derived per purpose keeps
  those apart). Every replica derives the same key from the same secret.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from executors.sources.credentials import CredentialSealer
from executors.sources.remote_spec import SchemaCheck
from serving.toolcalls.validation import UnsafeSchemaError, argument_validator

CREDENTIALS_PURPOSE = b"planstack toolset credentials v1"
KEY_ID = "k1"


def tool_schema_check(schema: dict[str, Any]) -> SchemaCheck:
    try:
        return argument_validator(schema)
    except UnsafeSchemaError as exc:
        raise ValueError(exc.message) from None


def credential_sealer(server_secret: bytes) -> CredentialSealer:
    key = hmac.new(server_secret, CREDENTIALS_PURPOSE, hashlib.sha256).digest()
    return CredentialSealer({KEY_ID: key}, current=KEY_ID)
