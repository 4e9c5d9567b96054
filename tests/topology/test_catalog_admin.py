"""The catalog admin refuses what the models cannot use (an unknown efficiency key, a failure
rate out of range), naming the key or field and the range, and shows each figure's source."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.forms.models import model_to_dict
from django.urls import reverse

from topology.fabric.specs import EFFICIENCY_RANGES
from topology.models import GpuType, LinkType, PowerFeedType, ServerType


@pytest.fixture
def admin_client(client, django_user_model, catalog_db):
    root = django_user_model.objects.create_superuser("root", password="pw-root-1234")
    client.force_login(root)
    return client


def _post(client, obj, **changes):
    data = {}
    for name, value in model_to_dict(obj).items():
        if isinstance(value, dict | list):
            data[name] = json.dumps(value)
        elif value is not None:
            data[name] = value
    data.update(changes)
    url = reverse(f"admin:topology_{obj._meta.model_name}_change", args=[obj.pk])
    return client.post(url, data)


def test_admin_refuses_an_unknown_efficiency_key(admin_client):
    gpu = GpuType.objects.get(slug="h100-sxm")
    efficiency = {**gpu.efficiency, "gemm_maxx": 0.7}
    response = _post(admin_client, gpu, efficiency=json.dumps(efficiency))
    html = response.content.decode()
    assert response.status_code == 200  # the form again, with the error
    assert "efficiency.gemm_maxx: unknown key" in html and "gemm_max, gemm_half_dim" in html
    gpu.refresh_from_db()
    assert "gemm_maxx" not in gpu.efficiency


def test_admin_refuses_an_out_of_range_efficiency(admin_client):
    gpu = GpuType.objects.get(slug="h100-sxm")
    response = _post(admin_client, gpu, efficiency=json.dumps({**gpu.efficiency, "gemm_max": 60.5}))
    assert "efficiency.gemm_max: must be a number from 0.01 to 1 (got 60.5)" in response.content.decode()


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (GpuType, "annual_failure_rate"),
        (GpuType, "hbm_annual_failure_rate"),
        (ServerType, "psu_annual_failure_rate"),
        (LinkType, "annual_failure_rate"),
        (PowerFeedType, "annual_failure_rate"),
    ],
)
def test_admin_refuses_a_failure_rate_out_of_range(admin_client, model, field):
    row = model.objects.order_by("pk").first()
    before = getattr(row, field)
    response = _post(admin_client, row, **{field: "5"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "must be from 0 to 1 failures per unit-year (got 5" in html
    row.refresh_from_db()
    assert getattr(row, field) == before


def test_every_door_of_the_catalog_applies_the_same_ranges(catalog_db):
    """The model rule (not only the admin form): the catalog import and the API call full_clean."""
    gpu = GpuType.objects.get(slug="h100-sxm")
    gpu.annual_failure_rate = -0.1
    gpu.efficiency = {"hbm_fraction": 0}
    with pytest.raises(ValidationError) as refused:
        gpu.full_clean()
    assert "annual_failure_rate" in refused.value.message_dict


def test_efficiency_ranges_cover_exactly_the_step_time_constants():
    from scenarios.sim.step.efficiency import DEFAULT_EFFICIENCY

    assert set(EFFICIENCY_RANGES) == set(DEFAULT_EFFICIENCY)
    for key, value in DEFAULT_EFFICIENCY.items():
        low, high = EFFICIENCY_RANGES[key]
        assert low <= value <= high


def test_the_seed_catalog_passes_the_ranges(catalog_db):
    for model in (GpuType, ServerType, LinkType, PowerFeedType):
        for row in model.objects.all():
            row.full_clean()


def test_admin_change_form_shows_each_figure_source(admin_client):
    gpu = GpuType.objects.get(slug="h100-sxm")
    assert gpu.sources.get("peak_tflops_bf16")
    html = admin_client.get(reverse("admin:topology_gputype_change", args=[gpu.pk])).content.decode()
    # Beside the figure (its help text) and in the read-only panel of every source.
    start = html.index('name="peak_tflops_bf16"')
    beside = html[start : start + 1500]
    assert "Source:" in beside and "BF16 1,979 TFLOPS with sparsity -&gt; 989 dense" in beside
    assert "figure-sources" in html and "BF16/FP16 TFLOP/s (dense)" in html
