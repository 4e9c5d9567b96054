"""Team and TeamMembership now belong to the teams app (``teams/migrations/0001_initial.py``),
with the same tables: this migration changes the state only. The designs' and builds' foreign
keys point at ``teams.Team`` (the column and its constraint stay as they are), the two models
leave the topology app's state, and their content types are renamed from ``topology`` to
``teams`` so the permissions, admin log entries and anything else that points at them keep
pointing at the same rows."""

import django.db.models.deletion
from django.db import IntegrityError, migrations, models, transaction

MOVED = ("team", "teammembership")


def _relabel(apps, schema_editor, source: str, target: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MOVED:
        try:
            with transaction.atomic(using=db):
                ContentType.objects.using(db).filter(app_label=source, model=model).update(app_label=target)
        except IntegrityError:
            # A stale row of the target label exists already (as Django's own RenameModel does:
            # keep both, ``remove_stale_contenttypes`` asks what to do with the stale one).
            pass
    ContentType.objects.clear_cache()


def content_types_to_teams(apps, schema_editor):
    _relabel(apps, schema_editor, "topology", "teams")


def content_types_to_topology(apps, schema_editor):
    _relabel(apps, schema_editor, "teams", "topology")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("teams", "0001_initial"),
        ("topology", "0003_team_roles_history"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="design",
                    name="team",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="designs", to="teams.team"
                    ),
                ),
                migrations.AlterField(
                    model_name="designbuild",
                    name="team",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="builds", to="teams.team"
                    ),
                ),
                migrations.RemoveField(model_name="team", name="members"),
                migrations.DeleteModel(name="TeamMembership"),
                migrations.DeleteModel(name="Team"),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_to_teams, content_types_to_topology),
    ]
