# Owner(s): ["module: dynamo"]
"""
An operator that rejects its arguments while Dynamo traces it on fake tensors
raises what eager raises, where eager raises it.

torchvision's rotated-box conversions update integer boxes in place with float
math (``boxes[..., :2].add_(wh * 0.5)``): on int64 boxes eager raises
``RuntimeError: result type Float can't be cast to the desired output type
Long``. Compiled, Dynamo used to report ``TorchRuntimeError: RuntimeError when
making fake tensor call``, which an ``except RuntimeError`` does not catch.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter


def cxcywhr_from_xywhr(boxes):
    # the shape of torchvision's _xywhr_to_cxcywhr: in place, float math
    boxes = boxes.clone()
    boxes[..., :2].add_(boxes[..., 2:4] * 0.5)
    return boxes


def convert_or_fall_back(boxes):
    try:
        return cxcywhr_from_xywhr(boxes)
    except RuntimeError:
        return cxcywhr_from_xywhr(boxes.float())


def convert_then_more(boxes):
    out = cxcywhr_from_xywhr(boxes)
    return out * 2


def outcome(fn, *args):
    try:
        return "returned", fn(*args)
    except Exception as e:  # noqa: BLE001 - the test compares what was raised
        return type(e), str(e)


class FakeTensorErrorTests(torch._dynamo.test_case.TestCase):
    def assertSameOutcome(self, fn, *args, fullgraph=True):
        expected = outcome(fn, *args)
        torch._dynamo.reset()
        actual = outcome(torch.compile(fn, backend="eager", fullgraph=fullgraph), *args)
        self.assertEqual(actual[0], expected[0])
        self.assertEqual(actual[1], expected[1])
        return actual

    def test_uncaught_error_is_eagers(self):
        int_boxes = torch.tensor([[10, 10, 6, 4, 30]])
        kind, message = self.assertSameOutcome(cxcywhr_from_xywhr, int_boxes)
        self.assertIs(kind, RuntimeError)
        self.assertIn("can't be cast to the desired output type Long", message)

    def test_uncaught_error_after_more_code(self):
        self.assertSameOutcome(convert_then_more, torch.tensor([[1, 2, 3, 4, 5]]))

    def test_uncaught_error_without_fullgraph(self):
        self.assertSameOutcome(cxcywhr_from_xywhr, torch.tensor([[1, 2, 3, 4, 5]]), fullgraph=False)

    def test_caught_error_takes_the_handler(self):
        int_boxes = torch.tensor([[10, 10, 6, 4, 30]])
        counter = CompileCounter()
        compiled = torch.compile(convert_or_fall_back, backend=counter, fullgraph=True)
        self.assertEqual(compiled(int_boxes), convert_or_fall_back(int_boxes))
        self.assertEqual(counter.frame_count, 1)

    def test_caught_error_in_a_loop_of_calls(self):
        def fn(xs):
            total = 0
            for x in xs:
                total = total + convert_or_fall_back(x).sum()
            return total

        xs = [torch.tensor([[1, 2, 3, 4, 5]]), torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]])]
        self.assertSameOutcome(fn, xs)


class FakeTensorErrorRegressionTests(torch._dynamo.test_case.TestCase):
    def test_valid_float_boxes_still_compile(self):
        boxes = torch.tensor([[10.0, 10.0, 6.0, 4.0, 30.0]])
        counter = CompileCounter()
        out = torch.compile(cxcywhr_from_xywhr, backend=counter, fullgraph=True)(boxes)
        self.assertEqual(out, cxcywhr_from_xywhr(boxes))
        self.assertEqual(counter.frame_count, 1)

    # An error that is not eager's stays Dynamo's TorchRuntimeError, whose message
    # holds the operator's (upstream's test_functions.py and test_misc.py pin these).

    def test_float_of_a_two_element_tensor(self):
        # Dynamo traces float(x) as x.item(), whose error (RuntimeError: a Tensor
        # with 2 elements cannot be converted to Scalar) is not float()'s
        # (ValueError: only one element tensors can be converted to Python scalars).
        def fn(x):
            return float(x + 1)

        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            compiled = torch.compile(fn, backend="eager", fullgraph=True, dynamic=False)
            self.assertEqual(compiled(torch.tensor([1.0])), 2.0)
            with self.assertRaises(torch._dynamo.exc.TorchRuntimeError):
                compiled(torch.tensor([1.0, 1.0]))

    def test_check_on_a_dynamic_size_keeps_its_message(self):
        # The failing check is on a symbol: the graph would only hold a runtime
        # assert of the expression, without the user's message.
        @torch.compile(backend="eager", fullgraph=True)
        def fn(x):
            torch._check(x.shape[0] > 3, lambda: "x is too short")
            return x + 1

        x = torch.randn(3)
        torch._dynamo.maybe_mark_dynamic(x, 0)
        with self.assertRaisesRegex(torch._dynamo.exc.TorchRuntimeError, "x is too short"):
            fn(x)

    def test_unbacked_strides_fail_only_while_tracing(self):
        # Strides (2, 3, 4) have one dim order; as unbacked symbols they may not,
        # so dim_order's ambiguity check fails on fake tensors and not in eager.
        @torch.compile(backend="eager", fullgraph=True, dynamic=False)
        def fn(xs):
            u0, u1, u2 = xs.tolist()
            y = torch.empty_strided([4, 4, 4], [u0, u1, u2])
            return y.dim_order(ambiguity_check=True)

        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            with self.assertRaisesRegex(
                torch._dynamo.exc.TorchRuntimeError, "The tensor does not have unique dim order"
            ):
                fn(torch.tensor([2, 3, 4]))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
