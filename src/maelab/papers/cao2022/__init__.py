"""Cao, Xu & Clifton (ICLR 2022), How to Understand Masked Autoencoders.

Analyses, notebook settings and claim rows of this paper.
"""
