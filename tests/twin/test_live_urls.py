"""``{% live_url %}``: the path of a named WebSocket route, resolved by the same patterns the ASGI
router serves, so a page never spells a socket's path."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import NoReverseMatch, URLResolver
from django.urls.resolvers import RegexPattern

from scenarios import consumers
from twin.routing import websocket_urlpatterns
from twin.templatetags.live_urls import live_path


def test_live_path_names_the_route_the_router_serves():
    router = URLResolver(RegexPattern(r"^/"), websocket_urlpatterns)
    for name, pk, consumer in (
        ("run-live", 12, consumers.RunConsumer),
        ("design-live", 3, consumers.DesignConsumer),
    ):
        path = live_path(name, pk)
        match = router.resolve(path)
        assert match.func.consumer_class is consumer and list(match.kwargs.values()) == [pk], path
    assert live_path("run-live", 12) == "/ws/runs/12/"


def test_the_tag_renders_the_path_and_an_unknown_route_is_an_error():
    assert (
        Template('{% load live_urls %}{% live_url "design-live" 5 %}').render(Context()) == "/ws/designs/5/"
    )
    with pytest.raises(NoReverseMatch):
        live_path("no-such-route", 1)
