"""WebSocket URL patterns of runs and designs (included by ``twin/routing.py``)."""

from __future__ import annotations

from django.urls import path

from scenarios import consumers

websocket_urlpatterns = [
    path("ws/runs/<pk:run_id>/", consumers.RunConsumer.as_asgi()),
    path("ws/designs/<pk:design_id>/", consumers.DesignConsumer.as_asgi()),
]
