# Owner(s): ["module: dynamo"]
"""
Histogram equalization of uint8 images through Inductor's CPU backend:
torchvision's equalize kernel builds an int64 histogram with scatter_add_,
turns its cumsum into a lookup table and gathers the table at every pixel.

The codegen tests pin the generated C++ of those pieces: the int64 scatter_add_
is a generated loop (no aten.scatter_reduce_ fallback that materializes the
int64 index and a tensor of ones), a pointwise table that is gathered more
often than it has elements is computed once, and uint8 -> int64 widens through
int32 on x86.  The other tests check that compiled equals eager exactly, in
values, dtype, shape and strides, at edge sizes and with more than one thread.
"""

import re

import torch
import torch._dynamo.test_case
from torch._inductor import config as inductor_config

from tv_dispatch_model import equalize_image, InductorVsEagerMixin, for_each_x86_isa, make_image


def _image(*shape, dtype=torch.uint8, seed=0):
    return make_image(dtype, shape, seed)


def _histogram(image):
    # the histogram of equalize_image: int64 scatter_add_ of ones over the
    # widened pixel values, one row per channel
    flat = image.flatten(1).to(torch.int64)
    hist = flat.new_zeros(flat.shape[0], 256)
    return hist.scatter_add_(1, flat, torch.ones_like(flat))


def _histogram_of_values(image, values):
    # scatter_add_ of a computed int64 source, not a constant
    flat = image.flatten(1).to(torch.int64)
    hist = flat.new_zeros(flat.shape[0], 256)
    return hist.scatter_add_(1, flat, values * flat - 7)


def _lookup(a, b, step, index):
    # a lookup table computed from three inputs, gathered at many positions
    lut = (a - b).div(step, rounding_mode="floor").clamp(0, 255)
    return lut.gather(1, index)


def _widen(image):
    # 8-bit -> int64 conversions, with arithmetic that needs all 64 bits
    wide = image.to(torch.int64)
    return wide * 1_000_000_007 - 3, (wide + 1).to(torch.uint8)


class _ThreadsMixin(InductorVsEagerMixin):
    threads = 1

    def setUp(self):
        super().setUp()
        self._saved_threads = torch.get_num_threads()
        torch.set_num_threads(self.threads)

    def tearDown(self):
        torch.set_num_threads(self._saved_threads)
        super().tearDown()


@for_each_x86_isa
class Int64ScatterAddCodegenTests(_ThreadsMixin, torch._dynamo.test_case.TestCase):
    """An int64 scatter_add_ on CPU is a generated loop, not an aten fallback."""

    def test_int64_histogram_is_a_generated_loop(self):
        code = self.code(_histogram, _image(3, 40, 50))
        # on 2.13 every int64 scatter_add_ falls back to aten, after a
        # kernel that writes the widened index and a tensor of ones
        self.assertNotIn("aten.scatter_reduce_", code)
        self.assertNotIn("aten.scatter_add_", code)
        # with one thread the accumulation is a plain += into the histogram
        self.assertRegex(code, r"out_ptr0\[.*\] \+= ")

    def test_int64_scatter_add_of_values_is_a_generated_loop(self):
        image = _image(2, 9, 31)
        values = torch.arange(2 * 9 * 31, dtype=torch.int64).view(2, -1)
        code = self.code(_histogram_of_values, image, values)
        self.assertNotIn("aten.scatter_reduce_", code)

    def test_int64_histogram_atomic_add_with_threads(self):
        torch.set_num_threads(2)
        with inductor_config.patch({"cpp.fallback_scatter_reduce_sum": False}):
            code = self.code(_histogram, _image(3, 40, 50))
        self.assertNotIn("aten.scatter_reduce_", code)
        self.assertIn("atomic_add", code)

    def test_equalize_materializes_no_index(self):
        code = self.code(equalize_image, _image(3, 40, 50))
        self.assertNotIn("aten.scatter_reduce_", code)
        # the only int64 buffers are per channel (histogram, its cumsum, max);
        # 2.13 also allocates the 3 x 2000 widened index and ones
        self.assertIsNone(
            re.search(r"empty_strided_cpu\(\(3, 2000\), \(2000, 1\), torch\.int64\)", code)
        )
        self.assertIn("empty_strided_cpu((3, 256), (256, 1), torch.int64)", code)


@for_each_x86_isa
class GatherTableCodegenTests(_ThreadsMixin, torch._dynamo.test_case.TestCase):
    """A pointwise input that gather reads more often than it has elements is computed once."""

    def test_gathered_table_is_computed_once(self):
        g = torch.Generator().manual_seed(0)
        a = torch.randint(0, 10_000, (3, 256), generator=g)
        b = torch.randint(0, 100, (3, 256), generator=g)
        step = torch.tensor([[7], [1], [300]])
        index = torch.randint(0, 256, (3, 4096), generator=g)
        code = self.code(_lookup, a, b, step, index)
        # the table is computed into a buffer by a loop over its own 3 x 256
        # elements and the gather loads from it; 2.13 recomputes the floor
        # division (and gathers a and b lane by lane) for each of the 3 x 4096
        # outputs
        self.assertIn("empty_strided_cpu((3, 256), (256, 1), torch.int64)", code)
        self.assertIn("x1<static_cast<int64_t>(256L)", code)
        self.assertEqual(code.count("floor_divide_integral("), 1)


