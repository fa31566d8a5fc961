"""Cao, Xu & Clifton (arXiv 2202.03670, 2022), How to Understand Masked Autoencoders.

Analyses, notebook settings and claim rows of this paper.
"""

from ...registry import Paper

#: how this paper declares itself to the book (maelab.papers.registry): key, citation, title, place in the book
PAPER = Paper(
    key="cao2022",
    citation="Cao, Xu & Clifton (arXiv 2202.03670, 2022)",
    title="How to Understand Masked Autoencoders",
    order=3,
)
