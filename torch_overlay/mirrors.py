"""What each case of the torchvision-style model mirrors in real torchvision.

The model (``test/dynamo/tv_dispatch_model.py`` and ``tv_model_*.py``) is
torchvision's v2 dispatch written again without torchvision, so that the
Dynamo tests need no torchvision.  It is only worth something while it breaks
and compiles where torchvision does.  This module keeps it honest:

* :data:`MIRRORS`: model case name -> the torchvision callable it mirrors, and
  how to build the equivalent real-torchvision call (by default: the same
  arguments, with the model's TVTensors turned into real ``tv_tensors`` with
  the same values, shapes and metadata);
* :data:`NOT_MIRRORED`: model case name -> why it mirrors no torchvision
  function (pure Dynamo semantics: dict keys, MRO spellings, pytree);
* :data:`KNOWN_DRIFT`: model case name -> a disagreement between the model and
  torchvision that is known, why, and which issue or patch removes it.

The audit compiles every mirrored model case and its mirror with
``fullgraph=True`` (backend eager, the model case's Dynamo config) under the
torch + vision series.  They *agree* when both compile with eager-equal
results, or both break for the same reason (the first line of the error,
normalized by :func:`normalize_reason`).  A disagreement not listed in
KNOWN_DRIFT, or a model case in neither table, fails the audit.

Nothing here imports torch or torchvision at import time: the audit's driver
reads the tables, the worker (under the overlay) builds the calls.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
import types
from collections.abc import Callable
from typing import Any

# --------------------------------------------------------------------------- the tables


@dataclasses.dataclass(frozen=True)
class Mirror:
    """A model case's torchvision counterpart.

    ``target``: the torchvision callable(s) mirrored, dotted from the package
    (``"transforms.v2.functional.resize"``), several joined by ``" -> "``.
    ``fn``: given the namespace of :func:`torchvision_namespace`, the function
    to compile; by default the (first) target itself.
    ``args``: given the model case's arguments, the torchvision call's; by
    default :func:`to_torchvision` of them (same values, real tv_tensors).
    """

    target: str
    fn: Callable[[Any], Callable] | None = None
    args: Callable[[tuple], tuple] | None = None

    def targets(self) -> list[str]:
        return [t.strip() for t in self.target.split("->")]


@dataclasses.dataclass(frozen=True)
class Drift:
    """A known disagreement.  ``expect`` must occur in the disagreement's text
    (see :func:`compare`), so that a case drifting some other way is new drift."""

    expect: str
    why: str
    until: str  # the issue, patch or model change that removes it


F_ = "transforms.v2.functional."
T_ = "transforms.v2."
TVT = "tv_tensors."


def _f(name: str, **kw: Any) -> Mirror:
    return Mirror(F_ + name, **kw)


def _caught(fn: Callable) -> Callable:
    """``fn`` with TypeError/ValueError caught inside the compiled function, as
    the model's ``caught`` does: the exception's type and args, or the result."""
    import torch

    def case(*args: Any) -> Any:
        try:
            return fn(*args)
        except (TypeError, ValueError) as e:
            return type(e), e.args, torch.zeros(())

    case.__name__ = f"caught_{getattr(fn, '__name__', 'fn')}"
    return case


def _affine(tv):
    # torchvision's 6th positional parameter is interpolation, the model's is center.
    return lambda x, angle, translate, scale, shear, center=None: tv.F.affine(
        x, angle, translate, scale, shear, center=center
    )


def _erase_and_report_type(tv):
    def fn(image, i, j, h, w, v):
        out = tv.F.erase(image, i, j, h, w, v, inplace=True)
        return type(image).__name__, out is image, out

    return fn


def _as_image(args: tuple) -> tuple:
    """The model's TVTensor-like test subclass (tv_model_errors.TVImage) as a real Image."""
    import torch
    from torchvision import tv_tensors

    image, *rest = to_torchvision(args)
    return (image.as_subclass(torch.Tensor).as_subclass(tv_tensors.Image), *rest)


def _set_return_type_inside(tv):
    def fn(image):
        with tv.tvt.set_return_type("TVTensor"):
            kept = image + 1
        return kept, image + 1

    return fn


