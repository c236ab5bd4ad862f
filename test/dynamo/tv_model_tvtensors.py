"""TVTensors and transforms over arbitrary structures, for Dynamo tests and the audit.

This extends ``tv_dispatch_model`` with the part of torchvision v2 (0.28) that
runs on tensor subclasses, written from its described structure:

* ``TVTensor``: a ``torch.Tensor`` subclass whose ``__torch_function__`` runs the
  op under ``torch._C.DisableTorchFunctionSubclass()`` and hands back plain
  tensors, except for a few ops (``clone``, ``to``, ...) or while
  ``_must_return_subclass()`` holds, where the output is re-wrapped with
  ``as_subclass(cls)``; ``shape``, ``ndim``, ``device`` and ``dtype`` are
  properties reading ``super().<attr>`` with subclass dispatch disabled;
* ``Image``, ``Video``, ``Mask`` and ``BoundingBoxes`` (which carries ``format``
  and ``canvas_size`` as plain Python attributes, set when it is wrapped);
* ``wrap(output, like=...)`` and a kernel registration that, for TVTensor input
  types, stores a ``functools.wraps`` wrapper unwrapping with
  ``inpt.as_subclass(torch.Tensor)`` and re-wrapping with ``wrap(..., like=inpt)``;
* kernels reading the box metadata, and a public ``register_kernel`` for user
  TVTensor subclasses;
* ``Transform``: ``forward(*inputs)`` flattens with ``torch.utils._pytree``,
  decides per leaf (``isinstance`` checks, "the first pure tensor is the image"
  when no Image/Video is present), calls ``make_params`` once and
  ``transform(leaf, params)`` per leaf, and unflattens; plus deterministic
  transforms on it.

It registers kernels for the TVTensor types on the functionals of
``tv_dispatch_model`` (and adds ``resize``, ``crop``, ``center_crop``, ``pad``,
``rgb_to_grayscale`` and ``get_size``) in the same registry.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as nnF
from torch.utils._pytree import tree_flatten, tree_unflatten

from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

import tv_dispatch_model
from tv_dispatch_model import (
    _dispatch,
    _get_kernel,
    _KERNEL_REGISTRY,
    CompiledVsEagerMixin,
    _max_value,
    _register_kernel_internal as _register_in_registry,
    _resized_output_size,
    adjust_brightness,
    adjust_brightness_image,
    horizontal_flip,
    horizontal_flip_image,
    make_image,
    normalize,
    normalize_image,
    to_dtype,
    to_dtype_image,
    vertical_flip,
    vertical_flip_image,
)

# --------------------------------------------------------------------------- TVTensor

# torchvision's ``set_return_type("TVTensor")`` flips a module-level switch that
# makes every op on a TVTensor return the subclass.
_TORCHFUNCTION_SUBCLASS = False


def _must_return_subclass() -> bool:
    return _TORCHFUNCTION_SUBCLASS


class set_return_type:
    """``with set_return_type("TVTensor"):`` ops on TVTensors keep their type."""

    def __init__(self, return_type: str) -> None:
        if return_type not in ("Tensor", "TVTensor"):
            raise ValueError(f"return_type must be 'Tensor' or 'TVTensor', got {return_type!r}")
        self.value = return_type == "TVTensor"

    def __enter__(self) -> None:
        global _TORCHFUNCTION_SUBCLASS
        self.previous = _TORCHFUNCTION_SUBCLASS
        _TORCHFUNCTION_SUBCLASS = self.value

    def __exit__(self, *exc: Any) -> None:
        global _TORCHFUNCTION_SUBCLASS
        _TORCHFUNCTION_SUBCLASS = self.previous


class TVTensor(torch.Tensor):
    """Base of the typed tensors: plain-tensor results unless told otherwise."""

    @staticmethod
    def _to_tensor(
        data: Any,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        requires_grad: bool | None = None,
    ) -> torch.Tensor:
        if requires_grad is None:
            requires_grad = data.requires_grad if isinstance(data, torch.Tensor) else False
        return torch.as_tensor(data, dtype=dtype, device=device).requires_grad_(requires_grad)

    @classmethod
    def _wrap_output(cls, output: Any, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> Any:
        # Re-type the tensors of the result (a tensor, or a tuple/list of them).
        if isinstance(output, torch.Tensor) and not isinstance(output, cls):
            return output.as_subclass(cls)
        if isinstance(output, (tuple, list)):
            return type(output)(cls._wrap_output(part, args, kwargs) for part in output)
        return output

    @classmethod
    def __torch_function__(
        cls,
        func: Callable,
        types: tuple[type, ...] = (),
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with torch._C.DisableTorchFunctionSubclass():
            output = func(*args, **(kwargs or {}))
        keep = _must_return_subclass()
        if keep or (func in _KEEPS_SUBCLASS and isinstance(args[0], cls)):
            # Only when the TVTensor is the op's first argument: ``plain.to(image)``
            # stays plain.
            return cls._wrap_output(output, args, kwargs)
        # In-place ops hand back ``self``, still typed: drop to a plain tensor.
        if not keep and isinstance(output, cls):
            return output.as_subclass(torch.Tensor)
        return output

    def __deepcopy__(self, memo: dict[int, Any]) -> TVTensor:
        # detach/clone/to keep the subclass (and the box metadata) through
        # _KEEPS_SUBCLASS; deepcopy must not record autograd history.
        return self.detach().clone().requires_grad_(self.requires_grad)

    # Read the tensor metadata without a trip through __torch_function__.
    @property
    def shape(self) -> torch.Size:  # type: ignore[override]
        with torch._C.DisableTorchFunctionSubclass():
            return super().shape

    @property
    def ndim(self) -> int:  # type: ignore[override]
        with torch._C.DisableTorchFunctionSubclass():
            return super().ndim

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        with torch._C.DisableTorchFunctionSubclass():
            return super().device

    @property
    def dtype(self) -> torch.dtype:  # type: ignore[override]
        with torch._C.DisableTorchFunctionSubclass():
            return super().dtype


# Ops whose output keeps the TVTensor type (torchvision keeps clone, to,
# detach, requires_grad_ and pin_memory).
_KEEPS_SUBCLASS = {
    torch.Tensor.clone,
    torch.Tensor.to,
    torch.Tensor.detach,
    torch.Tensor.requires_grad_,
}


# Kernel lookups stop at TVTensor, as torchvision's do.
tv_dispatch_model._MRO_STOP = TVTensor


class Image(TVTensor):
    def __new__(
        cls,
        data: Any,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        requires_grad: bool | None = None,
    ) -> Image:
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if tensor.ndim < 2:
            raise ValueError(f"An Image needs at least 2 dimensions, got {tensor.ndim}")
        if tensor.ndim == 2:
            tensor = tensor.unsqueeze(0)
        return tensor.as_subclass(cls)


class Video(TVTensor):
    def __new__(
        cls,
        data: Any,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        requires_grad: bool | None = None,
    ) -> Video:
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if tensor.ndim < 4:
            raise ValueError(f"A Video needs at least 4 dimensions, got {tensor.ndim}")
        return tensor.as_subclass(cls)


class Mask(TVTensor):
    def __new__(
        cls,
        data: Any,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        requires_grad: bool | None = None,
    ) -> Mask:
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        return tensor.as_subclass(cls)


class BoundingBoxFormat(enum.Enum):
    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"


class BoundingBoxes(TVTensor):
    """``[N, 4]`` boxes; ``format`` and ``canvas_size`` are plain attributes."""

    format: BoundingBoxFormat
    canvas_size: tuple[int, int]

    @classmethod
    def _wrap(
        cls,
        tensor: torch.Tensor,
        *,
        format: BoundingBoxFormat | str,
        canvas_size: tuple[int, int],
        check_dims: bool = True,
    ) -> BoundingBoxes:
        if check_dims:
            if tensor.ndim == 1:
                tensor = tensor.unsqueeze(0)
            elif tensor.ndim != 2:
                raise ValueError(f"Expected a 1D or 2D tensor, got {tensor.ndim}D")
        if isinstance(format, str):
            format = BoundingBoxFormat[format.upper()]
        boxes = tensor.as_subclass(cls)
        boxes.format = format
        boxes.canvas_size = canvas_size
        return boxes

    def __new__(
        cls,
        data: Any,
        *,
        format: BoundingBoxFormat | str,
        canvas_size: tuple[int, int],
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        requires_grad: bool | None = None,
    ) -> BoundingBoxes:
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        return cls._wrap(tensor, format=format, canvas_size=canvas_size)

    @classmethod
    def _wrap_output(cls, output: Any, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> Any:
        # The metadata comes from the first BoundingBoxes among the arguments.
        flat_params, _ = tree_flatten(tuple(args) + (tuple(kwargs.values()) if kwargs else ()))
        first = next(x for x in flat_params if isinstance(x, BoundingBoxes))
        format, canvas_size = first.format, first.canvas_size
        if isinstance(output, torch.Tensor) and not isinstance(output, BoundingBoxes):
            return BoundingBoxes._wrap(output, format=format, canvas_size=canvas_size, check_dims=False)
        if isinstance(output, (tuple, list)):
            return type(output)(
                BoundingBoxes._wrap(part, format=format, canvas_size=canvas_size, check_dims=False)
                for part in output
            )
        return output


def wrap(wrappee: torch.Tensor, *, like: TVTensor, **kwargs: Any) -> TVTensor:
    """Give ``wrappee`` the type (and metadata, overridable by ``kwargs``) of ``like``."""
    if isinstance(like, BoundingBoxes):
        return BoundingBoxes._wrap(
            wrappee,
            format=kwargs.get("format", like.format),
            canvas_size=kwargs.get("canvas_size", like.canvas_size),
        )
    return wrappee.as_subclass(type(like))


def is_pure_tensor(inpt: Any) -> bool:
    return isinstance(inpt, torch.Tensor) and not isinstance(inpt, TVTensor)


# --------------------------------------------------------------------------- registry


def _kernel_tv_tensor_wrapper(kernel: Callable) -> Callable:
    @functools.wraps(kernel)
    def wrapper(inpt: TVTensor, *args: Any, **kwargs: Any) -> TVTensor:
        output = kernel(inpt.as_subclass(torch.Tensor), *args, **kwargs)
        return wrap(output, like=inpt)

    return wrapper


def _register_kernel_internal(
    functional: Callable, input_type: type, *, tv_tensor_wrapper: bool = True
) -> Callable[[Callable], Callable]:
    """Registration as torchvision does it: TVTensor kernels get the unwrap/re-wrap wrapper."""
    register = _register_in_registry(functional, input_type)

    def decorator(kernel: Callable) -> Callable:
        wrapped = (
            _kernel_tv_tensor_wrapper(kernel)
            if tv_tensor_wrapper and issubclass(input_type, TVTensor)
            else kernel
        )
        register(wrapped)
        return kernel

    return decorator


_BUILTIN_TV_TENSORS = frozenset()  # filled below, once the classes exist


def register_kernel(functional: Callable, tv_tensor_cls: type) -> Callable[[Callable], Callable]:
    """Public registration for user TVTensor subclasses: the kernel sees the subclass."""
    if functional not in _KERNEL_REGISTRY:
        raise ValueError(f"Kernels can only be registered on functionals of this model, got {functional}.")
    if not (isinstance(tv_tensor_cls, type) and issubclass(tv_tensor_cls, TVTensor)):
        raise ValueError(f"Kernels can only be registered for subclasses of TVTensor, got {tv_tensor_cls}.")
    if tv_tensor_cls in _BUILTIN_TV_TENSORS:
        raise ValueError(f"Kernels cannot be registered for the built-in {tv_tensor_cls.__name__}.")
    return _register_kernel_internal(functional, tv_tensor_cls, tv_tensor_wrapper=False)


def get_size(inpt: torch.Tensor) -> list[int]:
    if torch.jit.is_scripting():
        return get_size_image(inpt)
    return _dispatch(get_size, inpt)


def resize(inpt: torch.Tensor, size: list[int], interpolation: str = "bilinear") -> torch.Tensor:
    if torch.jit.is_scripting():
        return resize_image(inpt, size=size, interpolation=interpolation)
    return _dispatch(resize, inpt, size=size, interpolation=interpolation)


def crop(inpt: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    if torch.jit.is_scripting():
        return crop_image(inpt, top=top, left=left, height=height, width=width)
    return _dispatch(crop, inpt, top=top, left=left, height=height, width=width)


def center_crop(inpt: torch.Tensor, output_size: list[int]) -> torch.Tensor:
    if torch.jit.is_scripting():
        return center_crop_image(inpt, output_size=output_size)
    return _dispatch(center_crop, inpt, output_size=output_size)


def pad(inpt: torch.Tensor, padding: int | list[int], fill: float = 0.0) -> torch.Tensor:
    if torch.jit.is_scripting():
        return pad_image(inpt, padding=padding, fill=fill)
    return _dispatch(pad, inpt, padding=padding, fill=fill)


def rgb_to_grayscale(inpt: torch.Tensor, num_output_channels: int = 1) -> torch.Tensor:
    if torch.jit.is_scripting():
        return rgb_to_grayscale_image(inpt, num_output_channels=num_output_channels)
    return _dispatch(rgb_to_grayscale, inpt, num_output_channels=num_output_channels)


# --------------------------------------------------------------------------- kernels: images, videos, masks


@_register_kernel_internal(get_size, torch.Tensor)
@_register_kernel_internal(get_size, Image, tv_tensor_wrapper=False)
@_register_kernel_internal(get_size, Video, tv_tensor_wrapper=False)
@_register_kernel_internal(get_size, Mask, tv_tensor_wrapper=False)
def get_size_image(image: torch.Tensor) -> list[int]:
    height, width = image.shape[-2:]
    return [height, width]


@_register_kernel_internal(get_size, BoundingBoxes, tv_tensor_wrapper=False)
def get_size_bounding_boxes(bounding_boxes: BoundingBoxes) -> list[int]:
    return list(bounding_boxes.canvas_size)


# The flips, brightness, normalize and to_dtype already have plain-tensor kernels
# in tv_dispatch_model; these give them TVTensor entries through the wrapper.
_register_kernel_internal(horizontal_flip, Image)(horizontal_flip_image)
_register_kernel_internal(horizontal_flip, Video)(horizontal_flip_image)
_register_kernel_internal(horizontal_flip, Mask)(horizontal_flip_image)
_register_kernel_internal(vertical_flip, Image)(vertical_flip_image)
_register_kernel_internal(vertical_flip, Video)(vertical_flip_image)
_register_kernel_internal(vertical_flip, Mask)(vertical_flip_image)
_register_kernel_internal(adjust_brightness, Image)(adjust_brightness_image)
_register_kernel_internal(adjust_brightness, Video)(adjust_brightness_image)
_register_kernel_internal(normalize, Image)(normalize_image)
_register_kernel_internal(normalize, Video)(normalize_image)
_register_kernel_internal(to_dtype, Image)(to_dtype_image)
_register_kernel_internal(to_dtype, Video)(to_dtype_image)


@_register_kernel_internal(to_dtype, BoundingBoxes, tv_tensor_wrapper=False)
@_register_kernel_internal(to_dtype, Mask, tv_tensor_wrapper=False)
def _to_dtype_tensor_dispatch(inpt: TVTensor, dtype: torch.dtype = torch.float32, scale: bool = False) -> TVTensor:
    # No value scaling for boxes and masks; ``to`` keeps the subclass and its metadata.
    return inpt.to(dtype)


@_register_kernel_internal(resize, torch.Tensor)
@_register_kernel_internal(resize, Image)
@_register_kernel_internal(resize, Video)
def resize_image(image: torch.Tensor, size: list[int], interpolation: str = "bilinear") -> torch.Tensor:
    shape = image.shape
    height, width = shape[-2:]
    new_height, new_width = _resized_output_size(height, width, size)
    if (new_height, new_width) == (height, width):
        return image
    batch = image.reshape(-1, shape[-3], height, width) if image.ndim > 2 else image.reshape(1, 1, height, width)
    float_batch = batch if batch.is_floating_point() else batch.to(torch.float32)
    align_corners = False if interpolation in ("bilinear", "bicubic") else None
    out = nnF.interpolate(float_batch, size=[new_height, new_width], mode=interpolation, align_corners=align_corners)
    if not batch.is_floating_point():
        out = out.round_().clamp_(0, _max_value(batch.dtype)).to(batch.dtype)
    return out.reshape(*shape[:-2], new_height, new_width)


@_register_kernel_internal(resize, Mask)
def resize_mask(mask: torch.Tensor, size: list[int], interpolation: str = "bilinear") -> torch.Tensor:
    # Masks are labels: always nearest.
    return resize_image(mask, size=size, interpolation="nearest")


@_register_kernel_internal(crop, torch.Tensor)
@_register_kernel_internal(crop, Image)
@_register_kernel_internal(crop, Video)
@_register_kernel_internal(crop, Mask)
def crop_image(image: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    in_height, in_width = image.shape[-2:]
    bottom, right = top + height, left + width
    if top < 0 or left < 0 or bottom > in_height or right > in_width:
        # Out-of-canvas parts are zero padding, as torchvision does.
        pad_ltrb = [max(-left, 0), max(-top, 0), max(right - in_width, 0), max(bottom - in_height, 0)]
        image = image[..., max(top, 0) : bottom, max(left, 0) : right]
        return nnF.pad(image, [pad_ltrb[0], pad_ltrb[2], pad_ltrb[1], pad_ltrb[3]], value=0.0)
    return image[..., top:bottom, left:right]


def _center_crop_offsets(height: int, width: int, crop_height: int, crop_width: int) -> tuple[int, int]:
    return int(round((height - crop_height) / 2.0)), int(round((width - crop_width) / 2.0))


def _parse_size(output_size: int | Sequence[int]) -> list[int]:
    if isinstance(output_size, int):
        return [output_size, output_size]
    if isinstance(output_size, (list, tuple)) and len(output_size) == 1:
        return [output_size[0], output_size[0]]
    return [output_size[0], output_size[1]]


@_register_kernel_internal(center_crop, torch.Tensor)
@_register_kernel_internal(center_crop, Image)
@_register_kernel_internal(center_crop, Video)
@_register_kernel_internal(center_crop, Mask)
def center_crop_image(image: torch.Tensor, output_size: list[int]) -> torch.Tensor:
    crop_height, crop_width = _parse_size(output_size)
    height, width = image.shape[-2:]
    top, left = _center_crop_offsets(height, width, crop_height, crop_width)
    return crop_image(image, top, left, crop_height, crop_width)


def _parse_pad_padding(padding: int | Sequence[int]) -> list[int]:
    if isinstance(padding, int):
        return [padding] * 4
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    if len(padding) == 4:
        return [padding[0], padding[1], padding[2], padding[3]]
    raise ValueError(f"Padding must be an int or a 1, 2, or 4 element sequence, got {len(padding)} elements")


@_register_kernel_internal(pad, torch.Tensor)
@_register_kernel_internal(pad, Image)
@_register_kernel_internal(pad, Video)
@_register_kernel_internal(pad, Mask)
def pad_image(image: torch.Tensor, padding: int | list[int], fill: float = 0.0) -> torch.Tensor:
    left, top, right, bottom = _parse_pad_padding(padding)
    return nnF.pad(image, [left, right, top, bottom], mode="constant", value=fill)


@_register_kernel_internal(rgb_to_grayscale, torch.Tensor)
@_register_kernel_internal(rgb_to_grayscale, Image)
@_register_kernel_internal(rgb_to_grayscale, Video)
def rgb_to_grayscale_image(image: torch.Tensor, num_output_channels: int = 1) -> torch.Tensor:
    if image.shape[-3] == 1 and num_output_channels == 1:
        return image.clone()
    if image.shape[-3] != 3:
        raise TypeError(f"Input image tensor should have 1 or 3 channels, got {image.shape[-3]}")
    r, g, b = image.unbind(dim=-3)
    gray = r.mul(0.2989) + g.mul(0.587) + b.mul(0.114)
    if not image.is_floating_point():
        gray = gray.round_().to(image.dtype)
    gray = gray.unsqueeze(dim=-3)
    if num_output_channels == 3:
        gray = gray.expand(image.shape)
    return gray


# --------------------------------------------------------------------------- kernels: bounding boxes


def _to_xyxy(boxes: torch.Tensor, format: BoundingBoxFormat) -> torch.Tensor:
    if format == BoundingBoxFormat.XYXY:
        return boxes
    a, b, c, d = boxes.unbind(-1)
    if format == BoundingBoxFormat.XYWH:
        return torch.stack([a, b, a + c, b + d], dim=-1)
    return torch.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], dim=-1)


def _from_xyxy(boxes: torch.Tensor, format: BoundingBoxFormat) -> torch.Tensor:
    if format == BoundingBoxFormat.XYXY:
        return boxes
    x1, y1, x2, y2 = boxes.unbind(-1)
    if format == BoundingBoxFormat.XYWH:
        return torch.stack([x1, y1, x2 - x1, y2 - y1], dim=-1)
    return torch.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], dim=-1)


def horizontal_flip_bounding_boxes(
    bounding_boxes: torch.Tensor, format: BoundingBoxFormat, canvas_size: tuple[int, int]
) -> torch.Tensor:
    shape = bounding_boxes.shape
    boxes = bounding_boxes.clone().reshape(-1, 4)
    width = canvas_size[1]
    if format == BoundingBoxFormat.XYXY:
        boxes[:, [2, 0]] = boxes[:, [0, 2]].sub_(width).neg_()
    elif format == BoundingBoxFormat.XYWH:
        boxes[:, 0] = boxes[:, 0].add(boxes[:, 2]).sub_(width).neg_()
    else:  # CXCYWH
        boxes[:, 0] = boxes[:, 0].sub(width).neg_()
    return boxes.reshape(shape)


@_register_kernel_internal(horizontal_flip, BoundingBoxes, tv_tensor_wrapper=False)
def _horizontal_flip_bounding_boxes_dispatch(inpt: BoundingBoxes) -> BoundingBoxes:
    output = horizontal_flip_bounding_boxes(
        inpt.as_subclass(torch.Tensor), format=inpt.format, canvas_size=inpt.canvas_size
    )
    return wrap(output, like=inpt)


def vertical_flip_bounding_boxes(
    bounding_boxes: torch.Tensor, format: BoundingBoxFormat, canvas_size: tuple[int, int]
) -> torch.Tensor:
    shape = bounding_boxes.shape
    boxes = bounding_boxes.clone().reshape(-1, 4)
    height = canvas_size[0]
    if format == BoundingBoxFormat.XYXY:
        boxes[:, [3, 1]] = boxes[:, [1, 3]].sub_(height).neg_()
    elif format == BoundingBoxFormat.XYWH:
        boxes[:, 1] = boxes[:, 1].add(boxes[:, 3]).sub_(height).neg_()
    else:  # CXCYWH
        boxes[:, 1] = boxes[:, 1].sub(height).neg_()
    return boxes.reshape(shape)


@_register_kernel_internal(vertical_flip, BoundingBoxes, tv_tensor_wrapper=False)
def _vertical_flip_bounding_boxes_dispatch(inpt: BoundingBoxes) -> BoundingBoxes:
    output = vertical_flip_bounding_boxes(
        inpt.as_subclass(torch.Tensor), format=inpt.format, canvas_size=inpt.canvas_size
    )
    return wrap(output, like=inpt)


def resize_bounding_boxes(
    bounding_boxes: torch.Tensor, canvas_size: tuple[int, int], size: list[int]
) -> tuple[torch.Tensor, tuple[int, int]]:
    height, width = canvas_size
    new_height, new_width = _resized_output_size(height, width, size)
    if (new_height, new_width) == (height, width):
        return bounding_boxes, canvas_size
    w_ratio, h_ratio = new_width / width, new_height / height
    ratios = torch.tensor([w_ratio, h_ratio, w_ratio, h_ratio], device=bounding_boxes.device)
    # Every format scales coordinate-wise.
    out = bounding_boxes.mul(ratios).to(bounding_boxes.dtype)
    return out, (new_height, new_width)


@_register_kernel_internal(resize, BoundingBoxes, tv_tensor_wrapper=False)
def _resize_bounding_boxes_dispatch(inpt: BoundingBoxes, size: list[int], interpolation: str = "bilinear") -> BoundingBoxes:
    output, canvas_size = resize_bounding_boxes(inpt.as_subclass(torch.Tensor), inpt.canvas_size, size)
    return wrap(output, like=inpt, canvas_size=canvas_size)


def crop_bounding_boxes(
    bounding_boxes: torch.Tensor, format: BoundingBoxFormat, top: int, left: int, height: int, width: int
) -> tuple[torch.Tensor, tuple[int, int]]:
    xyxy = _to_xyxy(bounding_boxes, format)
    xyxy = xyxy - torch.tensor([left, top, left, top], dtype=xyxy.dtype, device=xyxy.device)
    x1, y1, x2, y2 = xyxy.unbind(-1)
    clamped = torch.stack(
        [x1.clamp(0, width), y1.clamp(0, height), x2.clamp(0, width), y2.clamp(0, height)], dim=-1
    )
    return _from_xyxy(clamped, format).to(bounding_boxes.dtype), (height, width)


@_register_kernel_internal(crop, BoundingBoxes, tv_tensor_wrapper=False)
def _crop_bounding_boxes_dispatch(inpt: BoundingBoxes, top: int, left: int, height: int, width: int) -> BoundingBoxes:
    output, canvas_size = crop_bounding_boxes(
        inpt.as_subclass(torch.Tensor), inpt.format, top=top, left=left, height=height, width=width
    )
    return wrap(output, like=inpt, canvas_size=canvas_size)


@_register_kernel_internal(center_crop, BoundingBoxes, tv_tensor_wrapper=False)
def _center_crop_bounding_boxes_dispatch(inpt: BoundingBoxes, output_size: list[int]) -> BoundingBoxes:
    crop_height, crop_width = _parse_size(output_size)
    top, left = _center_crop_offsets(*inpt.canvas_size, crop_height, crop_width)
    output, canvas_size = crop_bounding_boxes(
        inpt.as_subclass(torch.Tensor), inpt.format, top=top, left=left, height=crop_height, width=crop_width
    )
    return wrap(output, like=inpt, canvas_size=canvas_size)


def pad_bounding_boxes(
    bounding_boxes: torch.Tensor, format: BoundingBoxFormat, canvas_size: tuple[int, int], padding: int | list[int]
) -> tuple[torch.Tensor, tuple[int, int]]:
    left, top, right, bottom = _parse_pad_padding(padding)
    if format == BoundingBoxFormat.XYXY:
        shift = [left, top, left, top]
    else:  # XYWH and CXCYWH move their first point only
        shift = [left, top, 0, 0]
    out = bounding_boxes + torch.tensor(shift, dtype=bounding_boxes.dtype, device=bounding_boxes.device)
    height, width = canvas_size
    return out, (height + top + bottom, width + left + right)


@_register_kernel_internal(pad, BoundingBoxes, tv_tensor_wrapper=False)
def _pad_bounding_boxes_dispatch(inpt: BoundingBoxes, padding: int | list[int], fill: float = 0.0) -> BoundingBoxes:
    output, canvas_size = pad_bounding_boxes(
        inpt.as_subclass(torch.Tensor), inpt.format, inpt.canvas_size, padding=padding
    )
    return wrap(output, like=inpt, canvas_size=canvas_size)


_BUILTIN_TV_TENSORS = frozenset({Image, Video, Mask, BoundingBoxes})


# --------------------------------------------------------------------------- transforms


def _check_type(obj: Any, types_or_checks: tuple) -> bool:
    for type_or_check in types_or_checks:
        if isinstance(obj, type_or_check) if isinstance(type_or_check, type) else type_or_check(obj):
            return True
    return False


def _has_any(flat_inputs: list[Any], *types_or_checks: Any) -> bool:
    for inpt in flat_inputs:
        if _check_type(inpt, types_or_checks):
            return True
    return False


def query_size(flat_inputs: list[Any]) -> tuple[int, int]:
    """The one spatial size all the sized leaves share (boxes report their canvas)."""
    sizes = {
        tuple(get_size(inpt))
        for inpt in flat_inputs
        if _check_type(inpt, (is_pure_tensor, Image, Video, Mask, BoundingBoxes))
    }
    if not sizes:
        raise TypeError("No image, video, mask or bounding box was found in the sample")
    if len(sizes) > 1:
        raise ValueError(f"Found multiple HxW dimensions in the sample: {sorted(sizes)}")
    height, width = sizes.pop()
    return height, width


class Transform(torch.nn.Module):
    # Which leaves are transformed at all; entries are types or predicates.
    _transformed_types: tuple = (torch.Tensor,)

    def check_inputs(self, flat_inputs: list[Any]) -> None:
        pass

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        return {}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _call_kernel(self, functional: Callable, inpt: Any, *args: Any, **kwargs: Any) -> Any:
        kernel = _get_kernel(functional, type(inpt), allow_passthrough=True)
        return kernel(inpt, *args, **kwargs)

    def _needs_transform_list(self, flat_inputs: list[Any]) -> list[bool]:
        # Without an Image or Video in the sample, the first pure tensor is the
        # image; any later pure tensor passes through untouched.
        transform_pure_tensor = not _has_any(flat_inputs, Image, Video)
        needs = []
        for inpt in flat_inputs:
            needs_transform = True
            if not _check_type(inpt, self._transformed_types):
                needs_transform = False
            elif is_pure_tensor(inpt):
                if transform_pure_tensor:
                    transform_pure_tensor = False
                else:
                    needs_transform = False
            needs.append(needs_transform)
        return needs

    def forward(self, *inputs: Any) -> Any:
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        self.check_inputs(flat_inputs)
        needs_transform_list = self._needs_transform_list(flat_inputs)
        params = self.make_params(
            [inpt for inpt, needs in zip(flat_inputs, needs_transform_list) if needs]
        )
        flat_outputs = [
            self.transform(inpt, params) if needs else inpt
            for inpt, needs in zip(flat_inputs, needs_transform_list)
        ]
        return tree_unflatten(flat_outputs, spec)


class Compose(torch.nn.Module):
    def __init__(self, transforms: Sequence[Callable]) -> None:
        super().__init__()
        self.transforms = list(transforms)

    def forward(self, *inputs: Any) -> Any:
        needs_unpacking = len(inputs) > 1
        outputs = inputs
        for transform in self.transforms:
            outputs = transform(*inputs)
            inputs = outputs if needs_unpacking else (outputs,)
        return outputs


class HorizontalFlip(Transform):
    """Always flips (the deterministic core of RandomHorizontalFlip)."""

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(horizontal_flip, inpt)


class Resize(Transform):
    def __init__(self, size: int | Sequence[int], interpolation: str = "bilinear") -> None:
        super().__init__()
        self.size = [size] if isinstance(size, int) else list(size)
        self.interpolation = interpolation

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(resize, inpt, self.size, interpolation=self.interpolation)


class CenterCrop(Transform):
    """Computes the crop box once from the sample's size, then crops every leaf."""

    def __init__(self, size: int | Sequence[int]) -> None:
        super().__init__()
        self.size = _parse_size(size)

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        crop_height, crop_width = self.size
        top, left = _center_crop_offsets(height, width, crop_height, crop_width)
        return dict(top=top, left=left, height=crop_height, width=crop_width)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(crop, inpt, **params)


