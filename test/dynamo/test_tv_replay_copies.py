# Owner(s): ["module: dynamo"]
"""What a guard's replay of hoisted draws computes on every call.

With ``hoist_torch_rng_draws``, RandomResizedCrop's ``torch.empty(1).uniform_(a, b).item()``
is traced as a copy of the prologue's draw into the fresh ``torch.empty(1)``, and each
answer the guard checks on the draws (``0 < w <= width``, the crop's bounds) is a program
replaying the graph's steps from the draws: each allocated that tensor and copied the draw
into it, two tensor operations per draw read, per answer, per call (17 of the 40 tensor
operations of the classification stream's guard). The programs now read the draw itself
where the copy's values are the draw's. Counted here: the C functions that the guard
check of a warm call makes; every call still equals eager, RNG stream included.
"""

import sys

import torch
import torch._dynamo.test_case
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from test_tv_random_written_draws import assert_hoisted_calls_match_eager, scaled_uniform


def drawn_scale(image):
    # RandomResizedCrop's draw of the crop's area, and a decision on it
    scale = torch.empty(1).uniform_(0.08, 1.0).item()
    if scale * image.shape[-1] < 2:
        return image * 0
    return image * scale


class CountedCalls:
    """The names of the C functions Python code calls in this block (sys.setprofile).

    A TorchFunctionMode would see tensor operations too, but Dynamo guards the mode
    stack: no guard passes inside one."""

    def __enter__(self):
        self.names = []

        def profile(frame, event, arg):
            if event == "c_call":
                self.names.append(getattr(arg, "__name__", None))

        self.previous = sys.getprofile()
        sys.setprofile(profile)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self.previous)


class GuardCallsMixin:
    def guard_ops(self, fn, image):
        """Compile fn with the draws hoisted; the tensor ops of one passing guard check."""
        with torch._dynamo.config.patch(hoist_torch_rng_draws=True):
            assert_hoisted_calls_match_eager(self, fn, image, range(8))
            # one entry per outcome of the decision: the ops of the one that passes
            passed = []
            for entry in _debug_get_cache_entry_list(fn.__code__):
                torch.manual_seed(0)
                with CountedCalls() as calls:
                    if entry.guard_manager.check({"image": image}):
                        passed.append(calls.names)
        self.assertEqual(len(passed), 1)
        return passed[0]


class ReplayCopiesTests(GuardCallsMixin, torch._dynamo.test_case.TestCase):
    def test_a_decision_reads_the_draw_not_a_copy(self):
        ops = self.guard_ops(drawn_scale, torch.ones(3, 4, 5))
        # the draw itself (empty + uniform_), and the decision reads it
        self.assertEqual(ops.count("empty"), 1)
        self.assertNotIn("copy_", ops)


class ReplayCopiesKeptTests(GuardCallsMixin, torch._dynamo.test_case.TestCase):
    """Where the copy is not the draw's values (written into before it is read), the
    program still makes it."""

    def test_a_copy_written_into_is_kept(self):
        ops = self.guard_ops(scaled_uniform, torch.ones(3, 4, 5))
        self.assertIn("copy_", ops)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