def _shape_reads(tv):
    import torch

    def fn(image):
        height, width = image.shape[-2:]
        return image.as_subclass(torch.Tensor).sum() + height * width + image.ndim

    return fn


def _construct_inside(tv):
    def fn(x):
        boxes = tv.tvt.BoundingBoxes(x[0, :2, :4], format="XYWH", canvas_size=(16, 20))
        return tv.F.horizontal_flip(tv.tvt.Image(x)), tv.F.horizontal_flip(boxes)

    return fn


def _iou_crop_sample(args: tuple) -> tuple:
    """The model's (image, XYXY boxes) as RandomIoUCrop's (Image, BoundingBoxes) sample."""
    from torchvision import tv_tensors

    image, boxes = args
    return (
        (
            tv_tensors.Image(image),
            tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=tuple(image.shape[-2:])),
        ),
    )


def _leaves(tree: Any) -> tuple:
    import torch
    from torch.utils._pytree import tree_flatten

    return tuple(leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor))


def _horizontal_flip_transform(tv):
    """The model's HorizontalFlip: RandomHorizontalFlip's transform() without the draw,
    on torchvision's Transform.forward (torchvision has no deterministic flip class)."""

    class HorizontalFlip(tv.T.Transform):
        def transform(self, inpt, params):
            return self._call_kernel(tv.F.horizontal_flip, inpt)

    return HorizontalFlip()


def _one_op_space(transform: str, op: str) -> Callable:
    """An auto-augment transform of torchvision over a space of one op (the model's
    trivial_augment_one_op and rand_augment_one_op)."""

    def build(tv):
        cls = getattr(tv.T, transform)
        space = {"_AUGMENTATION_SPACE": {op: cls._AUGMENTATION_SPACE[op]}}
        return type(f"{transform}{op}", (cls,), space)()

    return build


def _pipeline(tv):
    import torch

    return tv.T.Compose(
        [tv.T.Resize([8, 10]), _horizontal_flip_transform(tv), tv.T.ToDtype(torch.float32, scale=True)]
    )


def _leaves_of(make_transform: Callable) -> Callable:
    def build(tv):
        t = make_transform(tv)
        return lambda *xs: _leaves(t(*xs))

    return build


def _on_sample(make_transform: Callable) -> Callable:
    def build(tv):
        t = make_transform(tv)
        return lambda s: _leaves(t(s))

    return build


def _pipeline_functionals(tv):
    import torch

    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

    def fn(image):
        out = tv.F.resized_crop(image, 10, 20, 300, 400, [224, 224], antialias=True)
        out = tv.F.horizontal_flip(out)
        out = tv.F.to_dtype(out, torch.float32, scale=True)
        return tv.F.normalize(out, mean, std)

    return fn


def _unregistered_functional(tv):
    def functional(inpt):
        return tv.utils._get_kernel(functional, type(inpt))(inpt)

    return _caught(functional)


@functools.cache
def _sub_tensor() -> type:
    """A plain tensor subclass, as the model's _SubTensor: registered nowhere."""
    import torch

    return type("_SubTensor", (torch.Tensor,), {})


def _mro_walk(tv):
    sub = _sub_tensor()
    return lambda x: tv.utils._get_kernel(tv.F.horizontal_flip, sub)(x)


def _builtin_mro_walk(tv):
    import inspect

    def fn(x):
        kernel = tv.utils._get_kernel(tv.F.vertical_flip, int, allow_passthrough=True)
        return kernel(x) + len([cls.__name__ for cls in inspect.getmro(bool)]) + len(str.__mro__)

    return fn


def _wrap_roundtrip(tv):
    import torch

    def fn(boxes, image):
        plain = boxes.as_subclass(torch.Tensor) + 1
        return tv.tvt.wrap(plain, like=boxes), tv.tvt.wrap(image.as_subclass(torch.Tensor) * 2, like=image)

    return fn


def _drop_keep_type(tv):
    import torch

    return lambda image: (image + 1, image.clone(), image.to(torch.float64))


