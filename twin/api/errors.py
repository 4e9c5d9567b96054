"""The one error shape of the API, for every status (400, 401, 403, 404, 405, 409, 413, 415, 503):

``{"errors": {"<field path>": ["<field path>: <message>", ...]}}``

Field paths are the scenario format's dotted paths (``job.parallel.tp``, ``what_if.nodes``,
``options.nodes``), ``yaml`` for a scenario file's text, ``body`` for a request body that could
not be read, and ``__all__`` for what concerns no single field (not found, not allowed, not
logged in). Every message is one line of at most 300 characters: a hostile value is never
echoed back whole.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation, ValidationError
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from utilities.errors import clip_message

logger = logging.getLogger(__name__)

NON_FIELD = "__all__"
#: The code of a service ``ValidationError`` refusing a stale version (answered 409).
CONFLICT_CODE = "conflict"
#: The most messages one response lists (a list of 20,000 bad values gives 20,000 errors).
MAX_MESSAGES = 50


#: Seconds a client is told to wait (``Retry-After``) when the database cannot be reached.
DATABASE_RETRY_AFTER_S = 5


class DatabaseUnavailable(exceptions.APIException):
    """The database is down or every pooled connection stayed busy past the pool's timeout: 503,
    so a client retries instead of reading an HTML 500."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "the database is unavailable or busy; try again in a few seconds"


class PayloadTooLarge(exceptions.APIException):
    """The request body is over the API's size limit: 413."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "the request body is too large"


def _prefixed(path: str, message: str) -> str:
    message = str(message)
    if path == NON_FIELD or message.startswith(f"{path}:") or message.startswith(f"{path}["):
        return clip_message(message)
    return clip_message(f"{path}: {message}")


def _flatten(detail: Any, path: str, out: dict[str, list[str]]) -> None:
    """DRF's nested ``{field: {sub: [messages]}}`` / ``[{...}]`` as dotted paths."""
    if sum(len(v) for v in out.values()) >= MAX_MESSAGES:
        return
    if isinstance(detail, dict):
        for key, value in detail.items():
            key = NON_FIELD if key in ("non_field_errors", NON_FIELD) else str(key)
            sub = key if not path or key == NON_FIELD else f"{path}.{key}"
            _flatten(value, sub or NON_FIELD, out)
    elif isinstance(detail, list | tuple):
        if all(not isinstance(item, dict | list | tuple) for item in detail):
            for item in detail:
                _flatten(item, path, out)
        else:
            for index, item in enumerate(detail):
                if item:
                    _flatten(item, f"{path}[{index}]", out)
    else:
        key = path or NON_FIELD
        out.setdefault(key, []).append(_prefixed(key, detail))


def validation_errors(error: ValidationError) -> dict[str, list[str]]:
    """A Django ``ValidationError`` (what services raise) as ``{field path: [messages]}``."""
    out: dict[str, list[str]] = {}
    if hasattr(error, "error_dict"):
        for field, errors in error.error_dict.items():
            key = NON_FIELD if field in (None, NON_FIELD) else str(field)
            for item in errors:
                for message in item.messages:
                    out.setdefault(key, []).append(_prefixed(key, message))
    else:
        out[NON_FIELD] = [clip_message(m) for m in error.messages]
    return {k: v[:MAX_MESSAGES] for k, v in out.items()}


def error_response(errors: dict[str, list[str]], status_code: int, headers=None) -> Response:
    """The API's error body with its status."""
    return Response({"errors": errors}, status=status_code, headers=headers)


def _is_conflict(error: ValidationError) -> bool:
    """A service's refusal of a stale version (topology's ``DesignConflict``): its code says so,
    so this module imports no app."""
    return getattr(error, "code", None) == CONFLICT_CODE


def api_exception_handler(exc, context):
    """``REST_FRAMEWORK["EXCEPTION_HANDLER"]``: every error in the shape of the module docstring."""
    if isinstance(exc, ValidationError):
        set_rollback()
        if _is_conflict(exc):  # optimistic concurrency: the version the client sent is stale
            return error_response({"version": [_prefixed("version", m) for m in exc.messages]}, 409)
        return error_response(validation_errors(exc), status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, OperationalError | InterfaceError):  # psycopg_pool's PoolTimeout included
        logger.warning(
            "API %s: database unavailable: %s", context["request"].path[:120], clip_message(str(exc))
        )
        exc = DatabaseUnavailable()
        exc.wait = DATABASE_RETRY_AFTER_S
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(f"body: more than the {_body_limit():,} bytes allowed")
    elif isinstance(exc, SuspiciousOperation):
        exc = exceptions.ParseError(f"body: {exc}")
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) if exc.args else "not found")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) if exc.args else None)
    if not isinstance(exc, exceptions.APIException):
        return None
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = f"{int(exc.wait)}"
    out: dict[str, list[str]] = {}
    if isinstance(exc.detail, dict | list):
        _flatten(exc.detail, "", out)
    else:
        about_body = exceptions.ParseError | exceptions.UnsupportedMediaType | PayloadTooLarge
        key = "body" if isinstance(exc, about_body) else NON_FIELD
        out[key] = [_prefixed(key, exc.detail)]
    set_rollback()
    return error_response(out, exc.status_code, headers)


def _body_limit() -> int:
    from django.conf import settings

    return int(settings.TWIN_API_MAX_BODY_BYTES)


def rekeyed(error: ValidationError, prefix: str, keys) -> ValidationError:
    """A service error whose fields are parameters of a nested mapping, keyed by their path in
    the request (``nodes`` -> ``params.nodes``), messages included."""
    if not hasattr(error, "error_dict"):
        return error
    out: dict[str, list[str]] = {}
    for field, errors in error.error_dict.items():
        path = f"{prefix}.{field}" if field in keys else field
        for item in errors:
            for message in item.messages:
                if path != field and message.startswith(f"{field}:"):
                    message = f"{path}:{message[len(field) + 1 :]}"
                out.setdefault(path, []).append(message)
    return ValidationError(out)
