# Owner(s): ["module: inductor"]
"""Inductor and ATen's antialiased uint8 resize on CPU, as torchvision's resized_crop uses it.

``resized_crop`` slices the image and resizes the view with ``antialias=True``. Inductor
keeps ``aten._upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa`` as fallbacks to ATen,
whose uint8 kernels clone an input that is neither contiguous nor channels-last
contiguous with a slow element-wise copy. The first class pins that inductor hands those
kernels a dense copy of such an input instead (made in the memory format the op's output
takes); the second checks that everything else is passed through untouched, and that
compiled equals eager bit for bit (values, dtype, strides) over edge sizes.
"""

import re

import torch
import torch.nn.functional as nnF
from torch._dynamo.test_case import TestCase

from tv_dispatch_model import InductorVsEagerMixin, for_each_x86_isa


def _image(*shape: int, dtype: torch.dtype = torch.uint8) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(shape))
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=dtype, generator=g)
    return torch.rand(shape, dtype=dtype, generator=g)


def resized_crop_bilinear(img: torch.Tensor) -> torch.Tensor:
    crop = img[..., 10:310, 20:420]
    return nnF.interpolate(crop, size=[224, 224], mode="bilinear", antialias=True, align_corners=False)


def resized_crop_bicubic(img: torch.Tensor) -> torch.Tensor:
    crop = img[..., 10:310, 20:420]
    return nnF.interpolate(crop, size=[224, 224], mode="bicubic", antialias=True, align_corners=False)


def resize_bilinear(img: torch.Tensor) -> torch.Tensor:
    return nnF.interpolate(img, size=[224, 224], mode="bilinear", antialias=True, align_corners=False)


def _upsample_call_arg(code: str, op: str) -> str:
    """The first argument of the generated call of ``op``."""
    calls = re.findall(rf"torch\.ops\.aten\.{op}\.default\((\w+)", code)
    if len(calls) != 1:
        raise AssertionError(f"expected one call of {op} in:\n{code}")
    return calls[0]


@for_each_x86_isa
class AntialiasResizeDenseInputTests(InductorVsEagerMixin, TestCase):
    """A strided uint8 input reaches ATen's antialias kernels as a dense buffer."""

    def assertCopiedInput(self, code: str, op: str) -> None:
        # The argument is a buffer inductor wrote, not a reinterpret_tensor of the input.
        self.assertRegex(_upsample_call_arg(code, op), r"^buf\d+$")

    def test_cropped_image_bilinear(self):
        img = _image(1, 3, 400, 500)
        code = self.code(resized_crop_bilinear, img)
        self.assertCopiedInput(code, "_upsample_bilinear2d_aa")
        self.assertIn("(1, 3, 300, 400), (360000, 120000, 400, 1), torch.uint8", code)

    def test_cropped_image_bicubic(self):
        img = _image(1, 3, 400, 500)
        code = self.code(resized_crop_bicubic, img)
        self.assertCopiedInput(code, "_upsample_bicubic2d_aa")

    def test_cropped_channels_last_image_stays_channels_last(self):
        # ATen's output of a channels-last-ordered input is channels-last, so is the copy.
        img = _image(2, 4, 400, 500).contiguous(memory_format=torch.channels_last)
        code = self.code(resized_crop_bilinear, img)
        self.assertCopiedInput(code, "_upsample_bilinear2d_aa")
        self.assertIn("(2, 4, 300, 400), (480000, 1, 1600, 4), torch.uint8", code)

    def test_every_other_pixel(self):
        def fn(img):
            return nnF.interpolate(img[..., ::2, ::2], size=[37, 53], mode="bilinear", antialias=True)

        img = _image(1, 3, 120, 90)
        self.assertCopiedInput(self.code(fn, img), "_upsample_bilinear2d_aa")


@for_each_x86_isa
class AntialiasResizeLayoutControlTests(InductorVsEagerMixin, TestCase):
    """Dense and non-uint8 inputs pass through; compiled equals eager on edge sizes."""

    def test_contiguous_image_is_not_copied(self):
        img = _image(1, 3, 400, 500)
        self.assertEqual(_upsample_call_arg(self.code(resize_bilinear, img), "_upsample_bilinear2d_aa"), "arg0_1")

    def test_channels_last_image_is_not_copied(self):
        img = _image(1, 3, 400, 500).contiguous(memory_format=torch.channels_last)
        self.assertEqual(_upsample_call_arg(self.code(resize_bilinear, img), "_upsample_bilinear2d_aa"), "arg0_1")

    def test_float_crop_is_not_copied(self):
        # ATen's float kernels take strided input as is.
        img = _image(1, 3, 400, 500, dtype=torch.float32)
        code = self.code(resized_crop_bilinear, img)
        self.assertEqual(_upsample_call_arg(code, "_upsample_bilinear2d_aa"), "reinterpret_tensor")

    def test_dynamic_shapes(self):
        # Symbolic sizes and strides: the copy's memory format is decided symbolically.
        for img in (
            _image(1, 3, 400, 500),
            _image(2, 4, 400, 500).contiguous(memory_format=torch.channels_last),
        ):
            with self.subTest(strides=img.stride()):
                torch._dynamo.reset()
                self.check(resized_crop_bilinear, img, dynamic=True)

    def test_edge_sizes(self):
        cases = [
            ((1, 1, 9, 7), (slice(1, 8), slice(2, 6)), [1, 1], "bilinear", False),  # to one pixel
            ((1, 3, 9, 7), (slice(1, 8), slice(2, 6)), [13, 11], "bicubic", False),  # upsampling
            ((2, 4, 31, 17), (slice(0, 31), slice(1, 16)), [5, 30], "bilinear", True),  # batch, RGBA
            ((1, 2, 64, 64), (slice(3, 61), slice(0, 64)), [63, 64], "bicubic", True),  # one axis kept
            ((1, 5, 40, 30), (slice(0, 39), slice(0, 29)), [20, 15], "bilinear", False),  # 5 channels
        ]
        for shape, (rows, cols), size, mode, align_corners in cases:
            with self.subTest(shape=shape, size=size, mode=mode, align_corners=align_corners):
                torch._dynamo.reset()

                def fn(x):
                    crop = x[..., rows, cols]  # noqa: B023
                    return nnF.interpolate(crop, size=size, mode=mode, antialias=True, align_corners=align_corners)  # noqa: B023

                self.check(fn, _image(*shape))

if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
