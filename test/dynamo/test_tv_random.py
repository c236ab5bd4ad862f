# Owner(s): ["module: dynamo"]
import torch
import torch._dynamo.test_case
import torch._inductor.config
from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend

from tv_model_random import (
    color_jitter_brightness,
    rand_augment_choice,
    random_horizontal_flip,
    random_resized_crop,
    seeded_calls,
)


class HoistTorchRngScalarsTests(torch._dynamo.test_case.TestCase):
    def check_calls(self, fn, calls, max_frames, cnt=None):
        x = torch.rand(3, 16, 20)
        cnt = cnt or CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        outs = set()
        with torch._dynamo.config.patch(
            hoist_torch_rng_draws=True, recompile_limit=64
        ):
            for eager, eager_next, out, out_next in seeded_calls(
                fn, compiled, range(calls), lambda: (x,)
            ):
                self.assertEqual(out.shape, eager.shape)
                self.assertEqual(out, eager)
                self.assertEqual(out_next, eager_next)
                outs.add((tuple(out.shape), torch.equal(out, x)))
        self.assertLessEqual(cnt.frame_count, max_frames)
        return outs

    def test_random_apply_branch(self):
        # both outcomes, one graph per outcome
        outs = self.check_calls(random_horizontal_flip, 30, 2)
        self.assertEqual(len(outs), 2)

    def test_random_choice(self):
        self.check_calls(rand_augment_choice, 30, 3)

    @torch._inductor.config.patch(fallback_random=False)
    def test_random_choice_inductor(self):
        # Hoisted draws run eagerly in the prologue, so the stream matches
        # eager on inductor too, without fallback_random.
        cnt = CompileCounterWithBackend("inductor")
        self.check_calls(rand_augment_choice, 8, 3, cnt)

    def test_random_resized_crop_loop(self):
        self.check_calls(random_resized_crop, 5, 5)

    def test_brightness_factor(self):
        # Continuous draws are specialized per value for now: one graph per call.
        self.check_calls(color_jitter_brightness, 5, 5)


class HoistTorchRngScalarsOffTests(torch._dynamo.test_case.TestCase):
    def test_flag_off_still_breaks(self):
        compiled = torch.compile(random_horizontal_flip, backend="eager", fullgraph=True)
        with self.assertRaises(torch._dynamo.exc.Unsupported):
            compiled(torch.rand(3, 4, 5))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
