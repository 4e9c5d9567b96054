"""Caches of data derived from a design (compiled fabric, plan, rack arrays, floor-plan figures),
keyed by ``(design id, version)`` and nothing else.

``Design.version`` is bumped in the same transaction as every change to any part of a design
and every catalog edit that reaches it (``services.design_changed``), so an entry of an older
version is never read again and simply ages out: there is no other invalidation path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_ALL: list[VersionedCache] = []


def design_key(design, what: str) -> str:
    """A cache key for ``what`` derived from this version of the design (for Django's cache)."""
    return f"design:{what}:{int(design.pk)}:v{int(design.version)}"


class VersionedCache:
    """A small per-process LRU of Python objects (a compiled fabric is not worth pickling into
    Django's cache), keyed by ``(design id, version, *extra)``."""

    def __init__(self, name: str, maxsize: int = 4):
        self.name = name
        self.maxsize = maxsize
        self._entries: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()
        _ALL.append(self)

    def get(self, design, compute: Callable[[], T], *extra) -> T:
        """The cached value for this design version, computed once by ``compute()``."""
        key = (int(design.pk), int(design.version), *extra)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = compute()
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def clear_all() -> None:
    """Empty every versioned cache of this process (tests: a rolled-back SQLite transaction
    hands the same primary key to the next test's design)."""
    for cache in _ALL:
        cache.clear()
