"""Cao, Xu & Clifton (arXiv 2202.03670, 2022), How to Understand Masked Autoencoders.

Analyses, notebook settings and claim rows of this paper.
"""
