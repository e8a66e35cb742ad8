"""Reading JSON request bodies the same way on every server (RAWP §1.3, §7.1).

Malformed JSON, a body that is not an object, wrong types and oversize bodies become a clear
`400`/`413` `RawpError` — never a 500 or a stack trace. Unknown keys are ignored by the pydantic
models the servers validate with (`extra="ignore"`).
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from rawp.errors import BadRequest, PayloadTooLarge

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_BODY = 1024 * 1024


def json_object(raw: bytes | str, *, max_bytes: int = DEFAULT_MAX_BODY) -> dict[str, Any]:
    """Decode a request body that must be one JSON object."""
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode())
    if size > max_bytes:
        raise PayloadTooLarge(f"request body of {size} bytes exceeds the limit of {max_bytes}")
    if not raw:
        raise BadRequest("a JSON object body is required", "INVALID_JSON")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}", "INVALID_JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object", "INVALID_JSON")
    return data


def validate(model: type[M], data: dict[str, Any], *, error_code: str = "INVALID_REQUEST") -> M:
    """Validate `data` against `model`; every problem is named in one 400 message."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise BadRequest(problems, error_code) from None
