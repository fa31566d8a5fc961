"""Zhang, Wang & Wang (NeurIPS 2022), How Mask Matters (U-MAE): analyses, notebook settings and claim rows."""

from ...registry import Paper

#: how this paper declares itself to the book (maelab.papers.registry): key, citation, title, place in the book
PAPER = Paper(
    key="zhang2022",
    citation="Zhang, Wang & Wang (NeurIPS 2022)",
    title="How Mask Matters (U-MAE)",
    order=2,
)