def _to_dtype_per_type(tv):
    import torch

    return tv.T.ToDtype({tv.tvt.Image: torch.float32, tv.tvt.Mask: torch.int64, "others": None}, scale=True)


_PERSPECTIVE = "transforms.v2.functional._geometry._perspective_coefficients"

# model case -> its torchvision mirror.  Same arguments unless ``args`` says otherwise.
MIRRORS: dict[str, Mirror] = {
    # tv_dispatch_model
    "registry: MRO walk to a base kernel": Mirror(
        F_ + "_utils._get_kernel",
        fn=_mro_walk,
    ),
    "F.horizontal_flip": _f("horizontal_flip"),
    "F.vertical_flip": _f("vertical_flip"),
    "F.adjust_brightness": _f("adjust_brightness"),
    "F.normalize": _f("normalize"),
    "F.to_dtype (scale)": _f("to_dtype"),
    "F.equalize": _f("equalize"),
    "F.affine": _f("affine", fn=_affine),
    "affine_image (kernel)": _f("affine_image"),
    # tv_model_dispatch
    "mro: builtin classes (_get_kernel(fn, int))": Mirror(
        F_ + "_utils._get_kernel",
        fn=_builtin_mro_walk,
    ),
    # tv_model_errors
    "perspective coefficients (lstsq)": Mirror(_PERSPECTIVE, args=lambda a: (*a, None)),
    "erase_image in place (tensor)": _f("erase_image"),
    "erase_image in place (subclass)": _f("erase_image"),
    "erase_image in place (TVTensor-like)": _f("erase_image", args=_as_image),
    "F.erase in place, then type (subclass)": _f("erase", fn=_erase_and_report_type),
    "F.erase in place, then type (TVTensor-like)": _f("erase", fn=_erase_and_report_type, args=_as_image),
    "caught: F.horizontal_flip(object)": _f("horizontal_flip", fn=lambda tv: _caught(tv.F.horizontal_flip)),
    "caught: F.horizontal_flip(user type)": _f("horizontal_flip", fn=lambda tv: _caught(tv.F.horizontal_flip)),
    "caught: _get_kernel(unregistered functional)": Mirror(F_ + "_utils._get_kernel", fn=_unregistered_functional),
    "caught: F.adjust_brightness(negative factor)": _f(
        "adjust_brightness", fn=lambda tv: _caught(tv.F.adjust_brightness)
    ),
    "caught: F.normalize(uint8)": _f("normalize", fn=lambda tv: _caught(tv.F.normalize)),
    **{
        f"caught: F.affine({what})": _f("affine", fn=lambda tv: _caught(_affine(tv)))
        for what in ("angle str", "translate len 3", "scale 0", "shear str", "shear len 3", "center str")
    },
    "caught: F.gaussian_blur(kernel_size even)": _f("gaussian_blur", fn=lambda tv: _caught(tv.F.gaussian_blur)),
    "caught: F.gaussian_blur(kernel_size len 3)": _f("gaussian_blur", fn=lambda tv: _caught(tv.F.gaussian_blur)),
    "caught: F.adjust_hue(hue_factor 0.8)": _f("adjust_hue", fn=lambda tv: _caught(tv.F.adjust_hue)),
    "caught: F.adjust_hue(2 channels)": _f("adjust_hue", fn=lambda tv: _caught(tv.F.adjust_hue)),
    **{
        f"caught: perspective_coefficients({what})": Mirror(
            _PERSPECTIVE, fn=lambda tv: _caught(tv.resolve(_PERSPECTIVE)), args=lambda a: (a + (None,))[:3]
        )
        for what in ("both given", "7 coefficients", "nothing given", "3 corners")
    },
    "caught: register_kernel(not a dispatcher)": _f("register_kernel", fn=lambda tv: _caught(tv.F.register_kernel)),
    "caught: register_kernel(not a type)": Mirror(
        F_ + "register_kernel",
        fn=lambda tv: lambda s: _caught(tv.F.register_kernel)(tv.F.horizontal_flip, s),
        args=lambda a: (a[1],),
    ),
    "caught: _register_kernel_internal(twice)": Mirror(
        F_ + "_utils._register_kernel_internal",
        fn=lambda tv: lambda t: _caught(tv.utils._register_kernel_internal)(tv.F.horizontal_flip, t),
        args=lambda a: (a[1],),
    ),
    "caught: F.gaussian_blur(str)": _f("gaussian_blur", fn=lambda tv: _caught(tv.F.gaussian_blur)),
    # tv_model_kernels
    "F.rotate": _f("rotate"),
    "F.resized_crop (uint8, antialias)": _f(
        "resized_crop",
        # torchvision's 7th positional parameter is interpolation, the model's is antialias.
        fn=lambda tv: lambda x, t, l, h, w, size, aa: tv.F.resized_crop(x, t, l, h, w, size, antialias=aa),
    ),
    "F.gaussian_blur": _f("gaussian_blur"),
    "F.adjust_hue": _f("adjust_hue"),
    "pipeline through functionals": Mirror(
        " -> ".join(F_ + f for f in ("resized_crop", "horizontal_flip", "to_dtype", "normalize")),
        fn=_pipeline_functionals,
    ),
    # tv_model_random (the model's seeded argument factories seed both sides alike)
    "random: horizontal flip branch (flag on)": Mirror(T_ + "RandomHorizontalFlip", fn=lambda tv: tv.T.RandomHorizontalFlip(0.5)),
    "random: op choice by randint (flag on)": Mirror(T_ + "RandAugment", fn=lambda tv: tv.T.RandAugment(num_ops=1)),
    "random: brightness factor by uniform_ (flag on)": Mirror(
        T_ + "ColorJitter", fn=lambda tv: tv.T.ColorJitter(brightness=(0.8, 1.2))
    ),
    "random: resized crop search (flag on)": Mirror(
        T_ + "RandomResizedCrop",
        fn=lambda tv: tv.T.RandomResizedCrop((8, 8), scale=(0.3, 1.0), ratio=(3 / 4, 4 / 3), antialias=True),
    ),
    # tv_model_random_draws
    "random: op order by randperm (flag on)": Mirror(
        T_ + "ColorJitter", fn=lambda tv: tv.T.ColorJitter(brightness=(0.6, 1.4), hue=(-0.1, 0.1))
    ),
    "random: op order by randperm on TVTensors (flag on)": Mirror(
        T_ + "ColorJitter", fn=lambda tv: tv.T.ColorJitter(brightness=(0.6, 1.4))
    ),
    "random: elastic displacement by rand (flag on)": Mirror(
        T_ + "ElasticTransform.make_params",
        fn=lambda tv: (lambda t: lambda x: t.make_params([x])["displacement"])(tv.T.ElasticTransform(5.0, 2.0)),
    ),
    "random: erasing with tensor-bounded draws (flag on)": Mirror(
        T_ + "RandomErasing", fn=lambda tv: tv.T.RandomErasing(p=1.0)
    ),
    "random: resized crop with tensor-bounded draws (flag on)": Mirror(
        T_ + "RandomResizedCrop",
        fn=lambda tv: tv.T.RandomResizedCrop((8, 8), scale=(0.3, 1.0), ratio=(3 / 4, 4 / 3), antialias=True),
    ),
    "random: IoU crop search against the boxes (flag on)": Mirror(
        T_ + "RandomIoUCrop", fn=lambda tv: tv.T.RandomIoUCrop(), args=_iou_crop_sample
    ),
    "random: shortest side picked from a tuple (flag on)": Mirror(
        T_ + "RandomShortestSize", fn=lambda tv: tv.T.RandomShortestSize(min_size=(6, 8, 10))
    ),
    "perspective coefficients as floats": Mirror(_PERSPECTIVE, args=lambda a: (*a, None)),
    "random: magnitude from a constant linspace (flag on)": Mirror(
        T_ + "RandAugment", fn=lambda tv: tv.T.RandAugment(num_ops=1)
    ),
    "random: choice by multinomial (flag on)": Mirror(
        T_ + "RandomChoice",
        fn=lambda tv: tv.T.RandomChoice([tv.T.RandomHorizontalFlip(p=1.0), tv.T.RandomVerticalFlip(p=1.0)]),
    ),
    "random: dirichlet weights, then a drawn depth (flag on)": Mirror(T_ + "AugMix", fn=lambda tv: tv.T.AugMix()),
    "random: noise by randn_like (flag on)": Mirror(F_ + "gaussian_noise", fn=lambda tv: tv.F.gaussian_noise),
    # tv_model_random_branches
    "branch as cond: random horizontal flip": Mirror(T_ + "RandomHorizontalFlip", fn=lambda tv: tv.T.RandomHorizontalFlip(0.5)),
    "branch as cond: random horizontal flip (hoisted draw)": Mirror(
        T_ + "RandomHorizontalFlip", fn=lambda tv: tv.T.RandomHorizontalFlip(0.5)
    ),
    "branch as cond: op choice by randint (hoisted draw)": Mirror(
        T_ + "RandAugment", fn=lambda tv: tv.T.RandAugment(num_ops=1)
    ),
    "branch as cond: random flip in an inlined call": Mirror(
        T_ + "RandomHorizontalFlip -> " + F_ + "adjust_brightness",
        fn=lambda tv: (lambda t: lambda x: tv.F.adjust_brightness(t(x), 1.1))(tv.T.RandomHorizontalFlip(0.5)),
    ),
    "branch as cond: random apply to a sample's leaves": Mirror(
        T_ + "RandomHorizontalFlip", fn=lambda tv: tv.T.RandomHorizontalFlip(0.5)
    ),
    "branch as cond: TrivialAugmentWide's signed magnitude, Brightness (hoisted draws)": Mirror(
        T_ + "TrivialAugmentWide", fn=_one_op_space("TrivialAugmentWide", "Brightness")
    ),
    "branch as cond: TrivialAugmentWide's signed magnitude, ShearX (hoisted draws)": Mirror(
        T_ + "TrivialAugmentWide", fn=_one_op_space("TrivialAugmentWide", "ShearX")
    ),
    "branch as sym_ite: RandAugment's signed magnitude in its loop, Brightness (hoisted draws)": Mirror(
        T_ + "RandAugment", fn=_one_op_space("RandAugment", "Brightness")
    ),
    "branch as sym_ite: RandAugment's signed magnitude in its loop, ShearX (hoisted draws)": Mirror(
        T_ + "RandAugment", fn=_one_op_space("RandAugment", "ShearX")
    ),
    # tv_model_random_params
    "random: gaussian blur sigma by uniform_ (flag on)": Mirror(
        T_ + "GaussianBlur", fn=lambda tv: tv.T.GaussianBlur([5, 5], sigma=(0.1, 2.0))
    ),
    "random: perspective corners by randint, coefficients by tolist (flag on)": Mirror(
        T_ + "RandomPerspective", fn=lambda tv: tv.T.RandomPerspective(distortion_scale=0.5, p=1.0)
    ),
    "random: rotation angle by uniform_ (flag on)": Mirror(
        T_ + "RandomRotation", fn=lambda tv: tv.T.RandomRotation((-30.0, 30.0))
    ),
    "random: hue factor by uniform_ (flag on)": Mirror(T_ + "ColorJitter", fn=lambda tv: tv.T.ColorJitter(hue=(-0.1, 0.1))),
    "random: crop offsets by randint (flag on)": Mirror(T_ + "RandomCrop", fn=lambda tv: tv.T.RandomCrop((8, 8))),
    # tv_model_tvtensors
    "tvtensor: F.horizontal_flip(Image)": _f("horizontal_flip"),
    "tvtensor: F.horizontal_flip(BoundingBoxes)": _f("horizontal_flip"),
    "tvtensor: F.resize(Video)": _f("resize"),
    "tvtensor: F.resize(BoundingBoxes)": _f("resize"),
    "tvtensor: F.center_crop(Mask)": _f("center_crop"),
    "tvtensor: F.pad(BoundingBoxes)": _f("pad"),
    "tvtensor: F.normalize(Image)": _f("normalize"),
    "tvtensor: F.to_dtype(Mask)": _f("to_dtype"),
    "tvtensor: F.rgb_to_grayscale(Image)": _f("rgb_to_grayscale"),
    "tvtensor: F.get_size(BoundingBoxes)": _f("get_size", fn=lambda tv: lambda b: (tv.F.get_size(b), b * 1)),
    "tvtensor: F.get_size(Image)": _f("get_size", fn=lambda tv: lambda x: (tv.F.get_size(x), x * 1)),
    "tvtensor: F.vertical_flip(Mask)": _f("vertical_flip"),
    "tvtensor: F.adjust_brightness(Video)": _f("adjust_brightness"),
    "tvtensor: F.to_dtype(Image, scale)": _f("to_dtype"),
    "tvtensor: F.crop(Image) out of canvas": _f("crop"),
    "tvtensor: set_return_type inside": Mirror(TVT + "set_return_type", fn=_set_return_type_inside),
    "tvtensor: wrap(like=) round trip": Mirror(
        TVT + "wrap",
        fn=_wrap_roundtrip,
    ),
    "tvtensor: image.shape/ndim reads": Mirror(TVT + "TVTensor.shape -> " + TVT + "TVTensor.ndim", fn=_shape_reads),
    "tvtensor: torch ops drop/keep the type": Mirror(
        TVT + "TVTensor.__torch_function__",
        fn=_drop_keep_type,
    ),
    "tvtensor: construct Image/BoundingBoxes inside": Mirror(
        TVT + "Image -> " + TVT + "BoundingBoxes -> " + F_ + "horizontal_flip", fn=_construct_inside
    ),
    "transforms: Compose(Resize, HorizontalFlip, ToDtype) on a sample": Mirror(
        T_ + "Compose -> " + T_ + "Resize -> " + T_ + "RandomHorizontalFlip.transform -> " + T_ + "ToDtype",
        fn=_on_sample(_pipeline),
    ),
    "transforms: CenterCrop on a sample": Mirror(T_ + "CenterCrop", fn=_on_sample(lambda tv: tv.T.CenterCrop([10, 12]))),
    "transforms: Pad on a sample": Mirror(
        T_ + "Pad", fn=_on_sample(lambda tv: tv.T.Pad([1, 2], fill={tv.tvt.Image: 7.0, "others": 0.0}))
    ),
    "transforms: Normalize on a sample": Mirror(
        T_ + "Normalize", fn=_on_sample(lambda tv: tv.T.Normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]))
    ),
    "transforms: Grayscale on a sample": Mirror(T_ + "Grayscale", fn=_on_sample(lambda tv: tv.T.Grayscale(3))),
    "transforms: ToDtype per type on a sample": Mirror(
        T_ + "ToDtype",
        fn=_on_sample(_to_dtype_per_type),
    ),
    "transforms: positional (Image, BoundingBoxes, Mask)": Mirror(
        T_ + "RandomHorizontalFlip.transform", fn=_leaves_of(_horizontal_flip_transform)
    ),
    "transforms: first pure tensor is the image": Mirror(
        T_ + "Compose -> " + T_ + "Transform._needs_transform_list", fn=_on_sample(_pipeline)
    ),
}

