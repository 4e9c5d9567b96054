"""Bounded YAML loading: the one reader of untrusted YAML for every door (CLI, web, API, tests):
scenario files, design files and the API's YAML bodies.

Those files come from users, and ``yaml.safe_load`` trusts its input: aliases expand a
0.8 KB file to gigabytes, deep nesting overflows the recursion limit, duplicate keys pass
silently (the last wins), ``.nan``, ``1e400`` and 5,000-digit integers reach the validators,
and errors may echo a whole value. :func:`load_yaml` checks the bytes (size, UTF-8, control
characters), then builds the data itself from the parser's events, without recursion and
without ever expanding an alias, refusing on the way everything a scenario does not need.

The result is JSON-shaped: dicts with string keys, lists, str, int (64-bit), finite float,
bool and None. Plain scalars resolve as in PyYAML (YAML 1.1 ints and bools) except that dates
stay strings and ``1e12`` (YAML 1.2 exponent without a dot or sign) is a float. Every refusal
raises :class:`utilities.errors.InputError` (the scenario format's ``ScenarioError`` is one)
with one line: ``<field path>: <problem>`` for a value, ``<source>: line N, column M:
<problem>`` for the text. The libyaml parser and the pure-Python one give the same data and the
same refusals (a syntax error: the same line, in each parser's own words).
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from utilities.errors import PREVIEW_CHARS, InputError, clip_message, one_line, preview

#: Largest text accepted (bytes). Real scenario files are a few KB (the largest YAML file of
#: the repository, the catalog, is 19 KB); 1 MiB leaves 50x headroom while the worst 1 MiB
#: text costs libyaml ~0.2 s and the pure-Python parser ~2 s.
MAX_BYTES = 1024 * 1024
#: Deepest nesting of lists and mappings. Scenario files nest 5 deep (scenarios > entry > job >
#: model > moe); 64 is far below Python's recursion limit (1,000), so recursive consumers
#: downstream (copy.deepcopy, json.dumps, repr) are safe with anything this loader returns.
MAX_DEPTH = 64
#: Most values (scalars, lists and mappings, keys included). A scenario has ~60, the largest
#: calibration file (10 scenarios) 575; 20,000 holds ~300 scenarios and keeps the pure-Python
#: parser under ~1 s at the limit (each value costs it ~40 µs; libyaml ~8 µs).
MAX_VALUES = 20_000
#: Longest string (key or value). The longest field is a free-text ``description``: a
#: paragraph is ~1,000 characters.
MAX_STRING_CHARS = 10_000
#: Longest mapping key. Keys are field names (the longest is 20 characters); 256 takes any
#: identifier while field paths in messages stay short.
MAX_KEY_CHARS = 256
#: Integers must fit a signed 64-bit integer (numpy's int64, the database's bigint, the seed's
#: 2**63 - 1): at most 19 digits. The text is measured before ``int()`` runs, so Python's
#: 4,300-digit conversion limit is never reached.
MAX_INT_DIGITS = 19
INT_LIMIT = 2**63 - 1
#: Longest field path quoted in a message (a path through 64 levels of long keys is cut).
MAX_PATH_CHARS = 120
#: Parsers: libyaml's (C, fast) when PyYAML was built with it, else the pure-Python one.
BACKENDS = ("libyaml", "python") if yaml.__with_libyaml__ else ("python",)

_CORE = "tag:yaml.org,2002:"
STR_TAG, INT_TAG, FLOAT_TAG, BOOL_TAG, NULL_TAG = (_CORE + t for t in ("str", "int", "float", "bool", "null"))
SEQ_TAG, MAP_TAG = _CORE + "seq", _CORE + "map"
_SCALAR_TAGS = {STR_TAG, INT_TAG, FLOAT_TAG, BOOL_TAG, NULL_TAG}
#: Explicit tags and what the text must resolve to under them (``!!float 1`` is fine).
_TAG_ACCEPTS = {
    INT_TAG: {INT_TAG},
    FLOAT_TAG: {INT_TAG, FLOAT_TAG},
    BOOL_TAG: {BOOL_TAG},
    NULL_TAG: {NULL_TAG},
}

# YAML forbids these characters (C0/C1 controls, surrogates, U+FFFE/U+FFFF); U+FEFF is refused
# past the start because libyaml skips it at the start of any line and PyYAML does not.
_DISALLOWED = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# YAML 1.2 floats PyYAML (1.1) reads as strings: 1e12, 15.6e12, 1E-3.
_FLOAT_EXPONENT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")


def _implicit_resolvers() -> dict[str | None, list[tuple[str, re.Pattern]]]:
    """PyYAML's plain-scalar resolvers minus timestamp, merge (``<<``) and value (``=``)."""
    kept = {}
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items():
        kept[first] = [(tag, regexp) for tag, regexp in resolvers if tag in _SCALAR_TAGS]
    for first in "-+0123456789.":
        kept.setdefault(first, []).append((FLOAT_TAG, _FLOAT_EXPONENT))
    return {first: resolvers for first, resolvers in kept.items() if resolvers}


