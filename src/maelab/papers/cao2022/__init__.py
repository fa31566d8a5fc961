"""Cao, Xu & Clifton (ICLR 2022), How to Understand Masked Autoencoders: analyses, notebook settings and claim rows."""
