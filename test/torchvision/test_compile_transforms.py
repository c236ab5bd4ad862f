"""torch.compile(fullgraph=True) of every public v2 transform class that takes tensors.

Each transform is called on a pure uint8 image and on a mixed sample, ``(Image,
BoundingBoxes, Mask, {"label": 3})`` (MixUp and CutMix: a batch of images and its labels),
compiled with ``fullgraph=True`` and compared with eager: values, dtypes, output types,
TVTensor metadata.  A random transform is called from ``torch.manual_seed(s)`` for two
seeds (one on inductor) with the random flags of the torch series on (``hoist_torch_rng_draws``,
``data_dependent_branches_as_cond``), and the RNG state after the call must equal eager's
too.  On backend eager each (transform, input) is compiled alone; on backend inductor each
transform once, over both inputs in one graph.

``KNOWN_GAPS`` (and ``INDUCTOR_GAPS``) list the calls that do not compile fullgraph (on
inductor) yet, with why; a test checks that each still fails, so a fix shows up as a failure
here that asks to move the case.
"""

from __future__ import annotations

import contextlib
import inspect

import pytest
import torch
import torch._dynamo
import torchvision.transforms.v2 as T
from torchvision import tv_tensors

from test_compile_functionals import assert_same

H, W = 16, 20
f32 = torch.float32


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def image(dtype=torch.uint8):
    if dtype.is_floating_point:
        return torch.rand(3, H, W, generator=_gen())
    return torch.randint(0, 256, (3, H, W), dtype=dtype, generator=_gen())


def sample(dtype=torch.uint8):
    boxes = tv_tensors.BoundingBoxes(
        torch.tensor([[1.0, 2.0, 10.0, 12.0], [0.0, 0.0, 5.0, 5.0], [8.0, 3.0, 19.0, 15.0]]),
        format="XYXY",
        canvas_size=(H, W),
    )
    mask = tv_tensors.Mask(torch.randint(0, 5, (H, W), dtype=torch.uint8, generator=_gen(1)))
    return (tv_tensors.Image(image(dtype)), boxes, mask, {"label": 3})


def batch():
    return (torch.rand(2, 3, H, W, generator=_gen()), torch.tensor([0, 2]))


_FLIPS = lambda: [T.RandomHorizontalFlip(p=1.0), T.RandomVerticalFlip(p=1.0)]  # noqa: E731
_MEAN, _STD = [0.5, 0.4, 0.3], [0.2, 0.2, 0.2]

