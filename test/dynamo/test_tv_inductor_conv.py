# Owner(s): ["module: dynamo"]
"""Inductor on CPU for torchvision-style depthwise convolutions (gaussian_blur:
a reflection pad then conv2d(..., groups=channels) with a small kernel): the
generated code computes the convolution as one fused, vectorized kernel, with
no extern convolution and no channels-last copies; compiled output equals
eager within convolution tolerance, also for the configurations that keep
the extern convolution."""

import torch
import torch._dynamo.test_case
import torch.nn.functional as F
from torch._inductor.utils import fresh_cache

from tv_dispatch_model import InductorVsEagerMixin, for_each_x86_isa, make_image
from tv_model_kernels import gaussian_blur, gaussian_blur_image


# Tolerance of test_torchinductor.py's convolution tests for float32 (a sum of
# kernel-tap products is not accumulated in mkldnn's order); float64 uses
# assertEqual's default for its dtype.
def _tolerance(dtype):
    return dict(atol=6e-5, rtol=1e-3) if dtype == torch.float32 else dict(atol=None, rtol=None)


def _depthwise(x, w):
    return F.conv2d(x, w, groups=x.shape[-3])


class _ConvCheck(InductorVsEagerMixin):
    def setUp(self):
        super().setUp()
        self.enterContext(fresh_cache())

    def check_close(self, fn, *args, dynamic=False):
        """The generated code, with the output checked against eager's within _tolerance."""
        torch._dynamo.reset()
        return self.code(fn, *args, dynamic=dynamic, **_tolerance(args[0].dtype))


@for_each_x86_isa
class InductorDepthwiseConvCodegenTests(_ConvCheck, torch._dynamo.test_case.TestCase):
    def assertOneFusedKernel(self, code, ctype):
        self.assertNotIn("convolution(", code)
        self.assertNotIn("mkldnn", code)
        self.assertEqual(code.count("async_compile.cpp_pybinding("), 1)
        # Vectorized<float> or, wider than one register, VectorizedN<double, 2>
        self.assertRegex(code, rf"at::vec::VectorizedN?<{ctype}(,\s*\d+)?>::loadu\(")

    def test_gaussian_blur_is_one_fused_kernel(self):
        image = make_image(torch.float32, (3, 40, 50))
        code = self.check_close(gaussian_blur_image, image, [5, 5], [1.5, 1.5])
        # the pad, the gaussian weights and the conv: no layout change back
        self.assertOneFusedKernel(code, "float")

    def test_gaussian_blur_functional_is_one_fused_kernel(self):
        image = make_image(torch.float32, (2, 3, 33, 47))
        code = self.check_close(gaussian_blur, image, [3, 5], [0.8, 1.2])
        self.assertOneFusedKernel(code, "float")

    def test_depthwise_conv2d_is_one_fused_kernel(self):
        for dtype, ctype in ((torch.float32, "float"), (torch.float64, "double")):
            with self.subTest(dtype=dtype):
                x = make_image(dtype, (2, 4, 21, 30))
                w = make_image(dtype, (4, 1, 3, 3), seed=1)
                code = self.check_close(_depthwise, x, w)
                self.assertOneFusedKernel(code, ctype)


