# Owner(s): ["module: inductor"]
"""Inductor over several image sizes: automatic dynamic shapes keep it to two graphs.

The first call compiles for its static size; the second size marks the changed
dimensions dynamic and compiles once more; every later size reuses that graph.
These tests pin that for the image ops the series changes under inductor (the
antialiased resize of a crop, the depthwise blur, equalize's histogram, and the
pipeline through the functionals), with compiled equal to eager at every size.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounterWithBackend

from tv_dispatch_model import equalize, InductorVsEagerMixin, make_image
from tv_model_kernels import gaussian_blur, pipeline_functionals, resized_crop

# Each at least 310 x 420, the crop the pipeline takes.
SIZES = [(3, 400, 500), (3, 320, 440), (3, 350, 470), (3, 480, 640), (3, 331, 421)]


def _resized_crop(image):
    return resized_crop(image, 10, 20, 300, 400, [224, 224], antialias=True)


def _blur(image):
    return gaussian_blur(image, [5, 5], [1.5, 1.5])


class InductorImageSizeRecompileTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    def check_sizes(self, fn, dtype, **tolerance):
        counter = CompileCounterWithBackend("inductor")
        compiled = torch.compile(fn, backend=counter, fullgraph=True)
        for size in SIZES:
            with self.subTest(size=size):
                image = make_image(dtype, size)
                self.assertMatchesEager(compiled(image), fn(image), **tolerance)
        self.assertEqual(counter.frame_count, 2)

    def test_resized_crop_uint8(self):
        self.check_sizes(_resized_crop, torch.uint8)

    def test_gaussian_blur_float32(self):
        # A sum of kernel taps in another order than mkldnn's (test_torchinductor's tolerance).
        self.check_sizes(_blur, torch.float32, atol=6e-5, rtol=1e-3)

    def test_equalize_uint8(self):
        self.check_sizes(equalize, torch.uint8)

    def test_pipeline_through_functionals(self):
        self.check_sizes(pipeline_functionals, torch.uint8, atol=None, rtol=None)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
