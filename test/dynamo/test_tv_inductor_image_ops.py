# Owner(s): ["module: dynamo"]
"""Inductor on CPU for torchvision-style image resampling (rotate via
affine_grid + grid_sample): the generated code keeps ATen's vectorized
bilinear grid sampler and computes the affine grid in one long-rowed
vectorizable kernel; compiled output equals eager."""

import torch
import torch._dynamo.test_case
import torch.nn.functional as F
from torch._inductor.utils import run_and_get_code

from tv_dispatch_model import make_image
from tv_model_kernels import rotate, rotate_image


def _theta(n, dtype=torch.float32):
    base = torch.tensor([[0.8, -0.4, 0.1], [0.5, 0.9, -0.2]], dtype=dtype)
    return torch.stack([base + 0.05 * i for i in range(n)])


class InductorImageResamplingCodegenTests(torch._dynamo.test_case.TestCase):
    def test_bilinear_grid_sample_keeps_aten_kernel(self):
        image = make_image(torch.float32, (3, 16, 20))
        compiled = torch.compile(rotate_image, backend="inductor", fullgraph=True)
        out, (code,) = run_and_get_code(compiled, image, 30.0)
        self.assertIn("aten.grid_sampler_2d.default(", code)
        self.assertEqual(out, rotate_image(image, 30.0), atol=1e-4, rtol=1e-4)

    def test_affine_grid_kernel_runs_along_rows(self):
        # The grid is computed over (N, H, 2 * W), not (N * H * W, 2).
        def fn(theta):
            return F.affine_grid(theta, [2, 3, 16, 20], align_corners=False)

        theta = _theta(2)
        out, (code,) = run_and_get_code(
            torch.compile(fn, backend="inductor", fullgraph=True), theta
        )
        self.assertIn("static_cast<int64_t>(40L)", code)
        self.assertNotIn("<static_cast<int64_t>(2L); x1+=static_cast<int64_t>(8L)", code)
        self.assertEqual(out, fn(theta), atol=1e-6, rtol=1e-6)


class InductorImageResamplingCorrectnessTests(torch._dynamo.test_case.TestCase):
    def _check(self, fn, *args, atol=1e-5, rtol=1e-5):
        expected = fn(*args)
        torch._dynamo.reset()
        out = torch.compile(fn, backend="inductor", fullgraph=True, dynamic=False)(*args)
        self.assertEqual(out.dtype, expected.dtype)
        self.assertEqual(out.shape, expected.shape)
        self.assertEqual(out, expected, atol=atol, rtol=rtol)

    def test_affine_grid_matches_eager(self):
        cases = ((True, 1, 1, 1), (False, 1, 1, 7), (True, 2, 5, 1), (False, 2, 9, 13))
        for align_corners, n, h, w in cases:
            with self.subTest(align_corners=align_corners, size=(n, h, w)):
                def fn(theta, size=[n, 3, h, w], ac=align_corners):
                    return F.affine_grid(theta, size, align_corners=ac)

                self._check(fn, _theta(n), atol=1e-6, rtol=1e-6)

    def test_affine_grid_float64_and_volumetric(self):
        def fn2d(theta):
            return F.affine_grid(theta, [2, 1, 6, 5], align_corners=False)

        self._check(fn2d, _theta(2, torch.float64), atol=1e-12, rtol=1e-12)
        theta3d = torch.tensor([[[0.9, 0.1, 0.0, 0.1], [0.0, 1.0, 0.2, 0.0], [0.1, 0.0, 1.1, -0.1]]])

        def fn3d(theta):
            return F.affine_grid(theta, [1, 1, 3, 4, 5], align_corners=True)

        self._check(fn3d, theta3d, atol=1e-6, rtol=1e-6)

    def test_rotate_matches_eager(self):
        # Through the functional, edge sizes, batch, and the uint8 path
        # (float sampling then round/clamp/cast fused around the ATen call).
        self._check(rotate, make_image(torch.float32, (2, 3, 17, 23)), 30.0, atol=1e-4, rtol=1e-4)
        self._check(rotate_image, make_image(torch.uint8, (3, 12, 15)), 30.0, atol=1, rtol=0)

    def test_grid_sample_other_modes_and_dtypes(self):
        image = make_image(torch.float32, (1, 2, 7, 9))
        grid = torch.rand(1, 5, 6, 2) * 2.4 - 1.2
        for mode, padding in (("bilinear", "reflection"), ("nearest", "zeros"), ("bicubic", "border")):
            with self.subTest(mode=mode, padding=padding):
                def fn(a, g, mode=mode, padding=padding):
                    return F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=False)

                self._check(fn, image, grid, atol=1e-4, rtol=1e-4)
        self._check(
            lambda a, g: F.grid_sample(a, g, align_corners=True),
            image.double(), grid.double(), atol=1e-10, rtol=1e-10,
        )


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
