"""The REST API of scenarios and runs (DRF viewsets over ``scenarios.services`` and
``scenarios.selectors``; mounted under ``/api/`` by ``twin/api/urls.py``)."""
