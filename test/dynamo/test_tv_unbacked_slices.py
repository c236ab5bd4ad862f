# Owner(s): ["module: dynamo"]
"""Indexing with several slices whose starts are unbacked symbols.

torchvision's crop kernel is ``image[..., top:bottom, left:right]``. When ``top`` and
``left`` come from tensors (``.tolist()`` / ``.item()`` under ``capture_scalar_outputs``,
or the hoisted RNG draws of RandomResizedCrop), fake tensors cannot resolve where each
slice starts, so each slice mints a fresh unbacked storage offset. The whole index is one
FX node: the first slice's fresh offset is replaced by the second's before Dynamo binds
the node's unbacked symbols, and 2.13 stops the trace with ``InternalTorchDynamoError:
PendingUnbackedSymbolNotFound`` (pytorch/pytorch#185185), on every backend and with
static or dynamic shapes.
"""

import torch
import torch._dynamo
from torch._dynamo.test_case import TestCase, run_tests
from torch._dynamo.testing import CompileCounterWithBackend


def crop(image: torch.Tensor, box: torch.Tensor) -> torch.Tensor:
    # torchvision's crop_image inside its bounds, with the box read from a tensor.
    top, left, height, width = box.tolist()
    return image[..., top : top + height, left : left + width]


def crop_and_scale(image: torch.Tensor, box: torch.Tensor) -> torch.Tensor:
    return crop(image, box) * 2


def crop_rows(image: torch.Tensor, box: torch.Tensor) -> torch.Tensor:
    top, _, height, _ = box.tolist()
    return image[..., top : top + height, :] * 2


def _image(*shape: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(shape))
    return torch.rand(shape, generator=g)


BOXES = ([3, 4, 20, 30], [0, 0, 40, 50], [39, 49, 1, 1], [10, 0, 5, 50])


@torch._dynamo.config.patch(capture_scalar_outputs=True)
class MultiSliceUnbackedStartTests(TestCase):
    """x[..., a:b, c:d] with unbacked a and c compiles, once, and equals eager."""

    def check(self, fn, backend, dynamic=None):
        counter = CompileCounterWithBackend(backend)
        compiled = torch.compile(fn, backend=counter, fullgraph=True, dynamic=dynamic)
        for shape in ((3, 40, 50), (1, 3, 40, 50)):
            image = _image(*shape)
            for box in BOXES:
                box = torch.tensor(box)
                actual, expected = compiled(image, box), fn(image, box)
                self.assertEqual(actual.shape, expected.shape)
                self.assertEqual(actual.stride(), expected.stride())
                self.assertEqual(actual, expected, atol=0, rtol=0)
        # One graph per input rank, whatever the box.
        self.assertEqual(counter.frame_count, 2)

    def test_crop_view(self):
        self.check(crop, "eager")

    def test_crop_view_dynamic(self):
        self.check(crop, "eager", dynamic=True)

    def test_crop_and_scale_aot_eager(self):
        self.check(crop_and_scale, "aot_eager")

    def test_crop_and_scale_inductor(self):
        self.check(crop_and_scale, "inductor")


@torch._dynamo.config.patch(capture_scalar_outputs=True)
class SingleSliceUnbackedStartRegressionTests(TestCase):
    """One slice at an unbacked start: its fresh symbols are in the output, as on 2.13."""

    def test_crop_rows_inductor(self):
        compiled = torch.compile(crop_rows, backend="inductor", fullgraph=True)
        image = _image(3, 40, 50)
        for box in BOXES:
            box = torch.tensor(box)
            self.assertEqual(compiled(image, box), crop_rows(image, box), atol=0, rtol=0)


if __name__ == "__main__":
    run_tests()
