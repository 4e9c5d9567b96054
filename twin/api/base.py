"""What every API view shares: the body-size limit checked before anything is parsed, bounded
query parameters, YAML bodies and downloads. Object lookup through the permission module (another
team's object is a 404) is ``teams.api.base``; this module imports no app."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.utils.text import slugify
from rest_framework import serializers
from rest_framework.exceptions import ValidationError as DRFValidationError

from twin.api.errors import PayloadTooLarge

#: Primary keys in API paths: 1 to 18 digits (a bigger number cannot be a key: 404).
PK_PATTERN = "[0-9]{1,18}"
MAX_PK = 2**63 - 1


def check_body_size(request) -> None:
    """413 before any parser reads a body past ``TWIN_API_MAX_BODY_BYTES``."""
    limit = int(settings.TWIN_API_MAX_BODY_BYTES)
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise PayloadTooLarge(f"body: {length:,} bytes, more than the {limit:,} allowed")


class ApiViewMixin:
    """Body limit for every API view."""

    def initial(self, request, *args, **kwargs):
        check_body_size(request)
        super().initial(request, *args, **kwargs)


def validated(serializer_class, data) -> dict:
    """The validated data of a body (400 with the fields' messages otherwise)."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def query_int(request, name: str, default: int | None, lo: int, hi: int) -> int | None:
    """A bounded integer query parameter (400 naming it otherwise)."""
    value = request.query_params.get(name)
    if value in (None, ""):
        return default
    try:
        return serializers.IntegerField(min_value=lo, max_value=hi).run_validation(value)
    except DRFValidationError as exc:
        raise DRFValidationError({name: exc.detail}) from None


def query_id(request, name: str) -> int | None:
    """An object id in the query string (``?design=7``), or None."""
    return query_int(request, name, None, 1, MAX_PK)


def read_upload(upload) -> bytes:
    """An uploaded YAML file's bytes, refused past the loader's size limit."""
    from utilities.yamlsafe import MAX_BYTES

    if upload.size > MAX_BYTES:
        raise DRFValidationError(
            {"file": f"file: {upload.size:,} bytes, more than the {MAX_BYTES:,} allowed"}
        )
    return upload.read(MAX_BYTES + 1)


def yaml_body(request, serializer_class, what: str) -> tuple[str | bytes, dict]:
    """The YAML text of an import request and the other fields: the body itself
    (``application/yaml``), a multipart ``file`` or JSON ``{"yaml": "..."}``."""
    raw = request.data.get("yaml") if isinstance(request.data, dict) else None
    if isinstance(raw, bytes):
        return raw, {}
    fields = validated(serializer_class, request.data)
    text = read_upload(fields["file"]) if fields.get("file") is not None else fields.get("yaml")
    if text is None:
        raise DRFValidationError(
            {"yaml": f"yaml: send the {what} as the body (application/yaml), a multipart file or yaml"}
        )
    return text, fields


def yaml_download(text: str, name: str) -> HttpResponse:
    """A YAML file download named after the object."""
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slugify(name) or "export"}.yaml"'
    return response
