# Owner(s): ["module: dynamo"]
"""Regression tests for the torchvision-v2-style dispatch model under Dynamo.

Everything here already compiles with fullgraph=True on an unpatched 2.13
Dynamo: type objects and dispatcher callables as dict keys, MRO walks to a
registered class, the model's functionals and ``register_kernel``, and the
``scatter_add``-histogram ``equalize_image`` kernel under Inductor.
"""

import abc
import enum
import functools
import inspect

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend
from torch._dynamo.utils import counters

from tv_dispatch_model import (
    _get_kernel,
    CompiledVsEagerMixin,
    _KERNEL_REGISTRY,
    _SubTensor,
    adjust_brightness,
    equalize,
    equalize_image,
    horizontal_flip,
    horizontal_flip_image,
    make_image,
    normalize,
    register_kernel,
    to_dtype,
    vertical_flip,
)


# --------------------------------------------------------------------- key types


class KeyMeta(type):
    pass


class WithMeta(metaclass=KeyMeta):
    pass


class AbstractKey(abc.ABC):
    @abc.abstractmethod
    def run(self):
        ...


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class MyTensor(torch.Tensor):
    pass


TYPE_TABLE = {
    WithMeta: 1.0,
    AbstractKey: 2.0,
    Color: 3.0,
    MyTensor: 4.0,
    torch.Tensor: 5.0,
    int: 6.0,
}


# --------------------------------------------------------------- callable keys


def plain_fn(a):
    return a + 1


lambda_fn = lambda a: a * 2  # noqa: E731

partial_fn = functools.partial(torch.mul, other=3.0)


def _passthrough(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@_passthrough
def wrapped_fn(a):
    return a - 1


CALLABLE_TABLE = {
    plain_fn: 1.0,
    lambda_fn: 2.0,
    partial_fn: 3.0,
    wrapped_fn: 4.0,
    wrapped_fn.__wrapped__: 5.0,
    torch.add: 6.0,
    torch.ops.aten.add.Tensor: 7.0,
    torch.ops.aten.mul: 8.0,
}


# ------------------------------------------------------------------ hierarchy


class A:
    pass


class B(A):
    pass


class C(B):
    pass


class D:
    pass


class SubSubTensor(_SubTensor):
    pass


class MyImage(torch.Tensor):
    pass


class MyImageChild(MyImage):
    pass


class Points:
    def __init__(self, data):
        self.data = data


class TypeKeyTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_global_table_getitem_in_get(self):
        def fn(x):
            out = x * TYPE_TABLE[WithMeta] + TYPE_TABLE[AbstractKey]
            out = out + TYPE_TABLE.get(Color, 0.0) + TYPE_TABLE.get(str, 100.0)
            if MyTensor in TYPE_TABLE and float not in TYPE_TABLE:
                out = out + TYPE_TABLE[MyTensor]
            return out

        x = torch.randn(4)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, x + 2.0 + 3.0 + 100.0 + 4.0)

    def test_type_passed_as_argument(self):
        def fn(x, key):
            return x * TYPE_TABLE[key]

        x = torch.randn(4)
        for key, value in TYPE_TABLE.items():
            with self.subTest(key=key.__name__):
                out = self.check_one_frame(fn, x, key)
                self.assertEqual(out, x * value)

    def test_type_of_input_as_key(self):
        def fn(x):
            return x * TYPE_TABLE[type(x)]

        plain = torch.randn(4)
        out = self.check_one_frame(fn, plain)
        self.assertEqual(out, plain * 5.0)

        sub = torch.randn(4).as_subclass(MyTensor)
        out = self.check_one_frame(fn, sub)
        self.assertIs(type(out), MyTensor)
        self.assertEqual(out.as_subclass(torch.Tensor), sub.as_subclass(torch.Tensor) * 4.0)

    def test_local_table_setdefault_and_items(self):
        def fn(x):
            table = {WithMeta: 1.0, AbstractKey: 2.0, Color: 3.0, MyTensor: 4.0}
            existing = table.setdefault(Color, 100.0)
            added = table.setdefault(torch.Tensor, 5.0)
            total = 0.0
            names = []
            for key, value in table.items():
                total += value
                names.append(key.__name__)
            return x * existing + added + total, names, len(table)

        x = torch.randn(3)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out[1], ["WithMeta", "AbstractKey", "Color", "MyTensor", "Tensor"])
        self.assertEqual(out[2], 5)

    def test_setdefault_on_argument_dict_is_replayed(self):
        def fn(x, table):
            table.setdefault(Color, -1.0)
            table.setdefault(bytes, 7.0)
            return x * table[Color] + table[bytes]

        x = torch.randn(3)
        eager_table, compiled_table = dict(TYPE_TABLE), dict(TYPE_TABLE)
        eager = fn(x, eager_table)
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)(x, compiled_table)
        self.assertSameOutput(eager, compiled)
        self.assertEqual(compiled_table, eager_table)
        self.assertEqual(list(compiled_table), list(eager_table))
        self.assertEqual(compiled_table[bytes], 7.0)
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)

    def test_items_filter_by_issubclass(self):
        def fn(x):
            total = 0.0
            for key, value in TYPE_TABLE.items():
                if issubclass(key, torch.Tensor):
                    total += value
            return x + total

        x = torch.randn(3)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, x + 9.0)


class CallableKeyTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_global_table_of_callables(self):
        def fn(x):
            out = x * CALLABLE_TABLE[plain_fn] + CALLABLE_TABLE[lambda_fn]
            out = out + CALLABLE_TABLE[partial_fn] + CALLABLE_TABLE[wrapped_fn]
            out = out + CALLABLE_TABLE[torch.add] + CALLABLE_TABLE[torch.ops.aten.add.Tensor]
            out = out + CALLABLE_TABLE.get(torch.sub, 0.5)
            return out

        x = torch.randn(4)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, x + 2.0 + 3.0 + 4.0 + 6.0 + 7.0 + 0.5)

    def test_wraps_decorated_and_original_are_distinct_keys(self):
        def fn(x):
            a = CALLABLE_TABLE[wrapped_fn]
            b = CALLABLE_TABLE[wrapped_fn.__wrapped__]
            return wrapped_fn(x) * a + b, wrapped_fn.__name__

        x = torch.randn(4)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out[0], (x - 1) * 4.0 + 5.0)
        self.assertEqual(out[1], "wrapped_fn")

    def test_aten_overload_packet_key(self):
        def fn(x):
            scale = CALLABLE_TABLE[torch.ops.aten.mul]
            present = torch.ops.aten.mul in CALLABLE_TABLE
            absent = torch.ops.aten.sub in CALLABLE_TABLE
            return x * scale + (1.0 if present else 0.0) + (10.0 if absent else 0.0)

        x = torch.randn(4)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, x * 8.0 + 1.0)

    def test_local_table_with_callables_made_in_graph(self):
        def fn(x):
            double = lambda a: a * 2  # noqa: E731
            scale = functools.partial(torch.mul, other=2.0)
            table = {
                double: 1.0,
                scale: 2.0,
                plain_fn: 3.0,
                torch.add: 4.0,
                torch.ops.aten.add.Tensor: 5.0,
                torch.ops.aten.add: 6.0,
            }
            total = 0.0
            for value in table.values():
                total += value
            out = scale(x) + table[scale] + double(x) * table[double]
            return out + table[torch.ops.aten.add] + total + (plain_fn in table)

        x = torch.randn(4)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, x * 2 + 2.0 + x * 2 + 6.0 + 21.0 + 1)

    def test_partial_passed_as_argument(self):
        def fn(x, op):
            table = {op: 2.0}
            return op(x) + table[op] + CALLABLE_TABLE.get(op, -1.0)

        x = torch.randn(4)
        out = self.check_one_frame(fn, x, partial_fn)
        self.assertEqual(out, x * 3.0 + 2.0 + 3.0)

    def test_call_the_key_found_by_value(self):
        ops = {torch.add: "add", torch.mul: "mul", torch.ops.aten.sub.Tensor: "sub"}

        def fn(x, y, wanted):
            for op, name in ops.items():
                if name == wanted:
                    return op(x, y)
            return x

        x, y = torch.randn(4), torch.randn(4)
        for wanted, expected in [("add", x + y), ("mul", x * y), ("sub", x - y)]:
            with self.subTest(wanted=wanted):
                out = self.check_one_frame(fn, x, y, wanted)
                self.assertEqual(out, expected)


class MroWalkTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_dunder_mro(self):
        def fn(x):
            mro = C.__mro__
            return x + len(mro), [cls.__name__ for cls in mro], mro[1] is B

        x = torch.randn(3)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out[1], ["C", "B", "A", "object"])
        self.assertTrue(out[2])

    def test_inspect_getmro(self):
        def fn(x):
            user = inspect.getmro(C)
            tensors = inspect.getmro(SubSubTensor)
            return x + len(user) + 10 * len(tensors), tensors[2] is torch.Tensor

        x = torch.randn(3)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out[0], x + 4 + 10 * len(SubSubTensor.__mro__))
        self.assertTrue(out[1])

    def test_bases(self):
        def fn(x):
            return x + len(C.__bases__), C.__bases__[0] is B, B.__bases__, A.__bases__

        x = torch.randn(3)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out[2], (A,))
        self.assertEqual(out[3], (object,))

    def test_walk_bases_to_registered_class(self):
        registry = {A: 2.0}

        def fn(x):
            cls = C
            depth = 0
            while cls not in registry:
                cls = cls.__bases__[0]
                depth += 1
            return x * registry[cls] + depth

        x = torch.randn(3)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, x * 2.0 + 2)

    def test_walk_mro_to_registered_class(self):
        registry = {A: 2.0, torch.Tensor: 3.0, D: 4.0}

        def fn(x, input_type):
            for cls in input_type.__mro__:
                if cls in registry:
                    return x * registry[cls], cls.__name__
            return x, None

        x = torch.randn(3)
        for input_type, (scale, name) in [
            (C, (2.0, "A")),
            (B, (2.0, "A")),
            (D, (4.0, "D")),
            (SubSubTensor, (3.0, "Tensor")),
            (MyTensor, (3.0, "Tensor")),
        ]:
            with self.subTest(input_type=input_type.__name__):
                out = self.check_one_frame(fn, x, input_type)
                self.assertEqual(out, (x * scale, name))

    def test_get_kernel_on_subclass_finds_base_kernel(self):
        def fn(x):
            direct = _get_kernel(horizontal_flip, _SubTensor)
            deeper = _get_kernel(horizontal_flip, SubSubTensor)
            return direct(x), deeper is horizontal_flip_image, deeper.__name__

        x = make_image()
        out = self.check_one_frame(fn, x)
        self.assertEqual(out[0], x.flip(-1))
        self.assertTrue(out[1])
        self.assertEqual(out[2], "horizontal_flip_image")

    def test_get_kernel_passthrough_for_unregistered_type(self):
        def fn(x):
            return _get_kernel(vertical_flip, D, allow_passthrough=True)(x) * 2

        x = make_image()
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, x * 2)

    def test_get_kernel_unregistered_type_raises(self):
        def fn(x):
            try:
                _get_kernel(vertical_flip, D)
            except TypeError as e:
                return x + 1, e.args[0]
            return x, ""

        x = torch.randn(3)
        out = self.check_one_frame(fn, x)
        self.assertEqual(out[0], x + 1)
        self.assertIn("but got", out[1])


class ModelDispatchTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_horizontal_flip(self):
        a, b = make_image(torch.uint8), make_image(torch.uint8, seed=1)
        out = self.check_no_recompile(horizontal_flip, (a,), (b,))
        self.assertEqual(out, b.flip(-1))
        self.assertEqual(out.dtype, torch.uint8)

    def test_vertical_flip(self):
        a, b = make_image(), make_image(seed=1)
        out = self.check_no_recompile(vertical_flip, (a,), (b,))
        self.assertEqual(out, b.flip(-2))

    def test_adjust_brightness(self):
        for dtype in (torch.uint8, torch.float32):
            with self.subTest(dtype=dtype):
                a, b = make_image(dtype), make_image(dtype, seed=1)
                out = self.check_no_recompile(adjust_brightness, (a, 1.5), (b, 1.5))
                self.assertEqual(out.dtype, dtype)

    def test_normalize(self):
        mean, std = [0.5, 0.4, 0.3], [0.2, 0.25, 0.3]
        a, b = make_image(), make_image(seed=1)
        out = self.check_no_recompile(normalize, (a, mean, std), (b, mean, std))
        self.assertEqual(out.dtype, torch.float32)

    def test_to_dtype(self):
        cases = [
            (torch.uint8, torch.float32, True),
            (torch.float32, torch.uint8, True),
            (torch.uint8, torch.float32, False),
            (torch.float32, torch.float64, True),
        ]
        for src, dst, scale in cases:
            with self.subTest(src=src, dst=dst, scale=scale):
                a, b = make_image(src), make_image(src, seed=1)
                out = self.check_no_recompile(to_dtype, (a, dst, scale), (b, dst, scale))
                self.assertEqual(out.dtype, dst)

    def test_equalize(self):
        a, b = make_image(torch.uint8), make_image(torch.uint8, seed=1)
        out = self.check_no_recompile(equalize, (a,), (b,))
        self.assertEqual(out.dtype, torch.uint8)

    def _register(self, functional, input_type, kernel):
        register_kernel(functional, input_type)(kernel)
        self.addCleanup(_KERNEL_REGISTRY[functional].pop, input_type)

    def test_register_kernel_tensor_subclass(self):
        def flip_my_image(image):
            return image.flip(-1) * 2

        self._register(horizontal_flip, MyImage, flip_my_image)

        def lookup(x):
            own = _get_kernel(horizontal_flip, MyImage)
            child = _get_kernel(horizontal_flip, MyImageChild)
            plain = _get_kernel(horizontal_flip, torch.Tensor)
            return own(x), child is flip_my_image, plain is horizontal_flip_image

        x = make_image()
        out = self.check_one_frame(lookup, x)
        self.assertEqual(out, (x.flip(-1) * 2, True, True))

        image = make_image().as_subclass(MyImage)
        out = self.check_one_frame(horizontal_flip, image)
        self.assertIs(type(out), MyImage)
        self.assertEqual(
            out.as_subclass(torch.Tensor), image.as_subclass(torch.Tensor).flip(-1) * 2
        )

    def test_register_kernel_user_type(self):
        def flip_points(points):
            return Points(points.data.flip(-1) + 100)

        self._register(horizontal_flip, Points, flip_points)

        def fn(x):
            return horizontal_flip(Points(x)).data, horizontal_flip(x)

        x = make_image()
        out = self.check_one_frame(fn, x)
        self.assertEqual(out, (x.flip(-1) + 100, x.flip(-1)))

    def test_register_kernel_plain_class_try_finally(self):
        def brighten_d(value, brightness_factor):
            return value * brightness_factor + 1

        before = dict(_KERNEL_REGISTRY[adjust_brightness])
        register_kernel(adjust_brightness, D)(brighten_d)
        try:

            def fn(x):
                kernel = _get_kernel(adjust_brightness, D)
                return kernel(x, brightness_factor=2.0), kernel is brighten_d

            x = torch.randn(4)
            out = self.check_one_frame(fn, x)
            self.assertEqual(out, (x * 2.0 + 1, True))
        finally:
            del _KERNEL_REGISTRY[adjust_brightness][D]
        self.assertEqual(_KERNEL_REGISTRY[adjust_brightness], before)


class EqualizeInductorTests(torch._dynamo.test_case.TestCase):
    # Two Inductor compiles in total; each test feeds several inputs to one
    # compiled graph.
    def _check(self, compiled, image):
        expected = equalize_image(image)
        out = compiled(image)
        self.assertIs(type(out), torch.Tensor)
        self.assertEqual(out.dtype, torch.uint8)
        self.assertEqual(out.shape, image.shape)
        self.assertTrue(torch.equal(out, expected))
        return out

    def test_single_image_and_constant_image(self):
        cnt = CompileCounterWithBackend("inductor")
        compiled = torch.compile(equalize_image, backend=cnt, fullgraph=True)
        image = make_image(torch.uint8, size=(3, 32, 40))
        out = self._check(compiled, image)
        self.assertFalse(torch.equal(out, image))

        # Each channel constant: the histogram step is 0 and the kernel must
        # return its input unchanged.
        constant = torch.stack(
            [torch.full((32, 40), v, dtype=torch.uint8) for v in (0, 77, 255)]
        )
        with torch._dynamo.config.patch(error_on_recompile=True):
            out = self._check(compiled, constant)
        self.assertTrue(torch.equal(out, constant))
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)

    def test_batched_images(self):
        cnt = CompileCounterWithBackend("inductor")
        compiled = torch.compile(equalize_image, backend=cnt, fullgraph=True)
        batch = make_image(torch.uint8, size=(2, 3, 16, 16))
        self._check(compiled, batch)
        with torch._dynamo.config.patch(error_on_recompile=True):
            self._check(compiled, make_image(torch.uint8, size=(2, 3, 16, 16), seed=3))
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
