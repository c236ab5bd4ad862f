# Owner(s): ["module: dynamo"]
"""The answers a replay guard checks, computed by one function per draw.

Under ``hoist_torch_rng_draws``, a trace answers questions about numbers
computed from hoisted draws from their replayed values (ShapeEnv's
replayed_decisions), and the replay guard checks every answer again on every
call, each with ``replayed_function(expr)``. torchvision's RandomResizedCrop
gives 23 of them, a dozen on the crop size ``round(math.sqrt(area * ratio))``,
so a cache hit took the square root of the same numbers 43 times.

``replayed_functions(exprs)`` computes the answers checked after a draw with one
function, which computes an application that several of them make once, as the
same operations on the same numbers (the same bits), and never one that Python
might skip (an operand of ``and``/``or``, an arm of a conditional).
"""

import math
from unittest import mock

import sympy
from hypothesis import given, strategies as st

import torch
import torch._dynamo.test_case
from torch.utils._sympy.functions import (
    FloatTrueDiv,
    OpaqueUnaryFn_sqrt,
    RoundToInt,
    ToFloat,
)

from tv_hypothesis import profile


def _replayed(name):
    # imported here so that the module imports, and each test fails, without it
    import torch.fx.experimental.symbolic_shapes as symbolic_shapes

    return getattr(symbolic_shapes, name)


S0, S1 = sympy.symbols("s0 s1", integer=True, positive=True)
ZUF0, ZUF1 = sympy.symbols("zuf0 zuf1", real=True, positive=True)
AREA = ToFloat(S0 * S1)
# RandomResizedCrop's crop width and height: round(math.sqrt(area * scale * ratio))
W = RoundToInt(OpaqueUnaryFn_sqrt(ZUF0 * ZUF1 * AREA))
H = RoundToInt(OpaqueUnaryFn_sqrt(FloatTrueDiv(ZUF0 * AREA, ZUF1)))
# questions of the kind its trace asks: the loop's exit, the crop's bounds, resize's checks
CROP_ANSWERS = [
    sympy.And(W > 0, W <= S1, H > 0, H <= S0),
    W > 0,
    H > 0,
    sympy.Eq(W, 0),
    3 * W * H > 0,
    sympy.Eq(W, 224),
    OpaqueUnaryFn_sqrt(ZUF0 * ZUF1 * AREA),  # a float value itself
]


def one_by_one(exprs, values):
    """Each expression's value by replayed_function, the way guards computed them."""
    out = []
    for e in exprs:
        symbols, fn = _replayed("replayed_function")(e)
        out.append(fn(*(values[s] for s in symbols)))
    return tuple(out)


def all_at_once(exprs, values):
    symbols, fn = _replayed("replayed_functions")(exprs)
    return fn(*(values[s] for s in symbols))


def same(a, b):
    """The same types and values, floats bit for bit."""
    return len(a) == len(b) and all(
        type(x) is type(y) and (x.hex() == y.hex() if type(x) is float else x == y)
        for x, y in zip(a, b)
    )


class ReplayedAnswersTests(torch._dynamo.test_case.TestCase):
    def test_shared_square_roots_taken_once(self):
        values = {S0: 375, S1: 500, ZUF0: 0.52, ZUF1: 1.1}
        expected = one_by_one(CROP_ANSWERS, values)
        with mock.patch.object(math, "sqrt", wraps=math.sqrt) as sqrt:
            got = all_at_once(CROP_ANSWERS, values)
        self.assertTrue(same(got, expected), (got, expected))
        # W's and H's square roots, once each, for seven answers that take 11
        self.assertEqual(sqrt.call_count, 2)

    def test_application_python_may_skip_is_not_computed_first(self):
        # Each square root is an operand of `and` or an arm of a conditional:
        # Python skips it at a negative zuf0, which must not raise.
        x = sympy.Symbol("zuf0", real=True)
        root = OpaqueUnaryFn_sqrt(x)
        exprs = [
            sympy.And(x >= 0, root > 1),
            sympy.And(x >= 0, root < 3),
            sympy.Or(x < 0, root > 2),
            sympy.Piecewise((root, x >= 0), (0.0, True)),
        ]
        for value in (-1.0, 4.0):
            expected = one_by_one(exprs, {x: value})
            got = all_at_once(exprs, {x: value})
            self.assertTrue(same(got, expected), (value, got, expected))
        self.assertEqual(all_at_once(exprs, {x: -1.0}), (False, False, True, 0.0))

    def test_no_shared_application(self):
        values = {S0: 7, ZUF0: 0.25}
        exprs = [S0 > 3, ZUF0 * ToFloat(S0) < 2.0]
        got = all_at_once(exprs, values)
        self.assertTrue(same(got, (True, True)), got)

    @profile(ci_examples=50, local_examples=500)
    @given(
        st.integers(1, 2048),
        st.integers(1, 2048),
        st.floats(0.08, 1.0),
        st.floats(math.log(3 / 4), math.log(4 / 3)),
    )
    def test_same_values_as_one_by_one(self, s0, s1, scale, log_ratio):
        values = {S0: s0, S1: s1, ZUF0: scale, ZUF1: math.exp(log_ratio)}
        got = all_at_once(CROP_ANSWERS, values)
        expected = one_by_one(CROP_ANSWERS, values)
        self.assertTrue(same(got, expected), (values, got, expected))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
