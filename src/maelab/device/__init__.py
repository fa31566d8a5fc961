"""GPU results by installments: compute a profile's pending results on a lent GPU machine, bring them back here.

A lent machine (one H100 or H200; Python 3.12, PyTorch 2.11, no Jupyter stack, no package registry) gets the
working tree plus named ignored folders (64 MiB in all) and gives back at most 8 files of 16 MiB from one output
folder, for about 15 minutes of machine time, one command at most 10 minutes. So a notebook's gpu run is cut into
installments that survive being stopped:

1. **Pack, here** (:mod:`maelab.device.pack`): ``python -m maelab.device pack NOTEBOOK...`` fills ``.device/``
   (gitignored) with the notebooks' code cells, the fetched datasets they read (xz-compressed; with ``--trim`` only
   the rows their gpu dry run, traced here first, reads: :mod:`maelab.data.rows`), the wheels the machine lacks
   and a manifest (commit, dirty flag, code fingerprint), and checks tree + folder <= 60 MiB.
2. **Run, there** (:mod:`maelab.device.runner`, :mod:`maelab.device.kernel`): ``python -m maelab.device run
   --profile gpu --budget-min 8 --out $OUT`` computes the notebooks' pending results as plain Python programs until
   the budget; every result is a complete store record, a cut-off one leaves nothing behind; the new records go
   into one archive (:mod:`maelab.device.archive`). ``--calibrate`` first times the gpu profile's training steps
   (:mod:`maelab.device.calibrate`) for the cost model.
3. **Import, here**: ``python -m maelab.store import ARCHIVE`` checks the archive (checksums, provenance, the pack's
   commit in this history) and installs its records into ``data/results``.

:func:`maelab.device.progress.progress` says per notebook what is stored and what is left. The README's
"GPU installments" section gives the exact commands.
"""

from __future__ import annotations

# the submodules pack, calibrate and progress keep their names (their functions are maelab.device.pack.pack, ...)
from ._common import LIMIT_BYTES, PACK_DIR, DeviceError
from .archive import ArchiveError, import_archive, read_manifest
from .runner import run

__all__ = ["LIMIT_BYTES", "PACK_DIR", "ArchiveError", "DeviceError", "import_archive", "read_manifest", "run"]
