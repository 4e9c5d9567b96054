"""The one JSON cleaner (utilities/jsonsafe.py), which replaced three (the fabric's and the step
and power results' own): strict JSON out of numpy-laden values, as the run summaries, design
summaries, stream messages and API bodies need it."""

from __future__ import annotations

import json
import math

import numpy as np

from utilities.jsonsafe import json_safe


def test_non_finite_numbers_become_null_wherever_they_are():
    value = {"a": float("nan"), "b": (np.float32(1.5), np.inf), "c": [[-math.inf, 2.0]]}
    assert json_safe(value) == {"a": None, "b": [1.5, None], "c": [[None, 2.0]]}


def test_numpy_scalars_become_python_numbers_of_the_same_kind():
    out = json_safe([np.int64(3), np.float32(0.5), np.bool_(True), np.float64("nan"), np.str_("x")])
    assert out == [3, 0.5, True, None, "x"]
    assert [type(v) for v in out] == [int, float, bool, type(None), str]


def test_arrays_become_nested_lists_with_non_finite_values_null():
    grid = np.array([[1.0, np.nan], [np.inf, 4.0]], dtype=np.float32)
    assert json_safe({"grid": grid, "ids": np.arange(3)}) == {
        "grid": [[1.0, None], [None, 4.0]],
        "ids": [0, 1, 2],
    }
    assert json_safe(np.float64(2.5) * np.ones(0)) == []


def test_mapping_keys_become_strings_and_the_result_is_strict_json():
    value = {1: np.array([np.nan]), np.int64(2): {"x": (np.float32(1),)}, "s": "text", "n": None}
    out = json_safe(value)
    assert out == {"1": [None], "2": {"x": [1.0]}, "s": "text", "n": None}
    assert json.loads(json.dumps(out, allow_nan=False)) == out
