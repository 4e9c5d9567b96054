"""The hardware catalog: the pure loader, the database import/export round trip, clear errors."""

from __future__ import annotations

import copy
from dataclasses import fields

import numpy as np
import pytest
import yaml
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from topology.fabric.specs import (
    DEFAULT_CATALOG_PATH,
    CatalogError,
    catalog_from_dict,
    load_catalog,
)
from topology.models import GpuType, ServerType
from topology.selectors import catalog_load
from topology.services import catalog_export, catalog_import

STABLE_SLUGS = {
    "gpus": {"a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200", "gb200", "mi300x"},
    "servers": {"dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72", "mi300x-platform"},
    "switches": {"quantum-qm8700", "quantum-2-qm9700", "spectrum-4-sn5600", "nvlink-switch"},
}


def seed_document():
    with open(DEFAULT_CATALOG_PATH, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_seed_catalog_has_the_stable_slugs(catalog):
    for kind, slugs in STABLE_SLUGS.items():
        assert slugs <= set(getattr(catalog, kind))


def test_seed_catalog_cites_a_source_for_every_number(catalog):
    for kind in ("gpus", "servers", "switches", "links", "feeds"):
        for spec in getattr(catalog, kind).values():
            numbers = [f.name for f in fields(spec) if f.type in ("float", "int")]
            uncited = [name for name in numbers if not spec.sources.get(name)]
            assert not uncited, f"{kind}[{spec.slug}] has no source for {uncited}"


def test_seed_catalog_figures_match_datasheets(catalog):
    assert catalog.gpu("h100-sxm").peak_tflops("bf16") == 989.0
    assert catalog.gpu("a100-sxm-80gb").peak_tflops("fp16") == 312.0
    assert catalog.server("dgx-a100").nic_gbps == 200.0
    assert catalog.server("dgx-h100").nic_gbps == 400.0
    assert catalog.server("gb200-nvl72").scaleup_domain_gpus == 72
    assert catalog.switch("quantum-qm8700").radix == 40
    assert catalog.server_power_w("dgx-h100") == pytest.approx(10_200)


def test_server_nameplate_is_one_formula_for_specs_plans_and_rows(catalog_db, catalog):
    """A server's nameplate (base + every GPU at TDP) is the same figure from the catalog, a plan
    of that server and its database row (``topology.fabric.specs.server_nameplate_w``)."""
    from topology.fabric.generators import generate
    from topology.models import ServerType

    for row in ServerType.objects.select_related("gpu_type"):
        expected = row.base_power_w + row.gpus_per_server * row.gpu_type.tdp_w
        assert row.power_w == catalog.server_power_w(row.slug) == pytest.approx(expected), row.slug
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=4)
    switches_w = np.bincount(plan.switch_rack, weights=plan.switch_power_w, minlength=plan.n_racks)
    servers_w = plan.rack_nameplate_w() - switches_w
    per_rack = np.bincount(plan.node_rack, minlength=plan.n_racks)
    np.testing.assert_allclose(servers_w, per_rack * catalog.server_power_w("dgx-h100"))


def test_catalog_rows_mirror_the_specs_field_for_field():
    """One kind -> model table (``topology.models.CATALOG_MODELS``, the admin's inverse derived
    from it), and each model holds its spec's fields by name (a server's GPU as ``gpu_type``),
    which is what lets the loader read the rows by the spec's fields."""
    from dataclasses import fields

    from topology.admin import CATALOG_KIND
    from topology.fabric.specs import SPEC_TYPES
    from topology.models import CATALOG_MODELS

    assert list(CATALOG_MODELS) == list(SPEC_TYPES)
    assert {model: kind for kind, model in CATALOG_MODELS.items()} == CATALOG_KIND
    for kind, model in CATALOG_MODELS.items():
        columns = {f.name for f in model._meta.get_fields() if f.concrete and not f.primary_key}
        spec = {"gpu_type" if f.name == "gpu" else f.name for f in fields(SPEC_TYPES[kind])}
        assert columns == spec, kind


def test_feed_capacity_uses_three_phase_power_and_derating(catalog):
    feed = catalog.feed("415v-63a-3ph")
    assert feed.capacity_kw == pytest.approx(415 * 63 * 3**0.5 * 0.95 * 0.8 / 1000)


