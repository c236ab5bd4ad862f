# Owner(s): ["module: inductor"]
"""The stride of a C++ kernel's index in a loop variable, without sympy.simplify.

To choose how to vectorize a loop, the C++ backend asks for the stride of each
index in the loop variable (``stride_at_vec_range``): it rewrites the index's
``FloorDiv`` and ``ModularIndexing`` of the variable that are uniform across a
vector's lanes, then takes ``index(var + 1) - index(var)``. Both steps ran
``sympy.simplify``, on the whole index and on the difference. With dynamic
shapes an index's coefficients are symbolic: in torchvision's classification
transform stream, a crop's size is ``RoundToInt(sqrt(area * scale * ratio))``
of hoisted draws and input sizes, and each such call took 50-350 ms, about
1.2 s of the stream's cold first pass (pytorch#133734). Expanding the
difference cancels the variable out of an index linear in it, with the same
answer; the simplifier stays for what it does not cancel.
"""

from unittest import mock

import sympy

import torch._dynamo.test_case
from torch._inductor import sizevars
from torch._inductor.utils import sympy_index_symbol
from torch.utils._sympy.functions import (
    FloatTrueDiv,
    FloorDiv,
    ModularIndexing,
    OpaqueUnaryFn_sqrt,
    RoundToInt,
    ToFloat,
)


def crop_index():
    """The index of a (3, h, w) crop's element (d0, d1, d2), h and w
    RandomResizedCrop's: rounded square roots of the input's area times a
    drawn scale, times or over a drawn ratio."""
    d0, d1, d2 = (sympy_index_symbol(f"d{i}") for i in range(3))
    height, width = (sympy.Symbol(n, integer=True, positive=True) for n in ("s41", "s65"))
    scale, ratio = (sympy.Symbol(n, real=True, positive=True) for n in ("zuf0", "zuf1"))
    area = ToFloat(height * width)
    w = RoundToInt(OpaqueUnaryFn_sqrt(area * scale * ratio))
    h = RoundToInt(OpaqueUnaryFn_sqrt(FloatTrueDiv(area * scale, ratio)))
    return d0 * h * w + d1 * w + d2, (d0, d1, d2), h, w


SIMPLIFY = sympy.simplify


def forget_strides():
    # the helpers are lru_cached on their arguments
    for fn in (
        sizevars.stride_at,
        sizevars.simplify_index_in_vec_range,
        sizevars.stride_at_vec_range,
    ):
        fn.cache_clear()


class NoSimplify:
    """Fail a test that calls sympy.simplify."""

    def setUp(self):
        super().setUp()
        forget_strides()
        patcher = mock.patch.object(
            sympy, "simplify", side_effect=AssertionError("sympy.simplify called")
        )
        self.simplify = patcher.start()
        self.addCleanup(patcher.stop)


class VecRangeStrideTests(NoSimplify, torch._dynamo.test_case.TestCase):
    def test_crop_strides_without_simplify(self):
        index, (d0, d1, d2), h, w = crop_index()
        self.assertEqual(sizevars.stride_at_vec_range(index, d2, 16), 1)
        self.assertEqual(sizevars.stride_at_vec_range(index, d1, 16), w)
        self.assertEqual(sizevars.stride_at_vec_range(index, d0, 16), h * w)
        self.assertEqual(sizevars.stride_at(index, d1), w)
        self.simplify.assert_not_called()

    def test_lane_uniform_floordiv_and_mod_without_simplify(self):
        # 16 lanes of x: x // 32 is the same on all of them, x % 32 is x plus
        # the same offset (the docstring's examples), here with a symbolic
        # coefficient of a dynamic size.
        x = sympy_index_symbol("x2")
        s0 = sympy.Symbol("s0", integer=True, positive=True)
        index = 2 * s0 * FloorDiv(x, 32) + ModularIndexing(x, 1, 32) + s0 * 7
        self.assertEqual(sizevars.stride_at_vec_range(index, x, 16), 1)
        # 64 lanes cross a multiple of 32: no rewrite, and x stays in the
        # expanded difference, which goes to the simplifier, once
        self.simplify.side_effect = SIMPLIFY
        difference = index.subs(x, x + 1) - index
        self.assertEqual(
            sizevars.stride_at_vec_range(index, x, 64), SIMPLIFY(difference)
        )
        self.simplify.assert_called_once()


class VecRangeStrideUsualTests(torch._dynamo.test_case.TestCase):
    def setUp(self):
        super().setUp()
        forget_strides()

    def test_stride_of_nonlinear_index(self):
        # var stays in what expanding leaves: the simplifier's answer, as before
        x = sympy_index_symbol("x0")
        for index in (FloorDiv(x, 3), ModularIndexing(x, 1, 7), x * x):
            difference = index.subs(x, x + 1) - index
            self.assertEqual(sizevars.stride_at(index, x), sympy.simplify(difference))

    def test_no_dependence(self):
        x = sympy_index_symbol("x0")
        s0 = sympy.Symbol("s0", integer=True, positive=True)
        self.assertEqual(sizevars.stride_at(s0 * 4 + 1, x), 0)
        self.assertEqual(sizevars.stride_at_vec_range(s0 * 4 + x - x, x, 16), 0)

    def test_lane_uniform_rewrites(self):
        # the docstring's index: x2 // 256 and x2 % 128 // 128's stride on 16 lanes
        x0, x1, x2 = (sympy_index_symbol(f"x{i}") for i in range(3))
        index = (
            14336 * x0
            + 256 * x1
            + 128 * FloorDiv(x2, 256)
            + ModularIndexing(x2, 1, 128)
            + 7168 * ModularIndexing(x2, 128, 2)
        )
        self.assertEqual(sizevars.stride_at_vec_range(index, x2, 16), 1)
        self.assertEqual(sizevars.stride_at_vec_range(index, x1, 16), 256)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
