"""The move of Team and TeamMembership from the topology app to the teams app changed the
migration state only: a database migrated before the move keeps its teams, members, designs and
builds, and the content types (so the permissions pointing at them) follow the models."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

pytestmark = pytest.mark.slow

#: The last state before the move: topology's migrations up to 0003, no teams app.
BEFORE_THE_MOVE = [("topology", "0003_team_roles_history"), ("teams", None)]
#: The models of that state (topology's Team and TeamMembership, the content types).
OLD_MODELS = [("topology", "0003_team_roles_history"), ("contenttypes", "0002_remove_content_type_name")]


def test_member_roles_migrate_to_editor(db):
    """0003 turns today's ``member`` (everything allowed) into ``editor`` (view, change, run)."""
    from importlib import import_module

    from django.contrib.auth import get_user_model

    from teams.models import Team, TeamMembership

    migration = import_module("topology.migrations.0003_team_roles_history")
    # 0003 runs on the models of its time (TeamMembership was topology's then), same table.
    historical = MigrationLoader(connection).project_state(("topology", "0003_team_roles_history")).apps
    team = Team.objects.create(name="Old", slug="old")
    TeamMembership.objects.create(team=team, user=get_user_model().objects.create_user("m"), role="member")
    migration.members_become_editors(historical, None)
    assert TeamMembership.objects.get(team=team).role == "editor"


@pytest.mark.django_db(transaction=True)
def test_a_database_of_before_the_move_keeps_its_teams_and_their_content_types():
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    from teams.models import Team, TeamMembership
    from topology.models import Design, DesignBuild

    ContentType.objects.clear_cache()
    team_type = ContentType.objects.get_for_model(Team)
    permission, _ = Permission.objects.get_or_create(
        codename="change_team", content_type=team_type, defaults={"name": "Can change team"}
    )
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(BEFORE_THE_MOVE)
        old = executor.loader.project_state(OLD_MODELS).apps
        with pytest.raises(LookupError):
            old.get_model("teams", "Team")
        OldContentType = old.get_model("contenttypes", "ContentType")
        assert OldContentType.objects.get(pk=team_type.pk).app_label == "topology"  # renamed back
        user = old.get_model("auth", "User").objects.create(username="kept")
        team = old.get_model("topology", "Team").objects.create(name="Kept team", slug="kept-team")
        old.get_model("topology", "TeamMembership").objects.create(team=team, user=user, role="editor")
        design = old.get_model("topology", "Design").objects.create(name="Kept design", team=team, owner=user)
        old.get_model("topology", "DesignBuild").objects.create(
            team=team, user=user, kind="generate", name="Kept build", task_id="t-1"
        )

        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    moved = Team.objects.get(name="Kept team")
    assert moved.pk == team.pk and moved.slug == "kept-team"
    membership = TeamMembership.objects.get(team=moved)
    assert (membership.user.username, membership.role) == ("kept", "editor")
    assert list(moved.members.values_list("username", flat=True)) == ["kept"]
    assert Design.objects.get(pk=design.pk).team == moved
    assert list(moved.designs.values_list("name", flat=True)) == ["Kept design"]
    assert DesignBuild.objects.get(name="Kept build").team == moved
    ContentType.objects.clear_cache()
    assert ContentType.objects.get_for_model(Team).pk == team_type.pk
    assert (ContentType.objects.get(pk=team_type.pk).app_label, team_type.model) == ("teams", "team")
    assert Permission.objects.get(pk=permission.pk).content_type_id == team_type.pk
    assert ContentType.objects.get_for_model(TeamMembership).app_label == "teams"