def test_seed_catalog_failure_rates_reproduce_llama3_table5(catalog):
    """Dubey et al. 2024, Table 5: 54 days on 16,384 H100 (2,048 DGX H100 servers)."""
    years = 54 / 365
    gpu = catalog.gpu("h100-sxm")
    assert gpu.hbm_annual_failure_rate * 16_384 * years == pytest.approx(72, rel=0.005)
    # the GPU rate excludes HBM: the two add up to the 268 GPU-attributed interruptions
    both = gpu.annual_failure_rate + gpu.hbm_annual_failure_rate
    assert both * 16_384 * years == pytest.approx(268, rel=0.005)
    server = catalog.server("dgx-h100")
    per_server = (
        server.annual_failure_rate
        + server.nic_annual_failure_rate * server.nics_per_server
        + server.psu_annual_failure_rate
    )
    assert per_server * 2048 * years == pytest.approx(21, rel=0.01)  # host-attributed rows
    assert all(feed.annual_failure_rate > 0 for feed in catalog.feeds.values())


def test_catalog_unknown_slug_names_the_slug_and_the_known_ones(catalog):
    with pytest.raises(CatalogError, match=r"server: unknown slug 'dgx-z9'.*dgx-a100"):
        catalog.server("dgx-z9")


def test_catalog_precision_without_tensor_cores_is_an_error(catalog):
    with pytest.raises(CatalogError, match="precision: a100-sxm-80gb has no fp8"):
        catalog.gpu("a100-sxm-80gb").peak_tflops("fp8")


def test_catalog_loader_rejects_a_missing_field():
    doc = seed_document()
    del doc["gpus"][0]["tdp_w"]
    with pytest.raises(CatalogError, match=r"gpus\[a100-sxm-80gb\]\.tdp_w: required"):
        catalog_from_dict(doc)


def test_catalog_import_export_round_trip(catalog_db, tmp_path):
    exported = catalog_export()
    assert catalog_from_dict(exported) == load_catalog()
    path = tmp_path / "catalog.yaml"
    call_command("catalog", "export", str(path))
    GpuType.objects.filter(slug="h100-sxm").update(tdp_w=1.0)
    call_command("catalog", "import", str(path), "--update")
    assert GpuType.objects.get(slug="h100-sxm").tdp_w == 700.0
    assert catalog_load() == load_catalog()


def test_catalog_reseed_keeps_a_curators_edit_and_update_overwrites_it(catalog_db):
    """`make run` imports the seed catalog on every start: an edit made in the admin survives it."""
    GpuType.objects.filter(slug="h100-sxm").update(tdp_w=701.0)
    call_command("catalog", "import")
    assert GpuType.objects.get(slug="h100-sxm").tdp_w == 701.0
    call_command("catalog", "import", "--update")
    assert GpuType.objects.get(slug="h100-sxm").tdp_w == 700.0


def test_catalog_import_bad_value_names_the_field_and_saves_nothing(catalog_db):
    doc = copy.deepcopy(seed_document())
    doc["gpus"][1]["tdp_w"] = 50.0  # below the idle draw
    doc["servers"][0]["name"] = "renamed"
    with pytest.raises(ValidationError, match=r"gpus\[h100-sxm\]: idle_w: must be below the TDP"):
        catalog_import(data=doc, update=True)
    assert GpuType.objects.get(slug="h100-sxm").tdp_w == 700.0
    assert ServerType.objects.get(slug="dgx-a100").name != "renamed"
    with pytest.raises(ValidationError, match=r"gpus\[h100-sxm\]: idle_w: must be below the TDP"):
        catalog_import(data=doc)  # a bad file is an error even where it would not overwrite


def test_catalog_import_unknown_gpu_of_a_server_is_named(catalog_db):
    doc = {"servers": [{**seed_document()["servers"][0], "slug": "x-1", "gpu": "nope"}]}
    with pytest.raises(ValidationError, match=r"servers\[x-1\]\.gpu: unknown GPU slug 'nope'"):
        catalog_import(data=doc)


def test_catalog_command_reports_an_unreadable_file(db):
    with pytest.raises(CommandError, match=r"file: cannot read /nonexistent\.yaml"):
        call_command("catalog", "import", "/nonexistent.yaml")
