"""``{% live_url "run-live" run.pk %}``: the path of a named WebSocket route, what ``{% url %}`` is
for HTTP routes (Channels routes are not in the URLconf, so ``reverse`` does not know them). Pages
render it into a data attribute; scripts never spell a socket's path."""

from __future__ import annotations

from functools import cache

from django import template
from django.urls import URLResolver
from django.urls.resolvers import RegexPattern

from twin.routing import websocket_urlpatterns

register = template.Library()


@cache
def _resolver() -> URLResolver:
    return URLResolver(RegexPattern(r"^/"), websocket_urlpatterns)


def live_path(name: str, *args) -> str:
    """The path of WebSocket route ``name`` with ``args`` ("/ws/runs/12/"); NoReverseMatch if
    there is none."""
    return "/" + _resolver().reverse(name, *args)


@register.simple_tag
def live_url(name: str, *args) -> str:
    return live_path(name, *args)
