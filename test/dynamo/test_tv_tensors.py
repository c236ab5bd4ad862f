# Owner(s): ["module: dynamo"]
"""TVTensor-style tensor subclasses under Dynamo: unwrapping, re-wrapping, metadata.

The model (``tv_model_tvtensors``) mirrors torchvision's TVTensors: a
``__torch_function__`` that runs ops with subclass dispatch disabled and hands
back plain tensors, properties that read ``super().shape`` and friends, and
kernels registered through a wrapper that unwraps with
``inpt.as_subclass(torch.Tensor)`` and re-wraps with ``wrap(output, like=inpt)``.

``AsSubclassTests`` covers ``Tensor.as_subclass`` to ``torch.Tensor``, to
``type(x)``, to a classmethod's ``cls`` and to a class reached without a
source, and ``RegisterKernelTests`` user kernels for a new TVTensor subclass;
``SuperTensorPropertyTests`` covers properties that read ``super().shape``
under ``DisableTorchFunctionSubclass``.  ``TVTensorRegressionTests`` holds what
already compiles without the patches: ``DisableTorchFunctionSubclass`` regions,
Python attributes on subclass instances, pytree flatten/unflatten of mixed
leaves.
"""

import torch
import torch._dynamo.test_case
from torch.utils._pytree import tree_flatten, tree_map_only, tree_unflatten

from tv_dispatch_model import _get_kernel, _KERNEL_REGISTRY, horizontal_flip, make_image
from tv_model_tvtensors import (
    BoundingBoxes,
    BoundingBoxFormat,
    get_size,
    HorizontalFlip,
    Image,
    make_boxes,
    make_mask,
    make_sample,
    Mask,
    normalize,
    pad,
    register_kernel,
    resize,
    rgb_to_grayscale,
    set_return_type,
    to_dtype,
    TVTensor,
    TVTensorCheckMixin,
    Video,
    wrap,
)


class DefaultTF(torch.Tensor):
    """A subclass with torch.Tensor's own ``__torch_function__`` (results keep the type)."""