# model case -> why it has no torchvision counterpart.
NOT_MIRRORED: dict[str, str] = {
    "registry: type objects as keys": "Dynamo semantics: a literal dict keyed by types (torchvision's registry "
    "lookups run in every F.* mirror)",
    "registry: partial/builtin/aten keys": "Dynamo semantics: partial, builtin and aten overloads as dict keys",
    "isinstance: nested classinfo tuple": "Dynamo semantics: isinstance with a nested classinfo (torchvision's use, "
    "_affine_parse_args, runs in the F.affine mirror)",
    "keys: tensor bound methods (x.add)": "Dynamo semantics: tensor bound methods as dict keys",
    "keys: bound/class methods in a global registry": "Dynamo semantics: bound and class methods as dict keys",
    "keys: transform instance, partial, aten, staticmethod": "Dynamo semantics: callables of every kind as dict keys",
    "keys: method of an unhashable (eq=True) object": "Dynamo semantics: hashing a bound method of an unhashable self",
    "keys: nn.Module methods in a module's table": "Dynamo semantics: nn.Module bound methods as dict keys",
    "mro: cls.mro() / type.mro(cls) kernel walk": "Dynamo semantics: torchvision walks __mro__, never cls.mro()",
    "branch as cond: flip if bright": "a branch on pixel values: no torchvision transform branches on its data",
    "pytree: mixed leaves (int, str, None)": "Dynamo semantics: torch.utils._pytree over mixed leaves (torchvision's "
    "Transform.forward flattens the same way in every transform mirror)",
}