class Pad(Transform):
    def __init__(self, padding: int | Sequence[int], fill: float | dict[type, float] = 0.0) -> None:
        super().__init__()
        self.padding = padding if isinstance(padding, int) else list(padding)
        self.fill = fill

    def _fill_for(self, inpt: Any) -> float:
        if isinstance(self.fill, dict):
            return self.fill.get(type(inpt), 0.0)
        return self.fill

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(pad, inpt, padding=self.padding, fill=self._fill_for(inpt))


class Normalize(Transform):
    _transformed_types = (Image, is_pure_tensor, Video)

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        self.mean = list(mean)
        self.std = list(std)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(normalize, inpt, mean=self.mean, std=self.std)


class ToDtype(Transform):
    """``dtype`` is one dtype (images and videos only) or a ``{type or "others": dtype}`` dict."""

    def __init__(self, dtype: torch.dtype | dict[Any, torch.dtype | None], scale: bool = False) -> None:
        super().__init__()
        self.dtype = dtype
        self.scale = scale

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if isinstance(self.dtype, torch.dtype):
            if not is_pure_tensor(inpt) and not isinstance(inpt, (Image, Video)):
                return inpt
            dtype = self.dtype
        elif type(inpt) in self.dtype:
            dtype = self.dtype[type(inpt)]
        elif "others" in self.dtype:
            dtype = self.dtype["others"]
        else:
            raise ValueError(f"No dtype was specified for type {type(inpt)}.")
        if dtype is None:
            return inpt
        return self._call_kernel(to_dtype, inpt, dtype=dtype, scale=self.scale)


