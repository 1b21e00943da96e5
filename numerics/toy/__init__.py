"""Toy data and exact filters for the claims about what the data allows.

:mod:`~numerics.toy.data` (block-structured sequences: hidden Markov blocks, Gaussian AR(1)
blocks, exponential-family emissions), :mod:`~numerics.toy.bayes` (exact Bayes filters and
predictive densities), :mod:`~numerics.toy.markov` (Markov generators, stationary laws, spectral
gaps), :mod:`~numerics.toy.variational` (the variational slow path) and
:mod:`~numerics.toy.gated_predictor` (the gated linear predictor and its closed-form margin).
"""
