"""maelab: a small, tested library behind the executable companion book on the theory of masked autoencoders.

Threading: PyTorch's CPU kernels run on GNU OpenMP, whose idle threads spin before sleeping; with another process
on the machine that halved training throughput (issue 15). ``OMP_WAIT_POLICY=PASSIVE`` (idle threads sleep at
once) fixes it, but libgomp reads it only when it is loaded, at ``import torch``. So importing maelab sets it
(unless the variable is already set, or torch is already imported, where it would have no effect) -- import
maelab before torch, or export ``OMP_WAIT_POLICY=PASSIVE``; processes started from here (the book runner's
notebook kernels) inherit it. Measured by ``benchmarks/threading_speed.py``.
"""

import os as _os
import sys as _sys

if "torch" not in _sys.modules:
    _os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ._util import resolve_device, seed_everything
from ._validate import ParameterError

__version__ = "0.1.0"
__all__ = ["ParameterError", "resolve_device", "seed_everything", "__version__"]
