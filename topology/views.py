"""Pages of designs: the list and one design with its static floor plan and totals."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render

from topology.models import Design
from topology.selectors import design_floor_plan

TILE_PX = 14


@login_required
def design_list(request):
    designs = Design.objects.visible_to(request.user).select_related("team", "owner")
    cards = [{"design": d, "plan": design_floor_plan(design=d)} for d in designs]
    return render(request, "topology/design_list.html", {"cards": cards, "tile": TILE_PX})


@login_required
def design_detail(request, pk: int):
    design = get_object_or_404(Design.objects.visible_to(request.user), pk=pk)
    return render(
        request,
        "topology/design_detail.html",
        {"design": design, "plan": design_floor_plan(design=design), "tile": TILE_PX * 2},
    )
