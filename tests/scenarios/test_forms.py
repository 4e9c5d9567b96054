"""The scenario editor covers every section a saved scenario keeps (a section without inputs
would come back empty from the form and wipe what the file or the API saved)."""

from __future__ import annotations

from scenarios.forms import FORM_SECTIONS
from scenarios.scenario_file import SECTIONS


def test_every_saved_section_has_inputs_on_the_scenario_form():
    edited = {section.path.split(".")[0] for section in FORM_SECTIONS if any(f.web for f in section.fields)}
    assert set(SECTIONS) <= edited, f"sections without inputs: {sorted(set(SECTIONS) - edited)}"
