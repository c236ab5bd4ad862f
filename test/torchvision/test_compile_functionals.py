"""torch.compile(fullgraph=True) of every public v2 functional, on every input kind it supports.

The functionals are the keys of ``_KERNEL_REGISTRY``; the input kinds are the types each
registers a kernel for among the pure tensor, Image, Video, Mask, BoundingBoxes (every box
format, axis-aligned and rotated) and KeyPoints.  Each call is compiled with
``fullgraph=True`` on backend eager, one graph per call, and compared with eager: values
(bit for bit), dtypes, output types, TVTensor metadata, Python outputs, and a raised error's
type and message.  The ``*_image``/``*_video``/``*_mask``/``*_bounding_boxes``/``*_keypoints``
kernels are compiled the same way.  On backend inductor each functional is compiled once,
over one input per kernel (``INDUCTOR_KINDS``) in one graph, since compiling each call
alone costs seconds; values may then differ within float tolerance.
"""

from __future__ import annotations

import contextlib
import inspect

import pytest
import torch
import torch._dynamo
from torchvision import tv_tensors
from torchvision.transforms.v2 import functional as F
from torchvision.transforms.v2.functional._utils import _KERNEL_REGISTRY

H, W = 16, 20
BOX_FORMATS = ("XYXY", "XYWH", "CXCYWH", "XYWHR", "CXCYWHR", "XYXYXYXY")
_BOXES_XYXY = [[1.0, 2.0, 10.0, 12.0], [0.0, 0.0, 5.0, 5.0], [8.0, 3.0, 19.0, 15.0]]


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _uint8(*shape, seed=0):
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=_gen(seed))


def make(kind: str, *, float_image: bool = False, frames: bool = False):
    """An input of ``kind`` on the 16x20 canvas.  ``kind`` is "tensor", a TVTensor class
    name, or "BoundingBoxes(FMT)"; images are uint8 unless ``float_image``; a pure tensor
    is a (T, C, H, W) clip if ``frames``."""
    image = (lambda *s: torch.rand(s, generator=_gen())) if float_image else _uint8
    if kind == "tensor":
        return image(2, 3, H, W) if frames else image(3, H, W)
    if kind == "Image":
        return tv_tensors.Image(image(3, H, W))
    if kind == "Video":
        return tv_tensors.Video(image(2, 3, H, W))
    if kind == "Mask":
        return tv_tensors.Mask(torch.randint(0, 5, (H, W), dtype=torch.uint8, generator=_gen(1)))
    if kind == "KeyPoints":
        return tv_tensors.KeyPoints(torch.tensor([[1.0, 2.0], [10.0, 12.0], [19.0, 0.0], [4.5, 7.5]]), canvas_size=(H, W))
    if kind.startswith("BoundingBoxes("):
        fmt = kind[len("BoundingBoxes(") : -1]
        xyxy = tv_tensors.BoundingBoxes(torch.tensor(_BOXES_XYXY), format="XYXY", canvas_size=(H, W))
        if fmt in ("XYWHR", "CXCYWHR", "XYXYXYXY"):
            # rotated boxes: from XYWHR with angles
            xywh = F.convert_bounding_box_format(xyxy, new_format="XYWH")
            angles = torch.tensor([[0.0], [30.0], [-45.0]])
            xywhr = tv_tensors.BoundingBoxes(
                torch.cat([xywh.as_subclass(torch.Tensor), angles], dim=1), format="XYWHR", canvas_size=(H, W)
            )
            return F.convert_bounding_box_format(xywhr, new_format=fmt)
        return F.convert_bounding_box_format(xyxy, new_format=fmt)
    raise ValueError(kind)


_CORNERS = ([[0, 0], [19, 0], [19, 15], [0, 15]], [[1, 1], [18, 0], [19, 14], [0, 15]])

