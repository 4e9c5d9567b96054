"""Teams and their members.

The tables kept the names they had when these models lived in the topology app
(``topology_team``, ``topology_teammembership``): the move was a change of the migration state
only (``teams/migrations/0001_initial.py``, ``topology/migrations/0004_teams_move.py``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from teams.choices import TeamRole


class Team(models.Model):
    """A group of users who share designs."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="TeamMembership", related_name="teams")

    class Meta:
        db_table = "topology_team"
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    """A user's membership of a team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=16, choices=TeamRole.choices, default=TeamRole.VIEWER)

    class Meta:
        db_table = "topology_teammembership"
        constraints = [models.UniqueConstraint(fields=("team", "user"), name="unique_team_member")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"
