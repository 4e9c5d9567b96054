"""The scenario format's fields, declared once: name, label, type, bounds, default and help.

Every section of a scenario file (``job.model``, ``job.parallel``, ``what_if``, ``failures``,
``power``...) is a :class:`Section` of :class:`Field` s. The parsers read values through it (one
set of rules and limits, one wording of the errors), and the web app builds its scenario form
from the same declarations (labels, bounds and help next to every input), so the file, the form
and the API can never disagree about what a field accepts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from scenarios.sim.format.errors import ScenarioError
from utilities.errors import preview

Kind = Literal["int", "float", "choice", "bool", "slug", "indices", "text"]


@dataclass(frozen=True)
class Field:
    """One key of a section.

    Attributes
    ----------
    key, label : str
        The key in the file and what a person calls it ("ffn_hidden", "FFN hidden size").
    kind : {"int", "float", "choice", "bool", "slug", "indices", "text"}
        "slug" is a catalog slug, "indices" a list of integers ≥ 0.
    default : any
        The value when the key is absent or null; None means "no value" (or a default another
        field decides, said in ``help``).
    required : bool
    lo, hi : float or None
        Inclusive bounds (``lo`` exclusive with ``lo_open``).
    choices : tuple of str
    help, unit : str
        Shown next to the input.
    web : bool
        Whether the scenario form offers it (a few keys only make sense in files).
    """

    key: str
    label: str
    kind: Kind
    default: Any = None
    required: bool = False
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    choices: tuple[str, ...] = ()
    help: str = ""
    unit: str = ""
    web: bool = True

    def read(self, data: Mapping[str, Any], where: str, *, error: type[ScenarioError] = ScenarioError) -> Any:
        """The field's value in ``data`` (a section mapping), checked; ``error`` (a ScenarioError)
        naming the field and the rule otherwise."""
        name = f"{where}.{self.key}" if where else self.key
        value = data.get(self.key)
        if value is None:
            if self.required:
                raise error(f"{name}: required")
            return self.default
        try:
            return _READERS[self.kind](self, name, value)
        except ScenarioError as exc:
            if error is ScenarioError:
                raise
            raise error(str(exc)) from None


def _read_int(field: Field, name: str, value: Any) -> int:
    # JSON (web, API) can bring inf, nan or a 5,000-digit integer: int(inf) raises and str() of
    # a huge integer does too, so test the type first and quote a preview.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{name}: must be an integer (got {preview(value)})")
    if isinstance(value, float) and not value.is_integer():
        raise ScenarioError(f"{name}: must be an integer (got {value!r})")
    value = int(value)
    lo = 1 if field.lo is None else int(field.lo)
    if value < lo or (field.hi is not None and value > field.hi):
        shown = preview(value) if value.bit_length() > 100 else None
        if value < lo:
            raise ScenarioError(f"{name}: must be ≥ {lo} (got {shown or value})")
        raise ScenarioError(f"{name}: must be ≤ {int(field.hi):,} (got {shown or f'{value:,}'})")
    return value


def _read_float(field: Field, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScenarioError(f"{name}: must be a finite number (got {preview(value)})")
    value = float(value)
    lo = field.lo
    if lo is not None and ((value <= lo) if field.lo_open else (value < lo)):
        raise ScenarioError(f"{name}: must be {'>' if field.lo_open else '≥'} {lo:g} (got {value:g})")
    if field.hi is not None and value > field.hi:
        raise ScenarioError(f"{name}: must be ≤ {field.hi:g} (got {value:g})")
    return value


def _read_choice(field: Field, name: str, value: Any) -> str:
    if value not in field.choices:
        raise ScenarioError(f"{name}: must be one of {', '.join(field.choices)} (got {preview(value)})")
    return value


def _read_bool(field: Field, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(f"{name}: must be true or false (got {preview(value)})")
    return value


def _read_slug(field: Field, name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{name}: must be a catalog slug (got {preview(value)})")
    return value


def _read_indices(field: Field, name: str, value: Any) -> tuple[int, ...]:
    ok = isinstance(value, list | tuple) and all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value
    )
    what = f"{field.unit} indices" if field.unit else "indices"
    if not ok:
        raise ScenarioError(f"{name}: must be a list of {what} ≥ 0 (got {preview(value)})")
    if field.hi is not None and len(value) > field.hi:
        raise ScenarioError(f"{name}: must list at most {int(field.hi):,} {what} (got {len(value):,})")
    return tuple(sorted(set(value)))


def _read_text(field: Field, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ScenarioError(f"{name}: must be text (got {preview(value)})")
    if field.hi is not None and len(value) > field.hi:
        raise ScenarioError(f"{name}: must be at most {int(field.hi):,} characters (got {len(value):,})")
    return value


_READERS = {
    "int": _read_int,
    "float": _read_float,
    "choice": _read_choice,
    "bool": _read_bool,
    "slug": _read_slug,
    "indices": _read_indices,
    "text": _read_text,
}


@dataclass(frozen=True)
class Section:
    """A mapping of a scenario file (``path`` "" is the top level) and the fields it holds.

    ``mappings`` are keys holding nested sections, read by their own :class:`Section`.
    """

    path: str
    label: str
    fields: tuple[Field, ...]
    mappings: tuple[str, ...] = ()
    error: type[ScenarioError] = ScenarioError

    def field(self, key: str) -> Field:
        return next(f for f in self.fields if f.key == key)

    def mapping(self, data: Any, *, where: str | None = None) -> Mapping[str, Any]:
        """``data`` if it is a mapping with only known keys, else the section's error. ``where``
        names an item of a list of such mappings (``power.events[2]``)."""
        path = self.path if where is None else where
        where = path or "scenario"
        if not isinstance(data, Mapping):
            raise self.error(f"{where}: must be a mapping (got {type(data).__name__})")
        known = {f.key for f in self.fields} | set(self.mappings)
        unknown = sorted(set(data) - known, key=str)
        if unknown:
            prefix = f"{path}." if path else ""
            key = str(unknown[0])[:40]
            raise self.error(f"{prefix}{key}: unknown field (known: {', '.join(sorted(known))})")
        return data

    def read(self, data: Any, *, where: str | None = None) -> dict[str, Any]:
        """Every field's checked value (defaults filled in); nested mappings are left out."""
        data = self.mapping(data, where=where)
        path = self.path if where is None else where
        return {f.key: f.read(data, path, error=self.error) for f in self.fields}
