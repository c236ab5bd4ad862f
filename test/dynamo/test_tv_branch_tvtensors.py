# Owner(s): ["module: dynamo"]
"""Branches whose arms hand back TVTensors, compiled as one torch.cond.

torchvision's ColorJitter runs its drawn op order on every leaf of a sample: the Image
goes through the kernels and is re-wrapped as an Image, the boxes and the mask through the
passthrough kernel, unchanged. ``_RandomApplyTransform.forward`` returns the sample as it
came in one outcome of ``if torch.rand(1) >= p`` and flipped in the other, the boxes
re-wrapped with their format and canvas size. torch.cond returns plain tensors, so a cond
over a branch's arms (patch 61, a branch in a loop) or over the rest of the frame (patch
12) refused arms handing back a subclass instance, and the branch fell back to the usual
path: with ``hoist_torch_rng_draws`` one graph per drawn order or outcome on a sample
(ColorJitter: 13 in 20 calls, past the recompile limit), where a pure image compiles one.

Now each tensor the arms hand back is decided from both arms:

* one both arms leave as it was before the branch is that value, and a cond over arms
  that leave every tensor so is dropped (the boxes and the mask in ColorJitter's loop);
* one both arms give as instances of the same subclass with the same attributes, each a
  Python constant (none for an Image; the format and canvas size of boxes), is the
  cond's output wrapped in that subclass with those attributes; a frame input's
  attributes are read from its ``__dict__``, whose keys are guarded;
* anything else (different types in the two arms, attributes that differ) is refused,
  with why.

Every call is compared with eager from the same seed: outputs with their types and
metadata, and the next draw after them.
"""

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend, EagerAndRecordGraphs

from tv_dispatch_model import _get_kernel, adjust_brightness, horizontal_flip
from tv_model_random import seeded_calls
from tv_model_random_branches import random_apply_flip
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


class BranchTVTensorOutputTests(TVTensorCheckMixin, torch._dynamo.test_case.TestCase):
    def conds_compiled(self, fn, *args):
        """Compile fn afresh with fullgraph=True, check it against eager, and
        return how many conds its graph holds."""
        torch._dynamo.reset()
        backend = EagerAndRecordGraphs()
        out = torch.compile(fn, backend=backend, fullgraph=True)(*args)
        self.assertSameLeaves(fn(*args), out)
        return _conds(backend), out

    def check_seeded_leaves(self, fn, compiled, seeds, make_args, atol=0, rtol=0):
        for eager, eager_next, out, out_next in seeded_calls(fn, compiled, seeds, make_args):
            if atol:
                # types and metadata exactly, values within Inductor's arithmetic
                self.assertEqual([type(t) for t in out], [type(t) for t in eager])
                self.assertEqual([vars(t) for t in out], [vars(t) for t in eager])
                self.assertEqual(out, eager, atol=atol, rtol=rtol, exact_dtype=True)
            else:
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
    def test_random_apply_to_samples_of_varied_sizes(self):
        # From the second size on the boxes' canvas size is symbolic (automatic
        # dynamic): the input's attributes are read as the kernels read them, by
        # the same sources, so both outcomes' boxes have the same symbolic size.
        # One graph for the first size, one for every later size and outcome.
        cnt = CompileCounter()
        compiled = torch.compile(random_apply_flip, backend=cnt, fullgraph=True)
        sizes = [(16, 20), (18, 22), (20, 24), (24, 16)] * 2
        for seed, (h, w) in enumerate(sizes):
            sample = (Image(torch.rand(3, h, w)), make_boxes(canvas_size=(h, w)), make_mask((h, w)))
            self.check_seeded_leaves(random_apply_flip, compiled, [seed], lambda: (sample,))
        self.assertEqual(cnt.frame_count, 2)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_arms_rewrapping_an_image_give_an_image(self):
        image = Image(torch.rand(3, 4, 5))
        for steps in (_steps(1, -1, 1), _steps(-1, -1, 1)):
            self.assertEqual(self.conds_compiled(brighten_or_flip, image, steps)[0], 3)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_arms_leaving_boxes_as_they_were_make_no_cond(self):
        boxes = make_boxes()
        conds, out = self.conds_compiled(pass_boxes_through, boxes, _steps(1, -1))
        self.assertIs(out[0], boxes)
        self.assertEqual(conds, 0)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_boxes_flipped_in_one_arm_keep_their_metadata(self):
        # one arm re-wraps the boxes with their format and canvas size, the other
        # leaves them: the same attributes, so the cond's output is boxes with them
        boxes = make_boxes()
        for steps in (_steps(1, -1), _steps(-1, -1)):
            self.assertEqual(self.conds_compiled(flip_boxes_sometimes, boxes, steps)[0], 2)

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_random_apply_to_a_tvtensor_sample_is_one_graph(self):
        # the rest of forward is the cond: the sample as it came, or flipped
        sample = _sample()
        cnt = CompileCounter()
        compiled = torch.compile(random_apply_flip, backend=cnt, fullgraph=True)
        outcomes = set()
        with torch._dynamo.config.patch(error_on_recompile=True):
            for eager, eager_next, out, out_next in seeded_calls(
                random_apply_flip, compiled, range(8), lambda: (sample,)
            ):
                self.assertSameLeaves(eager, out)
                self.assertEqual(out_next, eager_next, atol=0, rtol=0)
                outcomes.add(torch.equal(out[0], sample[0]))
        self.assertEqual(cnt.frame_count, 1)
        self.assertEqual(outcomes, {True, False})

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_an_image_in_one_arm_and_a_tensor_in_the_other_are_refused(self):
        with self.assertRaisesRegex(
            torch._dynamo.exc.Unsupported, "give image as an instance of Image and as a plain tensor"
        ):
            torch.compile(image_or_tensor, backend="eager", fullgraph=True)(Image(torch.rand(3, 4, 5)), _steps(1))
        torch._dynamo.reset()
        # without fullgraph, a graph break: eager's result
        steps = _steps(1, -1)
        image = Image(torch.rand(3, 4, 5))
        self.assertSameLeaves(image_or_tensor(image, steps), torch.compile(image_or_tensor, backend="eager")(image, steps))

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_an_input_image_with_an_attribute_is_not_rewrapped_without(self):
        # the arm that leaves the input hands back its attributes, the other arm none
        image = Image(torch.rand(3, 4, 5))
        image.note = "kept"
        with self.assertRaisesRegex(
            torch._dynamo.exc.Unsupported, "give image as instances of Image whose attributes differ"
        ):
            torch.compile(brighten_sometimes, backend="eager", fullgraph=True)(image, _steps(1))

    @torch._dynamo.config.patch(data_dependent_branches_as_cond=True)
    def test_the_input_image_attributes_are_guarded(self):
        image = Image(torch.rand(3, 4, 5))
        cnt = CompileCounter()
        compiled = torch.compile(brighten_sometimes, backend=cnt, fullgraph=True)
        self.assertSameLeaves(brighten_sometimes(image, _steps(-1)), compiled(image, _steps(-1)))
        image.note = "kept"
        # the guard on the input's __dict__ keys fails: the new trace refuses the cond
        with self.assertRaisesRegex(torch._dynamo.exc.Unsupported, "whose attributes differ"):
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
