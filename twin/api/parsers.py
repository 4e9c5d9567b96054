"""Request body parsers with the limits of the scenario format's bounded loader (``utilities.yamlsafe``).

JSON gets the same bounds as YAML: strict UTF-8, no NaN/Infinity, no duplicate keys, at most 64
levels deep and 20,000 values, strings of at most 10,000 characters (keys 256; a top-level
``yaml`` file text up to the loader's 1 MiB), no NUL or lone surrogates, integers within int64.
A scenario YAML body is handed on as bytes to the bounded loader itself (the services'
``scenario_from_yaml``), which names the offending line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from utilities.errors import preview
from utilities.yamlsafe import (
    INT_LIMIT,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_KEY_CHARS,
    MAX_STRING_CHARS,
    MAX_VALUES,
)

#: Characters no stored text may hold: NUL (PostgreSQL refuses it) and lone surrogates (not UTF-8).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _read(stream, limit: int) -> bytes:
    data = stream.read(limit + 1) if stream is not None else b""
    if len(data) > limit:
        from twin.api.errors import PayloadTooLarge

        raise PayloadTooLarge(f"body: more than the {limit:,} bytes allowed")
    return data


def _body_limit() -> int:
    from django.conf import settings

    return int(settings.TWIN_API_MAX_BODY_BYTES)


def _reject_constant(name: str):
    raise ParseError(f"body: {name} is not a JSON number (use a finite number)")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ParseError(f"body: duplicate key {preview(key)}")
        out[key] = value
    return out


def check_json_value(data: Any) -> None:
    """Raise ParseError if parsed JSON exceeds the scenario format's limits (no recursion)."""
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    values = 0
    while stack:
        value, depth, path = stack.pop()
        values += 1
        where = path or "body"
        if values > MAX_VALUES:
            raise ParseError(f"body: more than {MAX_VALUES:,} values")
        if depth > MAX_DEPTH:
            raise _refused(where, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                if len(key) > MAX_KEY_CHARS:
                    raise _refused(
                        where, f"key of {len(key):,} characters, more than the {MAX_KEY_CHARS} allowed"
                    )
                _check_characters(key, where)
                stack.append((item, depth + 1, f"{path}.{key}" if path else key))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, f"{path}[{i}]") for i, item in enumerate(value))
        elif isinstance(value, str):
            # A scenario or design file sent as JSON text: the bounded loader measures it.
            longest = MAX_BYTES if path == "yaml" else MAX_STRING_CHARS
            if len(value) > longest:
                raise _refused(where, f"text of {len(value):,} characters, more than the {longest:,} allowed")
            _check_characters(value, where)
        elif isinstance(value, int) and not isinstance(value, bool) and not -INT_LIMIT <= value <= INT_LIMIT:
            raise _refused(where, f"integer outside ±{INT_LIMIT:,}")


def _refused(where: str, problem: str) -> ParseError:
    """A refusal keyed by the path inside the body (``{"job.model.layers": ...}``), or ``body``."""
    return ParseError({where: f"{where}: {problem}"})


def _check_characters(text: str, where: str) -> None:
    found = _UNSTORABLE.search(text)
    if found:
        raise _refused(where, f"character U+{ord(found.group()):04X} is not allowed")


def parse_json_bytes(data: bytes) -> Any:
    """Bounded strict JSON of a request body."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"body: not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    if not text.strip():
        return {}
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_pairs)
    except RecursionError:
        raise ParseError(f"body: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, and ints past Python's digit limit
        raise ParseError(f"body: not valid JSON ({str(exc)[:120]})") from None
    check_json_value(value)
    return value


class BoundedJSONParser(BaseParser):
    """``application/json`` with the scenario format's limits (module docstring)."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        return parse_json_bytes(_read(stream, _body_limit()))


class ScenarioYAMLParser(BaseParser):
    """A scenario file as the whole body (``Content-Type: application/yaml``): ``{"yaml": bytes}``.

    The bytes are not decoded here: the bounded loader checks the encoding and names the offset.
    """

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        return {"yaml": _read(stream, _body_limit())}


class ScenarioYAMLTextParser(ScenarioYAMLParser):
    media_type = "text/yaml"


class ScenarioXYAMLParser(ScenarioYAMLParser):
    media_type = "application/x-yaml"


#: The parsers of a YAML import door (the body is the file).
YAML_PARSERS = [ScenarioYAMLParser, ScenarioYAMLTextParser, ScenarioXYAMLParser]
