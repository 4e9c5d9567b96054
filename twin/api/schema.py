"""OpenAPI schema additions: the one error shape (``twin.api.errors``) documented on every
operation for every status the API may answer with besides its successes."""

from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "description": (
        "Field path (the scenario format's dotted path, `yaml`, `body` or `__all__`) -> messages, "
        "each one line naming the field and the limit"
    ),
    "properties": {
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        }
    },
    "required": ["errors"],
}

#: Status -> what it means for any operation.
ERROR_STATUSES = {
    "400": "invalid input: the field paths say which and why",
    "401": "not logged in (session) and no valid `Authorization: Token ...`",
    "403": "your role (or staff status, for the catalog) does not allow this action",
    "404": "no such object, or another team's (indistinguishable)",
    "405": "method not allowed on this path",
    "406": "the Accept header asks for a type the API does not give",
    "409": "the object changed since you read it (send the version you read)",
    "413": "the request body is over the size limit",
    "415": "unsupported Content-Type",
}


def add_error_responses(result, generator, request, public):
    """``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]``: the Error component on every operation."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/Error"}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            for code, description in ERROR_STATUSES.items():
                responses.setdefault(
                    code, {"description": description, "content": {"application/json": {"schema": reference}}}
                )
    return result
