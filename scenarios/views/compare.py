"""The comparison page: several runs side by side against a baseline, their figures, settings and
each kind's comparison charts."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from scenarios.models import Run
from scenarios.selectors import compare_charts, compare_rows
from scenarios.views.doors import pk_or_404
from teams.current import of_current_team
from teams.permissions import restrict

MAX_COMPARED = 6


def _compare_ids(request) -> list[int]:
    ids = []
    for part in request.GET.getlist("runs"):
        ids += [pk_or_404(p) for p in part.split(",") if p.strip()]
    return list(dict.fromkeys(ids))[:MAX_COMPARED]


@login_required
def compare(request):
    """Side-by-side comparison of ``?runs=1,2,3`` against ``?baseline=<id>`` (default the first).

    With fewer than two runs the page offers finished runs to pick, the given ones ticked (the run
    page's "compare…" link passes its run as the baseline, which the pick keeps). The settings
    rows come from each run's stored inputs (``selectors.run_settings``)."""
    ids = _compare_ids(request)
    visible = restrict(Run.objects, request.user).select_related("scenario", "scenario__design")
    found = {r.pk: r for r in visible.filter(pk__in=ids)}
    runs = [found[i] for i in ids if i in found]
    if len(ids) != len(runs):
        raise Http404("run not found")
    baseline_id = pk_or_404(request.GET["baseline"]) if request.GET.get("baseline") else None
    baseline = found.get(baseline_id, runs[0] if runs else None)
    came_from = found.get(baseline_id)  # the run page's "compare…" link: its run stays the baseline
    recent = []
    if len(runs) < 2:
        finished = of_current_team(request, visible, "scenario__design__team").filter(status="succeeded")
        recent = runs + [r for r in finished[:30] if r.pk not in found]
    ids_text = ",".join(str(r.pk) for r in runs)
    context = {
        "runs": runs,
        "baseline": baseline,
        "heads": [(r, f"?runs={ids_text}&baseline={r.pk}") for r in runs],
        "rows": compare_rows(runs, baseline) if len(runs) > 1 else [],
        "charts": compare_charts(runs) if len(runs) > 1 else [],
        "recent": recent,
        "ticked": set(found),
        "came_from": came_from,
    }
    return render(request, "scenarios/compare.html", context)
