"""Model-layer rules of a design, each with the message a user would see."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from topology.choices import FeedSide, LinkTier, SwitchTier
from topology.models import (
    Design,
    Gpu,
    Hall,
    Link,
    LinkType,
    Node,
    PowerFeed,
    PowerFeedType,
    Rack,
    ServerType,
    Switch,
    SwitchType,
)


@pytest.fixture
def hall(catalog_db, team, user):
    design = Design.objects.create(name="small", team=team, owner=user)
    return Hall.objects.create(design=design, name="Hall 1", rows=4, columns=6)


@pytest.fixture
def rack(hall):
    return Rack.objects.create(hall=hall, name="R1", row=0, column=0, u_height=42, power_budget_kw=40)


def make_leaf(rack, name="leaf1", tier=SwitchTier.LEAF, u=40):
    return Switch.objects.create(
        design=rack.hall.design,
        switch_type=SwitchType.objects.get(slug="quantum-2-qm9700"),
        name=name,
        tier=tier,
        rack=rack,
        u_position=u,
    )


def test_rack_position_is_unique_in_a_hall(rack):
    with pytest.raises(IntegrityError), transaction.atomic():
        Rack.objects.create(hall=rack.hall, name="R2", row=0, column=0, power_budget_kw=10)


def test_rack_outside_the_hall_grid_is_rejected(hall):
    rack = Rack(hall=hall, name="R9", row=4, column=0, power_budget_kw=10)
    with pytest.raises(ValidationError, match=r"outside the hall grid of 4 rows × 6 columns"):
        rack.full_clean()


def test_node_must_fit_its_rack_units(rack):
    node = Node(rack=rack, server_type=ServerType.objects.get(slug="dgx-h100"), name="n1", u_position=38)
    with pytest.raises(ValidationError, match=r"U38–U45 does not fit the 42U rack R1"):
        node.full_clean()


def test_nodes_may_not_overlap(rack):
    dgx = ServerType.objects.get(slug="dgx-h100")
    Node.objects.create(rack=rack, server_type=dgx, name="n1", u_position=1)
    clash = Node(rack=rack, server_type=dgx, name="n2", u_position=5)
    with pytest.raises(ValidationError, match=r"overlaps n1 at U1–U8"):
        clash.full_clean()
    Node(rack=rack, server_type=dgx, name="n3", u_position=9).full_clean()


def test_gpu_index_within_its_server(rack):
    node = Node.objects.create(
        rack=rack, server_type=ServerType.objects.get(slug="gb200-nvl72"), name="tray", u_position=1
    )
    with pytest.raises(ValidationError, match="must be below 4"):
        Gpu(node=node, index=4).full_clean()


def test_rack_feeds_must_carry_its_budget_on_each_side(rack):
    small = PowerFeedType.objects.get(slug="415v-32a-3ph")  # 17.5 kW derated
    feed_a = PowerFeed.objects.create(
        design=rack.hall.design, feed_type=small, name="A1", side=FeedSide.A, panel="P1"
    )
    feed_a.racks.add(rack)
    with pytest.raises(
        ValidationError, match=r"40 kW exceeds the side A feeds' derated capacity \(17.5 kW\)"
    ):
        rack.full_clean()
    big = PowerFeedType.objects.get(slug="415v-63a-3ph")
    PowerFeed.objects.create(
        design=rack.hall.design, feed_type=big, name="A2", side=FeedSide.A, panel="P1"
    ).racks.add(rack)
    # Side A now carries the budget, but a side without feeds carries 0 kW: still not 2N
    # (the rule design_validate applies too, in the same words).
    with pytest.raises(ValidationError, match=r"40 kW exceeds the side B feeds' derated capacity \(0.0 kW\)"):
        rack.full_clean()
    for name, kind in (("B1", big), ("B2", small)):
        PowerFeed.objects.create(
            design=rack.hall.design, feed_type=kind, name=name, side=FeedSide.B, panel="P2"
        ).racks.add(rack)
    rack.full_clean()


def test_link_from_a_nic_must_reach_a_leaf_no_faster_than_the_nic(rack):
    dgx = ServerType.objects.get(slug="dgx-a100")  # 200 Gb/s NICs
    node = Node.objects.create(rack=rack, server_type=dgx, name="n1", u_position=1)
    spine = make_leaf(rack, name="spine1", tier=SwitchTier.SPINE)
    link = Link(
        design=rack.hall.design,
        link_type=LinkType.objects.get(slug="ndr-400g"),
        tier=LinkTier.SERVER_LEAF,
        gbps=400,
        node=node,
        nic_index=8,
        upper_switch=spine,
    )
    with pytest.raises(ValidationError) as err:
        link.full_clean()
    messages = err.value.message_dict
    assert messages["upper_switch"] == ["a NIC port connects to a leaf switch"]
    assert messages["nic_index"] == ["must be below 8 for NVIDIA DGX A100 (80GB)"]
    assert "exceeds the NIC speed (200 Gb/s)" in messages["gbps"][0]


def test_switch_links_climb_one_tier(rack):
    leaf = make_leaf(rack, name="leaf1", u=40)
    core = make_leaf(rack, name="core1", tier=SwitchTier.CORE, u=41)
    link = Link(
        design=rack.hall.design,
        link_type=LinkType.objects.get(slug="ndr-400g"),
        tier=LinkTier.LEAF_SPINE,
        gbps=400,
        lower_switch=leaf,
        upper_switch=core,
    )
    with pytest.raises(ValidationError, match="a leaf switch connects up to the next tier, not to core"):
        link.full_clean()


def test_link_has_exactly_one_lower_end(rack):
    leaf = make_leaf(rack)
    with pytest.raises(IntegrityError), transaction.atomic():
        Link.objects.create(
            design=rack.hall.design,
            link_type=LinkType.objects.get(slug="ndr-400g"),
            tier=LinkTier.LEAF_SPINE,
            gbps=400,
            upper_switch=leaf,
        )


def test_switch_tier_must_be_a_role_of_its_type(rack):
    nvswitch = SwitchType.objects.get(slug="nvlink-switch")
    switch = Switch(
        design=rack.hall.design,
        switch_type=nvswitch,
        name="x",
        tier=SwitchTier.SPINE,
        rack=rack,
        u_position=1,
    )
    with pytest.raises(ValidationError, match=r"cannot serve as spine \(roles: scaleup\)"):
        switch.full_clean()
