"""What a run kind's module on the run page fetches beyond the common parts: the kind's page data
(``RunKind.page_context``) and stored result arrays as raw bytes."""

from __future__ import annotations

import json

import numpy as np
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse

from scenarios.kinds import registry
from scenarios.storage import run_array
from scenarios.views.doors import pk_or_404, run_or_404
from utilities.jsonsafe import json_safe

#: Largest array the binary endpoint serves (float32 values) and the frames a 2-D series is
#: averaged down to by default (a replay slider needs no more).
MAX_ARRAY_VALUES = 8_000_000
DEFAULT_FRAMES = 120


@login_required
def run_kind_data(request, pk: int):
    """What the run's kind module on the page draws beyond the common parts (``page_context``)."""
    run = run_or_404(request.user, pk)
    kind = registry().get(run.kind)
    if kind is None or run.status != "succeeded":
        return JsonResponse({})
    return JsonResponse(json_safe(kind.page_context(run)))


@login_required
def run_array_bytes(request, pk: int, name: str):
    """One stored result array as little-endian float32 bytes (shape in ``X-Shape``): long
    series travel over HTTP, not through the socket. A 2-D array is averaged along its second
    axis to ``?frames=`` (default 120) columns."""
    run = run_or_404(request.user, pk)
    values = run_array(run=run, name=name)
    if values is None or values.dtype.kind not in "fiub":
        raise Http404("array not found")
    values = values.astype(np.float32)
    if values.ndim == 2:
        frames = pk_or_404(request.GET.get("frames") or DEFAULT_FRAMES)
        values = _frames(values, max(1, min(frames, values.shape[1])))
    if values.size > MAX_ARRAY_VALUES:
        return JsonResponse(
            {"errors": {"name": [f"name: {name} has {values.size:,} values, over the limit"]}}, status=413
        )
    response = HttpResponse(
        np.ascontiguousarray(values, dtype="<f4").tobytes(), content_type="application/octet-stream"
    )
    response["X-Shape"] = json.dumps(list(values.shape))
    return response


def _frames(values: np.ndarray, frames: int) -> np.ndarray:
    """Average the columns of a (rows, columns) array into ``frames`` contiguous groups."""
    edges = np.linspace(0, values.shape[1], frames + 1).round().astype(int)
    sums = np.add.reduceat(values, edges[:-1], axis=1)
    return sums / np.maximum(np.diff(edges), 1)
