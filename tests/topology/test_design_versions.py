"""Design versions: every change to any part of a design (in the admin or through a service) bumps
the version in the same transaction, and every cache of derived data follows the version: the
next floor plan and the next run see the change."""

from __future__ import annotations

import json

import pytest
from django.db import transaction
from django.forms.models import model_to_dict
from django.urls import reverse

from scenarios.models import Run
from scenarios.selectors import design_floor_plan_json
from scenarios.services import run_execute
from scenarios.storage import run_array
from topology import services
from topology.models import Design, Gpu, GpuType, Hall, Link, Node, PowerFeed, Rack, Switch


@pytest.fixture
def admin_client(client, django_user_model, user):
    root = django_user_model.objects.create_superuser("root", password="pw-root-1234")
    client.force_login(root)
    return client


def _version(design) -> int:
    return Design.objects.get(pk=design.pk).version


def _admin_post(client, obj, **changes):
    """Submit the object's admin change form with ``changes`` (every other field as it is)."""
    data = {}
    for name, value in model_to_dict(obj).items():
        if isinstance(value, dict) or (isinstance(value, list) and not hasattr(obj, f"{name}_id")):
            field = obj._meta.get_field(name)
            if field.many_to_many:
                data[name] = [getattr(v, "pk", v) for v in value]
            else:
                data[name] = json.dumps(value)
        elif value is not None:
            data[name] = value
    data.update(changes)
    opts = obj._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    return response


def _part(design, model):
    filters = {
        Hall: {"design": design},
        Rack: {"hall__design": design},
        Node: {"rack__hall__design": design},
        Gpu: {"node__rack__hall__design": design},
        Switch: {"design": design},
        Link: {"design": design},
        PowerFeed: {"design": design},
    }
    return model.objects.filter(**filters[model]).order_by("pk").first()


@pytest.mark.parametrize(
    ("model", "changes"),
    [
        (Hall, {"name": "Hall A"}),
        (Rack, {"power_budget_kw": 14.3}),
        (Node, {"name": "renamed-node"}),
        (Gpu, {"index": 7}),
        (Switch, {"group": 3}),
        (Link, {"gbps": 200.0}),
        (PowerFeed, {"panel": "P-9"}),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_an_admin_edit_of_any_part_bumps_the_design_version_once(admin_client, design, model, changes):
    part = _part(design, model)
    if model is Gpu:  # free index 7 of the first GPU's node, then renumber that GPU to 7
        Gpu.objects.filter(node=part.node, index=7).delete()
    before = _version(design)
    _admin_post(admin_client, part, **changes)
    assert _version(design) == before + 1


def test_an_admin_edit_of_the_design_and_a_delete_bump_the_version(admin_client, design):
    before = _version(design)
    _admin_post(admin_client, design, name="Renamed", team=design.team.pk)
    node = _part(design, Node)
    admin_client.post(reverse("admin:topology_node_delete", args=[node.pk]), {"post": "yes"})
    assert not Node.objects.filter(pk=node.pk).exists()
    assert _version(design) == before + 2


def test_halving_a_rack_budget_in_the_admin_reaches_the_floor_plan(admin_client, design, client, user):
    rack = _part(design, Rack)
    plan = design_floor_plan_json(design=Design.objects.get(pk=design.pk))
    index = [r["id"] for r in plan["racks"]].index(rack.pk)
    before_value = plan["values"]["rack_power"][index]
    before_budget = plan["power"]["budget_kw"][index]
    _admin_post(admin_client, rack, power_budget_kw=rack.power_budget_kw / 2)
    after = design_floor_plan_json(design=Design.objects.get(pk=design.pk))
    assert after["power"]["budget_kw"][index] == pytest.approx(before_budget / 2, abs=0.01)
    assert after["values"]["rack_power"][index] == pytest.approx(2 * before_value, abs=0.002)
    # the browser's conditional GET sees a new ETag
    client.force_login(user)
    url = reverse("scenarios:design-floor-plan", args=[design.pk])
    etag = client.get(url)["ETag"]
    services_rack = Rack.objects.get(pk=rack.pk)
    services_rack.power_budget_kw = 20.0
    services.design_part_save(part=services_rack, user=user)
    assert client.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 200


def test_a_link_edited_in_the_admin_reaches_the_next_run(admin_client, scenario):
    design = scenario.design
    first = Run.objects.create(scenario=scenario, kind="step")
    run_execute(run_id=first.pk)
    before = run_array(run=first, name="link_utilization")
    # the busiest server-leaf link at half speed carries the same bytes: twice the utilization
    links = list(Link.objects.filter(design=design).order_by("pk"))
    busiest = int(before.argmax())
    link = links[busiest]
    _admin_post(admin_client, link, gbps=link.gbps / 2)
    second = Run.objects.create(scenario=scenario, kind="step")
    run_execute(run_id=second.pk)
    after = run_array(run=second, name="link_utilization")
    assert after[busiest] == pytest.approx(2 * before[busiest], rel=0.05)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.design_version, second.design_version) == (1, 2)


def test_services_bump_the_version_and_refuse_outsiders(design, user, outsider):
    from teams.permissions import NotFound

    rack = _part(design, Rack)
    rack.power_budget_kw = 30.0
    services.design_part_save(part=rack, user=user)
    assert _version(design) == 2
    services.design_part_delete(part=_part(design, Node), user=user)
    assert _version(design) == 3
    with pytest.raises(NotFound):
        services.design_part_save(part=rack, user=outsider)
    assert _version(design) == 3


@pytest.mark.django_db(transaction=True)
def test_design_changed_must_run_inside_the_changing_transaction(design):
    with pytest.raises(RuntimeError, match="inside the transaction"):
        services.design_changed(design)
    with transaction.atomic():
        services.design_changed(design)
    assert _version(design) == 2


def test_a_catalog_edit_reaches_every_design_using_it(admin_client, design):
    h100 = GpuType.objects.get(slug="h100-sxm")
    a100 = GpuType.objects.get(slug="a100-sxm-80gb")
    plan = design_floor_plan_json(design=Design.objects.get(pk=design.pk))
    compute = next(i for i, r in enumerate(plan["racks"]) if r["kind"] == 0)
    _admin_post(admin_client, a100, tdp_w=401.0)  # not used by the design
    assert _version(design) == 1
    _admin_post(admin_client, h100, tdp_w=h100.tdp_w + 100)
    assert _version(design) == 2
    after = design_floor_plan_json(design=Design.objects.get(pk=design.pk))
    assert after["power"]["nameplate_kw"][compute] > plan["power"]["nameplate_kw"][compute]


def test_the_run_page_says_when_the_design_changed_since(client, user, scenario):
    run = Run.objects.create(scenario=scenario, kind="step")
    run_execute(run_id=run.pk)
    client.force_login(user)
    assert 'data-changed="design"' not in client.get(run.get_absolute_url()).content.decode()
    rack = _part(scenario.design, Rack)
    services.design_part_save(part=rack, user=user)
    html = client.get(run.get_absolute_url()).content.decode()
    assert 'data-changed="design"' in html and "design: version 1 → 2" in html
