"""WebSocket URL patterns of every app."""

from __future__ import annotations

from scenarios.routing import websocket_urlpatterns as scenario_patterns

websocket_urlpatterns: list = [*scenario_patterns]
