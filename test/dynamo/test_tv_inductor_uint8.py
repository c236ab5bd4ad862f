# Owner(s): ["module: dynamo"]
"""
uint8 images through Inductor's CPU backend: elementwise kernels whose values
are all 8-bit, and torchvision's horizontal_flip (``image.flip(-1)``).

The codegen tests pin the vectorized form of the generated C++ (full-width
8-bit loads, a reversed vector load for the flip, in the main loop and in the
tail of a row); the other tests check that compiled equals eager exactly, in
values and dtype, at edge sizes.
"""

import torch
import torch._dynamo.test_case

from tv_dispatch_model import InductorVsEagerMixin, for_each_x86_isa


def _image(*shape, dtype=torch.uint8):
    g = torch.Generator().manual_seed(0)
    if dtype.is_floating_point:
        return torch.rand(shape, generator=g, dtype=dtype)
    info = torch.iinfo(dtype)
    low, high = max(info.min, -1000), min(info.max, 1000)
    return torch.randint(low, high + 1, shape, generator=g, dtype=dtype)


def _add_one(x):
    return x + 1


def _hflip(x):
    return x.flip(-1)


def _uint8_ops(x):
    # all-8-bit kernels: elementwise, a clamp, a flip, and a flip fused with math
    return x + 1, (x * 3).clamp(10, 100), x.flip(-1), x.flip(-1) - x


def _to_float(x):
    # torchvision's to_dtype(image, torch.float32, scale=True) on uint8
    return x.to(torch.float32).mul_(1.0 / 255.0)


def _flip_to_float(x):
    return x.flip(-1).to(torch.float32) * 2.0


@for_each_x86_isa
class InductorUint8VecCodegenTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    # 512 is a multiple of every vector width (32 lanes of uint8 on AVX2, 64 on
    # AVX-512), so the main loop has no tail and every access is a full vector.

    def test_uint8_elementwise_uses_full_width_loads(self):
        code = self.code(_add_one, _image(3, 8, 512))
        # on 2.13 the float-sized tiling factor loads and stores a quarter of
        # the vector with loadu(ptr, 8) / store(ptr, 8), through a memcpy
        self.assertNotIn(
            "Vectorized<uint8_t>::loadu(in_ptr0 + static_cast<int64_t>(x0), ", code
        )
        self.assertIn(
            "Vectorized<uint8_t>::loadu(in_ptr0 + static_cast<int64_t>(x0))", code
        )
        self.assertIn("store(out_ptr0 + static_cast<int64_t>(x0));", code)

    def test_uint8_hflip_is_a_reversed_vector_load(self):
        code = self.code(_hflip, _image(3, 8, 512))
        # on 2.13 the stride -1 load counts as non-contiguous and the kernel is
        # a scalar loop
        self.assertIn("at::vec::flip(at::vec::Vectorized<uint8_t>::loadu(", code)
        self.assertNotIn("tmpbuf", code)

    def test_float_hflip_is_a_reversed_vector_load(self):
        code = self.code(_hflip, _image(3, 8, 512, dtype=torch.float32))
        self.assertIn("at::vec::flip(at::vec::Vectorized<float>::loadu(", code)
        self.assertNotIn("tmpbuf", code)

    def test_double_hflip_reverses_the_vectors_too(self):
        # float64 spans two vectors at the float tiling factor: reverse the
        # lanes of each and their order
        code = self.code(_hflip, _image(3, 8, 512, dtype=torch.float64))
        self.assertIn("at::vec::VectorizedN<double,2>::loadu(", code)
        self.assertIn("at::vec::flip(tmpbuf[1 - i])", code)


@for_each_x86_isa
class InductorReversedTailLoadCodegenTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    # Widths whose rows end in a vectorized tail on AVX2 and AVX-512 alike: 500
    # bytes are 15 x 32 + 20 (7 x 64 + 52); 15 floats are 8 + 7 (on AVX-512, a
    # 15-lane tail alone).

    def test_uint8_hflip_tail_is_a_reversed_vector_load(self):
        code = self.code(_hflip, _image(3, 8, 500))
        # before: the tail gathers its bytes one by one into tmpbuf
        self.assertNotIn("tmpbuf", code)
        # the main loop and the tail load whole vectors from the image; only a
        # vector that would start before the image goes through the buffer
        self.assertEqual(code.count("at::vec::flip(at::vec::Vectorized<uint8_t>::loadu(in_ptr0 + "), 2)
        self.assertIn("std::memcpy(buffer.data() + ", code)
        self.assertIn("at::vec::flip(at::vec::Vectorized<uint8_t>::loadu(buffer.data()))", code)

    def test_float_hflip_tail_is_a_reversed_vector_load(self):
        code = self.code(_hflip, _image(3, 8, 15, dtype=torch.float32))
        self.assertNotIn("tmpbuf", code)
        self.assertIn("at::vec::flip(at::vec::Vectorized<float>::loadu(buffer.data()))", code)

    def test_dynamic_width_tail_is_a_reversed_vector_load(self):
        code = self.code(_hflip, _image(3, 8, 500), dynamic=True)
        self.assertNotIn("tmpbuf", code)
        self.assertIn("std::memcpy(buffer.data() + ", code)


