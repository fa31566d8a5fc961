"""``python -m maelab.train``: see :mod:`maelab.train.cli`."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