class _Frame:
    """An open list or mapping while its events arrive."""

    __slots__ = ("items", "key", "key_lines", "segment")

    def __init__(self, items: list | dict, segment: str | int | None):
        self.items = items
        self.segment = segment  # its key or index in the enclosing frame (None: the root)
        self.key: str | None = None  # a mapping's key waiting for its value
        self.key_lines: dict[str, int] = {}


class _BoundedLoading:
    """Builds the document from parser events with every limit checked as the events arrive."""

    yaml_implicit_resolvers = _implicit_resolvers()
    max_depth = MAX_DEPTH
    max_values = MAX_VALUES
    source = "file"

    def get_single_data(self) -> Any:
        """The document's data (None for an empty stream); what ``yaml.load`` returns."""
        self.get_event()  # stream start
        if self.check_event(StreamEndEvent):
            return None
        self.get_event()  # document start
        data = self._build_document()
        self.get_event()  # document end
        if not self.check_event(StreamEndEvent):
            mark = self.peek_event().start_mark
            raise self._text_error(
                mark, "a second YAML document is not allowed (list several under scenarios:)"
            )
        return data

    def _build_document(self) -> Any:
        # A stack of open containers instead of recursion; paths are built only for messages.
        stack: list[_Frame] = []
        values = 0
        get_event = self.get_event
        while True:
            event = get_event()
            kind = type(event)
            if kind is SequenceEndEvent or kind is MappingEndEvent:
                frame = stack.pop()
                if not stack:
                    return frame.items
                continue
            values += 1
            if values > self.max_values:
                raise self._text_error(
                    event.start_mark, f"more than {self.max_values:,} values", column=False
                )
            if kind is AliasEvent or event.anchor is not None:
                raise self._value_error(
                    stack, f"anchors and aliases are not allowed ({_anchor(event)})", event
                )
            if kind is ScalarEvent:
                value = self._scalar(event, stack)
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                value = self._open(event, stack)
            else:
                raise self._text_error(event.start_mark, f"unexpected {kind.__name__}")
            segment = self._attach(stack[-1], value, event, stack) if stack else None
            if kind is not ScalarEvent:
                stack.append(_Frame(value, segment))
            elif not stack:
                return value

    def _open(self, event, stack: list[_Frame]) -> list | dict:
        mapping = type(event) is MappingStartEvent
        if stack and isinstance(stack[-1].items, dict) and stack[-1].key is None:
            raise self._value_error(stack, "mapping keys must be strings (got a list or mapping)", event)
        if event.tag not in (None, "!", MAP_TAG if mapping else SEQ_TAG):
            raise self._value_error(stack, f"tag {_tag(event.tag)} is not allowed", event)
        if len(stack) >= self.max_depth:
            raise self._depth_error(event.start_mark)
        return {} if mapping else []

    def _attach(self, parent: _Frame, value: Any, event, stack: list[_Frame]) -> str | int | None:
        """Put ``value`` into the innermost container; its key or index there (None for a key)."""
        items = parent.items
        if isinstance(items, list):
            items.append(value)
            return len(items) - 1
        key = parent.key
        if key is not None:
            items[key] = value
            parent.key = None
            return key
        line = event.start_mark.line + 1
        if not isinstance(value, str):
            raise self._value_error(stack, f"mapping keys must be strings (got {preview(value)})", event)
        if value in parent.key_lines:
            first = parent.key_lines[value]
            where = f"lines {first} and {line}" if first != line else f"twice on line {line}"
            raise InputError(clip_message(f"{_path(stack, value)}: duplicate key ({where})"))
        parent.key_lines[value] = line
        parent.key = value
        return None

    # --- scalars ------------------------------------------------------------------------------

    def _scalar(self, event: ScalarEvent, stack: list[_Frame]) -> Any:
        text = event.value
        if (
            len(text) > MAX_KEY_CHARS
            and stack
            and isinstance(stack[-1].items, dict)
            and stack[-1].key is None
        ):
            size = f"key of {len(text):,} characters, more than the {MAX_KEY_CHARS} allowed"
            raise self._value_error(stack, f"{size} (got {preview(text)})", event)
        if len(text) > MAX_STRING_CHARS:
            size = f"text of {len(text):,} characters, more than the {MAX_STRING_CHARS:,} allowed"
            raise self._value_error(stack, f"{size} (got {preview(text)})", event)
        bad = _DISALLOWED.search(text)  # from an escape of a double-quoted scalar ("\e", "\0")
        if bad:
            code = f"U+{ord(bad.group()):04X}"
            raise self._value_error(stack, f"character {code} is not allowed (got {preview(text)})", event)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.ScalarNode, text, event.implicit)
        elif tag not in _SCALAR_TAGS:
            raise self._value_error(stack, f"tag {_tag(tag)} is not allowed", event)
        elif (
            tag in _TAG_ACCEPTS
            and self.resolve(yaml.ScalarNode, text, (True, False)) not in _TAG_ACCEPTS[tag]
        ):
            raise self._value_error(stack, f"not a valid {_tag(tag)[1:-1]} (got {preview(text)})", event)
        if tag == STR_TAG:
            return text
        if tag == NULL_TAG:
            return None
        if tag == BOOL_TAG:
            return self.bool_values[text.lower()]
        if tag == INT_TAG:
            return self._integer(text, event, stack)
        return self._float(text, event, stack)

    def _integer(self, text: str, event: ScalarEvent, stack: list[_Frame]) -> int:
        digits = re.sub(r"^[-+]?(?:0[bx])?|[_:]", "", text)
        if len(digits) > MAX_INT_DIGITS:
            size = f"integer of {len(digits):,} digits, more than the {MAX_INT_DIGITS} allowed"
            raise self._value_error(stack, f"{size} (got {preview(text)})", event)
        try:
            value = self.construct_yaml_int(yaml.ScalarNode(INT_TAG, text))
        except ValueError:  # "0b_", "0x_": the 1.1 regex accepts them, int() does not
            raise self._value_error(stack, f"not a valid integer (got {preview(text)})", event) from None
        if abs(value) > INT_LIMIT:
            raise self._value_error(stack, f"integer outside ±{INT_LIMIT:,} (got {preview(text)})", event)
        return value

    def _float(self, text: str, event: ScalarEvent, stack: list[_Frame]) -> float:
        try:
            value = self.construct_yaml_float(yaml.ScalarNode(FLOAT_TAG, text))
        except ValueError:
            raise self._value_error(stack, f"not a valid number (got {preview(text)})", event) from None
        if not math.isfinite(value):
            raise self._value_error(stack, f"must be a finite number (got {preview(text)})", event)
        return value

    # --- messages ---------------------------------------------------------------------------

    def _value_error(self, stack: list[_Frame], problem: str, event) -> InputError:
        """``<path of the value at hand>: <problem> (line N)``."""
        line = event.start_mark.line + 1
        return InputError(clip_message(f"{_path(stack) or self.source}: {problem} (line {line})"))

    def _text_error(self, mark, problem: str, *, column: bool = True) -> InputError:
        where = f"line {mark.line + 1}, column {mark.column + 1}" if column else f"line {mark.line + 1}"
        return InputError(clip_message(f"{self.source}: {where}: {problem}"))

    def _depth_error(self, mark) -> InputError:
        return self._text_error(mark, f"nested deeper than {self.max_depth} levels", column=False)


