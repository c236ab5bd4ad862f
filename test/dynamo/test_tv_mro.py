# Owner(s): ["module: dynamo"]
"""MRO introspection as a dispatcher uses it.

``TypeMroTests`` needs the "support type.mro() and builtin classes' MRO
introspection" patch: ``cls.mro()`` and ``type.mro(cls)`` on user classes,
tensor subclasses, classes with metaclasses and multiple inheritance, and on
builtin classes, plus iterating the ``__mro__`` of a builtin class (``int``,
``str``, ``inspect.getmro(bool)``), which the model's ``_get_kernel`` does for
``int`` inputs.

``MroIntrospectionRegressionTests`` holds what already works on 2.13:
``type(x).__mro__`` of tensor-subclass instances, ``__qualname__`` and
``__module__`` of classes, and ``issubclass``/``isinstance`` with ABCs
(``__subclasshook__``, ``register``), metaclasses and multiple inheritance.
"""

import abc
import collections.abc
import inspect
import numbers

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter

from tv_dispatch_model import (
    _get_kernel,
    _KERNEL_REGISTRY,
    adjust_brightness,
    CompiledVsEagerMixin,
    make_image,
    register_kernel,
    vertical_flip,
)
from tv_model_dispatch import get_kernel_by_mro_method, get_kernel_by_type_mro


class Base:
    pass


class Left(Base):
    pass


class Right(Base):
    pass


class Diamond(Left, Right):
    pass


class Meta(type):
    pass


class WithMeta(Left, metaclass=Meta):
    pass


class ReversingMeta(type):
    # A custom mro(): __mro__ follows it, type.mro(cls) does not.
    def mro(cls):
        default = super().mro()
        if cls.__name__ == "Reversed":
            return [default[0], *reversed(default[1:-1]), default[-1]]
        return default


class Reversed(Left, Right, metaclass=ReversingMeta):
    pass


class Rebased(Left):
    pass


class Image(torch.Tensor):
    pass


class Mask(Image):
    pass


class Video(Image, Right):
    pass


class SizedThing:
    def __len__(self):
        return 0


class Quacks(abc.ABC):
    @classmethod
    def __subclasshook__(cls, other):
        if cls is Quacks:
            return hasattr(other, "quack")
        return NotImplemented


class Duck:
    def quack(self):
        return "quack"


class Registered(abc.ABC):
    pass


Registered.register(Right)


class TypeMroTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_mro_method_on_user_classes(self):
        def fn(x):
            orders = [cls.mro() for cls in (Base, Diamond, WithMeta, Reversed)]
            return x + len(orders[1]), orders

        out = self.check_one_frame(fn, torch.zeros(2))
        self.assertEqual(out[1][1], [Diamond, Left, Right, Base, object])

    def test_type_mro_of_user_classes(self):
        def fn(x):
            return x + 1, type.mro(Diamond), type.mro(Reversed), Meta.mro(WithMeta), Reversed.__mro__

        out = self.check_one_frame(fn, torch.zeros(2))
        # type.mro ignores the metaclass' own mro(); __mro__ follows it.
        self.assertEqual(out[2], [Reversed, Left, Right, Base, object])
        self.assertEqual(out[4], (Reversed, Base, Right, Left, object))

    def test_mro_of_tensor_subclass_instances(self):
        def fn(x):
            return x * 2, type(x).mro(), type.mro(type(x))

        for cls in (torch.Tensor, Image, Mask, Video):
            with self.subTest(cls=cls.__name__):
                x = make_image().as_subclass(cls)
                out = self.check_one_frame(fn, x)
                self.assertEqual(out[1], list(cls.__mro__))

    def test_mro_is_a_new_list(self):
        def fn(x):
            first = Left.mro()
            first.append(int)
            second = Left.mro()
            return x + len(second), first, second, first is second

        out = self.check_one_frame(fn, torch.zeros(2))
        self.assertEqual(out[2], [Left, Base, object])
        self.assertFalse(out[3])

    def test_mro_of_builtin_classes(self):
        def fn(x):
            return x + 1, bool.mro(), type.mro(int), object.mro(), type.mro(type)

        out = self.check_one_frame(fn, torch.zeros(2))
        self.assertEqual(out[1], [bool, int, object])

    def test_kernel_lookup_by_mro_method(self):
        registry = {Image: lambda x: x * 2, torch.Tensor: lambda x: x + 1, Right: lambda x: x - 1}

        def fn(x):
            a = get_kernel_by_mro_method(registry, type(x))(x)
            b = get_kernel_by_type_mro(registry, Diamond)(x)
            return a + b

        for cls in (torch.Tensor, Mask, Video):
            with self.subTest(cls=cls.__name__):
                self.check_one_frame(fn, make_image().as_subclass(cls))

    def test_rebased_class_recompiles(self):
        def fn(x):
            return x + len(Rebased.mro()), Rebased.mro()[1]

        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        x = torch.zeros(2)
        self.assertSameOutput(fn(x), compiled(x))
        try:
            Rebased.__bases__ = (Diamond,)
            self.assertSameOutput(fn(x), compiled(x))
            self.assertEqual(compiled(x)[1], Diamond)
        finally:
            Rebased.__bases__ = (Left,)
        with torch._dynamo.config.patch(error_on_recompile=True):
            self.assertSameOutput(fn(x), compiled(x))
        self.assertEqual(cnt.frame_count, 2)

    def test_iterate_builtin_class_mro(self):
        def fn(x):
            names = [cls.__name__ for cls in int.__mro__]
            names += [cls.__name__ for cls in inspect.getmro(bool)]
            return x + len(str.__mro__), names, int.__bases__, bool.__base__

        out = self.check_one_frame(fn, torch.zeros(2))
        self.assertEqual(out[1], ["int", "object", "bool", "int", "object"])

    def test_get_kernel_for_builtin_input_types(self):
        def scale_int(value, brightness_factor):
            return value * brightness_factor + 1

        register_kernel(adjust_brightness, int)(scale_int)
        self.addCleanup(_KERNEL_REGISTRY[adjust_brightness].pop, int)

        def fn(x):
            passthrough = _get_kernel(vertical_flip, int, allow_passthrough=True)
            via_int = _get_kernel(adjust_brightness, bool)
            return passthrough(x) + via_int(x, brightness_factor=2.0), via_int is scale_int

        out = self.check_one_frame(fn, make_image())
        self.assertEqual(out, (make_image() + make_image() * 2.0 + 1, True))