# name -> (factory, random, input dtype); the factory builds the transform.
TRANSFORMS = {
    # deterministic
    "Identity": (T.Identity, False, torch.uint8),
    "Resize": (lambda: T.Resize([8, 10]), False, torch.uint8),
    "CenterCrop": (lambda: T.CenterCrop([10, 12]), False, torch.uint8),
    "FiveCrop": (lambda: T.FiveCrop([8, 8]), False, torch.uint8),
    "TenCrop": (lambda: T.TenCrop([8, 8]), False, torch.uint8),
    "Pad": (lambda: T.Pad([1, 2], fill={tv_tensors.Image: 7, "others": 0}), False, torch.uint8),
    "Normalize": (lambda: T.Normalize(_MEAN, _STD), False, f32),
    "ToDtype": (lambda: T.ToDtype(f32, scale=True), False, torch.uint8),
    "ToDtype(per type)": (
        lambda: T.ToDtype({tv_tensors.Image: f32, tv_tensors.Mask: torch.int64, "others": None}, scale=True),
        False,
        torch.uint8,
    ),
    "ConvertImageDtype": (lambda: T.ConvertImageDtype(f32), False, torch.uint8),
    "Grayscale": (lambda: T.Grayscale(3), False, torch.uint8),
    "RGB": (T.RGB, False, torch.uint8),
    "ConvertBoundingBoxFormat": (lambda: T.ConvertBoundingBoxFormat("CXCYWH"), False, torch.uint8),
    "ClampBoundingBoxes": (T.ClampBoundingBoxes, False, torch.uint8),
    "ClampKeyPoints": (T.ClampKeyPoints, False, torch.uint8),
    "SetClampingMode": (lambda: T.SetClampingMode("hard"), False, torch.uint8),
    "SanitizeBoundingBoxes": (T.SanitizeBoundingBoxes, False, torch.uint8),
    "ToImage": (T.ToImage, False, torch.uint8),
    "ToPureTensor": (T.ToPureTensor, False, torch.uint8),
    "UniformTemporalSubsample": (lambda: T.UniformTemporalSubsample(1), False, torch.uint8),
    "Compose": (lambda: T.Compose([T.Resize([12, 15]), T.CenterCrop([8, 10]), T.ToDtype(f32, scale=True), T.Normalize(_MEAN, _STD)]), False, torch.uint8),
    # random
    "RandomHorizontalFlip": (T.RandomHorizontalFlip, True, torch.uint8),
    "RandomVerticalFlip": (T.RandomVerticalFlip, True, torch.uint8),
    "RandomResizedCrop": (lambda: T.RandomResizedCrop((8, 8), antialias=True), True, torch.uint8),
    "RandomCrop": (lambda: T.RandomCrop((8, 8)), True, torch.uint8),
    "RandomZoomOut": (lambda: T.RandomZoomOut(side_range=(1.0, 2.0)), True, torch.uint8),
    "RandomIoUCrop": (T.RandomIoUCrop, True, torch.uint8),
    "ScaleJitter": (lambda: T.ScaleJitter((H, W)), True, torch.uint8),
    "RandomShortestSize": (lambda: T.RandomShortestSize([8, 10, 12]), True, torch.uint8),
    "RandomResize": (lambda: T.RandomResize(8, 16), True, torch.uint8),
    "RandomRotation": (lambda: T.RandomRotation(30), True, torch.uint8),
    "RandomAffine": (lambda: T.RandomAffine(20, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5), True, torch.uint8),
    "RandomPerspective": (lambda: T.RandomPerspective(p=1.0), True, torch.uint8),
    "ElasticTransform": (lambda: T.ElasticTransform(alpha=5.0, sigma=2.0), True, torch.uint8),
    "ColorJitter": (lambda: T.ColorJitter(0.4, 0.4, 0.4, 0.1), True, torch.uint8),
    "RandomPhotometricDistort": (T.RandomPhotometricDistort, True, torch.uint8),
    "RandomChannelPermutation": (T.RandomChannelPermutation, True, torch.uint8),
    "RandomGrayscale": (T.RandomGrayscale, True, torch.uint8),
    "RandomInvert": (T.RandomInvert, True, torch.uint8),
    "RandomPosterize": (lambda: T.RandomPosterize(4), True, torch.uint8),
    "RandomSolarize": (lambda: T.RandomSolarize(128), True, torch.uint8),
    "RandomAdjustSharpness": (lambda: T.RandomAdjustSharpness(2.0), True, torch.uint8),
    "RandomAutocontrast": (T.RandomAutocontrast, True, torch.uint8),
    "RandomEqualize": (T.RandomEqualize, True, torch.uint8),
    "GaussianBlur": (lambda: T.GaussianBlur(5, sigma=(0.1, 2.0)), True, torch.uint8),
    "GaussianNoise": (T.GaussianNoise, True, f32),
    "RandomErasing": (lambda: T.RandomErasing(p=1.0), True, torch.uint8),
    "AutoAugment": (T.AutoAugment, True, torch.uint8),
    "RandAugment": (T.RandAugment, True, torch.uint8),
    "TrivialAugmentWide": (T.TrivialAugmentWide, True, torch.uint8),
    "AugMix": (T.AugMix, True, torch.uint8),
    "RandomApply": (lambda: T.RandomApply(_FLIPS()), True, torch.uint8),
    "RandomChoice": (lambda: T.RandomChoice(_FLIPS()), True, torch.uint8),
    "RandomOrder": (lambda: T.RandomOrder(_FLIPS()), True, torch.uint8),
    "MixUp": (lambda: T.MixUp(num_classes=3), True, f32),
    "CutMix": (lambda: T.CutMix(num_classes=3), True, f32),
}

# Public transform classes not above, and why: they take no tensors, or need what this
# machine lacks.
NOT_TESTED = {
    "Transform": "the base class",
    "PILToTensor": "takes PIL images",
    "ToPILImage": "returns PIL images",
    "ToTensor": "takes PIL images or ndarrays (deprecated)",
    "Lambda": "runs the user's callable",
    "LinearTransformation": "takes a user-built whitening matrix; tested by the functionals' matmul paths",
    "SanitizeKeyPoints": "drops key points by a data-dependent mask, as SanitizeBoundingBoxes does",
    "JPEG": "the JPEG codec is a torchvision C++ op, which does not load here (see conftest.py)",
}

