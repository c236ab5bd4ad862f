"""A torchvision-v2-style dispatch model, for Dynamo tests and the audit.

It mirrors the *structure* of ``torchvision.transforms.v2.functional`` (0.28)
without depending on torchvision:

* ``_KERNEL_REGISTRY``: a dict keyed by the functional object, then by the input
  type, whose values are kernels;
* ``_register_kernel_internal`` (``setdefault``, refuses double registration) and
  the public ``register_kernel`` decorator;
* ``_get_kernel``: walks ``input_type.__mro__`` and returns the kernel of the first
  registered class, else raises ``TypeError`` (or passes through);
* functionals shaped like torchvision's: ``torch.jit.is_scripting()`` short-cut,
  ``_log_api_usage_once``, then ``_get_kernel(fn, type(inpt))(inpt, ...)``;
* image kernels on plain tensors, including an affine kernel whose argument
  parsing follows ``_affine_parse_args`` (nested-tuple ``isinstance``) and a
  ``scatter_add``-histogram ``equalize``.

The module is self-contained so that a test file importing it can be dropped
into pytorch's ``test/dynamo/`` next to it.
"""

from __future__ import annotations

import functools
import math
import numbers
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch._dynamo
import torch.nn.functional as nnF
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

# --------------------------------------------------------------------------- registry

_KERNEL_REGISTRY: dict[Callable, dict[type, Callable]] = {}

# Where an MRO walk stops, as torchvision's stops at tv_tensors.TVTensor: a TVTensor
# type with no kernel of its own must not fall through to the plain-tensor kernel.
# tv_model_tvtensors sets it to its TVTensor; None walks the whole MRO.
_MRO_STOP: type | None = None


def _log_api_usage_once(obj: Any) -> None:
    # torchvision logs "torchvision.<module>.<name>" once per API; it is a no-op
    # for code outside the package, which is what a compiled caller sees here.
    module = obj.__module__
    if not module.startswith("torchvision"):
        return
    torch._C._log_api_usage_once(f"{module}.{obj.__name__}")


def _register_kernel_internal(
    functional: Callable, input_type: type
) -> Callable[[Callable], Callable]:
    registry = _KERNEL_REGISTRY.setdefault(functional, {})
    if input_type in registry:
        raise ValueError(f"Functional {functional} already has a kernel registered for type {input_type}.")

    def decorator(kernel: Callable) -> Callable:
        registry[input_type] = kernel
        return kernel

    return decorator


def register_kernel(functional: Callable, input_type: type) -> Callable[[Callable], Callable]:
    """Public registration: user kernels for types of their own, at any time."""
    if not callable(functional) or functional not in _KERNEL_REGISTRY:
        raise ValueError(f"Kernels can only be registered on dispatchers of this model, got {functional}.")
    if not isinstance(input_type, type):
        raise ValueError(f"input_type must be a type, got {input_type!r}.")
    return _register_kernel_internal(functional, input_type)


def _get_kernel(functional: Callable, input_type: type, *, allow_passthrough: bool = False) -> Callable:
    registry = _KERNEL_REGISTRY.get(functional)
    if not registry:
        raise ValueError(f"No kernel registered for functional {functional.__name__}.")
    for cls in input_type.__mro__:
        if cls in registry:
            return registry[cls]
        if cls is _MRO_STOP:
            break
    if allow_passthrough:
        return lambda inpt, *args, **kwargs: inpt
    raise TypeError(
        f"Functional F.{functional.__name__} supports inputs of type {registry.keys()}, "
        f"but got {input_type} instead."
    )


def _dispatch(functional: Callable, inpt: Any, *args: Any, **kwargs: Any) -> Any:
    _log_api_usage_once(functional)
    kernel = _get_kernel(functional, type(inpt))
    return kernel(inpt, *args, **kwargs)


# --------------------------------------------------------------------------- functionals


def horizontal_flip(inpt: torch.Tensor) -> torch.Tensor:
    if torch.jit.is_scripting():
        return horizontal_flip_image(inpt)
    return _dispatch(horizontal_flip, inpt)


def vertical_flip(inpt: torch.Tensor) -> torch.Tensor:
    if torch.jit.is_scripting():
        return vertical_flip_image(inpt)
    return _dispatch(vertical_flip, inpt)


def adjust_brightness(inpt: torch.Tensor, brightness_factor: float) -> torch.Tensor:
    if torch.jit.is_scripting():
        return adjust_brightness_image(inpt, brightness_factor=brightness_factor)
    return _dispatch(adjust_brightness, inpt, brightness_factor=brightness_factor)


