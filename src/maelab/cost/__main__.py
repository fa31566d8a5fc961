"""``python -m maelab.cost calibrate [--force]``: see :mod:`maelab.cost.cli`."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