class StrictTF(torch.Tensor):
    """Plain results; ``as_subclass`` must never reach its ``__torch_function__``."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.as_subclass:
            raise AssertionError("as_subclass does not dispatch __torch_function__")
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


class KeyPoints(TVTensor):
    """A user TVTensor with metadata of its own."""

    @classmethod
    def _wrap(cls, tensor, *, canvas_size):
        points = tensor.as_subclass(cls)
        points.canvas_size = canvas_size
        return points


def flip_keypoints(points):
    # A user kernel: registered without the wrapper, it sees the subclass.
    out = points.as_subclass(torch.Tensor).clone()
    out[..., 0] = points.canvas_size[1] - out[..., 0]
    return KeyPoints._wrap(out, canvas_size=points.canvas_size)


def make_keypoints(seed=0):
    g = torch.Generator().manual_seed(seed)
    return KeyPoints._wrap(torch.rand(4, 2, generator=g) * 16, canvas_size=(16, 20))


class Wrapper(TVTensor):
    @classmethod
    def rewrap(cls, tensor):
        return tensor.as_subclass(cls)


def _image():
    return Image(make_image(torch.uint8))


class AsSubclassTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    def test_unwrap_input(self):
        out = self.check(lambda x: x.as_subclass(torch.Tensor), _image())
        self.assertIs(type(out), torch.Tensor)

    def test_unwrap_then_plain_ops(self):
        def fn(x):
            plain = x.as_subclass(torch.Tensor)
            return plain.flip(-1) * 2, plain.shape[-1]

        out = self.check(fn, _image())
        self.assertIs(type(out[0]), torch.Tensor)

    def test_unwrap_default_torch_function_subclass(self):
        # Ops on the unwrapped input run as plain ops: the graph must not
        # hand them to DefaultTF.__torch_function__ (which keeps the type).
        x = make_image().as_subclass(DefaultTF)
        out = self.check(lambda x: (x.as_subclass(torch.Tensor) + 1, x.as_subclass(torch.Tensor)), x)
        self.assertIs(type(out[0]), torch.Tensor)
        self.assertIs(type(out[1]), torch.Tensor)

    def test_wrap_then_unwrap(self):
        out = self.check(lambda t: t.as_subclass(DefaultTF).as_subclass(torch.Tensor), make_image())
        self.assertIs(type(out), torch.Tensor)

    def test_as_subclass_skips_torch_function(self):
        x = make_image().as_subclass(StrictTF)
        out = self.check(lambda x: x.as_subclass(DefaultTF) * 2, x)
        self.assertIs(type(out), DefaultTF)

    def test_unwrap_aliases_input(self):
        def fn(x):
            plain = x.as_subclass(torch.Tensor)
            plain.add_(1)
            return x.as_subclass(torch.Tensor) * 1

        torch._dynamo.reset()
        x, y = Image(make_image()), Image(make_image())
        eager = fn(x)
        compiled = torch.compile(fn, backend="eager", fullgraph=True)(y)
        self.assertSameLeaves(eager, compiled)
        self.assertSameLeaves(x, y)

    def test_rewrap_to_type_of_input(self):
        def fn(x):
            return (x.as_subclass(torch.Tensor) * 2).as_subclass(type(x))

        self.assertIs(type(self.check(fn, _image())), Image)
        self.assertIs(type(self.check(fn, Video(make_image(size=(2, 3, 4, 5))))), Video)

    def test_rewrap_to_type_of_unsourced(self):
        # `y` is built in the graph, so `type(y)` has no source.
        def fn(t):
            y = Image(t)
            return (y.as_subclass(torch.Tensor) + 1).as_subclass(type(y))

        self.assertIs(type(self.check(fn, make_image())), Image)

    def test_classmethod_cls_of_unsourced(self):
        def fn(t):
            y = (t * 1).as_subclass(Wrapper)
            return type(y).rewrap(t * 2)

        self.assertIs(type(self.check(fn, make_image())), Wrapper)

    def test_as_subclass_after_torch_function(self):
        def fn(x):
            y = x + 1
            return x.as_subclass(Video), y

        out = self.check(fn, _image())
        self.assertIs(type(out[0]), Video)

    def test_new_object_does_not_see_input_attributes(self):
        x = make_image().as_subclass(DefaultTF)
        x.tag = "input"

        def fn(x):
            y = x.as_subclass(DefaultTF)
            return y * 1, getattr(y, "tag", "missing")

        out = self.check(fn, x)
        self.assertEqual(out[1], "missing")

    def test_kernel_wrapper_image(self):
        out = self.check(horizontal_flip, _image())
        self.assertIs(type(out), Image)

    def test_kernel_wrapper_video_mask(self):
        self.assertIs(type(self.check(resize, Video(make_image(size=(2, 3, 16, 20))), [8, 10])), Video)
        self.assertIs(type(self.check(pad, make_mask(), [1, 2])), Mask)
        self.assertIs(type(self.check(normalize, Image(make_image()), [0.5] * 3, [0.2] * 3)), Image)
        self.assertIs(type(self.check(rgb_to_grayscale, Image(make_image(torch.uint8)), 3)), Image)

    def _check_boxes(self, fmt):
        self.check(horizontal_flip, make_boxes(fmt))
        out = self.check(resize, make_boxes(fmt), [8, 10])
        self.assertEqual(out.canvas_size, (8, 10))
        out = self.check(pad, make_boxes(fmt), [1, 2, 3, 4])
        self.assertEqual(out.canvas_size, (22, 24))

    def test_boxes_xyxy(self):
        self._check_boxes(BoundingBoxFormat.XYXY)

    def test_boxes_xywh(self):
        self._check_boxes(BoundingBoxFormat.XYWH)

    def test_boxes_cxcywh(self):
        self._check_boxes(BoundingBoxFormat.CXCYWH)

    def test_wrap_like(self):
        def fn(boxes, image):
            plain = boxes.as_subclass(torch.Tensor) + 1
            return (
                wrap(plain, like=boxes),
                wrap(plain, like=boxes, canvas_size=(3, 4)),
                wrap(image.as_subclass(torch.Tensor) * 2, like=image),
            )

        self.check(fn, make_boxes(), Image(make_image()))

    def test_construct_inside(self):
        def fn(x):
            boxes = BoundingBoxes(x[0, :2, :4], format="XYWH", canvas_size=(16, 20))
            return horizontal_flip(Image(x)), horizontal_flip(boxes)

        self.check(fn, make_image())


class RegisterKernelTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    def setUp(self):
        super().setUp()
        register_kernel(horizontal_flip, KeyPoints)(flip_keypoints)
        self.addCleanup(_KERNEL_REGISTRY[horizontal_flip].pop, KeyPoints)

    def test_user_kernel(self):
        out = self.check(horizontal_flip, make_keypoints())
        self.assertEqual(out.canvas_size, (16, 20))

    def test_user_kernel_in_transform(self):
        sample = {"image": Image(make_image()), "points": make_keypoints()}
        out = self.check(HorizontalFlip(), sample)
        self.assertIs(type(out["points"]), KeyPoints)

    def test_kernel_registered_after_compile(self):
        # A compiled functional sees kernels registered after it compiled.
        class Later(KeyPoints):
            pass

        def flip_later(points):
            return flip_keypoints(points) + 100

        torch._dynamo.reset()
        compiled = torch.compile(horizontal_flip, backend="eager", fullgraph=True)
        points = Later._wrap(make_image(size=(4, 2)), canvas_size=(16, 20))
        out = compiled(points)  # the MRO walk finds the KeyPoints kernel
        self.assertSameLeaves(horizontal_flip(points), out)
        self.assertIs(type(out), KeyPoints)

        register_kernel(horizontal_flip, Later)(flip_later)
        self.addCleanup(_KERNEL_REGISTRY[horizontal_flip].pop, Later)
        out = compiled(points)
        self.assertSameLeaves(horizontal_flip(points), out)
        self.assertIs(type(out), torch.Tensor)


class ScaledShape(torch.Tensor):
    """``shape`` reads go through ``__torch_function__``, which scales them."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **(kwargs or {}))
        if getattr(func, "__self__", None) is torch.Tensor.shape:
            return torch.Size([s * 10 for s in out])
        return out

    @property
    def shape(self):
        # Subclass dispatch stays on: the C getter calls __torch_function__.
        return super().shape


