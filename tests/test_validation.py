"""numerics.validation.finite_array: what it refuses, with one line naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

from fastslow.numerics import validation


@pytest.mark.parametrize(
    "value", [np.array([object()], dtype=object), [object(), 1.0], [[1.0], [2.0, 3.0]]]
)
def test_values_that_are_not_real_numbers_are_a_type_error_naming_the_argument(value):
    with pytest.raises(TypeError, match="^x must be an array of real numbers"):
        validation.finite_array("x", value)


def test_real_values_pass_as_float64():
    out = validation.finite_array("x", [[1, 2], [3, 4.5]])
    assert out.dtype == np.float64 and out.tolist() == [[1.0, 2.0], [3.0, 4.5]]
