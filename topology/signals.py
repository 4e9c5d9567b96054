"""Signals the topology app sends so that apps built on it (scenarios) act on a design's life
cycle without ``topology`` importing them (ARCHITECTURE.md: topology never imports scenarios)."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent inside ``services.design_fork``'s transaction once the copy is saved, with
#: ``source``, ``copy`` and ``user``: receivers copy what belongs to the design (its scenarios).
design_forked = Signal()

#: Sent inside ``services.design_delete``'s transaction before the design is deleted, with
#: ``design`` and ``user``: receivers stop what still works on it (runs in progress).
design_deleting = Signal()
