# Owner(s): ["module: dynamo"]
"""A replay guard computes the frame's tensors a draw reads without entering contexts.

torchvision's RandomResizedCrop draws its ratio with ``torch.empty(1).uniform_(log_ratio[0],
log_ratio[1])``, ``log_ratio`` a tensor the frame reads. Under ``hoist_torch_rng_draws`` the
replay guard computes ``log_ratio[0]`` and ``log_ratio[1]`` again for every attempt of the
search, on every call, each inside ``torch._C._DisableTorchDispatch()`` and
``unset_fake_temporarily()``, which tracing needs (fake tensor mode is set) and a call
does not: entering them cost more than the two selects. They are now entered only when a
dispatch mode is set or an input tensor dispatches in Python.
"""

from unittest import mock

import torch
import torch._dynamo.test_case
from torch._subclasses.fake_tensor import unset_fake_temporarily

from test_tv_random_draws import SeededCallsMixin
from tv_model_random_draws import random_resized_crop_log_ratio


class ReplayFrameTensorsTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    @torch._dynamo.config.patch(hoist_torch_rng_draws=True, error_on_recompile=True)
    def test_cache_hits_enter_no_context(self):
        x = torch.rand(3, 16, 20)
        with mock.patch(
            "torch._subclasses.fake_tensor.unset_fake_temporarily", wraps=unset_fake_temporarily
        ) as unset:
            compiled = torch.compile(random_resized_crop_log_ratio, backend="eager", fullgraph=True)
            self.check_seeded(random_resized_crop_log_ratio, compiled, [0], lambda: (x,))
            tracing = unset.call_count
            # the same seed: the same path, a cache hit each time
            self.check_seeded(random_resized_crop_log_ratio, compiled, [0] * 5, lambda: (x,))
        self.assertGreater(tracing, 0)  # tracing needs it, and took the patched one
        self.assertEqual(unset.call_count, tracing)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