# functional name -> (positional arguments after the input, keyword arguments); a callable
# builds them per call (fresh tensors).  Inputs are float images where marked in FLOAT.
ARGS = {
    "get_dimensions": ((), {}),
    "get_num_channels": ((), {}),
    "get_size": ((), {}),
    "get_num_frames": ((), {}),
    "erase": (lambda: ((2, 3, 5, 7, torch.zeros(3, 1, 1, dtype=torch.uint8)), {})),
    "normalize": (([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]), {}),
    "gaussian_blur": (([3, 3], [0.8, 0.8]), {}),
    "gaussian_noise": ((), {"sigma": 0.1}),
    "to_dtype": ((torch.float32,), {"scale": True}),
    "rgb_to_grayscale": ((), {"num_output_channels": 1}),
    "grayscale_to_rgb": ((), {}),
    "adjust_brightness": ((1.3,), {}),
    "adjust_saturation": ((0.7,), {}),
    "adjust_contrast": ((0.7,), {}),
    "adjust_sharpness": ((2.0,), {}),
    "adjust_hue": ((0.2,), {}),
    "adjust_gamma": ((0.8,), {}),
    "posterize": ((3,), {}),
    "solarize": ((128,), {}),
    "autocontrast": ((), {}),
    "equalize": ((), {}),
    "invert": ((), {}),
    "permute_channels": (([2, 0, 1],), {}),
    "horizontal_flip": ((), {}),
    "vertical_flip": ((), {}),
    "resize": (([8, 10],), {"antialias": True}),
    "affine": ((), {"angle": 30.0, "translate": [2, 1], "scale": 1.1, "shear": [5.0, 0.0]}),
    "rotate": ((30.0,), {}),
    "pad": (([1, 2],), {}),
    "crop": ((2, 3, 10, 12), {}),
    "perspective": (_CORNERS, {}),
    "elastic": (lambda: ((torch.full((1, H, W, 2), 0.03),), {})),  # no tie under nearest
    "center_crop": (([10, 10],), {}),
    "resized_crop": ((2, 3, 10, 12, [8, 8]), {"antialias": True}),
    "five_crop": (([8, 8],), {}),
    "ten_crop": (([8, 8],), {}),
    "uniform_temporal_subsample": ((1,), {}),
}
FLOAT = {"normalize", "gaussian_noise"}
CLIPS = {"get_num_frames", "uniform_temporal_subsample"}  # a pure tensor is a (T, C, H, W) clip
RANDOM = {"gaussian_noise"}  # compared from the same seed, with the random flags on
ONE_CHANNEL = {"grayscale_to_rgb"}
# Functionals whose eager call cannot run here: the JPEG codec is a torchvision C++ op,
# and the CUDA wheel's C++ ops do not load on the CPU torch (see conftest.py).
NO_EAGER = {"jpeg"}

_KINDS = {
    torch.Tensor: ["tensor"],
    tv_tensors.Image: ["Image"],
    tv_tensors.Video: ["Video"],
    tv_tensors.Mask: ["Mask"],
    tv_tensors.BoundingBoxes: [f"BoundingBoxes({fmt})" for fmt in BOX_FORMATS],
    tv_tensors.KeyPoints: ["KeyPoints"],
}


def functionals():
    """The public functionals of _KERNEL_REGISTRY, by name."""
    return sorted(fn.__name__ for fn in _KERNEL_REGISTRY if getattr(F, fn.__name__, None) is fn)


def kinds(name):
    registered = _KERNEL_REGISTRY[getattr(F, name)]
    return [k for cls, ks in _KINDS.items() if cls in registered for k in ks]


def arguments(name, kind):
    args = ARGS[name]
    args, kwargs = args() if callable(args) else args
    x = make(kind, float_image=name in FLOAT, frames=name in CLIPS)
    if name in ONE_CHANNEL and kind in ("tensor", "Image"):
        x = x[:1] if kind == "tensor" else tv_tensors.Image(x.as_subclass(torch.Tensor)[:1])
    return (x, *args), kwargs


CASES = [(name, kind) for name in functionals() if name not in NO_EAGER for kind in kinds(name)]


def _metadata(x):
    return {k: v for k, v in vars(x).items() if not k.startswith("_")} if isinstance(x, torch.Tensor) else None


def assert_same(actual, expected, *, exact=True):
    """Same type, dtype, shape, TVTensor metadata and values, through lists, tuples and dicts."""
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, exact=exact)
    elif isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        assert _metadata(actual) == _metadata(expected)
        a, e = actual.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor)
        if exact:
            torch.testing.assert_close(a, e, rtol=0, atol=0)
        elif e.is_floating_point():
            torch.testing.assert_close(a, e)
        else:  # integer outputs of float math may round differently by one
            assert ((a.to(torch.int64) - e.to(torch.int64)).abs() <= 1).all()
    else:
        assert actual == expected


