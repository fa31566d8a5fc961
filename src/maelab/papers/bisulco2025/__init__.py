"""Bisulco et al. (ICCV 2025), From Linearity to Non-Linearity: analyses, notebook settings and claim rows."""

from ...registry import Paper

#: how this paper declares itself to the book (maelab.papers.registry): key, citation, title, place in the book
PAPER = Paper(
    key="bisulco2025",
    citation="Bisulco et al. (ICCV 2025)",
    title="From Linearity to Non-Linearity (supplement)",
    order=1,
)
