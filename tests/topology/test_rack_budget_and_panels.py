"""A rack budget below its nameplate is a warning (a deliberate cap), 0 kW is refused; a feed's
panel is one of the design's panels (a typo never starts one); and the 2N feed rule has one
wording wherever it is checked."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from topology import services
from topology.choices import FeedSide, RackKind
from topology.forms import NEW_PANEL
from topology.models import PowerFeed, Rack
from topology.selectors import design_rack_power


@pytest.fixture
def logged_in(client, user):
    client.force_login(user)
    return client


def _server_rack(design) -> Rack:
    return Rack.objects.filter(hall__design=design, kind=RackKind.COMPUTE, nodes__isnull=False).first()


def test_a_budget_below_nameplate_saves_with_a_warning(logged_in, design):
    rack = _server_rack(design)
    power = design_rack_power(design)
    nameplate_kw = float(power.nameplate_kw[int(power.index([rack.pk])[0])])
    assert nameplate_kw > 10
    url = reverse("topology:rack-edit", args=[design.pk, rack.pk])
    response = logged_in.post(url, {"name": rack.name, "power_budget_kw": "10", "version": design.version})
    assert response.status_code == 302
    rack.refresh_from_db()
    assert rack.power_budget_kw == 10.0  # the save succeeded
    page = logged_in.get(response["Location"]).content.decode()
    assert f"budget 10 kW is below the nameplate {nameplate_kw:.1f} kW of the servers" in page
    assert 'class="warning"' in page
    # The rack's own page keeps saying so while the budget stays below.
    assert "data-budget-warning" in logged_in.get(url).content.decode()


def test_a_budget_at_or_above_nameplate_has_no_warning(logged_in, design):
    rack = _server_rack(design)
    url = reverse("topology:rack-edit", args=[design.pk, rack.pk])
    response = logged_in.post(
        url, {"name": rack.name, "power_budget_kw": f"{rack.power_budget_kw:g}", "version": design.version}
    )
    assert response.status_code == 302
    assert "below the nameplate" not in logged_in.get(response["Location"]).content.decode()


@pytest.mark.parametrize("bad", ["0", "-3"])
def test_a_zero_budget_is_refused_naming_the_field(logged_in, design, user, bad):
    rack = _server_rack(design)
    url = reverse("topology:rack-edit", args=[design.pk, rack.pk])
    response = logged_in.post(url, {"name": rack.name, "power_budget_kw": bad, "version": design.version})
    html = response.content.decode()
    assert response.status_code == 400
    assert 'data-field="power_budget_kw"' in html and "must be above 0 kW" in html
    with pytest.raises(ValidationError, match="power_budget_kw: must be above 0 kW"):
        services.rack_update(rack=rack, user=user, expected_version=design.version, power_budget_kw=0.0)


def _panels(design) -> list[str]:
    return sorted(set(PowerFeed.objects.filter(design=design).values_list("panel", flat=True)))


def test_a_feed_panel_is_chosen_from_the_design_panels(logged_in, design, user):
    feed = PowerFeed.objects.filter(design=design).order_by("pk").first()
    panels = _panels(design)
    url = reverse("topology:feed-edit", args=[design.pk, feed.pk])
    html = logged_in.get(url).content.decode()
    assert '<select name="panel"' in html
    assert all(f'<option value="{p}"' in html for p in panels) and NEW_PANEL in html
    opened = {"name": feed.name, "feed_type": feed.feed_type.pk, "version": design.version}
    typo = logged_in.post(url, {**opened, "panel": panels[0] + "x"})
    assert typo.status_code == 400 and _panels(design) == panels  # no panel was made
    # The service refuses an unknown panel too (the API and scripts), naming the field.
    with pytest.raises(ValidationError, match="panel: this design has no panel 'PDU-typo'"):
        services.feed_update(feed=feed, user=user, expected_version=design.version, panel="PDU-typo")
    nameless = logged_in.post(url, {**opened, "panel": NEW_PANEL, "new_panel": ""})
    assert nameless.status_code == 400 and "name the new panel" in nameless.content.decode()
    moved = logged_in.post(url, {**opened, "panel": panels[-1]})
    assert moved.status_code == 302
    feed.refresh_from_db()
    assert feed.panel == panels[-1]


def test_a_new_panel_is_an_explicit_choice(logged_in, design):
    feed = PowerFeed.objects.filter(design=design).order_by("pk").first()
    url = reverse("topology:feed-edit", args=[design.pk, feed.pk])
    opened = {"name": feed.name, "feed_type": feed.feed_type.pk, "version": design.version}
    response = logged_in.post(url, {**opened, "panel": NEW_PANEL, "new_panel": "PDU-new"})
    assert response.status_code == 302
    feed.refresh_from_db()
    assert feed.panel == "PDU-new"


def test_the_2n_rule_is_one_rule_with_one_message(design, user):
    """A rack fed on side A only: the rack form and the design validation both refuse it, in
    the same words (the rack check used to skip a side without feeds)."""
    rack = _server_rack(design)
    for feed in rack.feeds.filter(side=FeedSide.B):
        feed.racks.remove(rack)
    rack = Rack.objects.get(pk=rack.pk)
    with pytest.raises(ValidationError) as refused:
        rack.full_clean()
    [message] = refused.value.message_dict["power_budget_kw"]
    problems = services.design_validate(design=design)
    assert f"rack {rack.name}: {message.removeprefix('power_budget_kw: ')}" in problems
    assert "side B" in message and "2N" in message