# model case -> a known disagreement with its mirror.  Each entry says what
# disagrees (``expect``, a piece of the disagreement's text), why, and what
# will remove it; when it goes away the audit says the entry is stale.
#
# This check found the entry below when it was written (issue "Real torchvision
# end to end", item 6), and two more that patch 41 removed (RandomHorizontalFlip's
# continuation refused as a cond; the model case "branch as cond: random apply to
# a sample's leaves" now has torchvision's structure).  Each "until" names the
# change that removes an entry: a torch-series patch (then torchvision compiles
# like the model), or a model change (then the model breaks like torchvision, and
# the patch that fixes torchvision fixes the model too).
KNOWN_DRIFT: dict[str, Drift] = {
    "caught: register_kernel(not a dispatcher)": Drift(
        expect="torchvision breaks: Unsupported method call",
        why="torchvision's register_kernel tests getattr(functional, '__module__', '').startswith(...); on a builtin "
        "(len) Dynamo yields a GetAttrVariable, not the constant 'builtins', and cannot call startswith on it; the "
        "model tests `functional not in _KERNEL_REGISTRY`",
        until="a torch-series patch folding getattr(builtin, '__module__') to a constant, or the model testing "
        "__module__ as torchvision does",
    ),
}


# --------------------------------------------------------------------------- checks (no torch needed)


