"""Hypothesis strategies for toy systems (re-exported from :mod:`verify.strategies`, which says
what each draws); needs Hypothesis (``pip install 'fastslow[test]'``)."""

from fastslow.verify.strategies import (
    block_local_masks,
    depth_flows,
    generator_families,
    linear_loops,
)

__all__ = ["block_local_masks", "depth_flows", "generator_families", "linear_loops"]
