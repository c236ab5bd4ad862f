# Owner(s): ["module: inductor"]
"""Inductor's extern ATen calls on graph inputs that are tensor subclasses without __torch_dispatch__.

A TVTensor (a subclass with ``__torch_function__`` only) reaches Inductor's graph as it is
when the functional only unwraps it with ``as_subclass(torch.Tensor)``: resizing a Video
passes the Video itself to the ``_upsample_bilinear2d_aa`` call Inductor leaves to ATen.
On the first call, AOTAutograd runs the compiled code under its custom-op aliasing check
(``_AnalyzeCustomOpInputOutputMode``), which returned NotImplemented for any tensor type it
does not know, to let the subclass's ``__torch_dispatch__`` run first; such a subclass has
none, so the call failed with "Multiple dispatch failed ... all __torch_dispatch__ handlers
returned NotImplemented".  The same happens with a bare subclass and an extern mm
(pytorch/pytorch#193932).
"""

import torch
import torch._dynamo.test_case

from tv_dispatch_model import InductorVsEagerMixin
from tv_model_tvtensors import Video


class Bare(torch.Tensor):
    pass


def _matmul(t):
    return t @ t.t()


def _resize_video(video):
    # as torchvision's resize_video: the kernel gets the plain tensor
    return torch.nn.functional.interpolate(
        video.as_subclass(torch.Tensor), size=(8, 10), mode="bilinear", antialias=True
    )


class SubclassInputExternCallTests(InductorVsEagerMixin, torch._dynamo.test_case.TestCase):
    def test_extern_mm_on_a_bare_subclass(self):
        x = torch.randn(4, 4).as_subclass(Bare)
        expected = _matmul(x)
        actual = torch.compile(_matmul, backend="inductor", fullgraph=True)(x)
        self.assertEqual(type(actual), type(expected))
        self.assertEqual(actual.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))

    def test_antialias_resize_of_a_video(self):
        video = Video(torch.rand(2, 3, 16, 20))
        compiled = torch.compile(_resize_video, backend="inductor", fullgraph=True)
        self.assertMatchesEager(compiled(video), _resize_video(video), atol=None, rtol=None)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