class MroIntrospectionRegressionTests(CompiledVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_dunder_mro_of_tensor_subclass_instances(self):
        def fn(x):
            mro = type(x).__mro__
            return x + len(mro), mro, [cls.__name__ for cls in mro], inspect.getmro(type(x))

        for cls in (torch.Tensor, Mask, Video):
            with self.subTest(cls=cls.__name__):
                out = self.check_one_frame(fn, make_image().as_subclass(cls))
                self.assertEqual(out[1], cls.__mro__)

    def test_one_frame_per_input_type(self):
        def fn(x):
            for cls in type(x).__mro__:
                if cls is Image:
                    return x * 2
            return x + 1

        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        inputs = [make_image().as_subclass(cls) for cls in (torch.Tensor, Image, Mask)]
        for x in inputs:
            self.assertSameOutput(fn(x), compiled(x))
        with torch._dynamo.config.patch(error_on_recompile=True):
            for x in inputs:
                self.assertSameOutput(fn(x), compiled(x))
        self.assertEqual(cnt.frame_count, 3)

    def test_qualname_and_module(self):
        class Local(Image):
            pass

        def fn(x):
            cls = type(x)
            return (
                x + 1,
                cls.__qualname__,
                cls.__module__,
                cls.__name__,
                Diamond.__qualname__,
                WithMeta.__module__,
                torch.Tensor.__qualname__,
                torch.Tensor.__module__,
            )

        for cls in (Mask, Local):
            with self.subTest(cls=cls.__name__):
                self.check_one_frame(fn, make_image().as_subclass(cls))

    def test_issubclass_with_abcs(self):
        def fn(x):
            return (
                x + 1,
                issubclass(Duck, Quacks),
                issubclass(Base, Quacks),
                isinstance(Duck(), Quacks),
                issubclass(Right, Registered),
                issubclass(Diamond, Registered),
                issubclass(Left, Registered),
                isinstance(Video, Meta),
                issubclass(SizedThing, collections.abc.Sized),
                issubclass(bool, numbers.Integral),
                issubclass(float, numbers.Integral),
            )

        out = self.check_one_frame(fn, torch.zeros(2))
        self.assertEqual(out[1:], (True, False, True, True, True, False, False, True, True, False))

    def test_issubclass_metaclasses_and_multiple_inheritance(self):
        def fn(x):
            return (
                x + 1,
                issubclass(WithMeta, Left),
                isinstance(WithMeta, Meta),
                type(WithMeta) is Meta,
                issubclass(Meta, type),
                issubclass(Diamond, (Right, int)),
                issubclass(Video, Right),
                issubclass(Video, torch.Tensor),
                issubclass(Mask, (Video, str)),
                Diamond.__bases__,
            )

        out = self.check_one_frame(fn, torch.zeros(2))
        self.assertEqual(out[1:-1], (True, True, True, True, True, True, True, False))


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
