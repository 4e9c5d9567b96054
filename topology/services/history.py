"""The design-change service: every change to a design or any of its parts bumps the design's
version in the changing transaction and writes one history entry (who, what, when, the diff);
optimistic concurrency on that version (``design_lock``) refuses a form opened at an older one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Model
from django.utils import timezone

from topology.choices import ChangeAction
from topology.models import Design, DesignChange, Gpu, Hall, Link, Node, PowerFeed, Rack, Switch


@dataclass(frozen=True)
class FieldChange:
    """One line of a readable diff: a field's label and its value before and after."""

    field: str
    label: str
    before: str
    after: str


@dataclass(frozen=True)
class Change:
    """What one history entry records besides who and when."""

    action: str
    object_kind: str
    object_name: str
    summary: str
    diff: tuple[FieldChange, ...] = field(default_factory=tuple)


class DesignConflict(ValidationError):
    """The design changed since the form was opened: nothing was saved (optimistic concurrency)."""

    def __init__(self, message: str, *, current_version: int, changed_by: str, changed_at):
        super().__init__(message, code="conflict")  # the API answers this code 409 (twin.api.errors)
        self.current_version = current_version
        self.changed_by = changed_by
        self.changed_at = changed_at


def design_of(part) -> Design:
    """The design a row belongs to (a Design, Hall, Rack, Node, Gpu, Switch, Link or PowerFeed)."""
    if isinstance(part, Design):
        return part
    if isinstance(part, Rack):
        return part.hall.design
    if isinstance(part, Node):
        return part.rack.hall.design
    if isinstance(part, Gpu):
        return part.node.rack.hall.design
    return part.design  # Hall, Switch, Link, PowerFeed


#: ORM path from each design part to its design.
_DESIGN_PATHS = {
    Design: "pk",
    Hall: "design",
    Rack: "hall__design",
    Node: "rack__hall__design",
    Gpu: "node__rack__hall__design",
    Switch: "design",
    Link: "design",
    PowerFeed: "design",
}


def designs_of(parts) -> Any:
    """The designs the rows of a queryset of design parts belong to."""
    return Design.objects.filter(pk__in=parts.values(_DESIGN_PATHS[parts.model]))


def _user_name(user) -> str:
    return user.get_username() if user is not None and user.is_authenticated else ""


def _entry(design_pk: int, version: int, user, change: Change) -> DesignChange:
    return DesignChange(
        design_id=design_pk,
        version=version,
        user=user if user is not None and user.is_authenticated else None,
        user_name=_user_name(user),
        action=change.action,
        object_kind=change.object_kind[:32],
        object_name=change.object_name[:200],
        summary=change.summary[:500],
        changes=[vars(line) for line in change.diff],
    )


def history_record(*, design: Design, user, change: Change) -> DesignChange:
    """Write the history entry of the design's current version (a design just created)."""
    entry = _entry(design.pk, design.version, user, change)
    entry.save()
    return entry


def design_changed(design: Design, *, user=None, change: Change | None = None) -> Design:
    """Record that a design (or any part of it) changed: bump its version and write its history
    entry, in this transaction.

    Every cache of derived data is keyed by ``(design id, version)`` (``topology.caches``), so
    this is the one invalidation. It must run inside the transaction that made the change, so
    that no reader ever sees the new rows under the old version.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("design_changed: call it inside the transaction that changed the design")
    Design.objects.filter(pk=design.pk).update(version=F("version") + 1, updated=timezone.now())
    design.refresh_from_db(fields=["version", "updated"])
    change = change or Change(ChangeAction.CHANGED, "design", design.name, "changed (no details given)")
    _entry(design.pk, design.version, user, change).save()
    return design


def designs_changed(designs, *, user=None, change: Change | None = None) -> int:
    """``design_changed`` for every design of a queryset (a catalog edit); returns how many."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("designs_changed: call it inside the transaction that made the change")
    pks = list(designs.values_list("pk", flat=True).distinct())
    count = Design.objects.filter(pk__in=pks).update(version=F("version") + 1, updated=timezone.now())
    change = change or Change(ChangeAction.CATALOG, "catalog", "", "a catalog entry it uses changed")
    versions = Design.objects.filter(pk__in=pks).values_list("pk", "version")
    DesignChange.objects.bulk_create([_entry(pk, version, user, change) for pk, version in versions])
    return count


