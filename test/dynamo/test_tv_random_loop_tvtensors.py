# Owner(s): ["module: dynamo"]
"""A branch in a loop whose arms hand back TVTensors, compiled as one torch.cond.

torchvision's ColorJitter runs its drawn op order on every leaf of a sample: the Image
goes through the kernels and is re-wrapped as an Image, the boxes and the mask through the
passthrough kernel, unchanged. A cond over a branch's arms (a branch in a loop) returns
plain tensors, so an arm's output that is a tensor subclass made the branch fall back to
the usual path: with ``hoist_torch_rng_draws`` one graph per drawn order on a sample (13
in 20 calls, past the recompile limit), where a pure image compiles one.

Now, where the arms meet:

* an output both arms leave as it was is the value it was, and a cond whose outputs all
  are is dropped (the boxes and the mask);
* an output that both arms set to an instance of the same subclass holding no attribute
  of its own (``as_subclass``, as an Image is re-wrapped; or a frame input whose
  ``__dict__`` is empty, guarded so) is the cond's output wrapped in that subclass;
* anything else (a subclass instance with attributes, as boxes are re-wrapped with their
  format and canvas size, or different types in the two arms) is refused, with why.

Every call is compared with eager from the same seed: outputs with their types and
metadata, and the next draw after them.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend, EagerAndRecordGraphs

from tv_dispatch_model import _get_kernel, adjust_brightness, horizontal_flip
from tv_model_random import seeded_calls
from tv_model_random_draws import ColorJitter
from tv_model_tvtensors import BoundingBoxes, Image, make_boxes, make_mask, TVTensorCheckMixin


def brighten_or_flip(image, steps):
    # both arms re-wrap the Image
    for step in steps:
        if step.sum() > 0:
            image = adjust_brightness(image, 0.5)
        else:
            image = horizontal_flip(image)
    return image


def brighten_sometimes(image, steps):
    # one arm re-wraps the Image, the other leaves it as it was
    for step in steps:
        if step.sum() > 0:
            image = adjust_brightness(image, 0.5)
    return image


def pass_boxes_through(boxes, steps):
    # both arms leave the boxes as they were (the passthrough kernel)
    passthrough = _get_kernel(adjust_brightness, BoundingBoxes, allow_passthrough=True)
    for step in steps:
        if step.sum() > 0:
            boxes = passthrough(boxes, 0.5)
    return boxes, steps[0] + 1


def flip_boxes_sometimes(boxes, steps):
    # one arm re-wraps the boxes with their format and canvas size, the other leaves them
    for step in steps:
        if step.sum() > 0:
            boxes = horizontal_flip(boxes)
    return boxes


def image_or_tensor(image, steps):
    for step in steps:
        if step.sum() > 0:
            image = adjust_brightness(image, 0.5)
        else:
            image = image.as_subclass(torch.Tensor) * 2
    return image


def bump_in_place(x, y, steps):
    # the arms leave both locals as they were, but one adds to x in place
    for step in steps:
        if step.sum() > 0:
            x.add_(1)
        else:
            y = y
    return x, y


def _sample():
    return Image(torch.rand(3, 16, 20)), make_boxes(), make_mask()


def _steps(*signs):
    return [torch.full((2,), float(s)) for s in signs]


def _conds(backend):
    return sum(
        len(g.graph.find_nodes(op="call_function", target=torch.ops.higher_order.cond))
        for g in backend.graphs[0].modules()
        if isinstance(g, torch.fx.GraphModule)
    )


class LoopBranchTVTensorOutputTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    def check_seeded_leaves(self, fn, compiled, seeds, make_args, atol=0, rtol=0):
        for eager, eager_next, out, out_next in seeded_calls(fn, compiled, seeds, make_args):
            if atol:
                self.assertEqual(out, eager, atol=atol, rtol=rtol)
                out, eager = out[1:], eager[1:]
            self.assertSameLeaves(eager, out)
            self.assertEqual(out_next, eager_next, atol=0, rtol=0)

    @torch._dynamo.config.patch(
        hoist_torch_rng_draws=True, data_dependent_branches_as_cond=True, recompile_limit=24
    )
    def test_color_jitter_on_a_sample_is_one_graph(self):
        sample = _sample()
        cnt = CompileCounter()
        transform = ColorJitter()
        compiled = torch.compile(transform, backend=cnt, fullgraph=True)
        self.check_seeded_leaves(transform, compiled, range(12), lambda: sample)
        self.assertEqual(cnt.frame_count, 1)

    @torch._dynamo.config.patch(
        hoist_torch_rng_draws=True, data_dependent_branches_as_cond=True, recompile_limit=24
    )
    def test_color_jitter_on_a_sample_on_inductor(self):
        sample = _sample()
        cnt = CompileCounterWithBackend("inductor")
        transform = ColorJitter()
        compiled = torch.compile(transform, backend=cnt, fullgraph=True)
        self.check_seeded_leaves(transform, compiled, range(4), lambda: sample, atol=1e-5, rtol=1e-5)
        self.assertEqual(cnt.frame_count, 1)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_arms_rewrapping_an_image_give_an_image(self):
        image = Image(torch.rand(3, 4, 5))
        for steps in (_steps(1, -1, 1), _steps(-1, -1, 1)):
            backend = EagerAndRecordGraphs()
            out = torch.compile(brighten_or_flip, backend=backend, fullgraph=True)(image, steps)
            self.assertSameLeaves(brighten_or_flip(image, steps), out)
            self.assertEqual(_conds(backend), 3)
            torch._dynamo.reset()

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_arms_leaving_boxes_as_they_were_make_no_cond(self):
        boxes = make_boxes()
        backend = EagerAndRecordGraphs()
        out = torch.compile(pass_boxes_through, backend=backend, fullgraph=True)(boxes, _steps(1, -1))
        self.assertSameLeaves(pass_boxes_through(boxes, _steps(1, -1)), out)
        self.assertIs(out[0], boxes)
        self.assertEqual(_conds(backend), 0)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_boxes_rewrapped_with_their_metadata_are_refused(self):
        with self.assertRaisesRegex(
            torch._dynamo.exc.Unsupported, "sets boxes to an instance of BoundingBoxes with attributes"
        ):
            torch.compile(flip_boxes_sometimes, backend="eager", fullgraph=True)(make_boxes(), _steps(1))

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_an_image_in_one_arm_and_a_tensor_in_the_other_are_refused(self):
        with self.assertRaisesRegex(
            torch._dynamo.exc.Unsupported, "set image to an instance of Image and to a plain value"
        ):
            torch.compile(image_or_tensor, backend="eager", fullgraph=True)(Image(torch.rand(3, 4, 5)), _steps(1))
        torch._dynamo.reset()
        # without fullgraph, a graph break: eager's result
        steps = _steps(1, -1)
        image = Image(torch.rand(3, 4, 5))
        self.assertSameLeaves(image_or_tensor(image, steps), torch.compile(image_or_tensor, backend="eager")(image, steps))

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_an_input_image_with_attributes_is_not_rewrapped_bare(self):
        # the arm that leaves the input hands back its attributes, the other arm none
        image = Image(torch.rand(3, 4, 5))
        image.note = "kept"
        with self.assertRaisesRegex(
            torch._dynamo.exc.Unsupported, "leaves image, an instance of Image with attributes"
        ):
            torch.compile(brighten_sometimes, backend="eager", fullgraph=True)(image, _steps(1))

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_the_input_image_is_guarded_to_have_no_attributes(self):
        image = Image(torch.rand(3, 4, 5))
        cnt = CompileCounter()
        compiled = torch.compile(brighten_sometimes, backend=cnt, fullgraph=True)
        self.assertSameLeaves(brighten_sometimes(image, _steps(-1)), compiled(image, _steps(-1)))
        image.note = "kept"
        # the guard on the input's __dict__ fails: the new trace refuses the cond
        with self.assertRaisesRegex(torch._dynamo.exc.Unsupported, "with attributes"):
            compiled(image, _steps(-1))
        self.assertEqual(cnt.frame_count, 1)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_an_arm_changing_an_input_in_place_keeps_its_cond(self):
        # under no_grad torch.cond lets an arm mutate its input: that cond stays
        steps = _steps(1, -1, 1)
        with torch.no_grad():
            x, y = torch.zeros(3), torch.ones(3)
            expected = bump_in_place(x.clone(), y, steps)
            backend = EagerAndRecordGraphs()
            out = torch.compile(bump_in_place, backend=backend, fullgraph=True)(x, y, steps)
        self.assertEqual(out, expected)
        self.assertEqual(x, expected[0])
        self.assertEqual(_conds(backend), 3)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