def unclassified(model_cases: list[str]) -> list[str]:
    """Model cases that are neither mirrored nor marked as mirroring nothing."""
    return [c for c in model_cases if c not in MIRRORS and c not in NOT_MIRRORED]


def unknown(model_cases: list[str]) -> list[str]:
    """Table entries naming no model case (a renamed or removed case)."""
    names = set(model_cases)
    listed = [*MIRRORS, *NOT_MIRRORED, *KNOWN_DRIFT]
    return sorted({c for c in listed if c not in names})


def doubly_classified() -> list[str]:
    return sorted(set(MIRRORS) & set(NOT_MIRRORED))


_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_SYMBOL = re.compile(r"\b(?:zuf|zf|zu|u|s|ps|c|f)\d+\b")
_FILE = re.compile(r"(?:[\w.-]*/)+[\w.-]+\.py(?::\d+)?")
_SPACE = re.compile(r"\s+")


def normalize_reason(reason: str) -> str:
    """A break reason's first line, without what varies between equal reasons:
    addresses, symbol names (u0, zuf1, s3), file paths and line numbers."""
    first = next((line.strip() for line in reason.splitlines() if line.strip()), "")
    first = first.replace("Consider annotating your code using torch._check*(). ", "")
    first = _ADDRESS.sub("0x?", first)
    first = _SYMBOL.sub("?", first)
    first = _FILE.sub("<file>", first)
    return _SPACE.sub(" ", first).strip()


