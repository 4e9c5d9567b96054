"""Plain JSON out of numpy-laden values: the one cleaner every layer uses before it stores or
sends a result (the cores' summaries, design summaries and parameters, run summaries, stream
messages, API bodies)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def json_safe(value: Any) -> Any:
    """Numpy scalars and arrays to Python numbers and lists, tuples to lists, mapping keys to
    strings, and non-finite floats (NaN, inf) to None: strict JSON has no Infinity."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        value = value.tolist()  # one C pass to Python scalars (or nested lists)
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
