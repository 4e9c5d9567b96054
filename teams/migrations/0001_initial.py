"""Team and TeamMembership, moved here from the topology app without touching the database:
the tables keep their names (``topology_team``, ``topology_teammembership``) and their
constraint, so this migration only adds the models to the teams app's state. The topology app's
``0004_teams_move`` then points its foreign keys here and drops its own copies from the state."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("topology", "0003_team_roles_history"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Team",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=100, unique=True)),
                        ("slug", models.SlugField(max_length=100, unique=True)),
                    ],
                    options={
                        "db_table": "topology_team",
                        "ordering": ("name",),
                    },
                ),
                migrations.CreateModel(
                    name="TeamMembership",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "role",
                            models.CharField(
                                choices=[("viewer", "Viewer"), ("editor", "Editor"), ("admin", "Admin")],
                                default="viewer",
                                max_length=16,
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="teams.team"),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, to=settings.AUTH_USER_MODEL
                            ),
                        ),
                    ],
                    options={
                        "db_table": "topology_teammembership",
                        "constraints": [
                            models.UniqueConstraint(fields=("team", "user"), name="unique_team_member")
                        ],
                    },
                ),
                migrations.AddField(
                    model_name="team",
                    name="members",
                    field=models.ManyToManyField(
                        related_name="teams", through="teams.TeamMembership", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