class ReversedShape(TVTensor):
    @property
    def shape(self):
        with torch._C.DisableTorchFunctionSubclass():
            return super().shape[::-1]


class SuperTensorPropertyTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    def test_shape_ndim(self):
        def fn(x):
            height, width = x.shape[-2:]
            return x.sum() + height * width + x.ndim

        self.check(fn, Image(make_image()))

    def test_dtype_device(self):
        def fn(x):
            return torch.zeros(x.shape, dtype=x.dtype, device=x.device), x.dtype, x.device

        out = self.check(fn, Image(make_image(torch.uint8)))
        self.assertEqual(out[1], torch.uint8)

    def _check_get_size(self, inpt):
        out = self.check(lambda x: (get_size(x), x * 1), inpt)
        self.assertEqual(out[0], list(inpt.shape[-2:]))

    def test_get_size_image(self):
        self._check_get_size(Image(make_image()))

    def test_get_size_video(self):
        self._check_get_size(Video(make_image(size=(2, 3, 7, 9))))

    def test_get_size_mask(self):
        self._check_get_size(make_mask((5, 6)))

    def test_shape_of_unsourced(self):
        def fn(t):
            image = Image(t * 2)
            return t.reshape(-1, image.shape[-1])

        self.check(fn, make_image())

    def test_super_shape_with_dispatch_on(self):
        x = make_image(size=(3, 4)).as_subclass(ScaledShape)
        out = self.check(lambda x: (x.shape[0] + 1, x * 1), x)
        self.assertEqual(out[0], 31)

    def test_tensor_getter_skips_property(self):
        # torch.Tensor.shape.__get__ is the C getter, whatever the subclass's
        # `shape` property says.
        def fn(x):
            with torch._C.DisableTorchFunctionSubclass():
                true_shape = torch.Tensor.shape.__get__(x)
            return x.shape, true_shape, x * 1

        out = self.check(fn, make_image(size=(3, 4, 5)).as_subclass(ReversedShape))
        self.assertEqual(out[:2], (torch.Size([5, 4, 3]), torch.Size([3, 4, 5])))

    def test_super_property_of_plain_object(self):
        # The same descriptor rule outside tensors: `super().prop` runs the
        # parent's getter.
        class Parent:
            def __init__(self):
                self.value = 2

            @property
            def prop(self):
                return self.value

        class Child(Parent):
            @property
            def prop(self):
                return super().prop + 1

        child = Child()
        out = self.check(lambda x: x * child.prop, torch.ones(3))
        self.assertEqual(out, torch.full((3,), 3.0))


class TVTensorRegressionTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    """What already compiles on 2.13: sourced subclasses, DisableTorchFunctionSubclass
    regions, Python attributes on subclass instances, pytree of mixed leaves."""

    def test_wrap_plain_input(self):
        self.assertIs(type(self.check(lambda t: t.as_subclass(DefaultTF) * 2, make_image())), DefaultTF)

    def test_classmethod_on_global_class(self):
        self.assertIs(type(self.check(lambda t: Image._wrap_output(t * 2), make_image())), Image)

    def test_torch_function_drops_and_keeps_type(self):
        def fn(x):
            return x + 1, x.clone(), x.to(torch.float64)

        out = self.check(fn, Image(make_image()))
        self.assertEqual([type(o) for o in out], [torch.Tensor, Image, Image])

    def test_keep_type_for_boxes_and_masks(self):
        out = self.check(to_dtype, make_boxes(), torch.float64)
        self.assertIs(type(out), BoundingBoxes)
        self.assertIs(type(self.check(to_dtype, make_mask(), torch.int64)), Mask)

    def test_kernel_lookup_stops_at_tvtensor(self):
        # A TVTensor type without a kernel of its own must not fall through to the
        # plain-tensor kernel: Mask has no normalize kernel, torch.Tensor has one.
        def fn(x):
            try:
                _get_kernel(normalize, Mask)
            except TypeError as e:
                return x + 1, e.args[0]
            return x - 1, ""

        out, message = self.check(fn, make_image())
        self.assertEqual(out, make_image() + 1)
        self.assertIn("but got", message)
        self.assertIs(_get_kernel(normalize, Image), _KERNEL_REGISTRY[normalize][Image])

    def test_disable_torch_function_subclass_regions(self):
        def fn(x):
            with torch._C.DisableTorchFunctionSubclass():
                a = x + 1  # plain op on the subclass instance
                with torch._C.DisableTorchFunctionSubclass():
                    b = x * 2
                enabled_inside = torch._C._is_torch_function_enabled()
            c = x - 1  # through Image.__torch_function__ again
            return a, b, c, enabled_inside, torch._C._is_torch_function_enabled()

        out = self.check(fn, Image(make_image()))
        self.assertEqual(out[3:], (False, True))

    def test_set_return_type_inside(self):
        def fn(x):
            with set_return_type("TVTensor"):
                kept = x + 1
            return kept, x + 1

        out = self.check(fn, Image(make_image()))
        self.assertEqual([type(o) for o in out], [Image, torch.Tensor])

    def test_box_attributes_of_input(self):
        out = self.check(lambda b: (b * 1, b.format, b.canvas_size), make_boxes())
        self.assertEqual(out[2], (16, 20))

    def test_box_attributes_set_on_input(self):
        def fn(b):
            b.canvas_size = (1, 2)
            return b * 1

        eager_boxes, compiled_boxes = make_boxes(), make_boxes()
        fn(eager_boxes)
        torch._dynamo.reset()
        torch.compile(fn, backend="eager", fullgraph=True)(compiled_boxes)
        self.assertEqual(compiled_boxes.canvas_size, eager_boxes.canvas_size)

    def test_box_attributes_set_at_wrap_time(self):
        def fn(t):
            b = BoundingBoxes._wrap(t * 2, format="XYWH", canvas_size=(5, 6))
            b.canvas_size = (7, b.canvas_size[1])
            return b, b.canvas_size[0] + 1, getattr(b, "missing", None)

        out = self.check(fn, make_image(size=(2, 4)))
        self.assertEqual(out[0].canvas_size, (7, 6))

    def test_box_metadata_through_kept_ops(self):
        self.check(lambda b: (b.clone(), b.to(torch.float64), b.detach()), make_boxes())

    def test_pytree_mixed_leaves(self):
        def fn(x):
            flat, spec = tree_flatten({"a": x, "b": [1, "s", None], "c": (x * 2, 3.5)})
            flat = [f * 2 if isinstance(f, torch.Tensor) else f for f in flat]
            return tree_unflatten(flat, spec)

        self.check(fn, make_image())

    def test_pytree_of_tvtensors(self):
        def fn(sample):
            flat, spec = tree_flatten(sample)
            return tree_unflatten(flat, spec), tree_map_only(torch.Tensor, lambda t: t * 1, sample)

        self.check(fn, make_sample())

    def test_boxes_canvas_size_read(self):
        out = self.check(lambda boxes: (get_size(boxes), boxes * 1), make_boxes())
        self.assertEqual(out[0], [16, 20])


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
