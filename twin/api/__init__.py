"""The REST API's shared door: error shape, bounded parsers, base views, pagination, schema
hooks and the URL table that mounts ``scenarios/api`` and ``topology/api`` under ``/api/``
(``docs/api.md``)."""