class Grayscale(Transform):
    def __init__(self, num_output_channels: int = 1) -> None:
        super().__init__()
        self.num_output_channels = num_output_channels

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(rgb_to_grayscale, inpt, num_output_channels=self.num_output_channels)


# --------------------------------------------------------------------------- samples


def make_boxes(
    format: BoundingBoxFormat = BoundingBoxFormat.XYXY,
    canvas_size: tuple[int, int] = (16, 20),
    num_boxes: int = 3,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> BoundingBoxes:
    """Valid boxes inside ``canvas_size`` in ``format``."""
    g = torch.Generator().manual_seed(seed)
    height, width = canvas_size
    xy = torch.rand(num_boxes, 2, generator=g) * torch.tensor([width / 2, height / 2])
    wh = torch.rand(num_boxes, 2, generator=g) * torch.tensor([width / 2, height / 2]) + 1
    xyxy = torch.cat([xy, xy + wh], dim=-1).round()
    return BoundingBoxes(_from_xyxy(xyxy, format).to(dtype), format=format, canvas_size=canvas_size)


def make_mask(size: tuple[int, ...] = (16, 20), num_classes: int = 5, seed: int = 0) -> Mask:
    g = torch.Generator().manual_seed(seed)
    return Mask(torch.randint(0, num_classes, size, dtype=torch.uint8, generator=g))


def make_sample(seed: int = 0, dtype: torch.dtype = torch.uint8) -> dict[str, Any]:
    """A detection/segmentation sample: typed tensors and non-tensor leaves side by side."""
    return {
        "image": Image(make_image(dtype, (3, 16, 20), seed=seed)),
        "target": {
            "boxes": make_boxes(seed=seed),
            "masks": make_mask(seed=seed),
            "labels": [1, 3, 2],
            "name": "sample",
            "crowd": None,
        },
        "extra": make_image(torch.float32, (2, 5), seed=seed + 1),
    }


def _leaves(tree: Any) -> tuple:
    """The tensor leaves of a structure, for comparisons that want a flat tuple."""
    return tuple(leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor))


