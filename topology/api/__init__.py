"""The REST API of designs and the hardware catalog (DRF viewsets over ``topology.services``
and ``topology.selectors``). ``urls.py`` routes the catalog; the designs viewset is routed by
``scenarios/api/urls.py`` together with the design file's endpoints."""
