"""Zhang, Wang & Wang (NeurIPS 2022), How Mask Matters (U-MAE): analyses, notebook settings and claim rows."""
