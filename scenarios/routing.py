"""WebSocket URL patterns of runs and designs (included by ``twin/routing.py``); pages render their
paths by name with ``{% live_url %}`` (``twin/templatetags/live_urls.py``)."""

from __future__ import annotations

from django.urls import path

from scenarios import consumers

websocket_urlpatterns = [
    path("ws/runs/<pk:run_id>/", consumers.RunConsumer.as_asgi(), name="run-live"),
    path("ws/designs/<pk:design_id>/", consumers.DesignConsumer.as_asgi(), name="design-live"),
]
