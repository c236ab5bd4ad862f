# Owner(s): ["module: dynamo"]
"""torch.linalg.lstsq under FakeTensorMode and torch.compile, as torchvision's perspective uses it.

``LstsqStaticShapeTests`` covers what fails without the "fake implementation
of linalg.lstsq" patch: the op carries the ``dynamic_output_shape`` tag, so
fake tensors refuse it ("Dynamic shape operator: aten.linalg_lstsq.default")
although its results' shapes follow from the input shapes and the driver.
Fake results must match eager's shapes, strides and dtypes, and compiled
results eager's values.

``LstsqDataDependentRegressionTests`` holds what stays refused on both: the
residuals of the gelsd/gelss drivers for m > n, which exist only when every
matrix has full rank.
"""

import itertools

import torch
import torch._dynamo.test_case
from torch._dynamo.exc import Unsupported
from torch._dynamo.testing import CompileCounter
from torch._subclasses.fake_tensor import DynamicOutputShapeException, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from tv_dispatch_model import CompiledVsEagerMixin
from tv_model_errors import ENDPOINTS, perspective_coefficients, STARTPOINTS


# (A shape, B shape): square, tall, wide, vector right-hand side, batched,
# broadcast batch, empty
SHAPES = [
    ((8, 8), (8, 1)),
    ((6, 4), (6, 2)),
    ((4, 6), (4, 2)),
    ((6, 4), (6,)),
    ((3, 6, 4), (3, 6, 2)),
    ((3, 4, 6), (3, 4)),
    ((2, 1, 6, 4), (1, 3, 6, 2)),
    ((0, 4), (0, 2)),
    ((2, 3, 0), (2, 3, 0)),
]


def metadata(t):
    return tuple(t.shape), t.stride(), t.dtype, t.device


def lstsq(a, b, driver=None):
    return torch.linalg.lstsq(a, b, driver=driver)


class LstsqStaticShapeTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_perspective_coefficients(self):
        out = self.check_one_frame(perspective_coefficients, STARTPOINTS, ENDPOINTS)
        self.assertEqual(out.shape, (8,))
        self.assertEqual(out.dtype, torch.float64)

    def test_fake_matches_eager(self):
        for (a_shape, b_shape), driver, dtype in itertools.product(
            SHAPES, [None, "gels", "gelsy", "gelsd", "gelss"], [torch.float64, torch.complex64]
        ):
            m, n = a_shape[-2:]
            if driver in ("gelsd", "gelss") and (m > n or 0 in a_shape + b_shape):
                continue  # data-dependent residuals; empty inputs crash LAPACK
            with self.subTest(a=a_shape, b=b_shape, driver=driver, dtype=dtype):
                a = torch.randn(a_shape, dtype=dtype)
                b = torch.randn(b_shape, dtype=dtype)
                expected = lstsq(a, b, driver)
                with FakeTensorMode(shape_env=ShapeEnv()) as mode:
                    got = lstsq(mode.from_tensor(a), mode.from_tensor(b), driver)
                self.assertEqual(
                    [metadata(t) for t in got], [metadata(t) for t in expected]
                )

    def test_fake_checks_inputs(self):
        cases = [
            ((6, 4), (6, 2), torch.float32, torch.float64, {}, "same dtype"),
            ((6, 4), (5, 2), torch.float32, torch.float32, {}, r"size\(-2\) should match"),
            ((6,), (6,), torch.float32, torch.float32, {}, "at least 2 dimensions"),
            ((6, 4), (6, 2), torch.int32, torch.int32, {}, "float and double"),
            ((6, 4), (6, 2), torch.float32, torch.float32, {"driver": "lu"}, "should be one of"),
        ]
        for a_shape, b_shape, a_dtype, b_dtype, kwargs, message in cases:
            with self.subTest(message):
                a, b = torch.ones(a_shape, dtype=a_dtype), torch.ones(b_shape, dtype=b_dtype)
                with self.assertRaisesRegex(RuntimeError, message):
                    torch.linalg.lstsq(a, b, **kwargs)
                with FakeTensorMode() as mode:
                    fa, fb = mode.from_tensor(a), mode.from_tensor(b)
                    with self.assertRaisesRegex(RuntimeError, message) as cm:
                        torch.linalg.lstsq(fa, fb, **kwargs)
                    self.assertNotIsInstance(cm.exception, DynamicOutputShapeException)

    def test_compiled_drivers(self):
        def fn(a, b, driver):
            result = torch.linalg.lstsq(a, b, driver=driver)
            return result.solution * 2, result.residuals, result.rank, result.singular_values

        g = torch.Generator().manual_seed(0)
        for (a_shape, b_shape), driver in [
            (((6, 4), (6, 2)), "gels"),
            (((6, 4), (6,)), None),
            (((4, 6), (4, 2)), "gelsd"),
            (((3, 6, 4), (3, 6, 2)), "gelsy"),
        ]:
            with self.subTest(a=a_shape, b=b_shape, driver=driver):
                a = torch.randn(a_shape, dtype=torch.float64, generator=g)
                b = torch.randn(b_shape, dtype=torch.float64, generator=g)
                self.check_one_frame(fn, a, b, driver)

    def test_dynamic_shapes(self):
        def fn(a, b):
            return torch.linalg.lstsq(a, b, driver="gels").solution.sum(-1)

        torch._dynamo.reset()
        opt = torch.compile(fn, backend="eager", fullgraph=True, dynamic=True)
        for m, n in [(6, 4), (9, 5), (8, 8)]:
            a = torch.randn(m, n, dtype=torch.float64)
            b = torch.randn(m, 3, dtype=torch.float64)
            self.assertEqual(opt(a, b), fn(a, b))

    def test_backward(self):
        def fn(a, b):
            return torch.linalg.lstsq(a, b, driver="gels").solution.pow(2).sum()

        a = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
        b = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
        expected = torch.autograd.grad(fn(a, b), (a, b))
        torch._dynamo.reset()
        opt = torch.compile(fn, backend="aot_eager", fullgraph=True)
        got = torch.autograd.grad(opt(a, b), (a, b))
        self.assertEqual(got, expected)


class LstsqDataDependentRegressionTests(torch._dynamo.test_case.TestCase):
    def test_rank_revealing_residuals_stay_dynamic(self):
        for driver in ("gelsd", "gelss"):
            with self.subTest(driver=driver):
                a, b = torch.randn(6, 4), torch.randn(6, 2)
                with FakeTensorMode() as mode:
                    with self.assertRaises(DynamicOutputShapeException):
                        lstsq(mode.from_tensor(a), mode.from_tensor(b), driver)

                def fn(a, b):
                    return torch.linalg.lstsq(a, b, driver=driver).residuals

                torch._dynamo.reset()
                with self.assertRaisesRegex(Unsupported, "Dynamic shape operator"):
                    torch.compile(fn, backend=CompileCounter(), fullgraph=True)(a, b)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
