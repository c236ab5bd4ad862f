"""No recompile across image sizes: torchvision's transforms on a stream of sizes.

Each transform is compiled with ``fullgraph=True`` (the random ones with the random
flags of the torch series, from one seed per call) and warmed up on a few sizes of
both orientations: Dynamo's automatic dynamic shapes make the sizes symbolic after
the first recompile, and a transform that compares height with width (Resize's
short side) compiles one graph per orientation. After that, sizes it has not seen
must not compile again (``error_on_recompile``), and every call must equal eager's.

The transforms that read the sample's size through ``query_size`` (RandomCrop and
RandomResizedCrop here) used to compile a graph for every size: Dynamo specialized the
symbolic sizes that ``query_size`` puts into a set.
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
import torchvision.transforms.v2 as T
from torch._dynamo.testing import CompileCounter

from torchvision import tv_tensors

from test_compile_functionals import assert_same
from test_compile_transforms import _call, _flags

WARM_UP = [(16, 20), (17, 23), (22, 18), (23, 17)]
SIZES = [(19, 21), (30, 25), (24, 26), (28, 19), (40, 33), (21, 31)]

# name -> (factory, random, the most graphs it may compile)
TRANSFORMS = {
    "CenterCrop": (lambda: T.CenterCrop(8), False, 2),
    "Pad": (lambda: T.Pad(2), False, 2),
    "ToDtype": (lambda: T.ToDtype(torch.float32, scale=True), False, 2),
    # one graph per orientation: `w <= h` picks the short side
    "Resize": (lambda: T.Resize(12, antialias=True), False, 3),
    "RandomHorizontalFlip": (lambda: T.RandomHorizontalFlip(p=0.5), True, 2),
    "RandomCrop": (lambda: T.RandomCrop(8), True, 2),
    "RandomResizedCrop": (lambda: T.RandomResizedCrop(8, antialias=True), True, 2),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_no_recompile_across_sizes(name):
    factory, random, bound = TRANSFORMS[name]
    t = factory()
    counter = CompileCounter()
    torch._dynamo.reset()
    compiled = torch.compile(t, backend=counter, fullgraph=True)
    with _flags(random):
        for i, sizes in enumerate((WARM_UP, SIZES)):
            with torch._dynamo.config.patch(error_on_recompile=i == 1):
                for h, w in sizes:
                    g = torch.Generator().manual_seed(h * w)
                    args = (torch.randint(0, 256, (3, h, w), dtype=torch.uint8, generator=g),)
                    eager, eager_error, eager_next = _call(t, args, 0)
                    out, error, out_next = _call(compiled, args, 0)
                    assert eager_error is None and error is None, (eager_error, error)
                    assert_same(out, eager)
                    assert torch.equal(out_next, eager_next)
    assert 1 <= counter.frame_count <= bound, counter.frame_count


def _boxes_sample(h, w):
    g = torch.Generator().manual_seed(h * w)
    image = tv_tensors.Image(torch.randint(0, 256, (3, h, w), dtype=torch.uint8, generator=g))
    corners = torch.tensor([[0.1, 0.1, 0.5, 0.45], [0.55, 0.2, 0.9, 0.7], [0.2, 0.6, 0.45, 0.95]])
    boxes = tv_tensors.BoundingBoxes(corners * torch.tensor([w, h, w, h]), format="XYXY", canvas_size=(h, w))
    return ((image, boxes),)


def test_iou_crop_across_sizes():
    # RandomIoUCrop draws its crops across the sample's sizes
    # (`int(orig_w * r[0])`), which are symbolic from the second size on, and
    # tests them against the boxes: fullgraph at every size, each call equal
    # to eager's (its graphs are one per path of the search: not bounded, see
    # test_compile_recompiles)
    t = T.RandomIoUCrop()
    torch._dynamo.reset()
    compiled = torch.compile(t, fullgraph=True)
    with _flags(True), torch._dynamo.config.patch(recompile_limit=64):
        for seed, (h, w) in enumerate(WARM_UP + SIZES[:2]):
            args = _boxes_sample(h, w)
            eager, eager_error, eager_next = _call(t, args, seed)
            out, error, out_next = _call(compiled, args, seed)
            assert eager_error is None and error is None, (eager_error, error)
            assert_same(out, eager)
            assert torch.equal(out_next, eager_next)
