"""One-line parameter errors shared by every module.

Every user-facing check raises :class:`ParameterError` (a ``ValueError``) whose message is a single line that
names the parameter, the allowed values and what was given, e.g.
``mask_ratio must be in the open interval (0, 1); got 1.5``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class ParameterError(ValueError):
    """A bad parameter value. The message is one line naming the parameter and what is allowed."""

    def __init__(self, name: str, allowed: str, value: Any):
        self.name, self.allowed, self.value = name, allowed, value
        super().__init__(f"{name} must be {allowed}; got {value!r}")


def one_of(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    allowed = list(allowed)
    if value not in allowed:
        raise ParameterError(name, "one of " + ", ".join(repr(a) for a in allowed), value)
    return value


def in_open_unit(name: str, value: Any) -> float:
    """0 < value < 1 (e.g. a mask ratio)."""
    return in_range(name, value, 0.0, 1.0, low_open=True, high_open=True)


def in_range(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    # an unbounded side is open: +-inf is never accepted (the value must be finite)
    lo_b, hi_b = ("(" if low_open or low is None else "["), (")" if high_open or high is None else "]")
    desc = f"a number in {lo_b}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi_b}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ParameterError(name, desc, value)
    v = float(value)
    if low is not None and (v < low or (low_open and v == low)):
        raise ParameterError(name, desc, value)
    if high is not None and (v > high or (high_open and v == high)):
        raise ParameterError(name, desc, value)
    return v


def positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ParameterError(name, f"an integer >= {minimum}", value)
    return value


def is_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(name, "True or False", value)
    return value


def divides(name: str, value: int, total: int, total_name: str) -> int:
    """``value`` must be a positive integer dividing ``total``."""
    positive_int(name, value)
    if total % value:
        raise ParameterError(name, f"a positive divisor of {total_name}={total}", value)
    return value


def folder_path(name: str, path: Any) -> Path:
    """``path`` as a folder that exists or can be created: a file at ``path`` (or at a folder above it) is a one-line
    :class:`ParameterError` naming ``name``, before anything is computed or written there. Returns the path."""
    p = Path(os.fspath(path)).expanduser()
    for q in (p, *p.parents):
        if q.exists():
            if not q.is_dir():
                where = "it is a file" if q == p else f"{q} is a file"
                raise ParameterError(name, f"a folder, or a path where one can be created ({where})", str(p))
            break
    return p


def finite_images(name: str, images: Any) -> Any:
    """``images`` (a float tensor (N, ...)) when every pixel is finite, else a one-line :class:`ParameterError`
    naming ``name``, how many images hold NaN or inf and the first of them. One sum per image (no full-size mask):
    a NaN or inf pixel makes its image's sum non-finite. Returns ``images``."""
    bad = ~images.flatten(1).sum(1).isfinite()
    if bool(bad.any()):
        raise ParameterError(
            name,
            "finite pixel values (the input data holds NaN or inf: fix the data, not the learning rate)",
            f"{int(bad.sum())} of {images.shape[0]} images with non-finite pixels, the first at index "
            f"{int(bad.nonzero()[0, 0])}",
        )
    return images
