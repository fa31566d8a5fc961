"""What does the mask ratio do? Four theories read on one zoo (the book's synthesis page, ``synthesis``).

Not a paper: the cross-paper claims that the four papers' theories make about the *same* encoders, the shared zoo
of :mod:`maelab.zoo`, decided by the same claims engine. Its measurements beyond the zoo records (the
masked-pixel Jacobians of Bisulco et al. and the attention distance) are in :mod:`maelab.papers.synthesis.geometry`, its
rows in :mod:`maelab.papers.synthesis.claims`, their evidence in :mod:`maelab.papers.synthesis.evidence`, the page's
run of the geometry, its tables and its figure in :mod:`maelab.papers.synthesis.report`.
"""

from ...registry import Paper

#: how the synthesis page declares itself to the book (maelab.papers.registry), as a paper package does. Its order is
#: far after the papers' so that it stays last when a paper is added: its rows read what every paper predicts
PAPER = Paper(
    key="synthesis",
    citation="Four theories, one zoo (this book)",
    title="Cross-paper claims decided on the shared zoo",
    order=100,
)
