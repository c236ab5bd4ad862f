# Owner(s): ["module: dynamo"]
"""math.degrees of a symbolic number, traced like math.radians.

Dynamo traces ``math.radians(x)`` of a SymInt or SymFloat through a polyfill, ``math.pi /
180.0 * x`` (pytorch#114218), but put ``math.degrees(x)`` into the graph as a call of
``math.degrees``, whose example value takes ``float(x)``: a guard on a backed number, a
graph per value of a dynamic float or int argument; and on an unbacked one, the value of
the ``.item()`` or hoisted draw it came from. torchvision's auto-augment transforms shear
by ``math.degrees(math.atan(magnitude))``, the magnitude a drawn float: TrivialAugmentWide's
ShearX compiled a graph per magnitude under the random flags.

``math.degrees(x)`` is now ``180.0 / math.pi * x``, the product CPython computes, so the
result is math's bit for bit.
"""

import functools
import math

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter

from test_tv_random_draws import SeededCallsMixin
from tv_model_random import _seeded_image
from tv_model_random_branches import trivial_augment_one_op


def scale_by_degrees(x, a):
    return x * math.degrees(a)


def scale_by_degrees_of_item(x, t):
    return x * math.degrees(t.item())


class MathDegreesTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    def test_dynamic_number_one_graph(self):
        # float64 ones times the degrees: the tensor holds the number itself,
        # so equality is bit for bit.
        x = torch.ones(2, dtype=torch.float64)
        for values in ((0.5, 1.5, -2.25), (3, 4, -7)):
            torch._dynamo.reset()
            cnt = CompileCounter()
            compiled = torch.compile(scale_by_degrees, backend=cnt, fullgraph=True, dynamic=True)
            with torch._dynamo.config.patch(specialize_float=False):
                for a in values:
                    self.assertEqual(compiled(x, a), scale_by_degrees(x, a), atol=0, rtol=0)
            self.assertEqual(cnt.frame_count, 1)

    def test_unbacked_item_one_graph(self):
        x = torch.ones(2, dtype=torch.float64)
        cnt = CompileCounter()
        compiled = torch.compile(scale_by_degrees_of_item, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            for v in (0.3, -1.7, 123.456, 1e-300, math.pi):
                t = torch.tensor(v, dtype=torch.float64)
                self.assertEqual(
                    compiled(x, t), scale_by_degrees_of_item(x, t), atol=0, rtol=0
                )
        self.assertEqual(cnt.frame_count, 1)

    def test_trivial_augment_shear_x_one_graph(self):
        # The model's TrivialAugmentWide over ShearX, unsigned: the magnitude is
        # a hoisted draw's item, sheared by math.degrees(math.atan(magnitude)).
        fn = functools.partial(trivial_augment_one_op, op="ShearX", signed=False)
        (image,) = _seeded_image(0)
        with torch._dynamo.config.patch(
            hoist_torch_rng_draws=True, data_dependent_branches_as_cond=True
        ):
            graphs = self.graphs_for_seeded_calls(fn, range(12), lambda: (image,))
        self.assertEqual(graphs, 1)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
