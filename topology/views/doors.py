"""What every design page does first: find the object through the permission module (another
team's is a 404, a role without the action a 403) and speak the services' errors."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404

from topology.models import Design, PowerFeed, Rack
from twin.permissions import VIEW, require, restrict

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
