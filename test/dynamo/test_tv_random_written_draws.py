# Owner(s): ["module: dynamo"]
"""A hoisted draw the code writes into before reading it.

With ``hoist_torch_rng_draws``, the ``.item()`` of a hoisted draw is an unbacked symbol
given what is known of the draw: ``uniform_(a, b)`` lies in [a, b], ``randint(low, high)``
in [low, high). That holds of the values drawn, not of the tensor once the code has
written into it: ``torch.empty(1).uniform_(0, 1).mul_(4).item()`` can be 3. The trace
gave the symbol the draw's range (or bounds) anyway, so the compiled call failed a runtime
assertion (``zuf0 <= 1``; for randint ``u0 <= 4``) where eager went on. The range and
bounds now apply only while nothing in the graph has written into the draw's storage.
Every call is compared with eager from the same seed: output, and the next draw after it.
"""

import torch
import torch._dynamo.test_case

from tv_model_random import seeded_calls


def scaled_uniform(image):
    # the draw, written into, then read: RandomErasing-style value arithmetic
    shift = torch.empty(1).uniform_(0.0, 1.0)
    shift.mul_(4)
    if shift.item() < 1:
        return image - 1
    return image + shift


def shifted_randint(image):
    # a randint draw moved past its bound before it is read
    k = torch.randint(0, 5, (1,))
    k.add_(10)
    if k.item() >= 10:
        return image + k
    return image * 0


def assert_hoisted_calls_match_eager(test, fn, image, seeds):
    """fn compiled fullgraph (with the draws hoisted, by the caller) equals eager from
    each seed: output, and the next draw after it."""
    compiled = torch.compile(fn, backend="eager", fullgraph=True)
    for eager, eager_next, out, out_next in seeded_calls(
        fn, compiled, seeds, lambda: (image,)
    ):
        test.assertEqual(out, eager)
        test.assertEqual(out_next, eager_next)


class WrittenDrawTests(torch._dynamo.test_case.TestCase):
    def check(self, fn):
        with torch._dynamo.config.patch(hoist_torch_rng_draws=True):
            assert_hoisted_calls_match_eager(self, fn, torch.ones(3, 4, 5), range(12))

    def test_a_uniform_draw_written_into(self):
        self.check(scaled_uniform)

    def test_a_randint_draw_written_into(self):
        self.check(shifted_randint)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
