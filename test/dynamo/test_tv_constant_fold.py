# Owner(s): ["module: dynamo"]
"""``.item()`` and ``.tolist()`` of tensors the graph computes from constants alone.

torchvision reads Python numbers off tensors it builds from constants:
``_get_perspective_coeffs`` solves a linear system of constant corners with lstsq and
returns ``.tolist()`` of the solution (F.perspective, RandomPerspective), and RandAugment
reads its magnitude as ``float(torch.linspace(...)[i])`` before an argument check
(``if saturation_factor < 0``).  Such a value is the same on every call, so Dynamo computes
it while tracing and uses the constant; a tensor computed from a graph input stays traced.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

from tv_dispatch_model import adjust_brightness, CompiledVsEagerMixin
from tv_model_errors import ENDPOINTS, STARTPOINTS
from tv_model_random import seeded_calls
from tv_model_random_draws import perspective_coefficients_list, rand_augment_magnitude


def _constant_magnitude(image):
    # The argument check `brightness_factor < 0` needs the value.
    return adjust_brightness(image, 1.0 - float(torch.linspace(0.0, 0.9, 31)[9]))


def _written_after_read(x):
    t = torch.arange(4.0)
    v = t[1].item()
    t.add_(1)  # after the read: not the value read
    return x * v, t


def _written_before_read(x):
    t = torch.zeros(2, 3)
    t[1, :] = torch.tensor([1.0, 2.0, 3.0])
    row = t[1]
    row.mul_(2)  # through a view
    return x + 1, t.tolist()


def _from_input(x):
    return x * 2, (x.sum() * 2).item()


class ConstantTensorFoldTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_perspective_coefficients_tolist(self):
        out = self.check_one_frame(perspective_coefficients_list, STARTPOINTS, ENDPOINTS)
        self.assertIsInstance(out, list)
        self.assertTrue(all(type(c) is float for c in out))

    def test_argument_check_on_a_constant_magnitude(self):
        self.check_one_frame(_constant_magnitude, torch.rand(3, 8, 8))

    def test_writes_before_the_read_count(self):
        out = self.check_one_frame(_written_before_read, torch.rand(3))
        self.assertEqual(out[1], [[0.0, 0.0, 0.0], [2.0, 4.0, 6.0]])

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True)
    def test_rand_augment_magnitude_with_a_drawn_sign(self):
        x = torch.rand(3, 8, 8)
        counters.clear()
        cnt = CompileCounter()
        compiled = torch.compile(rand_augment_magnitude, backend=cnt, fullgraph=True)
        for eager, eager_next, out, out_next in seeded_calls(rand_augment_magnitude, compiled, range(6), lambda: (x,)):
            self.assertEqual(out, eager, atol=0, rtol=0)
            self.assertEqual(out_next, eager_next, atol=0, rtol=0)
        # one graph for both signs: the sign's branch is a torch.sym_ite of the
        # folded magnitude (patch 68; a graph per sign before)
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)


class ConstantTensorFoldRegressionTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    """What folding must leave as it was: both pass on the base too."""

    def test_writes_after_the_read_do_not(self):
        x = torch.rand(3)
        out = self.check_one_frame(_written_after_read, x)
        self.assertEqual(out[0], x, atol=0, rtol=0)  # v == 1.0

    def test_value_of_an_input_stays_traced(self):
        # Not folded: one graph gives each input's own value.
        cnt = CompileCounter()
        compiled = torch.compile(_from_input, backend=cnt, fullgraph=True)
        for x in (torch.ones(3), torch.arange(3.0)):
            self.assertEqual(compiled(x), _from_input(x))
        self.assertEqual(cnt.frame_count, 1)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