# Which inputs each transform takes: a pure image, the mixed sample, or a batch with labels.
ONLY_SAMPLE = {"ConvertBoundingBoxFormat", "ClampBoundingBoxes", "SanitizeBoundingBoxes", "RandomIoUCrop", "SetClampingMode"}
ONLY_BATCH = {"MixUp", "CutMix"}
ONLY_TENSOR = {"UniformTemporalSubsample", "ClampKeyPoints"}

# (transform, input) -> why it does not compile fullgraph yet; the test below checks it still fails.
# (RandomIoUCrop on the sample, whose search branches on the boxes' data, was one
# until patch 50.)
KNOWN_GAPS: dict[tuple[str, str], str] = {}
# transform -> why it does not compile on inductor yet (the same test checks it still fails).
INDUCTOR_GAPS: dict[str, str] = {}


def _inputs(name, dtype):
    if name in ONLY_BATCH:
        return {"batch": batch}
    out = {}
    if name not in ONLY_SAMPLE:
        if name == "UniformTemporalSubsample":
            out["tensor"] = lambda: (torch.randint(0, 256, (4, 3, H, W), dtype=torch.uint8, generator=_gen()),)
        elif name == "ClampKeyPoints":
            out["tensor"] = lambda: (tv_tensors.KeyPoints(torch.tensor([[1.0, 2.0], [30.0, -3.0]]), canvas_size=(H, W)),)
        else:
            out["tensor"] = lambda: (image(dtype),)
    if name not in ONLY_TENSOR:
        out["sample"] = lambda: sample(dtype)
    return out


CASES = [
    (name, kind) for name, (_, _, dtype) in TRANSFORMS.items() for kind in _inputs(name, dtype)
    if (name, kind) not in KNOWN_GAPS
]


def _flags(on):
    """The random flags of the torch series, for a random transform."""
    if not on:
        return contextlib.nullcontext()
    return torch._dynamo.config.patch(hoist_torch_rng_draws=True, data_dependent_branches_as_cond=True)


def _call(fn, args, seed):
    """fn's output or raised error (type and message), and the draw after it."""
    torch.manual_seed(seed)
    try:
        out, error = fn(*args), None
    except Exception as e:  # compared with the compiled call's
        out, error = None, (type(e), str(e))
    return out, error, torch.rand(1)


def check(name, fn, make_args, *, backend="eager", exact=True):
    _, random, _ = TRANSFORMS[name]
    with _flags(random):
        # two seeds on eager; one on inductor, where every outcome-specialized graph costs seconds
        for seed in (0, 1) if random and backend == "eager" else (0,):
            torch._dynamo.reset()
            args = make_args()
            eager, eager_error, eager_next = _call(fn, args, seed)
            out, error, out_next = _call(torch.compile(fn, backend=backend, fullgraph=True), args, seed)
            assert error == eager_error, error
            if eager_error is None:
                assert_same(out, eager, exact=exact)
                assert torch.equal(out_next, eager_next)  # the RNG stream after the call


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_transform(name, kind):
    factory, _, dtype = TRANSFORMS[name]
    t = factory()
    check(name, lambda *xs: t(*xs), _inputs(name, dtype)[kind])


@pytest.mark.parametrize("name", [n for n in TRANSFORMS if n not in INDUCTOR_GAPS])
def test_transform_inductor(name):
    factory, _, dtype = TRANSFORMS[name]
    t = factory()
    check_inductor(name, t, dtype)


def check_inductor(name, t, dtype):
    inputs = [make for kind, make in _inputs(name, dtype).items() if (name, kind) not in KNOWN_GAPS]

    def all_inputs(*groups):
        return [t(*args) for args in groups]

    check(name, all_inputs, lambda: tuple(make() for make in inputs), backend="inductor", exact=False)


GAPS = [*KNOWN_GAPS, *((name, "inductor") for name in INDUCTOR_GAPS)]

if GAPS:  # an empty parametrization would be a skipped test

    @pytest.mark.parametrize(("name", "kind"), GAPS, ids=[f"{n}-{k}" for n, k in GAPS])
    def test_known_gap_still_fails(name, kind):
        factory, _, dtype = TRANSFORMS[name]
        t = factory()
        with pytest.raises(Exception):
            if kind == "inductor":
                check_inductor(name, t, dtype)
            else:
                check(name, lambda *xs: t(*xs), _inputs(name, dtype)[kind])


def test_every_public_transform_is_listed():
    public = {n for n, c in vars(T).items() if inspect.isclass(c) and issubclass(c, T.Transform)}
    tested = {n.split("(")[0] for n in TRANSFORMS}
    assert public - tested - set(NOT_TESTED) == set()
    assert set(NOT_TESTED) <= public
