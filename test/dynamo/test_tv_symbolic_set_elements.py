# Owner(s): ["module: dynamo"]
"""Symbolic sizes as set elements, as torchvision's ``query_size`` builds them.

``query_size`` (model: ``tv_model_tvtensors.query_size``) collects
``{tuple(get_size(inpt)) for inpt in flat_inputs}``, checks that the set has one
element and pops it. The transforms that read the sample's size go through it (the
model's CenterCrop; torchvision's RandomCrop, RandomResizedCrop, RandomErasing, ...). Dynamo
specialized a SymInt put into a set, so with dynamic sizes each new image size
compiled another graph. With the patch a set keeps symbolic elements; the
comparisons the set makes between them (and against constant elements) are
guarded, so a set of sizes behaves as in eager for every size.
"""

from hypothesis import given, strategies as st

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter

from tv_hypothesis import profile
from tv_model_tvtensors import CenterCrop, Image, make_boxes, Mask


PROFILE = profile(ci_examples=60, local_examples=600)

SIZES = [(16, 20), (17, 23), (19, 21), (22, 18), (30, 25), (21, 19)]


def set_semantics(x, y):
    # Each result depends on which of the sizes (and constants) are equal.
    a, b = x.shape
    c, d = y.shape
    numbers = {a, b, 3}
    numbers.add(c)
    pairs = {(a, b), (c, d)}
    pairs.discard((3, 3))
    return (
        len(numbers),
        d in numbers,
        len(pairs),
        (c, d) in pairs,
        numbers == {a, 3, c},
        {b, d} <= numbers,
        x.new_zeros(len(numbers)),
    )


def image_and_boxes(size):
    return Image(torch.rand(3, *size)), make_boxes(canvas_size=size)


class SymbolicSetElementsTests(torch._dynamo.test_case.TestCase):
    def check_one_graph(self, fn, make_input):
        """fn compiles once (dynamic sizes) for every size in SIZES, and each
        output equals eager's: values, and the type of each output tensor."""
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True, dynamic=True)
        with torch._dynamo.config.patch(error_on_recompile=True):
            for size in SIZES:
                inpt = make_input(size)
                out, expected = compiled(inpt), fn(inpt)
                if isinstance(expected, tuple):
                    self.assertEqual([type(o) for o in out], [type(e) for e in expected])
                self.assertEqual(out, expected, atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)

    def test_center_crop_compiles_once_for_every_size(self):
        self.check_one_graph(CenterCrop(8), lambda size: torch.rand(3, *size))

    def test_center_crop_of_image_and_mask_compiles_once(self):
        # Two elements whose sizes are equal: one guard relates them.
        self.check_one_graph(
            CenterCrop(8), lambda size: (Image(torch.rand(3, *size)), Mask(torch.zeros(size)))
        )

    def test_center_crop_of_image_and_boxes_compiles_once(self):
        # Boxes report their canvas: Python ints in their metadata, read
        # lazily into the set's tuple. Dynamic like the image's sizes, they
        # stay symbolic too, and one guard relates each of them to the image's.
        self.check_one_graph(CenterCrop(8), image_and_boxes)

    def test_image_and_boxes_sizes_turn_dynamic_together(self):
        # Default config, as in a stream of images: the second size makes the
        # image's sizes and the boxes' canvas dynamic (automatic dynamic), and
        # no size after it compiles again.
        t = CenterCrop(8)
        cnt = CompileCounter()
        compiled = torch.compile(t, backend=cnt, fullgraph=True)
        for i, size in enumerate(SIZES):
            sample = image_and_boxes(size)
            with torch._dynamo.config.patch(error_on_recompile=i >= 2):
                out = compiled(sample)
            expected = t(sample)
            self.assertEqual([type(o) for o in out], [type(e) for e in expected])
            self.assertEqual(out[1].canvas_size, expected[1].canvas_size)
            self.assertEqual(out, expected, atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 2)

    def test_set_of_sizes_without_guards_on_the_values(self):
        def fn(x):
            (size,) = {tuple(x.shape[-2:])}
            return x.new_zeros(size)

        self.check_one_graph(fn, lambda size: torch.rand(3, *size))


class SymbolicSetSemanticsTests(torch._dynamo.test_case.TestCase):
    """Sets of sizes answer as in eager, specialized (BASE) or symbolic."""

    def test_mismatched_sizes_raise_as_in_eager(self):
        t = CenterCrop(8)
        compiled = torch.compile(t, backend="eager", dynamic=True)
        for size in SIZES[:3]:
            sample = (torch.rand(3, *size), Mask(torch.zeros(size[0] + 1, size[1])))
            with self.assertRaisesRegex(ValueError, "Found multiple HxW dimensions"):
                t(sample)
            with self.assertRaisesRegex(ValueError, "Found multiple HxW dimensions"):
                compiled(sample)

    def test_constant_element_decides_by_guard(self):
        # Boxes keep their canvas while the image's size changes: the set
        # compares the two with a guard, equal only for that size.
        t = CenterCrop(8)
        compiled = torch.compile(t, backend="eager", dynamic=True)
        boxes = make_boxes(canvas_size=(16, 20))
        for size in [(16, 20), (17, 20), (16, 20)]:
            sample = (Image(torch.rand(3, *size)), boxes)
            if size == (16, 20):
                self.assertEqual(compiled(sample), t(sample), atol=0, rtol=0)
            else:
                with self.assertRaisesRegex(ValueError, "Found multiple HxW"):
                    compiled(sample)

    def test_frozenset_still_specializes(self):
        # A frozenset's hash is computed from its elements': they stay values.
        def fn(x):
            return hash(frozenset({x.shape[0]})) == hash(frozenset({4}))

        compiled = torch.compile(fn, backend="eager", fullgraph=True, dynamic=True)
        for n in (4, 5, 4):
            self.assertEqual(compiled(torch.rand(n, 2)), fn(torch.rand(n, 2)))

    @given(st.lists(st.integers(2, 5), min_size=4, max_size=4))
    @PROFILE
    def test_set_semantics_match_eager(self, sizes):
        # One compiled function for all the examples: its guards must pick a
        # graph whose answers are eager's for every combination of sizes.
        # (A graph per pattern of equal sizes: well within this limit.)
        if not hasattr(self, "_compiled"):
            torch._dynamo.reset()
            self._compiled = torch.compile(
                set_semantics, backend="eager", fullgraph=True, dynamic=True
            )
        a, b, c, d = sizes
        x, y = torch.rand(a, b), torch.rand(c, d)
        with torch._dynamo.config.patch(recompile_limit=256):
            self.assertEqual(self._compiled(x, y), set_semantics(x, y))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
