"""The REST API of scenarios, runs and the design file (DRF viewsets over
``scenarios.services`` and ``scenarios.selectors``). ``urls.py`` routes them with topology's
designs viewset under ``/api/designs/``; ``twin/api/urls.py`` includes it under ``/api/``."""
