"""Large result arrays <-> compact bytes: numpy raw bytes, zlib-compressed (``RunArray.data``).

A 131,072-GPU run has ~10^5 links; as JSON that is megabytes of decimal text, as float32 +
zlib a few hundred kilobytes, and reading it back is one ``frombuffer`` call.
"""

from __future__ import annotations

import zlib

import numpy as np

#: dtypes a run may store (anything else is converted to float64 first).
ALLOWED_DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
ZLIB_LEVEL = 6


class StorageError(ValueError):
    """Bytes that do not decode to the declared dtype and shape."""


def array_to_bytes(values: np.ndarray) -> tuple[bytes, str, list[int]]:
    """Encode an array as (zlib bytes, dtype name, shape).

    Parameters
    ----------
    values : array_like, any shape
        Non-allowed dtypes are stored as float64.

    Returns
    -------
    (bytes, str, list[int])
    """
    array = np.asarray(values)
    if array.dtype.name not in ALLOWED_DTYPES:
        array = array.astype(np.float64)
    array = np.ascontiguousarray(array)
    return zlib.compress(array.tobytes(), ZLIB_LEVEL), array.dtype.name, list(array.shape)


def array_from_bytes(data: bytes | memoryview, dtype: str, shape: list[int] | tuple[int, ...]) -> np.ndarray:
    """Decode bytes written by :func:`array_to_bytes` (a read-only-safe copy)."""
    if dtype not in ALLOWED_DTYPES:
        raise StorageError(f"dtype: must be one of {', '.join(ALLOWED_DTYPES)} (got {dtype!r})")
    raw = zlib.decompress(bytes(data))
    expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if len(raw) != expected:
        raise StorageError(f"data: {len(raw)} bytes do not hold {dtype}{tuple(shape)} ({expected} bytes)")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def array_from_row(row) -> np.ndarray:
    """The numpy array of a ``RunArray`` row."""
    return array_from_bytes(row.data, row.dtype, row.shape)


def run_array(*, run, name: str) -> np.ndarray | None:
    """A stored result array of a run (e.g. ``link_utilization`` (L,), ``rack_link_utilization``
    (R,), ``gpu_slowdown`` (G,), ``rack_slowdown`` (R,)), or None if the run has none of that name."""
    from scenarios.models import RunArray

    row = RunArray.objects.filter(run=run, name=name).first()
    return None if row is None else array_from_row(row)
