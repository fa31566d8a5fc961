"""One subpackage per paper: its analyses, its notebooks' typed settings and its claim rows.

The general library (``maelab.data``, ``models``, ``train``, ``evaluate``, ``metrics``, ``masking``, ``store``,
``claims``, ``profiles``, ``book``) never imports from here; a paper package may import the general library.
"""
