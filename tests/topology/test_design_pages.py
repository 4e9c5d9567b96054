"""The design pages as a browser uses them: the generator form and its preview, the background
save's progress, the concurrency refusal on a form, the history page, the login page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from topology import services
from topology.models import Design, DesignBuild, Rack
from topology.progress import progress_publish


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


def test_the_preview_names_the_bad_parameter_and_its_limit(logged_in, catalog_db):
    url = reverse("topology:design-preview")
    bad = logged_in.get(url, {"generator": "nvl72", "server": "gb200-nvl72", "nodes": "20"})
    assert bad.status_code == 400
    assert bad.json() == {
        "ok": False,
        "errors": {"nodes": ["nvl72 counts compute trays and must be a multiple of 18 (got 20)"]},
    }
    assert logged_in.get(url, {"generator": "fat-tree", "server": "dgx-h100", "nodes": "x"}).json()[
        "errors"
    ] == {"nodes": ["Enter a whole number."]}
    good = logged_in.get(url, {"generator": "nvl72", "server": "gb200-nvl72", "nodes": "36"}).json()
    assert good["ok"] and good["summary"]["gpus"] == 144 and 'class="floor-plan"' in good["html"]
    assert "Bisection" in good["html"]


def test_a_new_design_is_saved_in_the_background_and_the_page_follows_it(
    logged_in, catalog_db, team, monkeypatch, django_capture_on_commit_callbacks
):
    from topology import queue

    queued = []
    monkeypatch.setattr(queue, "enqueue_build", lambda build_id, task_id: queued.append(build_id))
    data = {
        "generator": "rail-optimized",
        "server": "dgx-h100",
        "nodes": "8",
        "name": "Eight",
        "team": team.pk,
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in.post(reverse("topology:design-new"), data)
    build = DesignBuild.objects.get()
    assert response.status_code == 302 and response["Location"] == build.get_absolute_url()
    assert queued == [build.pk]
    status_url = reverse("topology:build-status", args=[build.pk])
    progress_publish(build.task_id, progress=0.4, stage="saving links")
    assert logged_in.get(status_url).json() | {"id": 0} == {
        "id": 0,
        "status": "queued",
        "status_label": "Queued",
        "progress": 0.4,
        "stage": "saving links",
        "error": "",
        "design_url": None,
    }
    assert 'aria-valuenow="40"' in logged_in.get(build.get_absolute_url()).content.decode()
    services.design_build_execute(build_id=build.pk)
    state = logged_in.get(status_url).json()
    design = Design.objects.get(name="Eight")
    assert (
        state["status"] == "succeeded"
        and state["progress"] == 1.0
        and state["design_url"] == design.get_absolute_url()
    )


def test_a_bad_parameter_is_shown_next_to_its_field_and_nothing_is_queued(logged_in, catalog_db, team):
    data = {
        "generator": "rail-optimized",
        "server": "dgx-h100",
        "nodes": "0",
        "name": "Zero",
        "team": team.pk,
    }
    response = logged_in.post(reverse("topology:design-new"), data)
    html = response.content.decode()
    assert response.status_code == 400 and "must be ≥ 1 (got 0)" in html and not DesignBuild.objects.exists()


def test_a_form_opened_before_someone_elses_save_is_refused_with_who_and_when(
    client, design, user, editor_user
):
    rack = Rack.objects.filter(hall__design=design).order_by("pk").first()
    url = reverse("topology:rack-edit", args=[design.pk, rack.pk])
    opened = {"name": rack.name, "version": design.version}
    client.force_login(user)
    assert client.post(url, {**opened, "power_budget_kw": "20"}).status_code == 302
    client.force_login(editor_user)
    refused = client.post(url, {**opened, "power_budget_kw": "18"})
    html = refused.content.decode()
    assert refused.status_code == 409 and "was changed by alice at" in html and "nothing was saved" in html
    assert 'value="18"' in html  # the editor's value is kept on the form
    rack.refresh_from_db()
    assert rack.power_budget_kw == 20.0


def test_the_history_page_says_who_changed_what_and_when(logged_in, design, user):
    rack = Rack.objects.filter(hall__design=design).order_by("pk").first()
    services.rack_update(rack=rack, user=user, expected_version=1, power_budget_kw=19.5)
    html = logged_in.get(reverse("topology:design-history", args=[design.pk])).content.decode()
    assert 'id="v2"' in html and "alice" in html and "power budget (kW)" in html
    assert "<ins>19.5</ins>" in html and "created from generator rail-optimized" in html


def test_the_login_page_says_how_to_get_an_account_and_shows_the_demo_only_when_embedded(
    client, db, settings
):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("demo")
    settings.EMBEDDED_MODE = True
    html = client.get(reverse("login")).content.decode()
    assert "How do I get an account?" in html and "createsuperuser" in html and "demo-twin-2026" in html
    settings.EMBEDDED_MODE = False
    html = client.get(reverse("login")).content.decode()
    assert "How do I get an account?" in html and "demo-twin-2026" not in html


@pytest.fixture
def editor_user(django_user_model, team):
    from teams.models import TeamMembership

    carol = django_user_model.objects.create_user("carol")
    TeamMembership.objects.create(team=team, user=carol, role="editor")
    return carol
