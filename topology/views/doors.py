"""What every design page does first: find the object through the permission module (another
team's is a 404, a role without the action a 403) and speak the services' errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404

from teams.forms import add_service_errors
from teams.permissions import VIEW, require, restrict
from topology import services
from topology.models import Design, PowerFeed, Rack

#: Largest primary key a URL may name.
MAX_PK = 2**63 - 1


def design_or_404(user, pk, action: str = VIEW) -> Design:
    """The design ``pk`` if ``user`` may see it (404 otherwise) and perform ``action`` (403)."""
    if not isinstance(pk, int) or not 0 < pk <= MAX_PK:
        raise Http404("not found")
    design = get_object_or_404(restrict(Design.objects.select_related("team"), user, VIEW), pk=pk)
    return require(design, user, action)


def rack_of(design: Design, pk) -> Rack:
    return get_object_or_404(Rack.objects.select_related("hall"), hall__design=design, pk=pk)


def feed_of(design: Design, pk) -> PowerFeed:
    return get_object_or_404(PowerFeed.objects.select_related("feed_type"), design=design, pk=pk)


def versioned_save(
    form, design: Design, save: Callable[[dict[str, Any]], Any], *rows
) -> tuple[Any, dict, bool]:
    """Save a valid posted edit form at the version it was opened at.

    ``save(cleaned_data)`` calls the service. Returns ``(form, extra context, saved)``: after a
    ``DesignConflict`` the form is bound again at the current version (the user's values stay, so
    a second save is a deliberate overwrite) with the conflict message in the context, and the
    design and ``rows`` are read again; after another ``ValidationError`` its errors are on the
    form's fields.
    """
    try:
        save(form.cleaned_data)
    except services.DesignConflict as error:
        for row in (design, *rows):
            row.refresh_from_db()
        return _rebind_version(form, design.version), {"conflict": error.messages[0]}, False
    except ValidationError as error:
        add_service_errors(form, error)
        return form, {}, False
    return form, {}, True


def _rebind_version(form, version: int):
    data = form.data.copy()
    data["version"] = str(version)
    bound = type(form)(data, **getattr(form, "rebind_kwargs", {}))
    bound.is_valid()
    return bound
