"""``python -m maelab.zoo``: see :mod:`maelab.zoo.cli`."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
