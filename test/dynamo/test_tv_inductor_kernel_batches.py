# Owner(s): ["module: inductor"]
"""A graph's C++ kernels built as a few libraries, not one library each.

With a cold cache, each CPU kernel was a build of its own: a compiler run that
mostly reads the headers every kernel includes (``cpp_prefix.h``, precompiled or
not), about 0.7 s for a kernel of a few lines here. The classification transform
stream's graph has 6 kernels (two of one element: an ``exp`` and a ``>=`` on a
hoisted draw), two graphs in its first pass. ``AsyncCompile.cpp_pybinding`` now
holds the kernels of a module back and ``wait()`` builds them as at most
``compile_threads`` libraries (each kernel and its bindings in a namespace of
their own), as it already builds a module's Metal kernels as one library.
"""

from unittest import mock

import torch
import torch._dynamo.test_case
from torch._inductor import config, cpp_builder
from torch._inductor.utils import fresh_cache


def four_matmuls(x, w, k):
    # Each pointwise step between two mm calls (extern kernels) is a kernel
    # of its own; the integer ones are another.
    a = torch.mm(x.sin(), w)
    b = torch.mm(a.cos() + 1, w)
    c = torch.mm(b.relu() * 2, w)
    d = torch.mm(c.tanh(), w)
    return d.exp().sum(), k // 3, (k % 7).flip(0)


def inputs():
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(8, 8, generator=g),
        torch.randn(8, 8, generator=g),
        torch.randint(1, 100, (10,), generator=g),
    )


# The bindings of each kernel in a library define one function of this signature.
KERNEL_BINDING = "_py(PyObject* self, PyObject* args)"


class KernelBuildsMixin:
    """Compile with a cold cache and two compile threads; record how many
    kernels each library built holds."""

    def setUp(self):
        super().setUp()
        self.built = []
        build = cpp_builder.CppBuilder.build
        test = self

        def recording_build(builder):
            source = builder._sources_args.split()[-1]
            if source.endswith(".main.cpp"):
                with open(source) as f:
                    code = f.read()
                test.built.append(code.count(KERNEL_BINDING))
                test.before_build(code)
            return build(builder)

        self.enterContext(mock.patch.object(cpp_builder.CppBuilder, "build", recording_build))
        self.enterContext(config.patch({"compile_threads": 2}))
        self.enterContext(fresh_cache())
        torch._dynamo.reset()

    def before_build(self, code):
        pass

    def compile_and_compare(self, fn, args):
        got = torch.compile(fn, backend="inductor", fullgraph=True)(*args)
        expected = fn(*args)
        self.assertEqual(len(got), len(expected))
        for g, e in zip(got, expected):
            self.assertEqual(g, e)
            self.assertEqual(g.dtype, e.dtype)


class KernelBatchesTests(KernelBuildsMixin, torch._dynamo.test_case.TestCase):
    def test_a_graphs_kernels_are_at_most_two_builds(self):
        self.compile_and_compare(four_matmuls, inputs())
        # Five kernels: one build each before; now one library per thread.
        self.assertLessEqual(len(self.built), 2)
        self.assertEqual(sum(self.built), 5)

    def test_a_library_that_fails_to_build_is_built_kernel_by_kernel(self):
        failed = []

        def before_build(code):
            if code.count(KERNEL_BINDING) > 1:
                failed.append(code)
                raise RuntimeError("this library does not build")

        self.before_build = before_build
        self.compile_and_compare(four_matmuls, inputs())
        self.assertTrue(failed)
        # then each kernel of it alone, as without batches
        self.assertEqual(self.built.count(1), 5)


class KernelBatchesUsualTests(KernelBuildsMixin, torch._dynamo.test_case.TestCase):
    """What holds with and without batches."""

    def test_integer_division_by_zero_raises_as_in_eager(self):
        def fn(x, w, k):
            return four_matmuls(x, w, k)[0], k // (k - k)

        with self.assertRaisesRegex(RuntimeError, "ZeroDivisionError"):
            fn(*inputs())
        with self.assertRaisesRegex(RuntimeError, "ZeroDivisionError"):
            torch.compile(fn, backend="inductor", fullgraph=True)(*inputs())

    def test_the_same_kernels_again_build_nothing(self):
        self.compile_and_compare(four_matmuls, inputs())
        built = list(self.built)
        torch._dynamo.reset()
        self.compile_and_compare(four_matmuls, inputs())
        # the FX graph cache or the libraries of the first compile
        self.assertEqual(self.built, built)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
