# Owner(s): ["module: dynamo"]
"""A conditional expression on a data-dependent SymBool, traced as torch.sym_ite.

torchvision's ``_compute_resized_output_size`` starts every resize with
``short, long = (w, h) if w <= h else (h, w)``. When w and h are the .item() of
a tensor (``capture_scalar_outputs``) or come from hoisted torch RNG draws
(RandomResizedCrop's drawn crop, ``hoist_torch_rng_draws``), no guard can
decide ``w <= h``: tracing raised a data-dependent error, compiled the rest of
the frame as a torch.cond, or compiled one graph per outcome. When both arms
only compute numbers, or tuples of numbers, from values at hand, the expression
is now ``torch.sym_ite(c, a, b)`` (elementwise for tuples) and tracing goes on.

``ConditionalExpressionTests``: numbers, tuples, floats, sizes on Inductor, the
graph Dynamo records, and a drawn crop of either orientation in one graph.
``ConditionalExpressionFallbackTests``: what keeps the usual path (an arm that
calls a function, an arm that would raise, arms of different kinds, backed sizes,
which a guard decides).
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter, EagerAndRecordGraphs, normalize_gm

from tv_model_random import seeded_calls


def _scaled(x, y):
    # y has one element: a 0-d tensor argument's .item() is a backed symbol
    u = y.item()
    n = u * 2 if u > 2 else u + 1
    return x + n


def _short_long(x, y):
    w, h = y.tolist()
    short, long = (w, h) if w <= h else (h, w)
    return x[:short].sum() + long, short, long


def _ratio(x, y):
    r = y.item()
    return x * (r if r <= 1.0 else 1.0 / r)


def _sizes(x, y):
    w, h = y.tolist()
    short, long = (w, h) if w <= h else (h, w)
    return torch.zeros(short, 2), x.new_ones(long)


def _drawn_crop_orientation(x):
    # RandomResizedCrop's crop of either orientation, then
    # _compute_resized_output_size's first line.
    height, width = x.shape[-2:]
    h = torch.randint(1, height + 1, (1,)).item()
    w = torch.randint(1, width + 1, (1,)).item()
    short, long = (w, h) if w <= h else (h, w)
    return x[..., :h, :w].sum() * short / long


class ConditionalExpressionTests(torch._dynamo.test_case.TestCase):
    def check(self, fn, ys, backend="eager", x=None):
        x = torch.arange(8.0) if x is None else x
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt if backend == "eager" else backend, fullgraph=True)
        with torch._dynamo.config.patch(capture_scalar_outputs=True, error_on_recompile=True):
            for y in ys:
                self.assertEqual(compiled(x, y), fn(x, y), exact_dtype=True, atol=0, rtol=0)
        if backend == "eager":
            self.assertEqual(cnt.frame_count, 1)

    def test_numbers(self):
        self.check(_scaled, [torch.tensor([1]), torch.tensor([5]), torch.tensor([3])])

    def test_tuples(self):
        # both orientations, and a tie, from one graph
        self.check(_short_long, [torch.tensor([2, 5]), torch.tensor([6, 3]), torch.tensor([4, 4])])

    def test_floats(self):
        self.check(_ratio, [torch.tensor([0.5]), torch.tensor([4.0])])

    def test_sizes_on_inductor(self):
        self.check(_sizes, [torch.tensor([2, 5]), torch.tensor([6, 3])], backend="inductor")

    def test_graph(self):
        backend = EagerAndRecordGraphs()
        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            torch.compile(_scaled, backend=backend, fullgraph=True)(torch.ones(2), torch.tensor([5]))
        (gm,) = backend.graphs
        self.assertExpectedInline(
            normalize_gm(gm.print_readable(print_output=False)),
            """\
class GraphModule(torch.nn.Module):
    def forward(self, L_y_: "i64[1]", L_x_: "f32[2]"):
        l_y_ = L_y_
        l_x_ = L_x_

        item: "Sym(u0)" = l_y_.item();  l_y_ = None

        gt: "Sym(u0 > 2)" = item > 2
        mul: "Sym(2*u0)" = item * 2
        add: "Sym(u0 + 1)" = item + 1;  item = None
        sym_ite: "Sym(Piecewise((2*u0, u0 > 2), (u0 + 1, True)))" = torch.sym_ite(gt, mul, add);  gt = mul = add = None

        add_1: "f32[2]" = l_x_ + sym_ite;  l_x_ = sym_ite = None
        return (add_1,)
""",  # noqa: B950
        )

    def test_drawn_crop_of_either_orientation(self):
        # Without sym_ite, the guard replays the draws and checks `w <= h`:
        # one graph per orientation.
        x = torch.rand(3, 6, 7)
        orientations = set()
        for seed in range(12):
            torch.manual_seed(seed)
            h, w = int(torch.randint(1, 7, (1,))), int(torch.randint(1, 8, (1,)))
            orientations.add(w <= h)
        self.assertEqual(orientations, {False, True})
        cnt = CompileCounter()
        compiled = torch.compile(_drawn_crop_orientation, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(hoist_torch_rng_draws=True):
            for eager, eager_next, out, out_next in seeded_calls(
                _drawn_crop_orientation, compiled, range(12), lambda: (x,)
            ):
                self.assertEqual(out, eager)
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)


def _arm_calls(x, y):
    u = y.item()
    return x.sum() if u > 2 else x.mean()


def _arms_of_two_kinds(x, y):
    u = y.item()
    return x + (u if u > 2 else 3)


def _arm_that_would_raise(x, y):
    u = y.item()
    # eager never runs 1 / 0: u is never above 2 here
    return x + (1 / 0 if u > 2 else 1.5)


def _backed_orientation(x):
    h, w = x.shape
    short, long = (w, h) if w <= h else (h, w)
    return x.sum() * short / long


class ConditionalExpressionFallbackTests(torch._dynamo.test_case.TestCase):
    @torch._dynamo.config.patch(capture_scalar_outputs=True)
    def check_data_dependent_error(self, fn):
        compiled = torch.compile(fn, backend="eager", fullgraph=True)
        with self.assertRaisesRegex(Exception, "data-dependent|Data-dependent"):
            compiled(torch.ones(3), torch.tensor([5]))

    def test_arm_that_calls(self):
        # Calls may have effects: only one arm may run.
        self.check_data_dependent_error(_arm_calls)

    def test_arms_of_two_kinds(self):
        # torch.sym_ite takes values of one type (here a SymInt and an int).
        self.check_data_dependent_error(_arms_of_two_kinds)

    def test_arm_that_would_raise(self):
        # Both arms are traced, but only one runs: an arm that raises leaves
        # the jump to the usual path, and no ZeroDivisionError reaches the user.
        self.check_data_dependent_error(_arm_that_would_raise)
        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            y = torch.tensor([1])
            compiled = torch.compile(_arm_that_would_raise, backend="eager")
            self.assertEqual(compiled(torch.ones(3), y), _arm_that_would_raise(torch.ones(3), y))

    def test_backed_sizes_are_guarded(self):
        # A guard decides a comparison of backed sizes: one graph per outcome.
        cnt = CompileCounter()
        compiled = torch.compile(_backed_orientation, backend=cnt, dynamic=True, fullgraph=True)
        for shape in [(4, 6), (5, 7), (7, 5), (6, 4)]:
            x = torch.rand(shape)
            self.assertEqual(compiled(x), _backed_orientation(x))
        self.assertEqual(cnt.frame_count, 2)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