def outcome(fn, *args, seed=0, **kwargs):
    """fn's result, or the error it raised (type and message), from torch.manual_seed(seed)."""
    torch.manual_seed(seed)
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # compared with the compiled call's
        return None, (type(e), str(e))


def assert_compiles_like_eager(fn, args, kwargs, *, backend="eager", exact=True, seeds=(0,)):
    for seed in seeds:
        torch._dynamo.reset()
        eager, eager_error = outcome(fn, *args, seed=seed, **kwargs)
        eager_next = torch.rand(1)
        compiled = torch.compile(fn, backend=backend, fullgraph=True)
        out, error = outcome(compiled, *args, seed=seed, **kwargs)
        if eager_error is not None:
            assert error == eager_error
            continue
        assert error is None, error[1]
        assert_same(out, eager, exact=exact)
        assert torch.equal(torch.rand(1), eager_next)  # the RNG stream after the call


def _config(name):
    # Random functionals compile fullgraph with the random flags (torch series).
    return torch._dynamo.config.patch(hoist_torch_rng_draws=True) if name in RANDOM else contextlib.nullcontext()


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_functional(name, kind):
    (x, *args), kwargs = arguments(name, kind)
    with _config(name):
        assert_compiles_like_eager(getattr(F, name), (x, *args), kwargs, seeds=(0, 1) if name in RANDOM else (0,))


def _kernel(name, kind):
    """The public kernel of ``name`` for ``kind`` (``F.resize_image``, ...), and how to call it
    on the plain tensor: (kernel, plain input, extra keyword arguments)."""
    suffix = {"tensor": "image", "Image": "image", "Video": "video", "Mask": "mask", "KeyPoints": "keypoints"}.get(
        kind, "bounding_boxes"
    )
    kernel = getattr(F, f"{name}_{suffix}", None)
    if kernel is None:
        return None
    params = inspect.signature(kernel).parameters
    return kernel, params


KERNEL_CASES = [(n, k) for n, k in CASES if k != "tensor" and _kernel(n, k) is not None]


@pytest.mark.parametrize(("name", "kind"), KERNEL_CASES, ids=[f"{n}-{k}" for n, k in KERNEL_CASES])
def test_kernel(name, kind):
    kernel, params = _kernel(name, kind)
    (x, *args), kwargs = arguments(name, kind)
    if "format" in params:
        kwargs["format"] = x.format
    if "canvas_size" in params:
        kwargs["canvas_size"] = x.canvas_size
    first = next(iter(params.values()))
    if "tv_tensors" not in str(first.annotation):  # most kernels take the plain tensor
        x = x.as_subclass(torch.Tensor)
    with _config(name):
        assert_compiles_like_eager(kernel, (x, *args), kwargs)


# On inductor, one input per kernel and box-format family: Image and the pure tensor share
# the image kernel (the eager tests above cover the re-wrapping), and the box formats fall
# into axis-aligned and rotated code paths.
INDUCTOR_KINDS = ("tensor", "Video", "Mask", "BoundingBoxes(XYXY)", "BoundingBoxes(CXCYWHR)", "KeyPoints")


def _all_kinds(name):
    """The kinds the one inductor graph covers: those whose eager call succeeds."""
    ok = []
    for kind in [k for k in kinds(name) if k in INDUCTOR_KINDS]:
        (x, *args), kwargs = arguments(name, kind)
        with _config(name):
            if outcome(getattr(F, name), x, *args, **kwargs)[1] is None:
                ok.append(kind)
    return ok


@pytest.mark.parametrize("name", [n for n in functionals() if n not in NO_EAGER])
def test_functional_inductor(name):
    fn = getattr(F, name)
    calls = [arguments(name, kind) for kind in _all_kinds(name)]

    def all_kinds(inputs):
        return [fn(*args, **kwargs) for args, kwargs in inputs]

    with _config(name):
        assert_compiles_like_eager(all_kinds, (calls,), {}, backend="inductor", exact=False)


@pytest.mark.parametrize("name", sorted(NO_EAGER))
def test_excluded_functional_cannot_run_eagerly(name):
    # If it starts to run here, it belongs in the tests above.
    (x, *_), _ = arguments("invert", "tensor")
    assert outcome(getattr(F, name), x, 75)[1] is not None
