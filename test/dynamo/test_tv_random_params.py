# Owner(s): ["module: dynamo"]
import math

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter

from tv_model_random import (
    color_jitter_brightness,
    rand_augment_choice,
    random_resized_crop,
    seeded_calls,
)
from tv_model_random_params import (
    color_jitter_hue,
    factor_then_branch,
    random_crop,
    random_gaussian_blur,
    random_perspective,
    random_rotation,
)


def _factor_and_value(x):
    # Floats that leave the frame, and a torch.rand draw.
    a = torch.rand(1).item()
    b = torch.empty(1, dtype=torch.float64).uniform_(2.0, 3.0).item()
    return x * a + b, a, b


def _choice_and_factor(x):
    # RandAugment-like: a discrete choice that needs a guard, and a
    # continuous magnitude that only feeds tensor math.
    op = int(torch.randint(2, (1,)))
    magnitude = torch.empty(1).uniform_(0.5, 1.5).item()
    if op == 0:
        return x * magnitude
    return x.flip(-1) * magnitude


def _factor_through_exp(x):
    # math.exp has no symbolic counterpart: it needs the value.
    return x * math.exp(torch.empty(1).uniform_(-0.3, 0.3).item())


class RandomParamsMixin:
    def check_calls(
        self, fn, calls, graphs, error_on_recompile=False, fullgraph=True, size=(3, 16, 20)
    ):
        x = torch.rand(size)
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=fullgraph)
        with torch._dynamo.config.patch(
            hoist_torch_rng_draws=True,
            error_on_recompile=error_on_recompile,
            recompile_limit=calls,
            # without fullgraph, .item() is traced only with this on
            capture_scalar_outputs=not fullgraph,
        ):
            for eager, eager_next, out, out_next in seeded_calls(
                fn, compiled, range(calls), lambda: (x,)
            ):
                # values, dtypes, shapes and Python output types
                self.assertEqual(type(out), type(eager))
                if isinstance(eager, tuple):
                    self.assertEqual([type(o) for o in out], [type(e) for e in eager])
                self.assertEqual(out, eager, exact_dtype=True, atol=0, rtol=0)
                # the RNG stream after the call is eager's
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, graphs)


class HoistTorchRngSymbolicFloatsTests(
    RandomParamsMixin, torch._dynamo.test_case.TestCase
):
    """A float drawn from a hoisted draw and fed to tensor math: one graph."""

    def test_brightness_factor(self):
        # `brightness_factor < 0` is decided by the draw's range, [0.8, 1.2].
        self.check_calls(color_jitter_brightness, 100, 1, error_on_recompile=True)

    def test_gaussian_blur_sigma(self):
        self.check_calls(random_gaussian_blur, 30, 1, error_on_recompile=True)

    def test_rotation_angle(self):
        # math.radians, math.cos and math.sin of the angle are symbolic.
        self.check_calls(random_rotation, 30, 1, error_on_recompile=True)

    def test_hue_factor_range_check(self):
        # `-0.5 <= hue_factor <= 0.5` is decided by the draw's range.
        self.check_calls(color_jitter_hue, 100, 1, error_on_recompile=True)

    def test_floats_returned(self):
        self.check_calls(_factor_and_value, 100, 1, error_on_recompile=True)

    def test_graph_computes_the_factor(self):
        # The factor is the item() of the hoisted draw in the graph, no constant.
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm

        compiled = torch.compile(
            color_jitter_brightness, backend=backend, fullgraph=True
        )
        with torch._dynamo.config.patch(hoist_torch_rng_draws=True):
            compiled(torch.rand(3, 4, 5))
        (gm,) = graphs
        self.assertEqual(
            [
                n.target
                for n in gm.graph.nodes
                if n.op == "call_method" and n.target == "item"
            ],
            ["item"],
        )
        self.assertIn("torch_random_value_0", [n.name for n in gm.graph.nodes])


class HoistTorchRngSpecializeOnRestartTests(
    RandomParamsMixin, torch._dynamo.test_case.TestCase
):
    """A guard on such a float restarts analysis with its draw specialized."""

    def test_branch_on_factor(self):
        # Both branches run, one graph per outcome of the comparison: the
        # guard replays the draw and checks the outcome (see
        # test_tv_random_decisions), where it used to check the value.
        signs = set()
        for seed in range(8):
            torch.manual_seed(seed)
            signs.add(float(torch.empty(1).uniform_(-0.5, 1.5)) < 0)
        self.assertEqual(signs, {False, True})
        self.check_calls(factor_then_branch, 8, 2)

    def test_only_the_guarded_draw_is_specialized(self):
        # One graph per choice; the magnitude stays symbolic.
        self.check_calls(_choice_and_factor, 30, 2)

    def test_math_exp_of_factor(self):
        self.check_calls(_factor_through_exp, 5, 5)

    def test_random_resized_crop(self):
        # math.exp needs the aspect ratio; the crop size is a Python int that
        # decides the loop exit and the slice: specialized per call.
        self.check_calls(random_resized_crop, 4, 4)

    def test_choice_without_fullgraph(self):
        # Without fullgraph, a branch on the unbacked choice restarts with the
        # draw specialized instead of graph breaking: one graph per choice.
        self.check_calls(rand_augment_choice, 30, 3, fullgraph=False)

    def test_random_resized_crop_without_fullgraph(self):
        # math.exp's guard would be a graph break in the search loop (and so
        # skip the frame): it restarts instead, one graph per call as above.
        self.check_calls(random_resized_crop, 4, 4, fullgraph=False)


