# Owner(s): ["module: dynamo"]
"""Each outcome of a frame's cond writes into its own copies of the frame's lists.

torchvision's auto-augment transforms take the image out of their flattened inputs and
put the result back at the end: ``flat_inputs[idx] = image_or_video``, into the list the
frame made before drawing. With ``data_dependent_branches_as_cond``, a branch on a draw
before that store (TrivialAugmentWide's ``if signed and torch.rand(()) <= 0.5: magnitude
*= -1``) is a cond over the rest of the frame, and cond refused the store: "Mutating a
variable from outside the scope of this HOP". Every signed op compiled a graph per sign.

A cond over the rest of a frame is the frame's end: a list the frame made, which nothing
but its locals and stack reaches (directly or through tuples and other such lists), can
be copied into each outcome, as the frame's private cells are (patch 41). A list its
caller, a closure, a dict or an object (one made in the frame, or one that existed before
it) also holds is shared, and the store is refused as before.

(With patch 68 the sign's branch, whose arm only negates a number, is a torch.sym_ite and
no cond: the TrivialAugmentWide tests here then check the same one graph through it, and
``test_list_returned_one_graph`` keeps a cond whose outcomes write into a frame's list.)
"""

import functools

import torch
import torch._dynamo.test_case
from torch._dynamo.testing import CompileCounter

from test_tv_random_draws import SeededCallsMixin
from tv_model_random import _seeded_image
from tv_model_random_branches import trivial_augment_one_op


FLAGS = {"hoist_torch_rng_draws": True, "data_dependent_branches_as_cond": True}
# only the flags this build of Dynamo has: without them a branch on a tensor
# graph breaks, and the refusal tests below still hold
EXISTING_FLAGS = {n: v for n, v in FLAGS.items() if hasattr(torch._dynamo.config, n)}


def store_into_a_list_returned(x):
    # the list itself is the frame's result: each outcome returns its copy
    out = [x, x.sum()]
    if x.mean() > 0.5:
        out[0] = x.flip(-1)
    else:
        out[1] = x.sum() + 1
    return out


def _store_first(lst, x):
    if x.mean() > 0.5:
        lst[0] = x.flip(-1)
        return x
    return x + 1


def store_into_the_callers_list(x):
    # the caller reads the list after the branch's frame returns
    lst = [x]
    y = _store_first(lst, x)
    return y, lst[0]


def store_into_a_list_a_closure_reads(x):
    lst = [x]
    holder = {"lst": lst}

    def first():
        return holder["lst"][0]

    if x.mean() > 0.5:
        lst[0] = x.flip(-1)
        return first()
    return first() + 1


class _Holder:
    def __init__(self):
        self.items = []


_holder = _Holder()


def store_into_a_list_an_object_holds(x):
    # the list outlives the frame in an object that existed before it
    lst = [x]
    _holder.items.append(lst)
    if x.mean() > 0.5:
        lst[0] = x.flip(-1)
        return x + 0
    return x + 1


def _inputs():
    bright = torch.rand(3, 4, 5) * 0.5 + 0.5
    return bright, bright - 0.5


class BranchPrivateListsTests(SeededCallsMixin, torch._dynamo.test_case.TestCase):
    def check_one_graph(self, fn, make_args, seeds=20):
        """Each seeded call equal to eager (check_seeded), one graph; the
        compiled calls' outputs."""
        cnt = CompileCounter()
        compiled = torch.compile(fn, backend=cnt, fullgraph=True)
        outputs = []

        def recorded(*args):
            outputs.append(compiled(*args))
            return outputs[-1]

        with torch._dynamo.config.patch(**FLAGS):
            self.check_seeded(fn, recorded, range(seeds), make_args)
        self.assertEqual(cnt.frame_count, 1)
        return outputs

    def test_trivial_augment_signed_brightness_one_graph(self):
        (image,) = _seeded_image(0)
        outputs = self.check_one_graph(trivial_augment_one_op, lambda: (image,))
        # both signs were drawn: some calls brighten, some darken
        means = {bool(out.mean() > image.mean()) for out in outputs}
        self.assertEqual(means, {True, False})

    def test_trivial_augment_signed_shear_x_one_graph(self):
        fn = functools.partial(trivial_augment_one_op, op="ShearX")
        (image,) = _seeded_image(1)
        self.check_one_graph(fn, lambda: (image,), seeds=12)

    def test_trivial_augment_on_a_sample_one_graph(self):
        # the image among other inputs: the label goes back as it came
        (image,) = _seeded_image(2)
        outputs = self.check_one_graph(
            trivial_augment_one_op, lambda: ((image, {"label": 3}),), seeds=12
        )
        self.assertEqual({out[1]["label"] for out in outputs}, {3})

    def test_list_returned_one_graph(self):
        cnt = CompileCounter()
        compiled = torch.compile(store_into_a_list_returned, backend=cnt, fullgraph=True)
        with torch._dynamo.config.patch(**FLAGS):
            for x in _inputs():
                self.assertEqual(compiled(x), store_into_a_list_returned(x), atol=0, rtol=0)
        self.assertEqual(cnt.frame_count, 1)


class BranchSharedListsTests(torch._dynamo.test_case.TestCase):
    # A list something besides the frame holds is no outcome's own: the store
    # into it is refused as before, and without fullgraph the result is eager's.
    # These pass on the base too.
    def check_refused(self, fn):
        with torch._dynamo.config.patch(**EXISTING_FLAGS):
            with self.assertRaisesRegex(
                torch._dynamo.exc.Unsupported, "Data-dependent branching"
            ) as cm:
                torch.compile(fn, backend="eager", fullgraph=True)(_inputs()[0])
            if EXISTING_FLAGS:
                # the cond over the rest of the frame was tried, and refused
                self.assertIn(
                    "Mutating a variable from outside the scope", str(cm.exception)
                )
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend="eager")
            for x in _inputs():
                self.assertEqual(compiled(x), fn(x), atol=0, rtol=0)

    def test_store_into_the_callers_list(self):
        self.check_refused(store_into_the_callers_list)

    def test_store_into_a_list_a_closure_reads(self):
        self.check_refused(store_into_a_list_a_closure_reads)

    def test_store_into_a_list_an_object_holds(self):
        self.check_refused(store_into_a_list_an_object_holds)
        # what the object holds after each call is eager's
        compiled = torch.compile(store_into_a_list_an_object_holds, backend="eager")
        for x in _inputs():
            _holder.items.clear()
            store_into_a_list_an_object_holds(x)
            eager = _holder.items[0][0]
            _holder.items.clear()
            compiled(x)
            self.assertEqual(_holder.items[0][0], eager, atol=0, rtol=0)


if __name__ == "__main__":
    from torch._dynamo.test_case import run_tests

    run_tests()
