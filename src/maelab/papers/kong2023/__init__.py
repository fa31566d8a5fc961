"""Kong et al. (ICLR 2024), Understanding MAE via Hierarchical Latent Variable Models.

Analyses, notebook settings and claim rows of this paper.
"""