def _offsets_checked(x):
    # crop_image's bounds check on offsets drawn by randint, in both spellings.
    i = torch.randint(0, 9, (1,)).item()
    j = int(torch.randint(low=2, high=13, size=()))
    if i < 0 or j < 2 or i + 8 > 16 or j + 8 > 20:
        raise ValueError("crop out of bounds")
    return x[..., i : i + 8, j : j + 8]


def _whole_float_draw(x):
    # randint in a floating dtype draws whole numbers too.
    k = torch.randint(1, 4, (), dtype=torch.float32).item()
    if k < 1.0 or k > 3.0:
        raise ValueError("factor out of range")
    return x * k


class HoistedCropOffsetTests(RandomParamsMixin, torch._dynamo.test_case.TestCase):
    """Offsets drawn by randint stay symbolic as slice starts: one graph for all."""

    def test_random_crop_offsets(self):
        # RandomCrop's offsets as slice starts, x[..., i : i + 8, j : j + 8].
        self.check_calls(random_crop, 8, 1, error_on_recompile=True)

    def test_random_crop_offsets_without_fullgraph(self):
        self.check_calls(random_crop, 8, 1, error_on_recompile=True, fullgraph=False)


class HoistedRandintRangeTests(RandomParamsMixin, torch._dynamo.test_case.TestCase):
    """The .item() of a hoisted randint(low, high) is ranged [low, high - 1]."""

    def test_bounds_check_decided_by_range(self):
        self.check_calls(_offsets_checked, 8, 1, error_on_recompile=True)

    def test_whole_numbers_in_a_floating_dtype(self):
        self.check_calls(_whole_float_draw, 8, 1, error_on_recompile=True)


def _branch_on_a_written_draw(x):
    # A write into the drawn tensor: each value the guard replays from the
    # draw applies it once, as eager does.
    d = torch.rand(2)
    d.mul_(2.0)
    a, b = d.tolist()
    if a + b > 2.0:
        return x + a
    return x - a


class HoistedTolistTests(RandomParamsMixin, torch._dynamo.test_case.TestCase):
    """tolist() of a tensor computed from hoisted draws: an unbacked symbol per
    element, floats included, whose values the guard replays."""

    def test_random_perspective(self):
        # RandomPerspective: corners by randint, coefficients by lstsq of a
        # matrix built by item assignment, read with .tolist(), then put into
        # torch.tensor for the warp. One graph for every draw (was one each).
        self.check_calls(random_perspective, 20, 1, error_on_recompile=True)

    def test_random_perspective_on_another_size(self):
        self.check_calls(
            random_perspective, 10, 1, error_on_recompile=True, size=(3, 11, 13)
        )

    def test_write_into_a_draw(self):
        x = torch.rand(3, 4)
        compiled = torch.compile(_branch_on_a_written_draw, backend="eager")
        outcomes = set()
        with torch._dynamo.config.patch(
            hoist_torch_rng_draws=True, capture_scalar_outputs=True
        ):
            for eager, eager_next, out, out_next in seeded_calls(
                _branch_on_a_written_draw, compiled, range(12), lambda: (x,)
            ):
                self.assertEqual(out, eager, atol=0, rtol=0)
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
                outcomes.add(bool((eager > x).all()))
        self.assertEqual(outcomes, {True, False})


class RandomScalarsOnBaseTests(torch._dynamo.test_case.TestCase):
    def test_item_only_in_tensor_math_compiles(self):
        # Without hoisting, a draw whose item() only feeds tensor math already
        # compiles: the draw stays in the graph, so the RNG stream matches.
        def fn(x):
            return x * torch.empty(1).uniform_(2.0, 3.0).item()

        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        x = torch.rand(3, 4)
        for eager, eager_next, out, out_next in seeded_calls(
            fn, compiled, range(5), lambda: (x,)
        ):
            self.assertEqual(out, eager, atol=0, rtol=0)
            self.assertEqual(out_next, eager_next, atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)

    def test_guard_on_item_fails_without_hoisting(self):
        compiled = torch.compile(
            color_jitter_brightness, backend="eager", fullgraph=True
        )
        with self.assertRaisesRegex(
            torch._dynamo.exc.UserError, "Could not guard on data-dependent expression"
        ):
            compiled(torch.rand(3, 4, 5))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
