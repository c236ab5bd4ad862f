# Owner(s): ["module: dynamo"]
"""isinstance() with nested classinfo tuples, as torchvision's argument parsing uses it.

``IsinstanceNestedClassinfoTests`` covers what Dynamo gets wrong without the
"follow CPython for nested tuples in isinstance() classinfo" patch: a classinfo
tuple that nests further tuples (or holds unions / metaclass entries) must be
walked entry by entry, left to right, stopping at the first match, exactly like
CPython's ``object_recursive_isinstance``.

``IsinstanceFlatClassinfoRegressionTests`` holds control cases that already
compile correctly without the patch and must keep doing so.
"""

import numbers
import typing

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

import tv_dispatch_model
from tv_dispatch_model import (
    _affine_parse_args,
    affine,
    affine_image,
    CompiledVsEagerMixin,
    make_image,
)


NUMBER_OR_SEQUENCE = (numbers.Number, (list, tuple))
DEEPLY_NESTED = ((int, (str, (list,))),)


class Base:
    pass


class Child(Base):
    pass


class Unrelated:
    pass


class MagicMeta(type):
    # Instances are decided by an attribute, not by inheritance.
    def __instancecheck__(cls, instance):
        return getattr(instance, "magic", False)


class Magic(metaclass=MagicMeta):
    pass


class HasMagic:
    magic = True


class NoMagic:
    magic = False


class BranchCheckMixin(CompiledVsEagerMixin):
    def check_branch(self, fn, cases):
        """``fn(x, value)`` returns ``x + 1`` when ``value`` matches its classinfo, else ``x - 1``.

        Each case compiles afresh: one frame, one op, no graph break, equal to eager.
        """
        x = torch.randn(3)
        for value, matches in cases:
            with self.subTest(value=value):
                out = self.check_one_frame(fn, x, value, op_count=1)
                self.assertEqual(out, x + 1 if matches else x - 1)


