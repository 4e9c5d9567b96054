"""The catalog admin in a real browser at 1440 px: each figure's source beside it, and an
unknown efficiency key refused with the key and the known keys named."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import SHOTS, base_env, embedded_site, manage

pytestmark = pytest.mark.e2e

ROOT_USER, ROOT_PASSWORD = "root", "pw-root-admin-1"


def test_catalog_admin_shows_sources_and_refuses_unknown_efficiency_keys(browser, tmp_path):
    with embedded_site(tmp_path) as site:
        env = base_env(TWIN_VAR_DIR=str(tmp_path / "var"))
        manage(
            env,
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; "
            f"get_user_model().objects.create_superuser({ROOT_USER!r}, password={ROOT_PASSWORD!r})",
        )
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        try:
            page.goto(f"{site.base_url}/admin/login/")
            page.fill("#id_username", ROOT_USER)
            page.fill("#id_password", ROOT_PASSWORD)
            page.click("input[type=submit]")
            page.goto(f"{site.base_url}/admin/topology/gputype/?q=h100-sxm")
            page.click("#result_list a:text('h100-sxm')")
            help_text = page.inner_text(".field-peak_tflops_bf16 .help")
            assert "Source:" in help_text and "989 dense" in help_text
            assert "BF16/FP16 TFLOP/s (dense)" in page.inner_text(".field-figure_sources")
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "admin-gpu-sources.png"), full_page=True)
            efficiency = json.loads(page.input_value("#id_efficiency"))
            page.fill("#id_efficiency", json.dumps({**efficiency, "gemm_maxx": 0.7}))
            page.click("input[name=_save]")
            errors = page.inner_text(".field-efficiency .errorlist")
            assert "efficiency.gemm_maxx: unknown key; the keys are gemm_max" in errors
            page.screenshot(path=str(SHOTS / "admin-gpu-efficiency-refused.png"), full_page=True)
        except Exception as exc:
            raise AssertionError(f"{exc}\n\npage: {page.url}\n{site.logs()}") from exc
        finally:
            context.close()