# --------------------------------------------------------------------------- test helpers


class TVTensorCheckMixin(CompiledVsEagerMixin):
    def assertSameLeaves(self, eager, compiled):
        """Same structure, leaf types, dtypes, shapes, values and box metadata."""
        self.assertIs(type(compiled), type(eager))
        if isinstance(eager, (tuple, list)):
            self.assertEqual(len(compiled), len(eager))
            for e, c in zip(eager, compiled):
                self.assertSameLeaves(e, c)
        elif isinstance(eager, dict):
            self.assertEqual(list(compiled), list(eager))
            for key in eager:
                self.assertSameLeaves(eager[key], compiled[key])
        elif isinstance(eager, torch.Tensor):
            self.assertEqual(compiled.dtype, eager.dtype)
            self.assertEqual(compiled.shape, eager.shape)
            self.assertEqual(
                compiled.as_subclass(torch.Tensor), eager.as_subclass(torch.Tensor)
            )
            # Python attributes: the box metadata, and nothing else.
            self.assertEqual(vars(compiled), vars(eager))
        else:
            self.assertEqual(compiled, eager)

    def check(self, fn, *args):
        """Compile ``fn`` afresh with fullgraph=True: equal to eager, no graph break."""
        torch._dynamo.reset()
        counters.clear()
        cnt = CompileCounter()
        eager = fn(*args)
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)(*args)
        self.assertSameLeaves(eager, compiled)
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)
        return compiled


