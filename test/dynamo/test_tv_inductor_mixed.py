# Owner(s): ["module: dynamo"]
"""
uint8 images converted to float through Inductor's CPU backend: the kernels of
torchvision's to_dtype(image, torch.float32, scale=True), and of the tail of a
preprocessing pipeline (horizontal_flip -> to_dtype -> normalize).

These kernels mix 8-bit and float values, so they are tiled at the float
vector width and their 8-bit loads fill a quarter of a Vectorized<uint8_t>.
The codegen tests pin the one-instruction quarter-width load for them (no
partial ``loadu(ptr, count)``, which goes through a temporary buffer on AVX2),
and, for a flipped image on AVX2, a reversed load of the eight bytes at once
instead of a byte-by-byte gather (AVX-512 and AMX keep the gather: each test
states what it expects on every x86 ISA, see ``for_each_x86_isa``); the other tests check that compiled equals
eager exactly, in values and dtype, at edge sizes and for non-contiguous inputs.
"""

import torch
import torch._dynamo.test_case

from tv_dispatch_model import InductorVsEagerMixin, for_each_x86_isa, make_image


MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def _image(*shape, dtype=torch.uint8):
    return make_image(dtype, shape)


def _to_float(x):
    # torchvision's to_dtype(image, torch.float32, scale=True) on uint8
    return x.to(torch.float32).mul_(1.0 / 255.0)


def _flip_to_float_normalize(x):
    # horizontal_flip -> to_dtype -> normalize, fused into one kernel
    out = x.flip(-1).to(torch.float32).mul_(1.0 / 255.0)
    mean = torch.as_tensor(MEAN, dtype=out.dtype).view(-1, 1, 1)
    std = torch.as_tensor(STD, dtype=out.dtype).view(-1, 1, 1)
    return (out - mean) / std


def _flip_to_float(x):
    return x.flip(-1).to(torch.float32) * 0.5


def _flip_both_to_float_normalize(x):
    return _flip_to_float_normalize(x.flip(-2))


def _mixed_uint8_math(x, y):
    # 8-bit arithmetic on quarter-filled vectors before the conversion, an
    # integer division (its unused divisor lanes must not trap), and a
    # conversion back to uint8
    f = ((x // y) + x).to(torch.float32) * 0.5
    return f, (x.to(torch.float32) * 0.75).round().to(torch.uint8)


class _CompiledVsEager(InductorVsEagerMixin):
    # static shapes unless a test asks otherwise: each edge width is its own kernel
    def check(self, fn, *args, dynamic=False):
        super().check(fn, *args, dynamic=dynamic)

@for_each_x86_isa
class InductorMixedUint8FloatCodegenTests(
    _CompiledVsEager, torch._dynamo.test_case.TestCase
):
    # 3 x 8 x 512: a multiple of every vector width, so the main loop has no
    # tail and every uint8 load is a quarter-width one.

    def test_to_float_uses_quarter_width_load(self):
        code = self.code(_to_float, _image(3, 8, 512))
        # on 2.13 the uint8 load is loadu(ptr, 8) (16 on AVX-512), which on
        # AVX2 fills a temporary array and memcpy's into it
        self.assertIn(
            "Vectorized<uint8_t>::loadu_one_fourth(in_ptr0 + static_cast<int64_t>(x0))",
            code,
        )
        self.assertNotIn("Vectorized<uint8_t>::loadu(in_ptr0", code)
        self.assertIn("at::vec::convert<float>(", code)

    def test_flip_to_float_normalize_uses_quarter_width_load(self):
        code = self.code(_flip_to_float_normalize, _image(3, 8, 512))
        # the reversed uint8 load is assembled in a local buffer (gathered, or
        # byte-swapped on AVX2), which is then loaded at quarter width, not with
        # loadu(tmpbuf, 8)
        self.assertRegex(
            code, r"Vectorized<uint8_t>::loadu_one_fourth\((tmpbuf\.data\(\)|&tmpbuf)\)"
        )
        self.assertNotIn("Vectorized<uint8_t>::loadu(tmpbuf.data(), ", code)


@for_each_x86_isa
class InductorReversedQuarterLoadCodegenTests(
    _CompiledVsEager, torch._dynamo.test_case.TestCase
):
    # horizontal_flip -> to_dtype: the uint8 load has stride -1 along the tiling
    # dim and fills a quarter of its vector: eight lanes on AVX2, sixteen on
    # AVX-512 and AMX.

    def _assert_reversed_block_load(self, code, cpp_type):
        if self.vec_isa == "avx2":
            # one 8-byte load of the block, byte-swapped, loaded at quarter width ...
            self.assertIn("std::memcpy(&tmpbuf, in_ptr0 + ", code)
            self.assertIn(f"Vectorized<{cpp_type}>::loadu_one_fourth(&tmpbuf)", code)
            # ... instead of a gather of one byte per lane into a buffer
            self.assertNotRegex(code, r"tmpbuf\[\w+\] = in_ptr0\[")
        else:
            # sixteen lanes are no single scalar: the bytes are gathered into a
            # buffer, which is then loaded at quarter width (patch 14's load)
            self.assertRegex(code, r"tmpbuf\[\w+\] = in_ptr0\[")
            self.assertIn(f"Vectorized<{cpp_type}>::loadu_one_fourth(tmpbuf.data())", code)
            self.assertNotIn("std::memcpy(&tmpbuf, in_ptr0 + ", code)

    def test_flip_to_float_normalize(self):
        x = _image(3, 8, 512)
        # code() also checks the output against eager
        self._assert_reversed_block_load(self.code(_flip_to_float_normalize, x), "uint8_t")

    def test_int8_flip_to_float(self):
        x = _image(2, 4, 64, dtype=torch.int8)
        self._assert_reversed_block_load(self.code(_flip_to_float, x), "int8_t")


class InductorMixedUint8FloatCorrectnessTests(
    _CompiledVsEager, torch._dynamo.test_case.TestCase
):
    def test_to_float_edge_widths(self):
        for width in (1, 7, 31, 33, 500):
            with self.subTest(width=width):
                self.check(_to_float, _image(3, 5, width))

    def test_flip_to_float_normalize_edge_widths(self):
        for width in (1, 7, 31, 33, 500):
            with self.subTest(width=width):
                self.check(_flip_to_float_normalize, _image(3, 5, width))

    def test_non_contiguous_inputs(self):
        hwc = _image(5, 70, 3).permute(2, 0, 1)  # channels-last view
        self.check(_to_float, hwc)
        cropped = _image(3, 9, 101)[:, 1:-1, 3:-2]
        self.check(_to_float, cropped)
        self.check(_flip_to_float_normalize, cropped)
        self.check(_flip_to_float_normalize, _image(3, 9, 202)[..., ::2])

    def test_int8_to_float(self):
        self.check(_to_float, _image(2, 3, 70, dtype=torch.int8))

    def test_flips_to_float(self):
        for width in (8, 16, 37, 224):
            with self.subTest(width=width):
                self.check(_flip_to_float, _image(2, 3, width, dtype=torch.int8))
                self.check(_flip_both_to_float_normalize, _image(3, 5, width))

    def test_mixed_uint8_math(self):
        x = _image(3, 4, 67)
        y = _image(3, 4, 67).clamp_(min=1)
        self.check(_mixed_uint8_math, x, y)

    def test_dynamic_shapes(self):
        for width in (33, 500):
            with self.subTest(width=width):
                self.check(_flip_to_float_normalize, _image(3, 4, width), dynamic=True)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
