"""Request bodies → validated models: the JSON decoding and the first-problem error every route uses.

Plain functions of bytes and a model class, so that the door can run them on the event loop for a
small body and in a worker process for a large one (serving/door/checks.py), with the same errors.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from serving.errors import InvalidRequestError

ModelT = TypeVar("ModelT", bound=BaseModel)


def decode_json(body: bytes) -> Any:
    """The body as JSON; a 400 `invalid_json` for anything else (bad UTF-8, bad JSON, nesting the
    parser refuses)."""
    try:
        return json.loads(body)
    except UnicodeDecodeError as exc:
        raise InvalidRequestError("the request body is not valid UTF-8", code="invalid_json") from exc
    except ValueError as exc:
        raise InvalidRequestError(f"the request body is not valid JSON: {str(exc)[:200]}", code="invalid_json") from exc
    except RecursionError as exc:
        raise InvalidRequestError("the request body nests too deeply", code="invalid_json") from exc


def parse_model(model: type[ModelT], data: Any) -> ModelT:
    """Validate a JSON body; the first problem becomes an OpenAI error naming the parameter. A model that
    forbids unknown fields names the first one before validating anything (pydantic would build one
    error per unknown field: 95,000 of them for a 1 MiB body of tiny members)."""
    if not isinstance(data, dict):
        raise InvalidRequestError("the request body must be a JSON object")
    if model.model_config.get("extra") == "forbid":
        known = set(model.model_fields) | {field.alias for field in model.model_fields.values() if field.alias}
        unknown = next((key for key in data if key not in known), None)
        if unknown is not None:
            name = str(unknown)[:200]
            raise InvalidRequestError(f"{name}: Extra inputs are not permitted", param=name, code="invalid_value")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        param = ".".join(str(part) for part in first["loc"])[:200] or None
        message = f"{param}: {first['msg'][:500]}" if param else first["msg"][:500]
        raise InvalidRequestError(message, param=param, code="invalid_value") from exc


def parse_body(model: type[ModelT], body: bytes) -> ModelT:
    """`model` from the raw body (decode, then validate)."""
    return parse_model(model, decode_json(body))
