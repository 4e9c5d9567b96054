"""App config for the hardware catalog and cluster designs."""

from __future__ import annotations

from django.apps import AppConfig


class TopologyConfig(AppConfig):
    name = "topology"
    verbose_name = "Topology: catalog and designs"