class BoundedPythonLoader(_BoundedLoading, yaml.SafeLoader):
    """The bounded loader on PyYAML's pure-Python parser."""

    def fetch_flow_collection_start(self, TokenClass) -> None:
        # The scanner runs ahead of the events over '[[[[...' (each '[' may start a simple key),
        # so stop at the 65th '[' here rather than after scanning all of them.
        if self.flow_level >= self.max_depth:
            raise self._depth_error(self.get_mark())
        super().fetch_flow_collection_start(TokenClass)


if yaml.__with_libyaml__:

    class BoundedCLoader(_BoundedLoading, yaml.CSafeLoader):
        """The bounded loader on libyaml's parser (libyaml itself stops flow nesting at 1,000)."""


def load_yaml(
    data: bytes | str,
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_values: int = MAX_VALUES,
    source: str = "file",
    backend: str | None = None,
) -> Any:
    """Parse one YAML document of untrusted text with every limit of this module.

    Parameters
    ----------
    data : bytes | str
        The file's bytes (checked as UTF-8; a leading byte-order mark is skipped) or text.
    max_bytes, max_depth, max_values : int
        Limits (defaults: the module constants).
    source : str
        What the text is called in messages about the text itself ("file", "yaml").
    backend : str, optional
        "libyaml" or "python" (default: the first of :data:`BACKENDS`).

    Raises
    ------
    InputError
        One line of at most ``utilities.errors.MAX_MESSAGE_CHARS`` characters.
    """
    text = _checked_text(data, max_bytes=max_bytes, source=source)
    backend = backend or BACKENDS[0]
    if backend not in BACKENDS:
        raise ValueError(f"backend: must be one of {', '.join(BACKENDS)} (got {backend!r})")
    loader_class = BoundedCLoader if backend == "libyaml" else BoundedPythonLoader
    loader = loader_class(text)
    loader.max_depth, loader.max_values, loader.source = max_depth, max_values, source
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, source, max_depth) from None
    except yaml.YAMLError as exc:
        raise InputError(clip_message(f"{source}: not valid YAML ({exc})")) from None
    finally:
        loader.dispose()


