"""The REST API of designs, the hardware catalog and teams (DRF viewsets over
``topology.services`` and ``topology.selectors``; mounted under ``/api/`` by ``twin/api/urls.py``)."""
