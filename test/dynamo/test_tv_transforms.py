# Owner(s): ["module: dynamo"]
"""torchvision-v2-style transforms over samples of TVTensors and plain leaves.

A ``Transform.forward(*inputs)`` of the model (``tv_model_tvtensors``)
flattens its inputs with ``torch.utils._pytree``, decides per leaf (types,
"the first pure tensor is the image"), calls ``make_params`` once and
``transform(leaf, params)`` per leaf, dispatches through the kernel registry
(unwrapping TVTensors with ``as_subclass(torch.Tensor)``, reading ``shape`` and
box metadata) and unflattens.  Compiled with ``fullgraph=True`` it must equal
eager in every leaf's value, exact type and metadata, compile one graph per
input-type signature and never recompile for new values.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend
from torch._dynamo.utils import counters

from tv_dispatch_model import adjust_brightness, make_image
from tv_model_tvtensors import (
    BoundingBoxes,
    BoundingBoxFormat,
    CenterCrop,
    Compose,
    Grayscale,
    HorizontalFlip,
    Image,
    make_boxes,
    make_mask,
    make_sample,
    Mask,
    Normalize,
    Pad,
    resize,
    Resize,
    ToDtype,
    TVTensorCheckMixin,
    Video,
)
from tv_model_tvtensors import horizontal_flip


def video_sample(seed=0):
    return {
        "video": Video(make_image(size=(2, 3, 16, 20), seed=seed)),
        "boxes": make_boxes(BoundingBoxFormat.CXCYWH, seed=seed),
        "frame_ids": (0, 1),
    }


def pure_sample(seed=0):
    # No Image/Video: the first pure tensor is the image, the second passes.
    return (
        make_image(torch.uint8, seed=seed),
        make_boxes(BoundingBoxFormat.XYWH, seed=seed),
        make_image(size=(2, 5), seed=seed + 1),
    )


PIPELINE = Compose(
    [
        Resize([12, 15]),
        CenterCrop([10, 12]),
        Pad([1, 2]),
        HorizontalFlip(),
        ToDtype(torch.float32, scale=True),
        Normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]),
    ]
)


class TransformTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    def test_horizontal_flip(self):
        self.check(HorizontalFlip(), make_sample())

    def test_resize(self):
        out = self.check(Resize([8, 10]), make_sample())
        self.assertEqual(out["target"]["boxes"].canvas_size, (8, 10))

    def test_resize_smaller_edge(self):
        self.check(Resize(8), make_sample())

    def test_center_crop(self):
        # make_params reads every leaf's size once (image.shape, boxes.canvas_size).
        out = self.check(CenterCrop([10, 12]), make_sample())
        self.assertEqual(out["target"]["boxes"].canvas_size, (10, 12))

    def test_pad_fill_per_type(self):
        out = self.check(Pad([1, 2, 3, 4], fill={Image: 3.0, Mask: 255.0}), make_sample())
        self.assertEqual(out["target"]["boxes"].canvas_size, (22, 24))

    def test_normalize(self):
        # Boxes and masks are not transformed types of Normalize.
        self.check(Normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]), make_sample(dtype=torch.float32))

    def test_to_dtype(self):
        out = self.check(ToDtype(torch.float32, scale=True), make_sample())
        self.assertIs(out["target"]["masks"].dtype, torch.uint8)

    def test_to_dtype_per_type(self):
        transform = ToDtype({Image: torch.float32, Mask: torch.int64, "others": None}, scale=True)
        out = self.check(transform, make_sample())
        self.assertIs(out["target"]["masks"].dtype, torch.int64)

    def test_grayscale(self):
        self.check(Grayscale(3), make_sample())

    def test_pipeline(self):
        out = self.check(PIPELINE, make_sample())
        self.assertIs(type(out["extra"]), torch.Tensor)

    def test_positional_inputs(self):
        image, boxes, mask = Image(make_image()), make_boxes(), make_mask()
        out = self.check(HorizontalFlip(), image, boxes, mask)
        self.assertEqual([type(o) for o in out], [Image, BoundingBoxes, Mask])

    def test_video_sample(self):
        self.check(Compose([Resize([8, 10]), HorizontalFlip()]), video_sample())

    def test_first_pure_tensor_is_the_image(self):
        out = self.check(Resize([8, 10]), pure_sample())
        self.assertEqual(out[0].shape, (3, 8, 10))
        self.assertEqual(out[2].shape, (2, 5))


class TransformRecompileTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    def test_new_values_do_not_recompile(self):
        torch._dynamo.reset()
        counters.clear()
        cnt = CompileCounter()
        compiled = torch.compile(PIPELINE, backend=cnt, fullgraph=True)
        self.assertSameLeaves(PIPELINE(make_sample(0)), compiled(make_sample(0)))
        with torch._dynamo.config.patch(error_on_recompile=True):
            for seed in (1, 2):
                self.assertSameLeaves(PIPELINE(make_sample(seed)), compiled(make_sample(seed)))
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)

    def test_one_graph_per_type_signature(self):
        torch._dynamo.reset()
        counters.clear()
        cnt = CompileCounter()
        transform = Compose([Resize([8, 10]), HorizontalFlip()])
        compiled = torch.compile(transform, backend=cnt, fullgraph=True)
        samples = [make_sample, video_sample, pure_sample]
        for make in samples:
            self.assertSameLeaves(transform(make(0)), compiled(make(0)))
        self.assertEqual(cnt.frame_count, len(samples))
        with torch._dynamo.config.patch(error_on_recompile=True):
            for make in samples:
                self.assertSameLeaves(transform(make(1)), compiled(make(1)))
        self.assertEqual(cnt.frame_count, len(samples))
        self.assertEqual(len(counters["graph_break"]), 0)

    def test_one_graph_per_functional_input_type(self):
        torch._dynamo.reset()
        cnt = CompileCounter()
        compiled = torch.compile(horizontal_flip, backend=cnt, fullgraph=True)

        def inputs(seed):
            return [
                Image(make_image(seed=seed)),
                Video(make_image(size=(2, 3, 16, 20), seed=seed)),
                make_mask(seed=seed),
                make_boxes(seed=seed),
                make_image(seed=seed),
            ]

        for x in inputs(0):
            self.assertSameLeaves(horizontal_flip(x), compiled(x))
        with torch._dynamo.config.patch(error_on_recompile=True):
            for x in inputs(1):
                self.assertSameLeaves(horizontal_flip(x), compiled(x))
        self.assertEqual(cnt.frame_count, 5)


class TransformInductorTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    # One Inductor compile: a geometry op and a color op on an Image, and box
    # kernels reading format/canvas_size; then new values through it.
    @staticmethod
    def fn(image, boxes):
        return (
            resize(image, [8, 10]),
            adjust_brightness(image, 1.5),
            horizontal_flip(resize(boxes, [8, 10])),
        )

    def test_geometry_color_boxes(self):
        torch._dynamo.reset()
        counters.clear()
        cnt = CompileCounterWithBackend("inductor")
        compiled = torch.compile(self.fn, backend=cnt, fullgraph=True)
        for seed in (0, 1):
            args = (Image(make_image(seed=seed)), make_boxes(BoundingBoxFormat.XYWH, seed=seed))
            with torch._dynamo.config.patch(error_on_recompile=seed > 0):
                out = compiled(*args)
            eager = self.fn(*args)
            self.assertEqual([type(o) for o in out], [Image, Image, BoundingBoxes])
            for e, c in zip(eager, out):
                self.assertEqual(c.dtype, e.dtype)
                self.assertEqual(c.as_subclass(torch.Tensor), e.as_subclass(torch.Tensor), atol=1e-5, rtol=1e-5)
            self.assertEqual(out[2].format, BoundingBoxFormat.XYWH)
            self.assertEqual(out[2].canvas_size, (8, 10))
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(len(counters["graph_break"]), 0)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
