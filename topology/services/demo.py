"""The demo data a newcomer sees (``make run``): the demo account, its team and three generated
designs."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from teams.models import Team
from teams.services import DEMO_PASSWORD, DEMO_USERNAME, team_create
from topology.fabric.specs import Catalog
from topology.models import Design
from topology.services.building import design_create_from_plan

DEMO_TEAM = "Demo team"
DEMO_DESIGNS = (
    {
        "name": "Selene-like A100 SuperPOD (384 nodes)",
        "generator": "rail-optimized",
        "server": "dgx-a100",
        "nodes": 384,
    },
    {
        "name": "H100 rail-optimized 2:1 (256 nodes)",
        "generator": "rail-optimized",
        "server": "dgx-h100",
        "nodes": 256,
        "oversubscription": 2.0,
    },
    {"name": "GB200 NVL72 x8", "generator": "nvl72", "server": "gb200-nvl72", "nodes": 144},
)


def demo_seed(*, catalog: Catalog) -> Team:
    """The demo user, team and designs that `make run` shows a newcomer (idempotent)."""
    from topology.fabric.generators import generate

    user_model = get_user_model()
    user = user_model.objects.filter(username=DEMO_USERNAME).first()
    if user is None:
        user = user_model.objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD)
    team = team_create(name=DEMO_TEAM, users=[user])
    for spec in DEMO_DESIGNS:
        if Design.objects.filter(team=team, name=spec["name"]).exists():
            continue
        params = {k: v for k, v in spec.items() if k not in ("name", "generator")}
        plan = generate(spec["generator"], catalog=catalog, **params)
        design_create_from_plan(plan=plan, name=spec["name"], team=team, user=user)
    return team
