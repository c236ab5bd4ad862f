# Owner(s): ["module: inductor"]
"""
Padding by amounts that are dynamic, as torchvision's RandomZoomOut does for
each image (``pad(image, [left, top, right, bottom], fill)`` with drawn
integers), compiled with Inductor and dynamic shapes.

Inductor checks the padded output's stride order by asking whether one
symbolic stride divides another, as ``Eq(left % right, 0)``; sympy rewrites
``Mod(a, a * c)`` as ``a * Mod(1, c)`` with ``c`` an exact quotient ``x / y``,
i.e. ``x * y**-1``, which value-range analysis raised on ("Exponent must be
non-negative") and a guard could not print: the compile failed.
"""

import torch
import torch._dynamo.test_case

from tv_dispatch_model import InductorVsEagerMixin, make_image


def zoom_out(image, left, top, right, bottom):
    # torchvision's pad_image for a constant fill: pad the batched view, then
    # reshape back to the image's own dims
    h, w = image.shape[-2:]
    padded = torch.constant_pad_nd(image.unsqueeze(0), [left, right, top, bottom], 123.0)
    return padded.reshape(image.shape[0], h + top + bottom, w + left + right)


class SymbolicStrideTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_pad_by_dynamic_amounts(self):
        image = make_image(torch.uint8, (3, 20, 30))
        for pads in [(1, 2, 3, 4), (5, 6, 7, 8), (0, 9, 2, 1)]:
            with self.subTest(pads=pads):
                self.check(zoom_out, image, *pads, dynamic=True)

    def test_pad_by_dynamic_amounts_float(self):
        image = make_image(torch.float32, (3, 11, 7))
        self.check(zoom_out, image, 2, 0, 3, 1, dynamic=True)


class StaticStrideTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_static_pads_keep_their_layout(self):
        # static shapes: strides are numbers, divisibility is arithmetic
        self.check(zoom_out, make_image(torch.uint8, (3, 20, 30)), 1, 2, 3, 4, dynamic=False)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
