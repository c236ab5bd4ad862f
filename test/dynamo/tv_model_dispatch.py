"""Dispatch semantics for the torchvision-style model: every kind of dispatcher
callable as a registry key, and MRO introspection as a dispatcher uses it.

torchvision keys its kernel registry on functionals (plain functions), but code
built the same way keys registries on whatever callable it dispatches on:
bound methods (of tensors, of user objects, of ``nn.Module``\\ s), class- and
static methods, transform instances with ``__call__``, ``functools.partial``
objects and aten overloads.  ``MethodRegistry`` here is such a registry, with
the model's MRO walk (``_get_kernel``) spelled with ``cls.mro()`` as well as
``__mro__``.

The module is self-contained apart from ``tv_dispatch_model`` so that test files
importing it can be dropped into pytorch's ``test/dynamo/`` next to it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable

import torch

from tv_dispatch_model import (
    _get_kernel,
    adjust_brightness,
    make_image,
    vertical_flip,
)

# --------------------------------------------------------------------------- dispatchers


class Functionals:
    """Dispatchers as methods: bound, class- and static methods."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def flip(self, inpt: torch.Tensor) -> torch.Tensor:
        return inpt.flip(-1) * self.scale

    def brighten(self, inpt: torch.Tensor) -> torch.Tensor:
        return inpt * (1.0 + self.scale)

    @classmethod
    def from_class(cls, inpt: torch.Tensor) -> torch.Tensor:
        return inpt + len(cls.__name__)

    @staticmethod
    def static(inpt: torch.Tensor) -> torch.Tensor:
        return inpt - 1


class MoreFunctionals(Functionals):
    pass


class FlipModule(torch.nn.Module):
    """A module whose methods dispatch, keyed in a table built at __init__."""

    def __init__(self) -> None:
        super().__init__()
        self.table = {self.flip: 2.0, self.forward: 3.0}

    def flip(self, inpt: torch.Tensor) -> torch.Tensor:
        return inpt.flip(-1)

    def forward(self, inpt: torch.Tensor) -> torch.Tensor:
        return self.flip(inpt) * self.table[self.flip] + self.table[self.forward]


class Brighten:
    """A transform instance: registries key on the instance, it is called directly."""

    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __call__(self, inpt: torch.Tensor) -> torch.Tensor:
        return adjust_brightness(inpt, self.factor)


@dataclasses.dataclass
class Scaler:
    """eq=True makes instances unhashable; their bound methods stay hashable."""

    factor: float = 2.0

    def apply(self, inpt: torch.Tensor) -> torch.Tensor:
        return inpt * self.factor


FUNCTIONALS = Functionals(2.0)
OTHER_FUNCTIONALS = Functionals(3.0)
FLIP_MODULE = FlipModule()
BRIGHTEN = Brighten(1.5)
DARKEN = Brighten(0.5)
SCALE_PARTIAL = functools.partial(torch.mul, other=2.0)

# Built outside any compiled region: Dynamo sees the key objects as they are.
METHOD_REGISTRY: dict[Callable, float] = {
    FUNCTIONALS.flip: 1.0,
    FLIP_MODULE.flip: 2.0,
    Functionals.from_class: 3.0,
    Functionals.static: 4.0,
    BRIGHTEN: 5.0,
    SCALE_PARTIAL: 6.0,
    torch.ops.aten.flip.default: 7.0,
    torch.ops.aten.mul: 8.0,
}

# --------------------------------------------------------------------------- MRO walks


def get_kernel_by_mro_method(registry: dict[type, Callable], input_type: type) -> Callable:
    """The model's lookup, walking ``input_type.mro()`` instead of ``__mro__``."""
    for cls in input_type.mro():
        if cls in registry:
            return registry[cls]
    raise TypeError(f"no kernel for {input_type.__name__}")


def get_kernel_by_type_mro(registry: dict[type, Callable], input_type: type) -> Callable:
    for cls in type.mro(input_type):
        if cls in registry:
            return registry[cls]
    raise TypeError(f"no kernel for {input_type.__name__}")


class _Image(torch.Tensor):
    pass


class _Mask(_Image):
    pass


_MRO_REGISTRY: dict[type, Callable] = {
    _Image: lambda x: x * 2,
    torch.Tensor: lambda x: x + 1,
    int: lambda x: x - 1,
}

# --------------------------------------------------------------------------- audit cases


def _tensor_method_keys(x: torch.Tensor) -> torch.Tensor:
    table = {x.add: 1.0, x.mul: 2.0}
    return x.mul(table[x.mul]) + table.get(x.add, 0.0) + (x.sub in table)


def _registry_bound_method_keys(x: torch.Tensor) -> torch.Tensor:
    return (
        x * METHOD_REGISTRY[FUNCTIONALS.flip]
        + METHOD_REGISTRY[FLIP_MODULE.flip]
        + METHOD_REGISTRY[FUNCTIONALS.from_class]
        + METHOD_REGISTRY.get(OTHER_FUNCTIONALS.flip, 100.0)
    )


def _registry_instance_partial_aten_keys(x: torch.Tensor, transform: Brighten) -> torch.Tensor:
    return (
        transform(x) * METHOD_REGISTRY.get(transform, 0.0)
        + METHOD_REGISTRY[SCALE_PARTIAL]
        + METHOD_REGISTRY[torch.ops.aten.flip.default]
        + METHOD_REGISTRY[torch.ops.aten.mul]
        + METHOD_REGISTRY[Functionals.static]
    )


def _unhashable_self_method_key(x: torch.Tensor) -> torch.Tensor:
    scaler = Scaler(3.0)
    table = {scaler.apply: 2.0}
    return scaler.apply(x) + table[scaler.apply]


def _module_method_keys(x: torch.Tensor) -> torch.Tensor:
    return FLIP_MODULE(x)


def _mro_method_walk(x: torch.Tensor) -> torch.Tensor:
    a = get_kernel_by_mro_method(_MRO_REGISTRY, type(x))(x)
    b = get_kernel_by_type_mro(_MRO_REGISTRY, bool)(x)
    return a + b


def _builtin_class_mro(x: torch.Tensor) -> torch.Tensor:
    kernel = _get_kernel(vertical_flip, int, allow_passthrough=True)
    names = [cls.__name__ for cls in inspect.getmro(bool)]
    return kernel(x) + len(names) + len(str.__mro__)


# name -> (callable, argument factory); the audit compiles each with
# fullgraph=True on the base and with the series.
AUDIT_CASES: dict[str, tuple[Callable, Callable[[], tuple]]] = {
    "keys: tensor bound methods (x.add)": (_tensor_method_keys, lambda: (make_image(),)),
    "keys: bound/class methods in a global registry": (_registry_bound_method_keys, lambda: (make_image(),)),
    "keys: transform instance, partial, aten, staticmethod": (
        _registry_instance_partial_aten_keys,
        lambda: (make_image(), BRIGHTEN),
    ),
    "keys: method of an unhashable (eq=True) object": (_unhashable_self_method_key, lambda: (make_image(),)),
    "keys: nn.Module methods in a module's table": (_module_method_keys, lambda: (make_image(),)),
    "mro: cls.mro() / type.mro(cls) kernel walk": (
        _mro_method_walk,
        lambda: (make_image().as_subclass(_Mask),),
    ),
    "mro: builtin classes (_get_kernel(fn, int))": (_builtin_class_mro, lambda: (make_image(),)),
}