class IsinstanceNestedClassinfoTests(
    BranchCheckMixin, torch._dynamo.test_case.TestCase
):
    def test_number_or_sequence_matches(self):
        def fn(x, value):
            if isinstance(value, (numbers.Number, (list, tuple))):
                return x + 1
            return x - 1

        x = torch.randn(4)
        for value in ([1.0, 2.0], (3, 4), [], 7, 2.5, True):
            with self.subTest(value=value):
                out = self.check_one_frame(fn, x, value, op_count=1)
                self.assertEqual(out, x + 1)

    def test_number_or_sequence_no_match(self):
        def fn(x, value):
            if isinstance(value, NUMBER_OR_SEQUENCE):
                return x + 1
            return x - 1

        x = torch.randn(4)
        for value in ("1.0", None, {"a": 1}, b"xy"):
            with self.subTest(value=value):
                out = self.check_one_frame(fn, x, value, op_count=1)
                self.assertEqual(out, x - 1)

    def test_deeper_nesting(self):
        def fn(x, value):
            if isinstance(value, DEEPLY_NESTED):
                return x * 2
            return x * 3

        x = torch.randn(2, 3)
        cases = [(1, True), ("s", True), ([1, 2], True), (False, True)]
        cases += [(1.5, False), ((1,), False), (None, False)]
        for value, matches in cases:
            with self.subTest(value=value):
                out = self.check_one_frame(fn, x, value, op_count=1)
                self.assertEqual(out, x * 2 if matches else x * 3)

    def test_nested_unions(self):
        def fn(x, value):
            a = isinstance(value, (str, (int | None,)))
            b = isinstance(value, (bytes, (typing.Union[int, float],)))
            c = isinstance(value, ((typing.Optional[str], list),))
            return x + (1 if a else 0) + (10 if b else 0) + (100 if c else 0)

        x = torch.zeros(3)
        for value, total in [
            (1, 11),
            (None, 101),
            ("s", 101),
            (1.5, 10),
            (b"b", 10),
            ([1], 100),
            ((1,), 0),
        ]:
            with self.subTest(value=value):
                out = self.check_one_frame(fn, x, value)
                self.assertEqual(out, torch.full((3,), float(total)))

    def test_pep604_union_entry_in_tuple(self):
        # A union is itself a composite classinfo; as a tuple entry it has to be
        # judged on its own, like a nested tuple.
        def fn(x, value):
            if isinstance(value, (str, int | None)):
                return x + 1
            return x - 1

        self.check_branch(fn, [(3, True), (None, True), ("s", True), (2.5, False)])

    def test_tensor_arg_nested_legacy_tensor_types(self):
        # Legacy tensor types are decided by dtype; that must hold inside a
        # nested tuple too, not only at the top level.
        def fn(x):
            a = isinstance(x, (int, (torch.FloatTensor,)))
            b = isinstance(x, (str, (torch.LongTensor, (torch.DoubleTensor,))))
            c = isinstance(x, ((list, torch.Tensor),))
            return x + (1 if a else 0) + (10 if b else 0) + (100 if c else 0)

        for dtype, total in [
            (torch.float32, 101),
            (torch.int64, 110),
            (torch.float64, 110),
            (torch.int32, 100),
        ]:
            with self.subTest(dtype=dtype):
                x = torch.zeros(3, dtype=dtype)
                out = self.check_one_frame(fn, x)
                self.assertEqual(out, torch.full((3,), total, dtype=dtype))

    def test_nested_tuple_containing_tensor_with_non_tensor_args(self):
        def fn(x, value):
            if isinstance(value, (numbers.Number, (torch.Tensor, list))):
                return x + 1
            return x - 1

        self.check_branch(fn, [(torch.ones(2), True), (4, True), ([1], True), ("s", False)])

    def test_user_class_hierarchy_in_nested_tuple(self):
        def fn(x, obj):
            if isinstance(obj, (int, (str, Base))):
                return x + 1
            return x - 1

        self.check_branch(fn, [(Child(), True), (Base(), True), (Unrelated(), False)])

    def test_user_object_created_in_graph_nested_tuple(self):
        def fn(x):
            a = isinstance(Child(), (float, (Unrelated, Base)))
            b = isinstance(Unrelated(), (float, (Child, (Base,))))
            return x + (1 if a else 0) + (10 if b else 0)

        x = torch.zeros(2)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, torch.ones(2))

    def test_metaclass_instancecheck_in_nested_tuple(self):
        def fn(x, obj):
            if isinstance(obj, (int, (str, Magic))):
                return x + 1
            return x - 1

        self.check_branch(fn, [(HasMagic(), True), (NoMagic(), False)])

    def test_metaclass_instancecheck_in_flat_tuple(self):
        # The user __instancecheck__ has to run for a tuple entry as well, not
        # only when the metaclass instance is the whole classinfo.
        def fn(x, obj):
            if isinstance(obj, (int, Magic)):
                return x + 1
            return x - 1

        self.check_branch(fn, [(HasMagic(), True), (NoMagic(), False)])

    def test_invalid_entry_after_match_is_not_evaluated(self):
        # CPython stops at the first matching entry, so an invalid later entry
        # never raises: isinstance(1, (int, 3)) is True.
        def fn(x, value):
            a = isinstance(value, (int, 3))
            b = isinstance(value, (float, (int, "not a type")))
            return (x + 1 if a else x - 1), (x * 2 if b else x * 3)

        x = torch.randn(3)
        for value in (1, True):
            with self.subTest(value=value):
                out = self.check_one_frame(fn, x, value)
                self.assertEqual(out, (x + 1, x * 2))

    def test_first_match_wins_before_invalid_entry_raises(self):
        # Same function for a value that matches before the invalid entry and
        # one that reaches it: only the latter raises, with CPython's message.
        def fn(x, value):
            try:
                matched = isinstance(value, (int, 3))
            except TypeError as e:
                return x + 2, str(e)
            return (x + 1 if matched else x - 1), ""

        x = torch.randn(3)
        out = self.check_one_frame(fn, x, 7)
        self.assertEqual(out, (x + 1, ""))
        out = self.check_one_frame(fn, x, "a")
        self.assertEqual(out[0], x + 2)
        with self.assertRaises(TypeError) as ctx:
            isinstance("a", (int, 3))
        self.assertEqual(out[1], str(ctx.exception))

    def test_affine_parse_args_shear_forms(self):
        def fn(x, shear):
            return x + 1, _affine_parse_args(30, (1, 2), 1.5, shear, [3, 4])

        x = torch.randn(2)
        for shear, parsed in [
            (5.0, [5.0, 0.0]),
            (3, [3.0, 0.0]),
            ([4.0], [4.0, 4.0]),
            ((2.0, -3.0), [2.0, -3.0]),
        ]:
            with self.subTest(shear=shear):
                out = self.check_one_frame(fn, x, shear)
                self.assertEqual(out[1][3], parsed)

    def test_affine_parse_args_invalid_shear_errors(self):
        # The model's own errors must surface, not a spurious isinstance() one.
        def fn(x, shear):
            try:
                _affine_parse_args(0.0, [0.0, 0.0], 1.0, shear, None)
            except TypeError as e:
                return x + 2, "TypeError", e.args[0]
            except ValueError as e:
                return x + 3, "ValueError", e.args[0]
            return x, "", ""

        x = torch.randn(2)
        for shear, kind in [("bad", "TypeError"), (None, "TypeError"), ([1.0, 2.0, 3.0], "ValueError")]:
            with self.subTest(shear=shear):
                out = self.check_one_frame(fn, x, shear)
                self.assertEqual(out[1], kind)
                self.assertTrue(out[2].startswith("Shear should be"))

    def test_affine_functional(self):
        for dtype in (torch.float32, torch.uint8):
            image = make_image(dtype)
            for shear in (5.0, [4.0], (2.0, -3.0)):
                with self.subTest(dtype=dtype, shear=shear):
                    out = self.check_one_frame(
                        affine, image, 30.0, [2.0, -1.0], 1.1, shear
                    )
                    self.assertEqual(out.dtype, dtype)
                    self.assertEqual(out.shape, image.shape)

    def test_affine_image_kernel(self):
        for dtype in (torch.float32, torch.uint8):
            image = make_image(dtype, size=(2, 3, 12, 10))
            for shear in (3, [-6.0], (1.5, 2.5)):
                with self.subTest(dtype=dtype, shear=shear):
                    out = self.check_one_frame(
                        affine_image, image, -15.0, (1, 1), 0.9, shear, [4.0, 5.0]
                    )
                    self.assertEqual(out.dtype, dtype)
                    self.assertEqual(out.shape, image.shape)

    def test_affine_no_recompile_same_shear_form(self):
        # Same argument structure on a second call: served from the cache.
        def fn(image, shear):
            return tv_dispatch_model.affine(image, 10.0, [1.0, 0.0], 1.0, shear)

        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        image = make_image(torch.float32)
        self.assertSameOutput(fn(image, [2.0, 1.0]), compiled(image, [2.0, 1.0]))
        with torch._dynamo.config.patch(error_on_recompile=True):
            image2 = make_image(torch.float32) * 0.5
            self.assertSameOutput(fn(image2, [2.0, 1.0]), compiled(image2, [2.0, 1.0]))
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)