def read_capped(path: str | Path, *, max_bytes: int = MAX_BYTES, source: str = "file") -> bytes:
    """A file's bytes, refusing it past ``max_bytes`` without reading more than that."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
            info = os.fstat(handle.fileno())
    except OSError as exc:
        raise InputError(clip_message(f"{source}: cannot read {path} ({exc.strerror})")) from None
    except ValueError as exc:  # a path with a NUL character
        raise InputError(clip_message(f"{source}: cannot read {preview(str(path))} ({exc})")) from None
    if len(data) > max_bytes:
        size = f"{info.st_size:,} bytes" if stat.S_ISREG(info.st_mode) else "more bytes"
        raise InputError(f"{source}: {size}, more than the {max_bytes:,} allowed")
    return data


def load_yaml_file(
    path: str | Path, *, max_bytes: int = MAX_BYTES, source: str = "file", backend: str | None = None
) -> Any:
    """:func:`load_yaml` of a file's bytes, read with the size cap."""
    data = read_capped(path, max_bytes=max_bytes, source=source)
    return load_yaml(data, max_bytes=max_bytes, source=source, backend=backend)


def _checked_text(data: bytes | str, *, max_bytes: int, source: str) -> str:
    size = len(data)
    if isinstance(data, str) and size <= max_bytes:  # a character is 1 to 4 bytes
        size = len(data.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InputError(f"{source}: {size:,} bytes, more than the {max_bytes:,} allowed")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _encoding_error(data, exc.start, source) from None
    else:
        text = data
    if text.startswith("\ufeff"):
        text = text[1:]
    bad = _DISALLOWED.search(text)
    if bad:
        position = bad.start()
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        raise InputError(f"{source}: line {line}, column {column}: {_character_problem(bad.group())}")
    return text


def _encoding_error(data: bytes, offset: int, source: str) -> InputError:
    line = data.count(b"\n", 0, offset) + 1
    hint = ""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        hint = "; it starts with a UTF-16 byte-order mark: save it as UTF-8"
    elif data.startswith(b"\x00\x00\xfe\xff"):
        hint = "; it starts with a UTF-32 byte-order mark: save it as UTF-8"
    byte = f"invalid byte 0x{data[offset]:02x} at offset {offset:,}, line {line}"
    return InputError(f"{source}: not UTF-8 text ({byte}{hint})")


def _character_problem(char: str) -> str:
    code = f"U+{ord(char):04X}"
    if char == "\ufeff":
        return f"byte-order mark {code} is only allowed at the start of the file"
    if char == "\x00":
        return f"NUL character {code} is not allowed (a binary file, or UTF-16 text?)"
    if "\ud800" <= char <= "\udfff":
        return f"unpaired surrogate {code} is not allowed"
    return f"control character {code} is not allowed"


def _syntax_error(exc: yaml.MarkedYAMLError, source: str, max_depth: int) -> InputError:
    """One line from a parser error: where, what, and the construct it was in."""
    mark = exc.problem_mark or exc.context_mark
    problem = one_line(exc.problem or exc.context or "invalid YAML")
    if "maximum nesting depth" in problem and mark:  # libyaml's own limit (1,000 flow levels)
        return InputError(f"{source}: line {mark.line + 1}: nested deeper than {max_depth} levels")
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    context = ""
    if exc.context and exc.problem and exc.context_mark:
        context = f" ({one_line(exc.context)} at line {exc.context_mark.line + 1})"
    return InputError(clip_message(f"{source}: {where}{problem[: 2 * PREVIEW_CHARS + 40]}{context}"))


def _anchor(event) -> str:
    name = one_line(event.anchor[:PREVIEW_CHARS]) + ("…" if len(event.anchor) > PREVIEW_CHARS else "")
    return f"*{name}" if isinstance(event, AliasEvent) else f"&{name}"


def _path(stack: list[_Frame], key: str | None = None) -> str:
    """Dotted path of the value arriving in the innermost container (``job.model.layers``,
    ``what_if.slow_nodes[2]``), or of ``key`` in it; long paths keep their start and end."""
    segments: list[str | int] = [frame.segment for frame in stack[1:]]
    if stack:
        top = stack[-1]
        if isinstance(top.items, list):
            segments.append(len(top.items))
        elif (key if key is not None else top.key) is not None:
            segments.append(key if key is not None else top.key)
    path = ""
    for segment in segments:
        if isinstance(segment, int):
            path += f"[{segment}]"
            continue
        shown = (
            segment
            if segment and len(segment) <= PREVIEW_CHARS and segment.isprintable()
            else preview(segment)
        )
        path = f"{path}.{shown}" if path else shown
    return path if len(path) <= MAX_PATH_CHARS else f"{path[:40]}…{path[-(MAX_PATH_CHARS - 41) :]}"


def _tag(tag: str) -> str:
    """A tag as written in YAML: ``!!binary`` for the core's, else a short preview."""
    return preview("!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag)
