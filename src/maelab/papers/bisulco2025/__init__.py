"""Bisulco et al. (ICCV 2025), From Linearity to Non-Linearity: analyses, notebook settings and claim rows."""
