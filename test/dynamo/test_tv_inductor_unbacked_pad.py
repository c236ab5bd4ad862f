# Owner(s): ["module: inductor"]
"""Inductor pads by amounts computed from unbacked symbols.

torchvision's RandomZoomOut puts the image at a drawn place on a larger canvas:
``canvas_w = int(w * r)`` and ``left = int((canvas_w - w) * r2[0])``. With
``capture_scalar_outputs`` (or the hoisted RNG draws) ``left`` is ``TruncToInt(zuf2)``,
an expression of an unbacked float that only the pad kernel's index reads: the output
size is ``canvas_w`` whatever ``left`` is. ``constant_pad_nd`` hoists such a padding into
a precomputed size (``ps0``), and the scheduler, which orders a kernel after the nodes
that define the unbacked symbols it uses, saw ``ps0`` and not the symbols behind it. So
the ``.item()`` defining ``zuf2`` was dropped, and the generated code raised
``NameError: name 'zuf2' is not defined`` on its first call.
"""

import re

import torch
import torch._dynamo
import torch.nn.functional as nnF
from torch._dynamo.test_case import TestCase, run_tests
from torch._dynamo.testing import CompileCounterWithBackend

from tv_dispatch_model import InductorVsEagerMixin


def zoom_out(image: torch.Tensor, r: torch.Tensor, r2: torch.Tensor) -> torch.Tensor:
    # RandomZoomOut.make_params and F.pad, with the draws passed in.
    h, w = image.shape[-2:]
    canvas_w, canvas_h = int(w * r), int(h * r)
    left = int((canvas_w - w) * r2[0])
    top = int((canvas_h - h) * r2[1])
    right = canvas_w - (left + w)
    bottom = canvas_h - (top + h)
    return nnF.pad(image, [left, right, top, bottom], value=123)


def shift_by_twice(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    # An unbacked int, scaled: the low padding is 2*u0, the output size static.
    n = t.item()
    return nnF.pad(x, [2 * n, 10 - 2 * n], value=7)


def shift_by(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    n = t.item()
    return nnF.pad(x, [n, 5 - n], value=7)


def _image(*shape: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(shape))
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)


@torch._dynamo.config.patch(capture_scalar_outputs=True)
class UnbackedPaddingTests(InductorVsEagerMixin, TestCase):
    """A pad whose low side is an expression of unbacked symbols compiles and equals eager."""

    def test_zoom_out_padding(self):
        image = _image(3, 16, 20)
        code = self.code(zoom_out, image, torch.tensor([1.7]), torch.tensor([0.5, 0.7]))
        # The four symbols are defined (each by its .item()) before the wrapper uses them.
        defined = re.findall(r"^\s*(zuf\d+) = buf\d+\.item\(\)", code, re.MULTILINE)
        self.assertEqual(sorted(defined), ["zuf0", "zuf1", "zuf2", "zuf3"])
        for symbol in defined:
            self.assertLess(code.index(f"{symbol} = "), code.index(f"({symbol})"))

    def test_zoom_out_one_graph_for_every_draw(self):
        counter = CompileCounterWithBackend("inductor")
        compiled = torch.compile(zoom_out, backend=counter, fullgraph=True)
        image = _image(3, 16, 20)
        for r, r2 in ((1.7, (0.5, 0.7)), (1.0, (0.3, 0.9)), (3.9, (0.0, 1.0)), (2.5, (0.99, 0.01))):
            args = (image, torch.tensor([r]), torch.tensor(r2))
            self.assertMatchesEager(compiled(*args), zoom_out(*args))
        self.assertEqual(counter.frame_count, 1)

    def test_scaled_unbacked_int(self):
        x = torch.arange(12.0).reshape(3, 4)
        for n in (0, 2, 5):
            self.check(shift_by_twice, x, torch.tensor(n))


@torch._dynamo.config.patch(capture_scalar_outputs=True)
class UnbackedPaddingRegressionTests(InductorVsEagerMixin, TestCase):
    """A padding that is an unbacked symbol itself was never hoisted, and stays right."""

    def test_unbacked_int(self):
        x = torch.arange(12.0).reshape(3, 4)
        for n in (0, 2, 5):
            self.check(shift_by, x, torch.tensor(n))


if __name__ == "__main__":
    run_tests()
