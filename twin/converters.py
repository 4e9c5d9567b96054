"""URL path converters shared by every app's URLs."""

from __future__ import annotations


class PrimaryKeyConverter:
    """A primary key in a URL: 1 to 18 digits, so a number too big for a 64-bit key is a 404
    (the int converter lets it through to the database, where SQLite raises OverflowError)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value) -> str:
        return str(int(value))