def normalize(inpt: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    if torch.jit.is_scripting():
        return normalize_image(inpt, mean=mean, std=std)
    return _dispatch(normalize, inpt, mean=mean, std=std)


def to_dtype(inpt: torch.Tensor, dtype: torch.dtype = torch.float32, scale: bool = False) -> torch.Tensor:
    if torch.jit.is_scripting():
        return to_dtype_image(inpt, dtype=dtype, scale=scale)
    return _dispatch(to_dtype, inpt, dtype=dtype, scale=scale)


def equalize(inpt: torch.Tensor) -> torch.Tensor:
    if torch.jit.is_scripting():
        return equalize_image(inpt)
    return _dispatch(equalize, inpt)


def affine(
    inpt: torch.Tensor,
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: float | Sequence[float],
    center: Sequence[float] | None = None,
) -> torch.Tensor:
    if torch.jit.is_scripting():
        return affine_image(inpt, angle, translate, scale, shear, center)
    return _dispatch(affine, inpt, angle=angle, translate=translate, scale=scale, shear=shear, center=center)


# --------------------------------------------------------------------------- kernels


@_register_kernel_internal(horizontal_flip, torch.Tensor)
def horizontal_flip_image(image: torch.Tensor) -> torch.Tensor:
    return image.flip(-1)


@_register_kernel_internal(vertical_flip, torch.Tensor)
def vertical_flip_image(image: torch.Tensor) -> torch.Tensor:
    return image.flip(-2)


def _resized_output_size(height: int, width: int, size: list[int]) -> list[int]:
    # As torchvision's _compute_resized_output_size: the short and long edges
    # first, whatever size was asked for (a branch on the input's, or a drawn
    # crop's, orientation).
    short, long = (width, height) if width <= height else (height, width)
    if len(size) == 1:  # match the smaller edge
        new_short, new_long = size[0], int(size[0] * long / short)
        new_width, new_height = (new_short, new_long) if width <= height else (new_long, new_short)
    else:
        new_width, new_height = size[1], size[0]
    return [new_height, new_width]


def _max_value(dtype: torch.dtype) -> float:
    return 255.0 if dtype == torch.uint8 else 1.0


@_register_kernel_internal(adjust_brightness, torch.Tensor)
def adjust_brightness_image(image: torch.Tensor, brightness_factor: float) -> torch.Tensor:
    if brightness_factor < 0:
        raise ValueError("brightness_factor is not non-negative.")
    bound = _max_value(image.dtype)
    return image.mul(brightness_factor).clamp_(0, bound).to(image.dtype)


@_register_kernel_internal(normalize, torch.Tensor)
def normalize_image(image: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    if not image.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {image.dtype}.")
    mean_t = torch.as_tensor(mean, dtype=image.dtype, device=image.device).view(-1, 1, 1)
    std_t = torch.as_tensor(std, dtype=image.dtype, device=image.device).view(-1, 1, 1)
    return (image - mean_t) / std_t


@_register_kernel_internal(to_dtype, torch.Tensor)
def to_dtype_image(image: torch.Tensor, dtype: torch.dtype = torch.float32, scale: bool = False) -> torch.Tensor:
    if not scale or image.dtype == dtype:
        return image.to(dtype)
    if image.is_floating_point() == dtype.is_floating_point:
        return image.to(dtype)
    if dtype.is_floating_point:
        return image.to(dtype).mul_(1.0 / _max_value(image.dtype))
    return image.mul(_max_value(dtype)).round_().to(dtype)


@_register_kernel_internal(equalize, torch.Tensor)
def equalize_image(image: torch.Tensor) -> torch.Tensor:
    """Histogram equalization of uint8 images, structured like torchvision's kernel."""
    if image.numel() == 0:
        return image
    batch_shape = image.shape[:-2]
    flat = image.flatten(0, -3) if image.ndim > 2 else image.unsqueeze(0)
    flat = flat.flatten(1).to(torch.int64)  # (N, H*W)
    hist = flat.new_zeros(flat.shape[0], 256)
    hist.scatter_add_(1, flat, torch.ones_like(flat))
    cum_hist = hist.cumsum(dim=-1)
    # Index of the last non-zero bin's step, as in PIL's ImageOps.equalize.
    last = hist.gather(1, (flat.max(dim=1, keepdim=True).values))
    num_non_max = flat.shape[1] - last
    step = num_non_max.div(255, rounding_mode="floor")
    valid = step != 0
    step = step.clamp_(min=1)
    offset = step.div(2, rounding_mode="floor")
    lut = (cum_hist - hist + offset).div(step, rounding_mode="floor").clamp_(0, 255)
    out = lut.gather(1, flat)
    out = torch.where(valid, out, flat).to(torch.uint8)
    return out.reshape(*batch_shape, *image.shape[-2:]) if batch_shape else out.reshape(image.shape)


def _affine_parse_args(
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: float | Sequence[float],
    center: Sequence[float] | None,
) -> tuple[float, list[float], float, list[float], list[float] | None]:
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    # The nested classinfo is how torchvision spells "a number or a sequence".
    if not isinstance(shear, (numbers.Number, (list, tuple))):
        raise TypeError(f"Shear should be either a single value or a sequence of two values. Got {shear}")
    if isinstance(shear, numbers.Number):
        shear = [float(shear), 0.0]
    elif len(shear) == 1:
        shear = [float(shear[0]), float(shear[0])]
    elif len(shear) == 2:
        shear = [float(s) for s in shear]
    else:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None:
        if not isinstance(center, (list, tuple)):
            raise TypeError("Argument center should be a sequence")
        center = [float(c) for c in center]
    return float(angle), [float(t) for t in translate], float(scale), shear, center


def _inverse_affine_matrix(
    center: list[float], angle: float, translate: list[float], scale: float, shear: list[float]
) -> list[float]:
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    matrix = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
    matrix[2] += matrix[0] * (-cx - tx) + matrix[1] * (-cy - ty)
    matrix[5] += matrix[3] * (-cx - tx) + matrix[4] * (-cy - ty)
    matrix[2] += cx
    matrix[5] += cy
    return matrix


@_register_kernel_internal(affine, torch.Tensor)
def affine_image(
    image: torch.Tensor,
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: float | Sequence[float],
    center: Sequence[float] | None = None,
) -> torch.Tensor:
    angle, translate, scale, shear, center = _affine_parse_args(angle, translate, scale, shear, center)
    height, width = image.shape[-2:]
    center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, (width, height))]
    m = _inverse_affine_matrix(center_f, angle, translate, scale, shear)
    theta = torch.tensor(m, dtype=torch.float32, device=image.device).view(1, 2, 3)
    # Normalise the pixel-space matrix to affine_grid's [-1, 1] coordinates.
    theta[..., 0, 1] *= height / width
    theta[..., 1, 0] *= width / height
    theta[..., 0, 2] /= width * 0.5
    theta[..., 1, 2] /= height * 0.5
    batch = image.reshape(-1, *image.shape[-3:]) if image.ndim >= 3 else image.reshape(1, 1, *image.shape)
    float_batch = batch if batch.is_floating_point() else batch.to(torch.float32)
    grid = nnF.affine_grid(theta.expand(float_batch.shape[0], 2, 3), list(float_batch.shape), align_corners=False)
    out = nnF.grid_sample(float_batch, grid, mode="nearest", padding_mode="zeros", align_corners=False)
    if not batch.is_floating_point():
        out = out.round_().to(batch.dtype)
    return out.reshape(image.shape)


