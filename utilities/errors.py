"""The error of bad input and the helpers that keep its messages one short line.

:class:`InputError` is what the bounded loader (``utilities.yamlsafe``) raises; the scenario
format's ``ScenarioError`` subclasses it, so ``except InputError`` catches both.
"""

from __future__ import annotations

import reprlib
from typing import Any

#: Characters of an offending value quoted in a message: enough to recognise it, never a
#: whole (possibly megabyte-long) value.
PREVIEW_CHARS = 40
#: Longest message (the field path, the rule, a preview); a last-resort guard for paths
#: and problems built from user text.
MAX_MESSAGE_CHARS = 300


class InputError(ValueError):
    """Input text or data is malformed; the message names the place and the rule in one line."""


class _ShortRepr(reprlib.Repr):
    """reprlib with a prefix (not start...end) for strings and no digit conversion of huge ints."""

    def __init__(self, limit: int):
        super().__init__()
        self.maxstring = self.maxother = limit
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = 4
        self.maxlevel = 2

    def repr_str(self, value: str, level: int) -> str:
        return repr(value[: self.maxstring]) + ("…" if len(value) > self.maxstring else "")

    def repr_int(self, value: int, level: int) -> str:
        # str() of an int past 4,300 digits raises (sys.int_info.default_max_str_digits).
        if value.bit_length() > 3 * self.maxstring:
            return f"<integer of about {int(value.bit_length() * 0.30103) + 1:,} digits>"
        return repr(value)


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A short, one-line repr of ``value``: a string's first ``limit`` characters + "…"."""
    text = _ShortRepr(limit).repr(value)
    return one_line(text if len(text) <= 3 * limit else text[: 3 * limit] + "…")


def one_line(text: str) -> str:
    """``text`` with line breaks and other unprintable characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def clip_message(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """One printable line of at most ``limit`` characters (a message that quoted a long value)."""
    message = one_line(message)
    return message if len(message) <= limit else message[: limit - 1] + "…"