# --------------------------------------------------------------------------- audit cases


def _flip_image(image: Image) -> Image:
    return horizontal_flip(image)


def _flip_boxes(boxes: BoundingBoxes) -> BoundingBoxes:
    return horizontal_flip(boxes)


def _wrap_roundtrip(boxes: BoundingBoxes, image: Image) -> tuple:
    plain = boxes.as_subclass(torch.Tensor) + 1
    return wrap(plain, like=boxes), wrap(image.as_subclass(torch.Tensor) * 2, like=image)


def _shape_reads(image: Image) -> torch.Tensor:
    height, width = image.shape[-2:]
    return image.as_subclass(torch.Tensor).sum() + height * width + image.ndim


def _plain_op_on_tvtensor(image: Image) -> tuple:
    # Most ops drop the subclass; clone/to keep it.
    return image + 1, image.clone(), image.to(torch.float64)


def _construct_inside(x: torch.Tensor) -> tuple:
    boxes = BoundingBoxes(x[0, :2, :4], format="XYWH", canvas_size=(16, 20))
    return horizontal_flip(Image(x)), horizontal_flip(boxes)


_PIPELINE = Compose([Resize([8, 10]), HorizontalFlip(), ToDtype(torch.float32, scale=True)])
_CENTER_CROP = CenterCrop([10, 12])
_PAD = Pad([1, 2], fill={Image: 7.0})
_NORMALIZE = Normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2])
_GRAYSCALE = Grayscale(3)
_HFLIP = HorizontalFlip()