@for_each_x86_isa
class Int8ToInt64CodegenTests(_ThreadsMixin, torch._dynamo.test_case.TestCase):
    """8-bit -> int64 vectors widen through int32 on x86 (AVX2, AVX-512)."""

    def test_uint8_to_int64_widens_through_int32(self):
        code = self.code(lambda x: x.to(torch.int64) * 3 - 1, _image(3, 8, 64))
        # one instruction each on AVX2 and AVX-512; 2.13 emits the direct
        # convert<int64_t,2,uint8_t,1>, which converts lane by lane
        self.assertIn(
            "at::vec::convert<int64_t,2,int32_t,1>(at::vec::convert<int32_t,1,uint8_t,1>(",
            code,
        )
        self.assertNotIn("at::vec::convert<int64_t,2,uint8_t,1>", code)

    def test_int8_to_int64_widens_through_int32(self):
        code = self.code(
            lambda x: x.to(torch.int64) * 3 - 1, _image(3, 8, 64, dtype=torch.int8)
        )
        self.assertIn(
            "at::vec::convert<int64_t,2,int32_t,1>(at::vec::convert<int32_t,1,int8_t,1>(",
            code,
        )


class InductorScatterGatherTests(_ThreadsMixin, torch._dynamo.test_case.TestCase):
    # compiled equals eager bit for bit; these pass on 2.13 as well

    def test_histogram(self):
        for shape in [(1, 1, 1), (3, 7, 31), (2, 33, 17)]:
            self.check(_histogram, _image(*shape), dynamic=False)

    def test_histogram_constant_image(self):
        self.check(_histogram, torch.full((3, 5, 9), 200, dtype=torch.uint8))

    def test_histogram_of_values(self):
        image = _image(2, 9, 31)
        values = torch.arange(2 * 9 * 31, dtype=torch.int64).view(2, -1)
        self.check(_histogram_of_values, image, values)

    def test_equalize(self):
        for shape in [(1, 1, 1), (1, 1, 7), (3, 7, 31), (1, 33, 17)]:
            self.check(equalize_image, _image(*shape), dynamic=False)

    def test_equalize_dynamic(self):
        for shape in [(3, 7, 31), (2, 40, 50)]:
            self.check(equalize_image, _image(*shape), dynamic=True)

    def test_equalize_2d_and_batch(self):
        self.check(equalize_image, _image(37, 29), dynamic=False)
        self.check(equalize_image, _image(2, 3, 20, 30), dynamic=False)

    def test_equalize_constant_and_two_level_images(self):
        self.check(equalize_image, torch.full((3, 9, 13), 77, dtype=torch.uint8))
        two = (_image(3, 9, 13) > 127).to(torch.uint8) * 255
        self.check(equalize_image, two, dynamic=False)

    def test_equalize_non_contiguous(self):
        image = _image(3, 40, 50)
        self.check(equalize_image, image[:, 3:31, 5:44], dynamic=False)
        self.check(equalize_image, image.transpose(-1, -2), dynamic=False)

    def test_lookup(self):
        g = torch.Generator().manual_seed(0)
        a = torch.randint(0, 10_000, (3, 256), generator=g)
        b = torch.randint(0, 100, (3, 256), generator=g)
        step = torch.tensor([[7], [1], [300]])
        # gathered more often than the table has elements, and less often
        for n in (4096, 5):
            index = torch.randint(0, 256, (3, n), generator=g)
            self.check(_lookup, a, b, step, index, dynamic=False)

    def test_widen(self):
        for dtype in (torch.uint8, torch.int8):
            for shape in [(1, 1, 1), (3, 7, 31)]:
                self.check(_widen, _image(*shape, dtype=dtype), dynamic=False)


class InductorScatterGatherThreadsTests(
    _ThreadsMixin, torch._dynamo.test_case.TestCase
):
    threads = 2

    def test_equalize(self):
        for shape in [(1, 1, 1), (2, 3, 40, 50)]:
            self.check(equalize_image, _image(*shape), dynamic=False)

    def test_histogram_atomic_add(self):
        with inductor_config.patch({"cpp.fallback_scatter_reduce_sum": False}):
            self.check(_histogram, _image(4, 64, 64), dynamic=False)
            self.check(_histogram, torch.full((2, 64, 64), 9, dtype=torch.uint8))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