@for_each_x86_isa
class InductorWiderLoadCodegenTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    # Only 8-bit full-vector loads drop the count: the other dtypes' counted
    # loadu(ptr, count) has a count == size() fast path, and upstream's codegen
    # tests pin that form (test_cpu_repro.py::test_vec_indirect_load_cse_cache).

    def _lanes(self):
        return 8 if self.vec_isa == "avx2" else 16

    def test_float_full_vector_load_keeps_its_count(self):
        code = self.code(_add_one, _image(3, 8, 512, dtype=torch.float32))
        self.assertIn(
            "Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), "
            f"static_cast<int64_t>({self._lanes()}))",
            code,
        )

    def test_indirect_int64_load_keeps_its_count(self):
        # an int64 gather in a float-tiled kernel: its buffer is loaded as a
        # VectorizedN<int64_t, 2> with the count
        def fn(x, idx):
            return x[idx] * 2.0

        x = _image(1000, dtype=torch.float32)
        idx = torch.randint(0, 1000, (512,), generator=torch.Generator().manual_seed(1))
        code = self.code(fn, x, idx)
        self.assertRegex(code, r"VectorizedN<int64_t,2>::loadu\(in_ptr0 \+ [^;]*, static_cast<int64_t>\(\d+\)\)")


class InductorReversedTailTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    # A flip's tail loads whole vectors where they fit inside the input, so the
    # lanes past the tail hold other elements of the input, not zeros: every
    # consumer of a tail must ignore them. Widths (for uint8 on AVX2): rows
    # shorter than a vector, whose tails read into the row before (17, 31), one
    # full vector plus a tail (50), and the 500; in each, the first
    # row's tail has no row before it and goes through the buffer.

    widths = (17, 31, 50, 500)

    def test_flip_tails_edge_widths(self):
        for dtype in (torch.uint8, torch.int8, torch.int32, torch.float32):
            for width in self.widths:
                with self.subTest(dtype=dtype, width=width):
                    self.check(lambda t: (t.flip(-1), t.flip(-1) + t), _image(3, 5, width, dtype=dtype))

    def test_flip_tails_reductions(self):
        for width in self.widths:
            with self.subTest(width=width):
                x = _image(3, 5, width)
                self.check(lambda t: (t.flip(-1).amax(-1), t.flip(-1).amin(-1)), x)
                f = _image(3, 5, width, dtype=torch.float32)
                self.check(
                    lambda t: (t.flip(-1).sum(-1), t.flip(-1).prod(-1), t.flip(-1).argmax(-1)),
                    f,
                    atol=None,
                    rtol=None,
                )
                self.check(lambda t: torch.var_mean(t.flip(-1), -1), f, atol=None, rtol=None)

    def test_flip_tails_integer_division_and_indexing(self):
        for width in self.widths:
            with self.subTest(width=width):
                a = _image(3, 5, width, dtype=torch.int32)
                b = torch.randint(1, 9, (3, 5, width), generator=torch.Generator().manual_seed(1), dtype=torch.int32)
                self.check(lambda x, y: x.flip(-1) // y.flip(-1), a, b)
                index = torch.randint(0, 7, (3, 5, width), generator=torch.Generator().manual_seed(2))
                table = _image(7, dtype=torch.float32)
                self.check(lambda t, i: t[i.flip(-1)], table, index)

    def test_flip_tails_dynamic_shapes(self):
        for width in self.widths:
            with self.subTest(width=width):
                self.check(_hflip, _image(3, 4, width), dynamic=True)
                self.check(_hflip, _image(3, 4, width, dtype=torch.float32), dynamic=True)


class InductorUint8ReductionTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_uint8_min_max_reductions(self):
        # on 2.13 the quarter-filled vectors' unused lanes (filled with 1) leak
        # into amin (pytorch/pytorch#191499); full-width vectors have none
        for width in (33, 67, 500):
            with self.subTest(width=width):
                self.check(lambda t: (t.amax(-1), t.amin(-1)), _image(3, 5, width))


class InductorUint8CorrectnessTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_uint8_ops_edge_widths(self):
        for width in (1, 7, 31, 33, 500):
            with self.subTest(width=width):
                self.check(_uint8_ops, _image(3, 5, width))

    def test_uint8_to_float_edge_widths(self):
        for width in (1, 7, 33, 500):
            with self.subTest(width=width):
                self.check(_to_float, _image(3, 5, width))
                self.check(_flip_to_float, _image(3, 5, width))

    def test_int8_ops(self):
        self.check(_uint8_ops, _image(2, 3, 70, dtype=torch.int8))

    def test_uint8_non_contiguous_inputs(self):
        hwc = _image(5, 70, 3).permute(2, 0, 1)  # channels-last view
        self.check(_uint8_ops, hwc)
        cropped = _image(3, 9, 101)[:, 1:-1, 3:-2]
        self.check(_uint8_ops, cropped)
        self.check(_hflip, _image(3, 9, 202)[..., ::2])

    def test_uint8_flip_other_dims(self):
        x = _image(3, 9, 67)
        self.check(lambda t: t.flip(-2), x)
        self.check(lambda t: t.flip(0, -1), x)

    def test_hflip_wider_dtypes(self):
        for dtype in (torch.float64, torch.int64, torch.bfloat16):
            with self.subTest(dtype=dtype):
                self.check(lambda t: t.flip(-1) * 2, _image(2, 3, 67, dtype=dtype))

    def test_uint8_dynamic_shapes(self):
        for width in (33, 500):
            with self.subTest(width=width):
                self.check(_uint8_ops, _image(3, 4, width), dynamic=True)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
