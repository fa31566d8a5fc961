"""``python -m maelab.book``: the book's command line (:mod:`maelab.book.cli`) with the paper registry installed.

This module is an entry point, the top of the program, not part of the core library: it is the one place in
``maelab/book/`` that imports :mod:`maelab.papers`, to gather every paper's claim rows, settings and plans once and
hand them down (``papers.install()``, see :mod:`maelab.registry`). Nothing imports it; ``tests/test_layout.py``
allows a paper import in ``__main__`` modules only.
"""

import sys

from maelab import papers
from maelab.book.cli import main

if __name__ == "__main__":
    papers.install()
    sys.exit(main())
