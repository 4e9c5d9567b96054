"""The REST API's framework base: error shape, bounded parsers, base views, pagination, filters,
schema hooks, and the URL table that mounts every app's API routes (``scenarios/api``,
``topology/api``, ``teams/api``) under ``/api/`` (``docs/api.md``). Only ``urls.py`` imports an
app; the rest is shared by the apps' API modules."""
