"""Kong et al. (CVPR 2023), Understanding MAE via Hierarchical Latent Variable Models.

Analyses, notebook settings and claim rows of this paper.
"""
