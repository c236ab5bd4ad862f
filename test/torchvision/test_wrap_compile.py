"""torch.compile(fullgraph=True) through tv_tensors.wrap: every TVTensor kind.

Each v2 functional called on a TVTensor unwraps it, runs the kernel on the plain
tensor and re-wraps the output with ``tv_tensors.wrap(output, like=inpt)``.
These tests compile such calls in one graph and compare them with eager:
values, dtype, TVTensor type and metadata.
"""

import pytest
import torch
import torch._dynamo
from torchvision import tv_tensors
from torchvision.transforms.v2 import functional as F


def _make(kind):
    g = torch.Generator().manual_seed(0)
    if kind == "Image":
        return tv_tensors.Image(torch.randint(0, 256, (3, 17, 23), dtype=torch.uint8, generator=g))
    if kind == "Video":
        return tv_tensors.Video(torch.randint(0, 256, (2, 3, 17, 23), dtype=torch.uint8, generator=g))
    if kind == "Mask":
        return tv_tensors.Mask(torch.randint(0, 3, (1, 17, 23), dtype=torch.uint8, generator=g))
    if kind == "BoundingBoxes":
        xy = torch.randint(0, 10, (4, 2), generator=g)
        boxes = torch.cat([xy, xy + torch.randint(1, 7, (4, 2), generator=g)], dim=1).float()
        return tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=(17, 23))
    if kind == "KeyPoints":
        points = torch.randint(0, 17, (5, 2), generator=g).float()
        return tv_tensors.KeyPoints(points, canvas_size=(17, 23))
    raise AssertionError(kind)


KINDS = ["Image", "Video", "Mask", "BoundingBoxes", "KeyPoints"]
CALLS = {
    "horizontal_flip": lambda x: F.horizontal_flip(x),
    "vertical_flip": lambda x: F.vertical_flip(x),
    "crop": lambda x: F.crop(x, 2, 3, 10, 12),
    "resize": lambda x: F.resize(x, [9, 11], antialias=True),
    "pad": lambda x: F.pad(x, [1, 2]),
    "wrap": lambda x: tv_tensors.wrap(x.as_subclass(torch.Tensor) + 1, like=x),
}


def _metadata(x):
    return {k: getattr(x, k) for k in ("format", "canvas_size", "clamping_mode") if hasattr(x, k)}


def assert_same(actual, expected):
    assert type(actual) is type(expected)
    assert actual.dtype == expected.dtype
    assert _metadata(actual) == _metadata(expected)
    torch.testing.assert_close(actual.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor), rtol=0, atol=0)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_functional_on_tv_tensor_compiles_fullgraph(call, kind):
    fn = CALLS[call]
    x = _make(kind)
    expected = fn(x)
    actual = torch.compile(fn, backend="eager", fullgraph=True)(x)
    assert_same(actual, expected)


def test_functionals_chain_in_one_graph():
    # Before, every functional call on a TVTensor ended the graph at wrap.
    def pipeline(image, boxes):
        image, boxes = F.horizontal_flip(image), F.horizontal_flip(boxes)
        image, boxes = F.resize(image, [12, 16], antialias=True), F.resize(boxes, [12, 16])
        return F.crop(image, 1, 1, 8, 8), F.crop(boxes, 1, 1, 8, 8)

    counter = torch._dynamo.testing.CompileCounter()
    image, boxes = _make("Image"), _make("BoundingBoxes")
    actual = torch.compile(pipeline, backend=counter, fullgraph=True)(image, boxes)
    for a, e in zip(actual, pipeline(image, boxes)):
        assert_same(a, e)
    assert counter.frame_count == 1