def design_lock(design: Design, expected_version: Any) -> Design:
    """Lock the design's row for this transaction and check it is still at ``expected_version``.

    Raises
    ------
    DesignConflict
        Someone saved a change since the form was opened; the message says who and when.
    ValidationError
        ``expected_version`` is not a version number.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("design_lock: call it inside the transaction that changes the design")
    if isinstance(expected_version, bool) or not isinstance(expected_version, int) or expected_version < 1:
        raise ValidationError(
            {
                "version": "version: must be the design version the form was opened at "
                f"(got {str(expected_version)[:40]!r})"
            }
        )
    locked = Design.objects.select_for_update().get(pk=design.pk)
    if locked.version == expected_version:
        return locked
    later = DesignChange.objects.filter(design=locked, version__gt=expected_version).order_by("-version")
    last = later.first()
    who = (last.user_name or "the system") if last else "someone"
    when = timezone.localtime(last.time).strftime("%Y-%m-%d %H:%M:%S %Z") if last else "an unknown time"
    times = later.count()
    more = f" ({times} changes, the last one)" if times > 1 else ""
    raise DesignConflict(
        f"“{locked.name}” was changed by {who} at {when}{more} since you opened it "
        f"(version {expected_version} → {locked.version}): nothing was saved. "
        "Reload the page to see the change, then make yours again.",
        current_version=locked.version,
        changed_by=who,
        changed_at=last.time if last else None,
    )


# --- readable diffs --------------------------------------------------------------------------


def display_value(value: Any) -> str:
    """A value as a history line shows it (numbers without trailing zeros, none as a dash)."""
    if value is None or value == "":
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Model):
        return str(value)
    if isinstance(value, Iterable) and not isinstance(value, str | Mapping):
        items = [display_value(v) for v in value]
        return ", ".join(items[:8]) + (f" … ({len(items)} in all)" if len(items) > 8 else "") or "—"
    text = str(value)
    return text if len(text) <= 200 else text[:199] + "…"


#: What a history line calls a field whose model name says it badly ("power budget kw").
FIELD_LABELS = {"power_budget_kw": "power budget (kW)", "feed_type": "circuit type", "u_height": "height (U)"}


def field_label(model, name: str) -> str:
    """The label a history line shows for a field of ``model``."""
    return FIELD_LABELS.get(name) or str(model._meta.get_field(name).verbose_name)


def snapshot(obj: Model, fields: Iterable[str]) -> dict[str, Any]:
    """The values of ``fields`` of ``obj`` now (foreign keys as objects), for ``diff_of``."""
    return {name: getattr(obj, name) for name in fields}


def diff_of(obj: Model, before: Mapping[str, Any], after: Mapping[str, Any] | None = None) -> tuple:
    """The fields whose value differs between ``before`` and ``after`` (default: ``obj`` now)."""
    after = after if after is not None else snapshot(obj, before)
    lines = []
    for name, old in before.items():
        new = after.get(name)
        if display_value(old) == display_value(new):
            continue
        lines.append(FieldChange(name, field_label(type(obj), name), display_value(old), display_value(new)))
    return tuple(lines)


def diff_summary(kind: str, name: str, diff: tuple[FieldChange, ...]) -> str:
    """ "rack R01-02: power budget kW 40 → 35" (the first few fields)."""
    parts = [f"{line.label} {line.before} → {line.after}" for line in diff[:3]]
    more = f" and {len(diff) - 3} more" if len(diff) > 3 else ""
    return f"{kind} {name}: " + "; ".join(parts) + more
