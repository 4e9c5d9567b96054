"""The pages' scripts (static/js) as source: they take every URL from the page (data attributes
the templates render with ``{% url %}`` and ``{% live_url %}``), the failures and power kinds
share one replay slider, and only the floor plan announces a metric it registers."""

from __future__ import annotations

import re
from pathlib import Path

from django.urls import URLPattern, URLResolver, get_resolver

from twin.routing import websocket_urlpatterns

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "static" / "js"


def _scripts() -> dict[str, str]:
    return {p.relative_to(SCRIPTS).as_posix(): p.read_text(encoding="utf-8") for p in SCRIPTS.rglob("*.js")}


def _first_segments(patterns) -> set[str]:
    """The first literal segment of every route ("runs", "ws", "designs", ...), through includes."""
    out = set()
    for pattern in patterns:
        route = str(pattern.pattern).lstrip("^/")
        segment = re.match(r"[\w-]*", route).group(0)
        if segment:
            out.add(segment)
        elif isinstance(pattern, URLResolver):
            out |= _first_segments(pattern.url_patterns)
        else:
            assert isinstance(pattern, URLPattern)
    return out


def test_no_script_spells_a_url_of_the_site():
    """A path such as ``/runs/${id}/kind-data/`` or ``/ws/runs/${id}/`` in a script is a second copy
    of the URLconf; the page renders each URL into a data attribute instead."""
    segments = _first_segments(get_resolver().url_patterns) | _first_segments(websocket_urlpatterns)
    assert {"runs", "ws", "designs", "scenarios", "compare", "api"} <= segments
    alternatives = "|".join(sorted(segments))
    literal = re.compile(rf"""["'`]/({alternatives})\b""")
    found = [
        f"{name}:{number}: {line.strip()}"
        for name, text in _scripts().items()
        for number, line in enumerate(text.splitlines(), 1)
        if literal.search(line)
    ]
    assert not found, "\n".join(found)


def test_the_failures_and_power_kinds_share_one_replay_slider():
    scripts = _scripts()
    assert "export function bindReplay" in scripts["replay.js"]
    for kind in ("kinds/failures.js", "kinds/power.js"):
        text = scripts[kind]
        assert 'import { bindReplay } from "../replay.js";' in text and "bindReplay(panel, floor" in text
        # The slider, its play loop and its button are the replay module's, not the kind's.
        assert "setInterval" not in text and "[data-play]" not in text and "[data-replay]" not in text, kind


def test_only_the_floor_plan_announces_a_registered_metric():
    """``FloorPlan.register`` dispatches "fp:registry" itself: no caller pokes the select after it."""
    for name, text in _scripts().items():
        if name != "floorplan.js":
            assert 'CustomEvent("fp:registry"' not in text, name
    register = re.search(r"\n  register\(name, spec\) \{\n(.*?)\n  \}\n", _scripts()["floorplan.js"], re.S)
    assert register and 'dispatchEvent(new CustomEvent("fp:registry"' in register.group(1)
