"""Run arrays <-> compressed bytes."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.storage import StorageError, array_from_bytes, array_to_bytes


def test_storage_roundtrip_keeps_dtype_shape_and_values():
    rng = np.random.default_rng(0)
    for values in (rng.random((7, 3)).astype(np.float32), np.arange(10, dtype=np.int64), np.zeros(0)):
        data, dtype, shape = array_to_bytes(values)
        back = array_from_bytes(data, dtype, shape)
        assert back.dtype == values.dtype and back.shape == values.shape
        np.testing.assert_array_equal(back, values)


def test_storage_compresses_repetitive_arrays():
    data, _, _ = array_to_bytes(np.full(100_000, 0.25, dtype=np.float32))
    assert len(data) < 100_000 * 4 / 50


def test_storage_converts_unknown_dtypes_to_float64():
    _, dtype, _ = array_to_bytes(np.array([1, 2], dtype=np.float16))
    assert dtype == "float64"


def test_storage_rejects_bytes_that_do_not_match_the_shape():
    data, dtype, _ = array_to_bytes(np.arange(4, dtype=np.int32))
    with pytest.raises(StorageError, match="do not hold"):
        array_from_bytes(data, dtype, [5])
    with pytest.raises(StorageError, match="dtype"):
        array_from_bytes(data, "object", [4])
