"""The audit's torchvision table: torchvision 0.28's own v2 code, case by case.

Worker side: :func:`cases` imports torchvision (call it after ``import torch``
under whichever torch the process runs) and returns the rows the audit compiles
with ``fullgraph=True``.  Nothing here depends on the model in ``test/dynamo``.

Each case is a function and an argument factory.  A *random* case is called
once per seed in :data:`SEEDS`: ``torch.manual_seed(seed)`` right before the
eager call and again right before the compiled one, and both the output and the
global RNG state after the call must equal eager's.  Cases marked ``inductor``
are the representative subset also compiled with ``backend="inductor"``.

Inputs: one deterministic 3x16x20 image (uint8, or float in [0, 1)), and the
same canvas as each TVTensor kind: ``Image``, ``Video`` (2 frames), ``Mask``
(16x20 labels), ``BoundingBoxes`` (3 XYXY boxes) and ``KeyPoints`` (4 points).
The mixed sample is ``(Image, BoundingBoxes, Mask, {"label": 3})``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

# The groups, in the order the table prints them.
GROUPS = (
    "pure-tensor functionals",
    "TVTensor functionals",
    "transforms on a pure tensor",
    "transforms on the mixed sample",
    "random transforms on a pure tensor",
    "random transforms on the mixed sample",
)

SEEDS = (0, 1, 2)  # per random case: one eager and one compiled call from each seed
INDUCTOR_SEEDS = (0, 1)  # fewer on inductor, where each outcome-specialized graph costs seconds


@dataclasses.dataclass(frozen=True)
class TVCase:
    name: str
    group: str
    fn: Callable
    args: Callable[[], tuple]
    random: bool = False
    inductor: bool = False
    seeds: tuple[int, ...] = SEEDS  # a random case's seeds on backend eager


H, W = 16, 20


def _gen(seed: int):
    import torch

    return torch.Generator().manual_seed(seed)


def image(dtype=None, seed: int = 0, size: tuple[int, ...] = (3, H, W)):
    """uint8 over [0, 255] (the default), or float in [0, 1)."""
    import torch

    dtype = dtype or torch.uint8
    if dtype.is_floating_point:
        return torch.rand(size, generator=_gen(seed), dtype=dtype)
    return torch.randint(0, 256, size, dtype=dtype, generator=_gen(seed))


def make(kind: str, dtype=None):
    """A TVTensor of ``kind`` on the 16x20 canvas (or the pure tensor, kind "tensor")."""
    import torch
    from torchvision import tv_tensors as tvt

    if kind == "tensor":
        return image(dtype)
    if kind == "Image":
        return tvt.Image(image(dtype))
    if kind == "Video":
        return tvt.Video(image(dtype, size=(2, 3, H, W)))
    if kind == "Mask":
        return tvt.Mask(torch.randint(0, 5, (H, W), dtype=torch.uint8, generator=_gen(1)))
    if kind == "BoundingBoxes":
        boxes = torch.tensor([[1.0, 2.0, 10.0, 12.0], [0.0, 0.0, 5.0, 5.0], [8.0, 3.0, 19.0, 15.0]])
        return tvt.BoundingBoxes(boxes, format="XYXY", canvas_size=(H, W))
    if kind == "KeyPoints":
        points = torch.tensor([[1.0, 2.0], [10.0, 12.0], [19.0, 0.0], [4.5, 7.5]])
        return tvt.KeyPoints(points, canvas_size=(H, W))
    raise ValueError(kind)


def sample(dtype=None) -> tuple:
    return (make("Image", dtype), make("BoundingBoxes"), make("Mask"), {"label": 3})


KINDS = ("Image", "Video", "Mask", "BoundingBoxes", "KeyPoints")


def cases() -> list[TVCase]:
    import torch
    import torchvision.transforms.v2 as T
    from torchvision import tv_tensors as tvt
    from torchvision.transforms.v2 import functional as F

    f32 = torch.float32
    out: list[TVCase] = []

    def add(name, group, fn, args, *, random=False, inductor=False, seeds=SEEDS):
        out.append(TVCase(name, group, fn, args, random, inductor, seeds))

    # ------------------------------------------------------------------ functionals on pure tensors
    g = GROUPS[0]
    corners = ([[0, 0], [19, 0], [19, 15], [0, 15]], [[1, 1], [18, 0], [19, 14], [0, 15]])
    pure = {
        "horizontal_flip": (F.horizontal_flip, lambda: (image(),), True),
        "vertical_flip": (F.vertical_flip, lambda: (image(),), False),
        "resize": (lambda x: F.resize(x, [8, 10], antialias=True), lambda: (image(),), True),
        "resized_crop": (lambda x: F.resized_crop(x, 2, 3, 10, 12, [8, 8], antialias=True), lambda: (image(),), False),
        "crop": (lambda x: F.crop(x, 2, 3, 10, 12), lambda: (image(),), False),
        "center_crop": (lambda x: F.center_crop(x, [10, 10]), lambda: (image(),), False),
        "pad": (lambda x: F.pad(x, [1, 2]), lambda: (image(),), False),
        "affine": (lambda x: F.affine(x, 30.0, [2, 1], 1.1, [5.0, 0.0]), lambda: (image(f32),), False),
        "rotate": (lambda x: F.rotate(x, 30.0), lambda: (image(f32),), True),
        "perspective": (lambda x: F.perspective(x, *corners), lambda: (image(f32),), False),
        "elastic": (lambda x, d: F.elastic(x, d), lambda: (image(f32), image(f32, 3, (1, H, W, 2)) - 0.5), False),
        "five_crop": (lambda x: F.five_crop(x, [8, 8]), lambda: (image(),), False),
        "ten_crop": (lambda x: F.ten_crop(x, [8, 8]), lambda: (image(),), False),
        "normalize": (lambda x: F.normalize(x, [0.5, 0.4, 0.3], [0.2, 0.2, 0.2]), lambda: (image(f32),), True),
        "to_dtype": (lambda x: F.to_dtype(x, f32, scale=True), lambda: (image(),), True),
        "gaussian_blur": (lambda x: F.gaussian_blur(x, [5, 5], [1.0, 1.0]), lambda: (image(f32),), True),
        "rgb_to_grayscale": (F.rgb_to_grayscale, lambda: (image(),), False),
        "grayscale_to_rgb": (F.grayscale_to_rgb, lambda: (image(size=(1, H, W)),), False),
        "adjust_brightness": (lambda x: F.adjust_brightness(x, 1.3), lambda: (image(),), False),
        "adjust_saturation": (lambda x: F.adjust_saturation(x, 0.7), lambda: (image(),), False),
        "adjust_contrast": (lambda x: F.adjust_contrast(x, 0.7), lambda: (image(),), False),
        "adjust_sharpness": (lambda x: F.adjust_sharpness(x, 2.0), lambda: (image(),), False),
        "adjust_hue": (lambda x: F.adjust_hue(x, 0.2), lambda: (image(f32),), True),
        "adjust_gamma": (lambda x: F.adjust_gamma(x, 0.8), lambda: (image(),), False),
        "posterize": (lambda x: F.posterize(x, 3), lambda: (image(),), False),
        "solarize": (lambda x: F.solarize(x, 128), lambda: (image(),), False),
        "autocontrast": (F.autocontrast, lambda: (image(),), False),
        "equalize": (F.equalize, lambda: (image(),), True),
        "invert": (F.invert, lambda: (image(),), False),
        "permute_channels": (lambda x: F.permute_channels(x, [2, 0, 1]), lambda: (image(),), False),
        "erase": (lambda x, v: F.erase(x, 2, 3, 5, 7, v), lambda: (image(f32), torch.zeros(3, 1, 1)), False),
        "get_size": (lambda x: (F.get_size(x), x * 1), lambda: (image(),), False),
        "get_dimensions": (lambda x: (F.get_dimensions(x), x * 1), lambda: (image(),), False),
        "uniform_temporal_subsample": (
            lambda x: F.uniform_temporal_subsample(x, 3), lambda: (image(size=(6, 3, H, W)),), False
        ),
        "convert_bounding_box_format": (
            lambda b: F.convert_bounding_box_format(b, old_format="XYXY", new_format="CXCYWH"),
            lambda: (make("BoundingBoxes").as_subclass(torch.Tensor),),
            False,
        ),
    }
    for name, (fn, args, ind) in pure.items():
        add(f"F.{name}", g, fn, args, inductor=ind)
    add("F.gaussian_noise", g, lambda x: F.gaussian_noise(x, sigma=0.1), lambda: (image(f32),), random=True)

    # ------------------------------------------------------------------ functionals on TVTensors
    g = GROUPS[1]
    geometry = {
        "horizontal_flip": lambda x: F.horizontal_flip(x),
        "vertical_flip": lambda x: F.vertical_flip(x),
        "resize": lambda x: F.resize(x, [8, 10], antialias=True),
        "crop": lambda x: F.crop(x, 2, 3, 10, 12),
        "center_crop": lambda x: F.center_crop(x, [10, 10]),
        "pad": lambda x: F.pad(x, [1, 2]),
        "affine": lambda x: F.affine(x, 30.0, [2, 1], 1.1, [5.0, 0.0]),
        "rotate": lambda x: F.rotate(x, 30.0),
        "perspective": lambda x: F.perspective(x, *corners),
        "resized_crop": lambda x: F.resized_crop(x, 2, 3, 10, 12, [8, 8], antialias=True),
        "elastic": lambda x: F.elastic(x, torch.full((1, H, W, 2), 0.05)),
        "get_size": lambda x: (F.get_size(x), x.as_subclass(torch.Tensor) * 1),
    }
    inductor_rows = {("resize", "BoundingBoxes"), ("affine", "Image"), ("horizontal_flip", "KeyPoints")}
    for name, fn in geometry.items():
        for kind in KINDS:
            add(f"F.{name}({kind})", g, fn, lambda kind=kind: (make(kind),), inductor=(name, kind) in inductor_rows)
    for kind in KINDS:
        scale = kind in ("Image", "Video")
        add(f"F.to_dtype({kind})", g, lambda x, scale=scale: F.to_dtype(x, f32, scale=scale),
            lambda kind=kind: (make(kind),))
    color = {
        "adjust_brightness": (lambda x: F.adjust_brightness(x, 1.3), None),
        "normalize": (lambda x: F.normalize(x, [0.5, 0.4, 0.3], [0.2, 0.2, 0.2]), f32),
        "gaussian_blur": (lambda x: F.gaussian_blur(x, [5, 5], [1.0, 1.0]), f32),
        "adjust_hue": (lambda x: F.adjust_hue(x, 0.2), f32),
        "equalize": (lambda x: F.equalize(x), None),
        "erase": (lambda x: F.erase(x, 2, 3, 5, 7, torch.zeros(3, 1, 1)), None),
    }
    for name, (fn, dtype) in color.items():
        for kind in ("Image", "Video"):
            add(f"F.{name}({kind})", g, fn, lambda kind=kind, dtype=dtype: (make(kind, dtype),))
    add("F.rgb_to_grayscale(Image)", g, F.rgb_to_grayscale, lambda: (make("Image"),))
    add("F.uniform_temporal_subsample(Video)", g, lambda x: F.uniform_temporal_subsample(x, 1),
        lambda: (make("Video"),))
    add("F.convert_bounding_box_format(BoundingBoxes)", g,
        lambda b: F.convert_bounding_box_format(b, new_format="XYWH"), lambda: (make("BoundingBoxes"),))
    add("F.clamp_bounding_boxes(BoundingBoxes)", g, F.clamp_bounding_boxes, lambda: (make("BoundingBoxes"),))
    add("F.clamp_keypoints(KeyPoints)", g, F.clamp_keypoints, lambda: (make("KeyPoints"),))
    add("F.sanitize_bounding_boxes(BoundingBoxes)", g, F.sanitize_bounding_boxes, lambda: (make("BoundingBoxes"),))
    add("tv_tensors.wrap(like=BoundingBoxes)", g,
        lambda b: tvt.wrap(b.as_subclass(torch.Tensor) + 1, like=b), lambda: (make("BoundingBoxes"),))

    # ------------------------------------------------------------------ deterministic transform classes
    mean, std = [0.5, 0.4, 0.3], [0.2, 0.2, 0.2]
    deterministic = {
        "Resize": (T.Resize([8, 10]), None),
        "CenterCrop": (T.CenterCrop([10, 12]), None),
        "Pad": (T.Pad([1, 2], fill={tvt.Image: 7, "others": 0}), None),
        "Normalize": (T.Normalize(mean, std), f32),
        "ToDtype": (T.ToDtype({tvt.Image: f32, tvt.Mask: torch.int64, "others": None}, scale=True), None),
        "Grayscale": (T.Grayscale(3), None),
        "ConvertBoundingBoxFormat": (T.ConvertBoundingBoxFormat("CXCYWH"), None),
        "ClampBoundingBoxes": (T.ClampBoundingBoxes(), None),
        "ToPureTensor": (T.ToPureTensor(), None),
        "Compose(Resize, CenterCrop, ToDtype, Normalize)": (
            T.Compose([T.Resize([12, 15]), T.CenterCrop([8, 10]), T.ToDtype(f32, scale=True), T.Normalize(mean, std)]),
            None,
        ),
    }
    on_tensor_only = {"ToDtype": T.ToDtype(f32, scale=True)}
    box_only = {"ConvertBoundingBoxFormat", "ClampBoundingBoxes"}
    for name, (t, dtype) in deterministic.items():
        if name not in box_only:
            tt = on_tensor_only.get(name, t)
            add(f"{name}", GROUPS[2], lambda x, t=tt: t(x), lambda dtype=dtype: (image(dtype),),
                inductor=name == "Compose(Resize, CenterCrop, ToDtype, Normalize)")
        add(f"{name}", GROUPS[3], lambda *xs, t=t: t(*xs), lambda dtype=dtype: sample(dtype),
            inductor=name == "Compose(Resize, CenterCrop, ToDtype, Normalize)")

    # ------------------------------------------------------------------ random transform classes
    flips = [T.RandomHorizontalFlip(p=1.0), T.RandomVerticalFlip(p=1.0)]
    random_tfs = {
        # name: (transform, on the mixed sample too, inductor on the pure tensor, inductor on the sample)
        "RandomHorizontalFlip": (T.RandomHorizontalFlip(), True, False, True),
        "RandomVerticalFlip": (T.RandomVerticalFlip(), True, False, False),
        "RandomResizedCrop": (T.RandomResizedCrop((8, 8), antialias=True), True, False, False),
        "RandomCrop": (T.RandomCrop((8, 8)), True, False, True),
        "ColorJitter": (T.ColorJitter(0.4, 0.4, 0.4, 0.1), True, False, False),
        "ColorJitter(brightness)": (T.ColorJitter(brightness=(0.8, 1.2)), False, False, False),
        "RandomRotation": (T.RandomRotation(30), True, False, False),
        "RandomAffine": (T.RandomAffine(20, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5), True, True, False),
        "RandomPerspective": (T.RandomPerspective(p=1.0), True, False, False),
        "ElasticTransform": (T.ElasticTransform(alpha=5.0, sigma=2.0), True, False, False),
        "RandomZoomOut": (T.RandomZoomOut(side_range=(1.0, 2.0)), True, False, False),
        "RandomIoUCrop": (T.RandomIoUCrop(), True, False, False),  # needs boxes: the sample only
        "ScaleJitter": (T.ScaleJitter((H, W)), True, False, False),
        "RandomShortestSize": (T.RandomShortestSize([8, 10, 12]), True, False, False),
        "RandomResize": (T.RandomResize(8, 16), True, False, False),
        "GaussianBlur": (T.GaussianBlur(5, sigma=(0.1, 2.0)), True, True, False),
        "GaussianNoise": (T.GaussianNoise(), False, False, False),
        "RandomErasing": (T.RandomErasing(p=1.0), True, False, False),
        "RandomGrayscale": (T.RandomGrayscale(), False, False, False),
        "RandomInvert": (T.RandomInvert(), False, False, False),
        "RandomEqualize": (T.RandomEqualize(), False, False, False),
        "RandomPosterize": (T.RandomPosterize(4), False, False, False),
        "RandomSolarize": (T.RandomSolarize(128), False, False, False),
        "RandomAutocontrast": (T.RandomAutocontrast(), False, False, False),
        "RandomAdjustSharpness": (T.RandomAdjustSharpness(2.0), False, False, False),
        "RandomChannelPermutation": (T.RandomChannelPermutation(), False, False, False),
        "RandomPhotometricDistort": (T.RandomPhotometricDistort(), True, False, False),
        "RandAugment": (T.RandAugment(), False, False, False),
        "TrivialAugmentWide": (T.TrivialAugmentWide(), False, False, False),
        "AutoAugment": (T.AutoAugment(), False, False, False),
        "AugMix": (T.AugMix(), False, False, False),
        "RandomApply([RandomHorizontalFlip(1)])": (T.RandomApply([flips[0]]), True, False, False),
        "RandomChoice([flips])": (T.RandomChoice(flips), True, False, False),
        "RandomOrder([flips])": (T.RandomOrder(flips), True, False, False),
        "Compose(RandomResizedCrop, RandomHorizontalFlip, ToDtype)": (
            T.Compose([T.RandomResizedCrop((8, 8), antialias=True), T.RandomHorizontalFlip(), T.ToDtype(f32, scale=True)]),
            True, False, False,
        ),
    }
    float_input = {"GaussianNoise"}
    sample_only = {"RandomIoUCrop"}
    # One graph per permutation of its four ops, and each costs seconds: two seeds.
    fewer_seeds = {"RandomPhotometricDistort": SEEDS[:2]}
    for name, (t, mixed, ind_pure, ind_mixed) in random_tfs.items():
        dtype = f32 if name in float_input else None
        seeds = fewer_seeds.get(name, SEEDS)
        if name not in sample_only:
            add(name, GROUPS[4], lambda x, t=t: t(x), lambda dtype=dtype: (image(dtype),), random=True,
                inductor=ind_pure, seeds=seeds)
        if mixed:
            add(name, GROUPS[5], lambda *xs, t=t: t(*xs), lambda dtype=dtype: sample(dtype),
                random=True, inductor=ind_mixed, seeds=seeds)
    return out


def same(a: Any, b: Any, *, close: bool = False) -> bool:
    """``b`` equals ``a``: type, dtype, shape, TVTensor metadata, values (bit for bit
    unless ``close``: then floats within torch.testing's default tolerances and
    integers within 1), through tuples, lists and dicts."""
    import torch

    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape or _metadata(a) != _metadata(b):
            return False
        x, y = a.as_subclass(torch.Tensor), b.as_subclass(torch.Tensor)
        if not close:
            return bool(torch.equal(x, y))
        if x.is_floating_point() or x.is_complex():
            return bool(torch.allclose(x, y, rtol=1.3e-6, atol=1e-5, equal_nan=True))
        return bool(((x.to(torch.int64) - y.to(torch.int64)).abs() <= 1).all())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, close=close) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k], close=close) for k in a)
    return bool(a == b)


def _metadata(t) -> dict:
    """A tensor's own Python attributes (a TVTensor's format, canvas_size, ...)."""
    return {k: v for k, v in getattr(t, "__dict__", {}).items() if not k.startswith("_")}