class IsinstanceFlatClassinfoRegressionTests(
    BranchCheckMixin, torch._dynamo.test_case.TestCase
):
    """Controls: these already compile correctly without the nested-tuple patch."""

    def test_flat_tuple_builtin_types(self):
        def fn(x, value):
            a = isinstance(value, (list, tuple))
            b = isinstance(value, (int, float))
            return x + (1 if a else 0) + (10 if b else 0)

        x = torch.zeros(3)
        for value, total in [([1], 1), ((1,), 1), (2, 10), (2.5, 10), ("s", 0)]:
            with self.subTest(value=value):
                out = self.check_one_frame(fn, x, value)
                self.assertEqual(out, torch.full((3,), float(total)))

    def test_single_abc_number(self):
        def fn(x, value):
            if isinstance(value, numbers.Number):
                return x + 1
            return x - 1

        self.check_branch(fn, [(1, True), (1.5, True), (1j, True), ([1], False)])

    def test_flat_tuple_with_typing_union_entry(self):
        def fn(x, value):
            if isinstance(value, (str, typing.Union[int, None])):
                return x + 1
            return x - 1

        self.check_branch(fn, [(3, True), (None, True), ("s", True), (2.5, False)])

    def test_tensor_arg_nested_tuple_with_torch_tensor(self):
        # For a tensor argument the nested tuple reaches issubclass(), which
        # already accepts nesting.
        def fn(x):
            if isinstance(x, (int, (list, torch.Tensor))):
                return x + 1
            return x - 1

        x = torch.randn(3)
        out = self.check_one_frame(fn, x, op_count=1)
        self.assertEqual(out, x + 1)

    def test_tensor_arg_flat_legacy_tensor_types(self):
        def fn(x):
            if isinstance(x, (torch.LongTensor, torch.FloatTensor)):
                return x + 1
            return x - 1

        for dtype, matches in [(torch.float32, True), (torch.int64, True), (torch.float64, False)]:
            with self.subTest(dtype=dtype):
                x = torch.zeros(3, dtype=dtype)
                out = self.check_one_frame(fn, x, op_count=1)
                self.assertEqual(out, x + 1 if matches else x - 1)

    def test_user_class_flat_tuple(self):
        def fn(x, obj):
            if isinstance(obj, (int, Base)):
                return x + 1
            return x - 1

        self.check_branch(fn, [(Child(), True), (Unrelated(), False)])

    def test_metaclass_instancecheck_single_class(self):
        def fn(x, obj):
            if isinstance(obj, Magic):
                return x + 1
            return x - 1

        self.check_branch(fn, [(HasMagic(), True), (NoMagic(), False)])

    def test_invalid_entry_raises_type_error_like_eager(self):
        # No entry matches before the invalid one: TypeError, same message as
        # CPython, caught inside the compiled function.
        def fn(x, value):
            try:
                isinstance(value, (int, 3))
            except TypeError as e:
                return x + 2, str(e)
            return x, ""

        x = torch.randn(3)
        with self.assertRaises(TypeError) as ctx:
            isinstance("a", (int, 3))
        out = self.check_one_frame(fn, x, "a")
        self.assertEqual(out, (x + 2, str(ctx.exception)))

    def test_invalid_entry_in_nested_tuple_raises_type_error_like_eager(self):
        def fn(x, value):
            try:
                isinstance(value, (int, (float, 3)))
            except TypeError as e:
                return x + 2, str(e)
            return x, ""

        x = torch.randn(3)
        with self.assertRaises(TypeError) as ctx:
            isinstance("a", (int, (float, 3)))
        out = self.check_one_frame(fn, x, "a")
        self.assertEqual(out, (x + 2, str(ctx.exception)))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
