"""Kong et al. (ICLR 2024), Understanding MAE via Hierarchical Latent Variable Models: analyses, notebook settings and claim rows."""