# --------------------------------------------------------------------------- audit cases


def make_image(
    dtype: torch.dtype = torch.float32, size: tuple[int, ...] = (3, 16, 20), seed: int = 0
) -> torch.Tensor:
    """A deterministic image: floating point in [0, 1), an integer dtype over its
    whole range (uint8 in [0, 255])."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.rand(size, generator=g, dtype=dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, size, dtype=dtype, generator=g)


class _SubTensor(torch.Tensor):
    """A plain tensor subclass type, used only as a registry key and MRO probe."""


def _registry_type_lookup(x: torch.Tensor) -> torch.Tensor:
    registry = {torch.Tensor: 1.0, _SubTensor: 2.0, int: 3.0}
    return x * registry[_SubTensor] + registry.get(float, 0.0)


def _registry_mro_walk(x: torch.Tensor) -> torch.Tensor:
    return _get_kernel(horizontal_flip, _SubTensor)(x)


def _registry_partial_key(x: torch.Tensor) -> torch.Tensor:
    scale = functools.partial(torch.mul, other=2.0)
    table = {scale: 1.0, torch.add: 2.0, torch.ops.aten.add.Tensor: 3.0}
    return scale(x) + table[torch.add] + table[torch.ops.aten.add.Tensor]


def _isinstance_nested(x: torch.Tensor, value: Any) -> torch.Tensor:
    if isinstance(value, (numbers.Number, (list, tuple))):
        return x + 1
    return x - 1


# name -> (callable, argument factory).  The audit compiles each with
# fullgraph=True on the base and on the overlay.
AUDIT_CASES: dict[str, tuple[Callable, Callable[[], tuple]]] = {
    "registry: type objects as keys": (_registry_type_lookup, lambda: (make_image(),)),
    "registry: MRO walk to a base kernel": (_registry_mro_walk, lambda: (make_image(),)),
    "registry: partial/builtin/aten keys": (_registry_partial_key, lambda: (make_image(),)),
    "isinstance: nested classinfo tuple": (_isinstance_nested, lambda: (make_image(), [1.0, 2.0])),
    "F.horizontal_flip": (horizontal_flip, lambda: (make_image(torch.uint8),)),
    "F.vertical_flip": (vertical_flip, lambda: (make_image(),)),
    "F.adjust_brightness": (adjust_brightness, lambda: (make_image(torch.uint8), 1.5)),
    "F.normalize": (normalize, lambda: (make_image(), [0.5, 0.4, 0.3], [0.2, 0.2, 0.2])),
    "F.to_dtype (scale)": (to_dtype, lambda: (make_image(torch.uint8), torch.float32, True)),
    "F.equalize": (equalize, lambda: (make_image(torch.uint8),)),
    "F.affine": (affine, lambda: (make_image(), 30.0, [2.0, -1.0], 1.1, [5.0, 0.0])),
    "affine_image (kernel)": (affine_image, lambda: (make_image(torch.uint8), -15.0, (1, 1), 0.9, 3.0)),
}


# --------------------------------------------------------------------------- test helpers


def python_calls(fn: Callable, *args: Any) -> tuple[int, Any]:
    """fn(*args) and the number of Python-level calls it made: a measure of
    Dynamo's work that, unlike its time, does not depend on the machine's load."""
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(None)
    return calls, result


class InductorVsEagerMixin:
    """Inductor equals eager (values, dtype, shape, strides; bit for bit unless a
    tolerance is given, None meaning assertEqual's default for the dtype), and its
    generated code."""

    def assertMatchesEager(self, actual: Any, expected: Any, atol: float | None = 0, rtol: float | None = 0) -> None:
        if isinstance(expected, torch.Tensor):
            expected, actual = (expected,), (actual,)
        self.assertEqual(len(actual), len(expected))
        for a, e in zip(actual, expected):
            self.assertIs(type(a), type(e))
            self.assertEqual(a.dtype, e.dtype)
            self.assertEqual(a.shape, e.shape)
            self.assertEqual(a.stride(), e.stride())
            self.assertEqual(a, e, atol=atol, rtol=rtol)

    def check(
        self, fn: Callable, *args: Any, dynamic: bool | None = None, atol: float | None = 0, rtol: float | None = 0
    ) -> None:
        actual = torch.compile(fn, backend="inductor", fullgraph=True, dynamic=dynamic)(*args)
        self.assertMatchesEager(actual, fn(*args), atol=atol, rtol=rtol)

    def code(
        self, fn: Callable, *args: Any, dynamic: bool | None = None, atol: float | None = 0, rtol: float | None = 0
    ) -> str:
        """The generated code of compiling fn (FX graph cache off), checked against eager."""
        from torch._inductor import config as inductor_config
        from torch._inductor.utils import run_and_get_code

        isa = getattr(self, "vec_isa", None)
        if isa is None or isa == self.X86_VEC_ISAS[0]:
            compiled = torch.compile(fn, backend="inductor", fullgraph=True, dynamic=dynamic)
            with inductor_config.patch(fx_graph_cache=False):
                actual, (code,) = run_and_get_code(compiled, *args)
            self.assertMatchesEager(actual, fn(*args), atol=atol, rtol=rtol)
        # under for_each_x86_isa: the code of the ISA the test is at, generated only
        return code if isa is None else self.code_for_isa(isa, fn, *args, dynamic=dynamic)

    # The vector ISAs Inductor picks on x86 (cpu_vec_isa.valid_vec_isa_list), by name.
    X86_VEC_ISAS = ("avx2", "avx512", "amx")

    def code_for_isa(self, isa: str, fn: Callable, *args: Any, dynamic: bool | None = None) -> str:
        """The code Inductor generates for fn when it picks the vector ISA ``isa``.

        Generated only (``get_code``: not compiled, not run), so the code of every
        x86 ISA can be checked on any x86 CPU, whichever ISA it has; ``check``
        runs the code of the machine's own ISA against eager.
        """
        from unittest import mock

        from torch._inductor import config as inductor_config, cpu_vec_isa
        from torch._inductor.graph import GraphLowering

        base = {"avx2": cpu_vec_isa.VecAVX2, "avx512": cpu_vec_isa.VecAVX512, "amx": cpu_vec_isa.VecAMX}[isa]
        # Taken as usable without the ISA's own probes (a build-and-load check and,
        # for AMX, a CPUID check), which fail on a CPU that lacks it.
        picked = type(f"Picked{base.__name__}", (base,), {"__bool__": lambda self: True, "__hash__": base.__hash__})()
        generated: list[str] = []

        class Generated(Exception):
            pass

        def codegen_only(graph: GraphLowering) -> Any:
            # like torch._inductor.utils.get_code, but stop right after codegen:
            # nothing is compiled, and no stand-in module has to pass for the real one
            wrapper, _ = graph.codegen_with_cpp_wrapper() if graph.cpp_wrapper else graph.codegen()
            generated.append(wrapper.value)
            raise Generated

        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="inductor", fullgraph=True, dynamic=dynamic)
        with mock.patch.object(cpu_vec_isa, "pick_vec_isa", lambda: picked), mock.patch.object(
            GraphLowering, "compile_to_module", codegen_only
        ), inductor_config.patch(fx_graph_cache=False):
            try:
                compiled(*args)
            except Exception:
                if not generated:
                    raise
        torch._dynamo.reset()
        (code,) = generated
        return code

def for_each_x86_isa(cls: type) -> type:
    """Run each test of an InductorVsEagerMixin class once per x86 vector ISA.

    In the run for ``self.vec_isa``, ``self.code(...)`` returns the code Inductor
    generates on that ISA (see ``code_for_isa``); the first run also compiles for
    this machine and checks that against eager.  A test states what it expects on
    each ISA, branching on ``self.vec_isa`` where the code differs, so nothing it
    checks depends on which x86 CPU runs it, and no ISA is skipped.
    """

    def each_isa(test: Callable) -> Callable:
        @functools.wraps(test)
        def run(self: Any) -> None:
            for isa in self.X86_VEC_ISAS:
                with self.subTest(vec_isa=isa):
                    self.vec_isa = isa
                    try:
                        test(self)
                    finally:
                        self.vec_isa = None

        return run

    for name, value in list(vars(cls).items()):
        if name.startswith("test") and callable(value):
            setattr(cls, name, each_isa(value))
    return cls


class CompiledVsEagerMixin:
    """Assertions shared by the tests: compiled equals eager, one frame, no graph break."""

    def assertSameOutput(self, eager: Any, compiled: Any) -> None:
        self.assertIs(type(compiled), type(eager))
        if isinstance(eager, (tuple, list)):
            self.assertEqual(len(compiled), len(eager))
            for e, c in zip(eager, compiled):
                self.assertSameOutput(e, c)
            return
        if isinstance(eager, torch.Tensor):
            self.assertEqual(compiled.dtype, eager.dtype)
            self.assertEqual(compiled.shape, eager.shape)
        self.assertEqual(compiled, eager)

    def check_one_frame(self, fn: Callable, *args: Any, op_count: int | None = None) -> Any:
        """Compile ``fn`` afresh with fullgraph=True: equal to eager, in one frame, no break."""
        torch._dynamo.reset()
        counters.clear()
        cnt = CompileCounter()
        eager = fn(*args)
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)(*args)
        self.assertSameOutput(eager, compiled)
        self.assertEqual(cnt.frame_count, 1)
        if op_count is not None:
            self.assertEqual(cnt.op_count, op_count)
        self.assertEqual(len(counters["graph_break"]), 0)
        return compiled

    def check_no_recompile(self, fn: Callable, first_args: tuple, second_args: tuple) -> Any:
        """One frame for the first call; the second (same shapes) must not recompile."""
        torch._dynamo.reset()
        counters.clear()
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        self.assertSameOutput(fn(*first_args), compiled(*first_args))
        with torch._dynamo.config.patch(error_on_recompile=True):
            out = compiled(*second_args)
        self.assertSameOutput(fn(*second_args), out)
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)
        return out
