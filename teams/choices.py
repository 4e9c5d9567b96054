"""Choices shared by models, forms and templates of the teams app."""

from __future__ import annotations

from django.db import models


class TeamRole(models.TextChoices):
    """A member's role; what each may do is ``teams.permissions.ROLE_ACTIONS`` (nowhere else)."""

    VIEWER = "viewer", "Viewer"
    EDITOR = "editor", "Editor"
    ADMIN = "admin", "Admin"