class InductorDepthwiseConvCorrectnessTests(_ConvCheck, torch._dynamo.test_case.TestCase):
    def test_gaussian_blur_matches_eager(self):
        cases = (
            ((3, 400, 500), [5, 5], [1.5, 1.5], torch.float32),
            ((1, 17, 23), [5, 5], None, torch.float32),
            ((4, 9, 8), [3, 7], [0.7, 2.0], torch.float32),
            ((4, 9, 8), [3, 7], [0.7, 2.0], torch.float64),
            # images barely bigger than the pad
            ((2, 3, 5, 5), [5, 5], [1.0, 1.0], torch.float32),
            ((2, 3, 5, 5), [5, 5], [1.0, 1.0], torch.float64),
            ((3, 3, 3), [3, 3], [1.0, 1.0], torch.float32),
            ((1, 2, 12), [3, 1], [1.0, 1.0], torch.float32),
        )
        for size, kernel_size, sigma, dtype in cases:
            with self.subTest(size=size, kernel_size=kernel_size, dtype=dtype):
                image = make_image(dtype, size)
                self.check_close(gaussian_blur_image, image, kernel_size, sigma)

    def test_gaussian_blur_uint8_matches_eager(self):
        image = make_image(torch.uint8, (3, 31, 29))
        # round() of a float that differs in the last bits can land one apart
        self.code(gaussian_blur_image, image, [5, 5], [1.5, 1.5], atol=1, rtol=0)

    def test_gaussian_blur_dynamic_shapes_match_eager(self):
        image = make_image(torch.float32, (3, 26, 37))
        self.check_close(gaussian_blur_image, image, [5, 5], [1.5, 1.5], dynamic=True)

    def test_depthwise_conv2d_matches_eager(self):
        cases = (
            ((1, 1, 5, 5), (1, 1, 5, 5), torch.float32),  # a single output pixel
            ((1, 1, 5, 5), (1, 1, 5, 5), torch.float64),
            ((2, 3, 11, 8), (3, 1, 3, 5), torch.float32),
            ((2, 3, 11, 8), (3, 1, 3, 5), torch.float64),
            ((1, 4, 7, 33), (4, 1, 7, 7), torch.float32),
            ((3, 2, 6, 9), (2, 1, 1, 3), torch.float32),
            ((4, 20, 20), (4, 1, 5, 5), torch.float32),  # unbatched
        )
        for xs, ws, dtype in cases:
            with self.subTest(x=xs, w=ws, dtype=dtype):
                x = make_image(dtype, xs)
                w = make_image(dtype, ws, seed=1) - 0.5
                self.check_close(_depthwise, x, w)

    def test_depthwise_conv2d_strided_inputs_match_eager(self):
        x = make_image(torch.float32, (2, 3, 16, 24))
        w = make_image(torch.float32, (3, 1, 3, 3), seed=1)
        for arg in (
            x.contiguous(memory_format=torch.channels_last),
            x[..., ::2],
            x.transpose(-1, -2),
        ):
            with self.subTest(strides=arg.stride()):
                self.check_close(_depthwise, arg, w)
        # an expanded (stride 0) weight, as gaussian_blur builds it
        self.check_close(_depthwise, x, w[:1].expand(3, 1, 3, 3))

    def test_other_convolutions_keep_extern_kernel(self):
        # configurations the pointwise lowering does not take
        x = make_image(torch.float32, (2, 4, 19, 22))
        w3 = make_image(torch.float32, (4, 1, 3, 3), seed=1)
        bias = make_image(torch.float32, (4,), seed=2)
        cases = {
            "stride": lambda x, w: F.conv2d(x, w, groups=4, stride=2),
            "dilation": lambda x, w: F.conv2d(x, w, groups=4, dilation=2),
            "padding": lambda x, w: F.conv2d(x, w, groups=4, padding=1),
            "bias": lambda x, w: F.conv2d(x, w, bias, groups=4),
            "large kernel": lambda x, w: F.conv2d(
                x, w.repeat(1, 1, 3, 3), groups=4
            ),
            "groups < channels": lambda x, w: F.conv2d(x, w.view(2, 2, 3, 3), groups=2),
            "channel multiplier": lambda x, w: F.conv2d(x, w.repeat(2, 1, 1, 1), groups=4),
            "transposed": lambda x, w: F.conv_transpose2d(x, w, groups=4),
        }
        for name, fn in cases.items():
            with self.subTest(name):
                code = self.check_close(fn, x, w3)
                self.assertIn("convolution(", code)

    def test_conv1d_and_conv3d_keep_extern_kernel(self):
        x1 = make_image(torch.float32, (2, 3, 30))
        w1 = make_image(torch.float32, (3, 1, 5), seed=1)
        self.assertIn("convolution(", self.check_close(_depthwise_1d, x1, w1))
        x3 = make_image(torch.float32, (1, 2, 6, 7, 8))
        w3 = make_image(torch.float32, (2, 1, 3, 3, 3), seed=1)
        self.assertIn("convolution(", self.check_close(_depthwise_3d, x3, w3))


def _depthwise_1d(x, w):
    return F.conv1d(x, w, groups=x.shape[1])


def _depthwise_3d(x, w):
    return F.conv3d(x, w, groups=x.shape[1])


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
