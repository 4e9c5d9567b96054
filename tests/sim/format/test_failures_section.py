"""The failures: section of the scenario format (scenarios/sim/format/failures.py)."""

from __future__ import annotations

import re
import textwrap
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.failures import (
    CHECKPOINT,
    DEFAULT_SPARE_SERVERS,
    FAILURES,
    LEMONS,
    RATES,
    CheckpointPolicy,
    FailureSpec,
    LemonSpec,
    RateOverrides,
    parse_failures,
)
from scenarios.sim.format.fields import Field

# --- parsing --------------------------------------------------------------------------------


def test_parse_failures_reads_the_documented_example():
    text = """
    failures:
      trials: 1000
      window_days: 54
      checkpoint: {interval_min: 30, save_s: 20, async: false}
      detection_s: 60
      restart_min: 10
      spare_servers: 16
      repair_hours: 48
      rates: {server_per_1000_node_days: 6.5}
      lemons: {fraction: 0.0, factor: 10, remove_after: 2}
      seed: 1
    """
    parsed = parse_failures(yaml.safe_load(textwrap.dedent(text))["failures"])
    assert parsed.trials == 1000 and parsed.window_days == 54 and parsed.seed == 1
    assert parsed.checkpoint.interval_min == 30 and parsed.checkpoint.save_s == 20
    assert parsed.rates.server_per_1000_node_days == 6.5
    assert parsed.rates.software_per_day == pytest.approx(63 / 54)
    assert parse_failures({"checkpoint": {"interval_min": "optimal"}}).checkpoint.interval_min is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"trials": 0}, "failures.trials: must be ≥ 1 (got 0)"),
        ({"trials": 100_001}, "failures.trials: must be ≤ 100,000 (got 100,001)"),
        ({"trials": 2.5}, "failures.trials: must be an integer (got 2.5)"),
        ({"spare_servers": 10**6}, "failures.spare_servers: must be ≤ 100,000"),
        ({"rates": {"software_per_day": -1}}, "failures.rates.software_per_day: must be ≥ 0"),
        ({"checkpoint": {"interval_min": 0}}, "failures.checkpoint.interval_min: must be > 0"),
        ({"checkpoint": {"async": "yes"}}, "failures.checkpoint.async: must be true or false"),
        ({"repair_hours": -2}, "failures.repair_hours: must be ≥ 0 (got -2)"),
        ({"window_days": 0}, "failures.window_days: must be > 0 (got 0)"),
        ({"lemons": {"fraction": 0.9}}, "failures.lemons.fraction: must be ≤ 0.5 (got 0.9)"),
        ({"weibull_shape": 0}, "failures.weibull_shape: must be ≥ 0.1 (got 0)"),
        ({"trails": 10}, "failures.trails: unknown field"),
        (
            {"checkpoint": {"interval_min": 1, "save_s": 120, "async": True}},
            "failures.checkpoint.save_s: an asynchronous save must fit in the interval",
        ),
    ],
)
def test_parse_failures_rejects_bad_input_naming_the_field_and_limit(data, message):
    with pytest.raises(ScenarioError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_failures(data)


# --- defaults: declared once ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]
#: Spec attribute of a declared key where the two differ (``async`` is a Python keyword).
ATTRIBUTE = {"async": "async_save"}


def _declared() -> list[tuple[str, Field, Any]]:
    """(dotted path, field, its value in ``parse_failures(None)``) of every declared key."""
    spec = parse_failures(None)
    out = []
    for section in (FAILURES, CHECKPOINT, RATES, LEMONS):
        owner = spec if section is FAILURES else getattr(spec, section.path.split(".")[-1])
        out += [
            (f"{section.path}.{f.key}", f, getattr(owner, ATTRIBUTE.get(f.key, f.key)))
            for f in section.fields
        ]
    return out


def test_failure_defaults_are_the_section_declarations_for_none_and_empty():
    """``parse_failures(None)`` and ``parse_failures({})`` are the same spec, and every value in
    it is its field's declared default; the dataclasses declare no default of their own."""
    assert parse_failures(None) == parse_failures({}) == parse_failures({"checkpoint": None})
    for path, field, value in _declared():
        assert value == field.default and type(value) is type(field.default), path
    for spec_type in (FailureSpec, CheckpointPolicy, RateOverrides, LemonSpec):
        assert all(f.default is MISSING and f.default_factory is MISSING for f in fields(spec_type)), (
            spec_type
        )


def _documented_section(doc: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``failures:`` block of a doc: its values and the comment after each key."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(failures:.*?)```", text, re.S).group(1)
    comments = dict(re.findall(r"^\s*(\w+):[^#\n]*#\s*(.*)$", block, re.M))
    return yaml.safe_load(block)["failures"], comments


def test_failure_defaults_are_the_documented_ones():
    """Both docs show the same section; every key not marked optional shows its default value
    (rates rounded to three decimals), an optional one has no default, and the two keys whose
    default the model derives say what it is (16 spares, the catalog's server hazards)."""
    documented, comments = _documented_section("scenario-format.md")
    assert _documented_section("failure-model.md") == (documented, comments)
    derived = {"failures.spare_servers", "failures.rates.server_per_1000_node_days"}
    for path, field, value in _declared():
        section = documented
        for key in path.split(".")[1:-1]:
            section = section[key]
        comment = comments.get(field.key, "")
        if comment.startswith("optional") or path in derived:
            assert value is None, path
        else:
            assert value == pytest.approx(section[field.key], abs=5e-4), path
    assert (
        parse_failures(None).spares(job_servers=10_000)
        == DEFAULT_SPARE_SERVERS
        == documented["spare_servers"]
    )
    assert "default 16" in comments["spare_servers"]
    assert "catalog" in comments["server_per_1000_node_days"]