OK, WRONG_CLASS, BREAK, EAGER = "ok", "wrong", "break", "eager"


def verdict_class(row: dict) -> str:
    """ok / wrong (compiled, differs from eager) / break / eager (the eager call raised)."""
    v = row["verdict"]
    if v == "ok":
        return OK
    if v.startswith("WRONG"):
        return WRONG_CLASS
    if v.startswith("EAGER RAISED") or v.startswith("MIRROR NOT BUILT"):
        return EAGER
    return BREAK


def compare(model: dict, mirror: dict) -> str | None:
    """None when the model case and its mirror agree, else the disagreement in words."""
    m, t = verdict_class(model), verdict_class(mirror)

    def said(row: dict, cls: str) -> str:
        if cls == OK:
            return "compiles"
        if cls == WRONG_CLASS:
            return "compiles but differs from eager"
        if cls == EAGER:
            return f"cannot be checked ({row['verdict'][:90]})"
        return f"breaks: {row.get('key') or normalize_reason(row['verdict'])}"

    if m == t == OK:
        return None
    if m == t == BREAK:
        mk = model.get("key") or normalize_reason(model["verdict"])
        tk = mirror.get("key") or normalize_reason(mirror["verdict"])
        if mk == tk:
            return None
        return f"both break, differently: model {mk} / torchvision {tk}"
    if m == t == WRONG_CLASS:
        return None
    return f"model {said(model, m)}; torchvision {said(mirror, t)}"


