"""Kong et al. (CVPR 2023), Understanding MAE via Hierarchical Latent Variable Models.

Analyses, notebook settings and claim rows of this paper.
"""

from ...registry import Paper

#: how this paper declares itself to the book (maelab.papers.registry): key, citation, title, place in the book
PAPER = Paper(
    key="kong2023",
    citation="Kong et al. (CVPR 2023)",
    title="Understanding MAE via Hierarchical Latent Variable Models",
    order=4,
)
