# Owner(s): ["module: dynamo"]
"""Hoisting torch RNG draws of any size, and uniform_ draws bounded by tensors the frame reads.

``HoistMultiElementDrawsTests``: with ``hoist_torch_rng_draws``, ColorJitter's
``torch.randperm(4)`` order, ElasticTransform's full-size ``torch.rand`` field and
RandomErasing's ``normal_`` patch are drawn by the prologue in eager order, so branching on
the order compiles (one graph per order) and Inductor computes with eager's draws.

``HoistTensorBoundedDrawsTests``: draws whose tensor arguments the prologue can compute are
hoisted too: RandomResizedCrop's and RandomErasing's ``uniform_(log_ratio[0], log_ratio[1])``,
bounded by a tensor the frame reads (read when drawn, and ID-matched), RandomChoice's
``torch.multinomial(torch.tensor(p), 1)`` and AugMix's ``torch._sample_dirichlet``; and
GaussianNoise's ``torch.randn_like(image)``, drawn from the image's shape and dtype alone.

``ReplayWhileTracingTests``: the trace replays the draws to learn their values, each draw
once.

Every call is compared with eager from the same seed: output, and the next draw after it.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

from tv_model_random import seeded_calls
from tv_model_random_draws import (
    color_jitter,
    augmix_mix,
    CROP_LOG_RATIO,
    elastic_displacement,
    gaussian_noise,
    random_choice,
    random_erasing,
    random_resized_crop_log_ratio,
)


def _normal_patch(x):
    # A multi-element normal_ draw, then one-element draws after it.
    noise = torch.empty(3, 4, 5).normal_()
    i = torch.randint(0, 4, (1,)).item()
    return x[:, :4, :5] + noise, i


class SeededCallsMixin:
    def check_seeded(self, fn, compiled, seeds, make_args, atol=0, rtol=0):
        for eager, eager_next, out, out_next in seeded_calls(fn, compiled, seeds, make_args):
            self.assertEqual(type(out), type(eager))
            self.assertEqual(out, eager, exact_dtype=True, atol=atol, rtol=rtol)
            # the RNG stream after the call is eager's
            self.assertEqual(out_next, eager_next, atol=0, rtol=0)

    def graphs_for_seeded_calls(self, fn, seeds, make_args):
        """Compile fn with fullgraph=True, check each seeded call against eager, and
        return how many graphs the calls compiled."""
        cnt = CompileCounter()
        self.check_seeded(fn, torch.compile(fn, backend=cnt, fullgraph=True), seeds, make_args)
        return cnt.frame_count


class HoistMultiElementDrawsTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=24)
    def test_branch_on_randperm_order(self):
        x = torch.rand(3, 16, 20)
        orders = set()
        for seed in range(8):
            torch.manual_seed(seed)
            # what the branches tell apart: where ops 0 and 3 are
            orders.add(tuple(k if k in (0, 3) else -1 for k in torch.randperm(4).tolist()))
        # one graph per order of the ops applied; the factors stay symbolic
        self.assertEqual(self.graphs_for_seeded_calls(color_jitter, range(8), lambda: (x,)), len(orders))

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, error_on_recompile=True)
    def test_full_size_draws_feeding_tensor_math(self):
        x = torch.rand(3, 16, 20)
        self.assertEqual(self.graphs_for_seeded_calls(elastic_displacement, range(5), lambda: (x,)), 1)

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, error_on_recompile=True)
    def test_inductor_computes_with_eager_draws(self):
        # Without hoisting, Inductor draws torch.rand with its own generator:
        # another field, and another RNG state after the call.
        x = torch.rand(3, 16, 20)
        compiled = torch.compile(elastic_displacement, backend="inductor", fullgraph=True)
        self.check_seeded(elastic_displacement, compiled, range(3), lambda: (x,), atol=1e-6, rtol=1e-5)

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, error_on_recompile=True)
    def test_strided_view_of_a_draw_on_aot_eager(self):
        # AOTAutograd fakeifies the hoisted draw again; a guard on its sizes
        # (the contiguity check of a strided view) must find their source.
        def fn(x):
            return x + torch.randn(10, 8).t()[::2, ::2].clone()

        compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
        self.check_seeded(fn, compiled, range(3), lambda: (torch.rand(4, 5),))

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, error_on_recompile=True)
    def test_normal_patch_then_one_element_draw(self):
        x = torch.rand(3, 16, 20)
        self.assertEqual(self.graphs_for_seeded_calls(_normal_patch, range(5), lambda: (x,)), 1)


class HoistTensorBoundedDrawsTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=8)
    def test_resized_crop_search(self):
        x = torch.rand(3, 16, 20)
        # at most one graph per drawn crop (test_tv_random_decisions pins the
        # bound: one per number of attempts)
        self.assertLessEqual(self.graphs_for_seeded_calls(random_resized_crop_log_ratio, range(4), lambda: (x,)), 4)

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=8)
    def test_erasing_search(self):
        x = torch.rand(3, 16, 20)
        self.graphs_for_seeded_calls(random_erasing, range(4), lambda: (x,))

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=8)
    def test_choice_by_multinomial(self):
        x = torch.rand(3, 16, 20)
        # one graph per choice
        self.assertEqual(self.graphs_for_seeded_calls(random_choice, range(6), lambda: (x,)), 2)

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=8)
    def test_dirichlet_weights_then_a_drawn_depth(self):
        # Left in the graph, _sample_dirichlet ended hoisting: the depth
        # drawn after it was an unbacked symbol bounding a loop.
        x = torch.rand(3, 16, 20)
        # one graph per depth
        self.assertLessEqual(self.graphs_for_seeded_calls(augmix_mix, range(6), lambda: (x,)), 3)

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, error_on_recompile=True)
    def test_noise_like_the_image_on_inductor(self):
        # A new image each call: randn_like reads its shape and dtype only,
        # so nothing recompiles, and Inductor adds eager's noise.
        compiled = torch.compile(gaussian_noise, backend="inductor", fullgraph=True)
        self.check_seeded(gaussian_noise, compiled, range(3), lambda: (torch.rand(3, 16, 20),), atol=1e-6, rtol=1e-5)

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, recompile_limit=8)
    def test_bounds_are_read_when_drawn(self):
        def draw(x, log_ratio):
            return x * torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1]))

        x = torch.rand(4)
        log_ratio = CROP_LOG_RATIO.clone()
        cnt = CompileCounter()
        compiled = torch.compile(draw, backend=cnt, fullgraph=True)
        self.check_seeded(draw, compiled, range(2), lambda: (x, log_ratio))
        # written in place: the same tensor, read again by the prologue
        log_ratio.mul_(2)
        self.check_seeded(draw, compiled, range(2), lambda: (x, log_ratio))
        self.assertEqual(cnt.frame_count, 1)
        # another tensor: ID_MATCH fails, and the new graph reads the new one
        other = log_ratio.clone().add_(0.25)
        self.check_seeded(draw, compiled, range(2), lambda: (x, other))
        self.assertEqual(cnt.frame_count, 2)


DRAWS = 8


def _read_each_draw(x):
    # Each draw read as a Python number before the next is drawn, as
    # torchvision's make_params read theirs: without fullgraph the value is
    # specialized, and the trace computes it by replaying the draws.
    for _ in range(DRAWS):
        x = x + torch.rand(()).item()
    return x


def _add_each_draw(x):
    for _ in range(DRAWS):
        x = x + torch.rand(3)
    return x


class ReplayWhileTracingTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    """The trace replays its draws to learn each new draw's value and each value
    it takes from them; it goes on from the last replay, so each draw is made once
    while tracing (it was made again for every later draw and value: quadratic in
    the draws, minutes for RandomIoUCrop's search of up to 40 attempts)."""

    def check_replays(self, fn, fullgraph):
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=fullgraph)
        self.check_seeded(fn, compiled, [0], lambda: (torch.zeros(3),))
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(counters["stats"]["torch_rng_draws_replayed_while_tracing"], DRAWS)

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True)
    def test_values_read_from_draws(self):
        self.check_replays(_read_each_draw, fullgraph=False)

    @torch._dynamo.config.patch(hoist_torch_rng_draws=True)
    def test_draws_hoisted_one_after_another(self):
        self.check_replays(_add_each_draw, fullgraph=True)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
