"""Values made fit for strict JSON: what results, estimates and reports write out."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["json_default", "strict"]


def strict(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by ``None`` (in dicts and lists too): strict
    JSON has neither."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strict(v) for v in value]
    return value


def json_default(value: Any) -> Any:
    """``json.dumps``' ``default``: numpy integers and floats as Python numbers (NaN as
    ``None``)."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return None if math.isnan(value) else float(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