def _transform_sample(sample: dict[str, Any]) -> tuple:
    return _leaves(_PIPELINE(sample))


_TO_DTYPE_PER_TYPE = ToDtype({Image: torch.float32, Mask: torch.int64, "others": None}, scale=True)


def _set_return_type_inside(image: Image) -> tuple:
    with set_return_type("TVTensor"):
        kept = image + 1
    return kept, image + 1


def _pytree_mixed_leaves(x: torch.Tensor) -> tuple:
    flat, spec = tree_flatten({"a": x, "b": [1, "s", None], "c": (x * 2, 3.5)})
    out = tree_unflatten([f * 2 if isinstance(f, torch.Tensor) else f for f in flat], spec)
    return out["a"], out["c"][0]


def _pure_tensor_sample() -> tuple:
    return (make_image(torch.uint8), make_boxes(BoundingBoxFormat.XYWH), make_image(size=(2, 5), seed=1))


AUDIT_CASES: dict[str, tuple[Callable, Callable[[], tuple]]] = {
    "tvtensor: F.horizontal_flip(Image)": (_flip_image, lambda: (Image(make_image(torch.uint8)),)),
    "tvtensor: F.horizontal_flip(BoundingBoxes)": (_flip_boxes, lambda: (make_boxes(BoundingBoxFormat.XYWH),)),
    "tvtensor: F.resize(Video)": (resize, lambda: (Video(make_image(size=(2, 3, 16, 20))), [8, 10])),
    "tvtensor: F.resize(BoundingBoxes)": (resize, lambda: (make_boxes(), [8, 10])),
    "tvtensor: F.center_crop(Mask)": (center_crop, lambda: (make_mask(), [10, 10])),
    "tvtensor: F.pad(BoundingBoxes)": (pad, lambda: (make_boxes(BoundingBoxFormat.CXCYWH), [1, 2, 3, 4])),
    "tvtensor: F.normalize(Image)": (normalize, lambda: (Image(make_image()), [0.5, 0.4, 0.3], [0.2, 0.2, 0.2])),
    "tvtensor: F.to_dtype(Mask)": (to_dtype, lambda: (make_mask(), torch.int64)),
    "tvtensor: F.rgb_to_grayscale(Image)": (rgb_to_grayscale, lambda: (Image(make_image(torch.uint8)),)),
    "tvtensor: F.get_size(BoundingBoxes)": (lambda b: (get_size(b), b * 1), lambda: (make_boxes(),)),
    "tvtensor: F.get_size(Image)": (lambda x: (get_size(x), x * 1), lambda: (Image(make_image()),)),
    "tvtensor: F.vertical_flip(Mask)": (vertical_flip, lambda: (make_mask(),)),
    "tvtensor: F.adjust_brightness(Video)": (
        adjust_brightness,
        lambda: (Video(make_image(torch.uint8, size=(2, 3, 16, 20))), 1.5),
    ),
    "tvtensor: F.to_dtype(Image, scale)": (to_dtype, lambda: (Image(make_image(torch.uint8)), torch.float32, True)),
    "tvtensor: F.crop(Image) out of canvas": (crop, lambda: (Image(make_image()), -2, 3, 12, 20)),
    "tvtensor: set_return_type inside": (_set_return_type_inside, lambda: (Image(make_image()),)),
    "pytree: mixed leaves (int, str, None)": (_pytree_mixed_leaves, lambda: (make_image(),)),
    "tvtensor: wrap(like=) round trip": (_wrap_roundtrip, lambda: (make_boxes(), Image(make_image()))),
    "tvtensor: image.shape/ndim reads": (_shape_reads, lambda: (Image(make_image()),)),
    "tvtensor: torch ops drop/keep the type": (_plain_op_on_tvtensor, lambda: (Image(make_image()),)),
    "tvtensor: construct Image/BoundingBoxes inside": (_construct_inside, lambda: (make_image(size=(3, 16, 20)),)),
    "transforms: Compose(Resize, HorizontalFlip, ToDtype) on a sample": (_transform_sample, lambda: (make_sample(),)),
    "transforms: CenterCrop on a sample": (lambda s: _leaves(_CENTER_CROP(s)), lambda: (make_sample(),)),
    "transforms: Pad on a sample": (lambda s: _leaves(_PAD(s)), lambda: (make_sample(),)),
    "transforms: Normalize on a sample": (
        lambda s: _leaves(_NORMALIZE(s)),
        lambda: (make_sample(dtype=torch.float32),),
    ),
    "transforms: Grayscale on a sample": (lambda s: _leaves(_GRAYSCALE(s)), lambda: (make_sample(),)),
    "transforms: ToDtype per type on a sample": (lambda s: _leaves(_TO_DTYPE_PER_TYPE(s)), lambda: (make_sample(),)),
    "transforms: positional (Image, BoundingBoxes, Mask)": (
        lambda *xs: _leaves(_HFLIP(*xs)),
        lambda: (Image(make_image()), make_boxes(), make_mask()),
    ),
    "transforms: first pure tensor is the image": (
        lambda s: _leaves(_PIPELINE(s)),
        lambda: (_pure_tensor_sample(),),
    ),
}
