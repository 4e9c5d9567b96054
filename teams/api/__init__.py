"""The teams API (``/api/teams/``) and the permission-aware base every app's API views build on:
``TeamObjectViewSet``, ``referenced`` and ``path_object`` look objects up through
``teams.permissions`` (another team's object is a 404). Mounted under ``/api/`` by
``twin/api/urls.py``."""
