"""Writes of the hardware catalog: import (keeping a curator's edits unless ``update``), export,
and telling the designs that use an edited entry that they changed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from topology.choices import ChangeAction
from topology.fabric.specs import SPEC_TYPES, CatalogError, catalog_from_dict
from topology.models import (
    CATALOG_MODELS,
    Design,
    GpuType,
    LinkType,
    PowerFeedType,
    ServerType,
    SwitchType,
)
from topology.services.history import Change, FieldChange, designs_changed, diff_of, snapshot


@dataclass(frozen=True)
class CatalogImportReport:
    """What a catalog import did, per kind: slugs created and updated (existing rows are only
    updated with ``update``)."""

    created: dict[str, list[str]]
    updated: dict[str, list[str]]

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.created.values()) + sum(len(v) for v in self.updated.values())


def _row_values(kind: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    values = {k: v for k, v in entry.items() if k != "slug"}
    if kind == "servers":
        values["gpu_type"] = GpuType.objects.get(slug=values.pop("gpu"))
    if kind == "switches":
        values["roles"] = list(values["roles"])
    return values


def _catalog_check(data: Mapping[str, Any]) -> None:
    """Validate a document with the pure loader's rules, merged over the catalog already saved
    (so a file may add a server whose GPU is only in the database)."""
    from topology.selectors import catalog_load

    merged = catalog_load().to_dict()
    try:
        for kind in SPEC_TYPES:
            entries = data.get(kind) or []
            if not isinstance(entries, list):
                raise ValidationError(f"{kind}: must be a list of entries")
            incoming = {e["slug"]: e for e in entries}
            merged[kind] = [e for e in merged[kind] if e["slug"] not in incoming] + entries
        catalog_from_dict(merged)
    except CatalogError as exc:
        raise ValidationError(str(exc)) from exc
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValidationError(f"catalog: malformed entry ({exc})") from exc


@transaction.atomic
def catalog_import(*, data: Mapping[str, Any], update: bool = False) -> CatalogImportReport:
    """Create the catalog rows of a parsed catalog YAML document that are missing, all or nothing.

    Rows that exist already are left as they are (a curator's edits in the admin survive every
    re-seed); with ``update`` they are overwritten by the document and every design using them
    gets a new version. The document is validated first with the same rules as the pure
    loader, then each row with ``full_clean``; any error names the entry and field and nothing
    is saved.
    """
    if not isinstance(data, Mapping):
        raise ValidationError("catalog: the document must be a mapping with gpus, servers, ...")
    unknown = set(data) - set(SPEC_TYPES)
    if unknown:
        raise ValidationError(f"catalog: unknown section(s) {', '.join(sorted(unknown))}")
    _catalog_check(data)
    created: dict[str, list[str]] = {kind: [] for kind in SPEC_TYPES}
    updated: dict[str, list[str]] = {kind: [] for kind in SPEC_TYPES}
    for kind, model in CATALOG_MODELS.items():
        for entry in data.get(kind) or []:
            slug = entry["slug"]
            try:
                values = _row_values(kind, entry)
            except GpuType.DoesNotExist as exc:
                raise ValidationError(f"servers[{slug}].gpu: unknown GPU slug {entry.get('gpu')!r}") from exc
            existing = model.objects.filter(slug=slug).first()
            row = existing if existing is not None and update else model(slug=slug)
            before = snapshot(row, values) if existing is not None and update else {}
            for field_name, value in values.items():
                setattr(row, field_name, value)
            try:
                # Every entry is checked, also one that will not be saved: a bad file is an error.
                row.full_clean(validate_unique=existing is None or update)
            except ValidationError as exc:
                messages = "; ".join(f"{field}: {' '.join(errs)}" for field, errs in exc.message_dict.items())
                raise ValidationError(f"{kind}[{slug}]: {messages}") from exc
            is_new = existing is None
            if not (is_new or update):
                continue
            row.save()
            if not is_new:
                catalog_changed(row, diff=diff_of(row, before))
            (created if is_new else updated)[kind].append(slug)
    return CatalogImportReport(created=created, updated=updated)


def catalog_export() -> dict[str, list[dict[str, Any]]]:
    """The whole catalog as the YAML document ``catalog_import`` reads."""
    from topology.selectors import catalog_load

    return catalog_load().to_dict()


#: Which catalog row a design part points at (for ``catalog_changed``).
_CATALOG_USERS = {
    GpuType: "halls__racks__nodes__server_type__gpu_type",
    ServerType: "halls__racks__nodes__server_type",
    SwitchType: "switches__switch_type",
    LinkType: "links__link_type",
    PowerFeedType: "feeds__feed_type",
}


def catalog_changed(entry, *, user=None, diff: tuple[FieldChange, ...] = ()) -> int:
    """A catalog row changed: every design that uses it gets a new version and a history entry
    (its derived data, nameplate power or link latencies, changed with it)."""
    kind = str(type(entry)._meta.verbose_name)
    fields = "; ".join(f"{line.label} {line.before} → {line.after}" for line in diff[:3])
    change = Change(
        ChangeAction.CATALOG,
        kind,
        entry.name,
        f"catalog {kind} {entry.name} changed" + (f": {fields}" if fields else ""),
        diff,
    )
    path = _CATALOG_USERS[type(entry)]
    return designs_changed(Design.objects.filter(**{path: entry}), user=user, change=change)
