# Owner(s): ["module: dynamo"]
"""An if-statement on an unbacked SymBool whose arms only assign numbers, as torch.sym_ite.

torchvision's auto-augment transforms negate a drawn magnitude half the time,
``if signed and torch.rand(()) <= 0.5: magnitude *= -1``, and RandAugment and AutoAugment
do it in a loop over the ops they apply. Under ``hoist_torch_rng_draws`` the jump is on a
one-element tensor computed from a draw: Dynamo specialized it (a graph per sign, per op
of the loop), and a cond over the loop's arms (``data_dependent_branches_as_cond``)
cannot hand back the float the arm assigns. RandAugment over one op compiled 4 graphs in
12 calls.

Dynamo now traces both arms of such a statement, one after the other, and assigns each
local they write ``torch.sym_ite(c, value after the body, value after the else arm or
before)``, c the jump's SymBool (for a tensor computed from hoisted draws, its
``.item()``), as patch 45 does for conditional expressions. An arm that calls anything,
writes anything but a local, or leaves a local unbound takes the usual path.
"""

import functools

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter

from test_tv_random_draws import SeededCallsMixin
from tv_model_random import _seeded_image
from tv_model_random_branches import rand_augment_one_op


FLAGS = {"hoist_torch_rng_draws": True, "data_dependent_branches_as_cond": True}


def negate_half_the_time(x):
    for magnitude in (3.0, 5.0):
        if torch.rand(()) <= 0.5:
            magnitude *= -1
        x = x * magnitude
    return x


def scale_by_sign_of_sum(x):
    # an if/else on the .item() of a tensor, both arms assigning two locals
    if x.sum().item() > 0:
        factor, offset = 2.0, 1.0
    else:
        factor, offset = 0.5, -1.0
    return x * factor + offset


def count_if_positive(x):
    n = 3
    if x.sum().item() > 0:
        n += 2
    return x * n


def log_if_positive(x, log):
    if x.sum().item() > 0:
        log.append(1)  # an effect: not an arm to trace both of
    return x + len(log)


class IfStatementSymIteTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    def graphs(self, fn, seeds, make_args):
        with torch._dynamo.config.patch(**FLAGS):
            return self.graphs_for_seeded_calls(fn, seeds, make_args)

    def test_sign_drawn_in_a_loop_one_graph(self):
        x = torch.ones(3)
        self.assertEqual(self.graphs(negate_half_the_time, range(12), lambda: (x,)), 1)

    def test_sign_drawn_in_a_loop_without_cond_flag(self):
        # the hoisted draws alone: the statement needs no cond
        x = torch.ones(3)
        with torch._dynamo.config.patch(hoist_torch_rng_draws=True):
            graphs = self.graphs_for_seeded_calls(negate_half_the_time, range(12), lambda: (x,))
        self.assertEqual(graphs, 1)

    def test_rand_augment_brightness_one_graph(self):
        (image,) = _seeded_image(0)
        self.assertEqual(self.graphs(rand_augment_one_op, range(12), lambda: (image,)), 1)

    def test_rand_augment_shear_x_one_graph(self):
        fn = functools.partial(rand_augment_one_op, op="ShearX")
        (image,) = _seeded_image(1)
        self.assertEqual(self.graphs(fn, range(12), lambda: (image,)), 1)

    @torch._dynamo.config.patch(capture_scalar_outputs=True)
    def test_if_else_on_item_assigns_both_locals(self):
        cnt = CompileCounter()
        compiled = torch.compile(scale_by_sign_of_sum, backend=cnt, fullgraph=True)
        for x in (torch.ones(3), -torch.ones(3), torch.tensor([1.0, -2.0, 0.5])):
            self.assertEqual(compiled(x), scale_by_sign_of_sum(x), atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)

    @torch._dynamo.config.patch(capture_scalar_outputs=True)
    def test_if_without_else_on_item_int(self):
        cnt = CompileCounter()
        compiled = torch.compile(count_if_positive, backend=cnt, fullgraph=True)
        for x in (torch.ones(3), -torch.ones(3)):
            self.assertEqual(compiled(x), count_if_positive(x), atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)


class IfStatementUsualPathTests(torch._dynamo.test_case.TestCase):
    """Arms with effects are not traced both: the jump takes the usual path."""

    @torch._dynamo.config.patch(capture_scalar_outputs=True)
    def test_arm_with_effect_breaks_the_graph(self):
        for x in (torch.ones(3), -torch.ones(3)):
            torch._dynamo.reset()
            eager_log, log = [], []
            expected = log_if_positive(x, eager_log)
            out = torch.compile(log_if_positive, backend="eager")(x, log)
            self.assertEqual(out, expected)
            self.assertEqual(log, eager_log)
        torch._dynamo.reset()
        # a data-dependent jump Dynamo cannot trace under fullgraph, as before
        with self.assertRaises((torch._dynamo.exc.Unsupported, torch._dynamo.exc.UserError)):
            torch.compile(log_if_positive, backend="eager", fullgraph=True)(torch.ones(3), [])


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