@dataclasses.dataclass
class DriftReport:
    agree: list[str]
    known: list[tuple[str, str, Drift]]  # (case, disagreement, entry)
    new: list[tuple[str, str]]  # (case, disagreement): fails the audit
    stale: list[str]  # KNOWN_DRIFT entries whose case agrees now (or is gone)

    @property
    def ok(self) -> bool:
        return not self.new


def drift(model_rows: list[dict], mirror_rows: list[dict], known: dict[str, Drift] | None = None) -> DriftReport:
    """Compare each mirrored model case with its mirror; sort the disagreements."""
    known = KNOWN_DRIFT if known is None else known
    models = {r["case"]: r for r in model_rows}
    report = DriftReport([], [], [], [])
    for mirror in mirror_rows:
        case = mirror["case"]
        disagreement = compare(models[case], mirror)
        entry = known.get(case)
        if disagreement is None:
            report.agree.append(case)
            if entry is not None:
                report.stale.append(case)
        elif entry is not None and entry.expect in disagreement:
            report.known.append((case, disagreement, entry))
        else:
            report.new.append((case, disagreement))
    checked = {r["case"] for r in mirror_rows}
    report.stale += sorted(c for c in known if c not in checked)
    return report


# --------------------------------------------------------------------------- worker side (torch imported)


def torchvision_namespace() -> types.SimpleNamespace:
    """F, T, tv_tensors (tvt), functional._utils (utils) and ``resolve``."""
    import torchvision.transforms.v2 as T
    from torchvision import tv_tensors
    from torchvision.transforms.v2 import functional as F
    from torchvision.transforms.v2.functional import _utils

    return types.SimpleNamespace(F=F, T=T, tvt=tv_tensors, utils=_utils, resolve=resolve)


def resolve(dotted: str) -> Any:
    """``"transforms.v2.functional.resize"`` -> torchvision's object (modules, then attributes)."""
    parts = ["torchvision", *dotted.split(".")]
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def to_torchvision(obj: Any) -> Any:
    """The model's TVTensors (tv_model_tvtensors) as real tv_tensors with the same
    values, shapes and metadata, through tuples, lists and dicts; anything else as is."""
    import torch
    from torchvision import tv_tensors

    cls = type(obj)
    if isinstance(obj, torch.Tensor) and cls.__module__.startswith("tv_model"):
        plain = obj.as_subclass(torch.Tensor)
        if cls.__name__ == "BoundingBoxes":
            return tv_tensors.BoundingBoxes(
                plain, format=obj.format.value, canvas_size=tuple(obj.canvas_size)
            )
        if cls.__name__ in ("Image", "Video", "Mask"):
            return plain.as_subclass(getattr(tv_tensors, cls.__name__))
        return obj
    if isinstance(obj, tuple):
        return tuple(to_torchvision(x) for x in obj)
    if isinstance(obj, list):
        return [to_torchvision(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_torchvision(v) for k, v in obj.items()}
    return obj


def build(mirror: Mirror, make_model_args: Callable[[], tuple]) -> tuple[Callable, Callable[[], tuple]]:
    """The function to compile and its argument factory, for one mirror."""
    tv = torchvision_namespace()
    targets = [resolve(t) for t in mirror.targets()]  # every named target must exist
    fn = mirror.fn(tv) if mirror.fn is not None else targets[0]
    convert = mirror.args or to_torchvision
    return fn, lambda: convert(make_model_args())
