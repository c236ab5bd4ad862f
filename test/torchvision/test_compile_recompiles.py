"""How many graphs torchvision's random transforms compile over a stream of calls.

A random transform compiled with ``fullgraph=True`` and the random flags of the torch
series (``hoist_torch_rng_draws``, ``data_dependent_branches_as_cond``) is called from
``torch.manual_seed(0..19)``, like a stream of samples, on a pure image and on the mixed
sample of ``test_compile_transforms``. Each call must equal eager (outputs and the RNG
stream after it), and the graphs it compiles must stay within the bound below: one for
every draw where the draws stay symbolic, one per branch outcome for the ``p``-gated
ones, one per path of a search on draws (a guard replays the draws and checks the
answers the trace took, not the values). Beyond that bound Dynamo would recompile on
the next values and, past its recompile limit, fail under ``fullgraph``; these rows
are the ones a stream can use.
The transforms that still compile a graph per combination of discrete draws (RandAugment,
AugMix, RandomPhotometricDistort and others, listed in the README) exceed Dynamo's recompile
limit and are not here.
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounter

from test_compile_functionals import assert_same
from test_compile_transforms import TRANSFORMS, _call, _flags, _inputs

CALLS = 20

# transform -> the most graphs it may compile over CALLS seeded calls (per input kind
# where the kinds differ)
BOUNDS = {
    # every draw symbolic
    "RandomCrop": 1,
    "RandomAffine": 1,
    "ElasticTransform": 1,
    "GaussianBlur": 1,
    "GaussianNoise": 1,
    "RandomChannelPermutation": 1,
    "MixUp": 1,
    # the box's corners, clamped draws, stay symbolic; its area feeds the labels' weights
    "CutMix": 1,
    # the drawn size feeds resize as a symbolic size (patch 43 keeps query_size's set symbolic)
    "RandomResize": 1,
    # the side picked from min_size by a drawn index is one symbolic value (patch 53)
    "RandomShortestSize": 1,
    # the angle stays symbolic; `angle % 360 == 0` is answered by replaying it
    "RandomRotation": 1,
    # one graph for every search that finds a crop, whichever attempt it takes
    # (the prologue draws the attempts again until one fits, patch 48), one for
    # a search that finds none; the crop's orientation, which resize's
    # `short, long = (w, h) if w <= h else (h, w)` compares, is a sym_ite (patch
    # 45). RandomResizedCrop: a second graph where the crop is the output size
    # (8x8 here) and resize returns early
    "RandomResizedCrop": 2,
    "RandomErasing": 1,
    # its search tests each drawn crop at four places, against the sample's
    # boxes too: the attempts are drawn again past every test (patch 54), a
    # graph per number of searches made (an option none of whose 40 attempts
    # passes is followed by another option's search); it has the sample only
    "RandomIoUCrop": 4,
    # `if torch.rand(1) >= self.p` in _RandomApplyTransform.forward: one graph for both
    # outcomes (a torch.cond over the rest of forward); on the sample the cond's outputs
    # are wrapped in the TVTensor classes again, the boxes with their metadata, and the
    # sample's constants are no outputs of it (patches 62-63)
    "RandomHorizontalFlip": 1,
    "RandomVerticalFlip": 1,
    "RandomInvert": 1,
    "RandomPosterize": 1,
    "RandomSolarize": 1,
    "RandomAdjustSharpness": 1,
    "RandomAutocontrast": 1,
    "RandomEqualize": 1,
    # one graph per outcome of a branch on a draw, where the rest of forward is no cond:
    # it draws again (RandomZoomOut), loops (RandomApply), or returns an output whose
    # strides the other outcome's cannot merge with (RandomGrayscale's expand)
    "RandomGrayscale": 2,
    # the coefficients' tolist() is symbolic too, patch 42; the draws after the p-gate
    # keep it from being a cond
    "RandomPerspective": 2,
    "RandomZoomOut": 2,
    "RandomApply": 2,
    "RandomChoice": 2,
    "RandomOrder": 2,
    # `for fn_id in torch.randperm(4): if fn_id == 0 ... elif ...`: each test a cond over
    # its arms up to the loop head (patch 61), its factors cond operands (patch 60). On
    # the sample the arms re-wrap the Image, which the cond's output is wrapped in again,
    # and leave the boxes and the mask as they were, no cond at all (patch 63)
    "ColorJitter": 1,
}

CASES = [
    (name, kind)
    for name, bound in BOUNDS.items()
    for kind in _inputs(name, TRANSFORMS[name][2])
    if isinstance(bound, int) or kind in bound
]


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_graphs_over_a_stream(name, kind):
    factory, random, dtype = TRANSFORMS[name]
    assert random
    t = factory()
    args = _inputs(name, dtype)[kind]()
    counter = CompileCounter()
    torch._dynamo.reset()
    compiled = torch.compile(lambda *xs: t(*xs), backend=counter, fullgraph=True)
    with _flags(True), torch._dynamo.config.patch(recompile_limit=CALLS):
        for seed in range(CALLS):
            eager, eager_error, eager_next = _call(t, args, seed)
            out, error, out_next = _call(compiled, args, seed)
            assert eager_error is None and error is None, (eager_error, error)  # both must return
            assert_same(out, eager)
            assert torch.equal(out_next, eager_next)  # the RNG stream after the call
    bound = BOUNDS[name] if isinstance(BOUNDS[name], int) else BOUNDS[name][kind]
    assert 1 <= counter.frame_count <= bound, counter.frame_count


def _augmentation_space(name, signed_only=False):
    from torchvision.transforms import v2

    space = getattr(v2, name)._AUGMENTATION_SPACE
    return [op for op, (_, signed) in space.items() if signed or not signed_only]


def _one_op_graphs(name, op):
    """Graphs compiled by torchvision's auto-augment transform `name` over a space of
    one op, in 12 seeded calls, each equal to eager with eager's RNG stream after it."""
    from torchvision.transforms import v2

    cls = getattr(v2, name)
    space = {op: cls._AUGMENTATION_SPACE[op]}
    t = type(f"{name}{op}", (cls,), {"_AUGMENTATION_SPACE": space})()
    args = _inputs(name, TRANSFORMS[name][2])["tensor"]()
    counter = CompileCounter()
    torch._dynamo.reset()
    compiled = torch.compile(lambda *xs: t(*xs), backend=counter, fullgraph=True)
    with _flags(True), torch._dynamo.config.patch(error_on_recompile=True):
        for seed in range(12):
            eager, eager_error, eager_next = _call(t, args, seed)
            out, error, out_next = _call(compiled, args, seed)
            assert eager_error is None and error is None, (eager_error, error)
            assert_same(out, eager)
            assert torch.equal(out_next, eager_next)
    return counter.frame_count


@pytest.mark.parametrize("op", _augmentation_space("TrivialAugmentWide"))
def test_trivial_augment_wide_one_op_one_graph(op):
    # TrivialAugmentWide over a space of one op: its magnitude bin and sign drawn, the
    # sign's branch a torch.sym_ite of the magnitude (patch 68; patch 65 made it a cond
    # over the rest of forward, which writes the image back into the list of flattened
    # inputs the frame made), shears by math.degrees(math.atan(magnitude)) (patch 64).
    # TrivialAugmentWide itself still compiles a graph per op drawn: the op, picked by a
    # drawn index into a tuple of names, is specialized.
    assert _one_op_graphs("TrivialAugmentWide", op) == 1


@pytest.mark.parametrize("op", _augmentation_space("RandAugment", signed_only=True))
def test_rand_augment_one_signed_op_one_graph(op):
    # RandAugment over a space of one signed op: in each of its two iterations, the
    # sign's branch (`if signed and torch.rand(()) <= 0.5: magnitude *= -1`) is a
    # torch.sym_ite of the magnitude (patch 68), not a graph per sign.
    assert _one_op_graphs("RandAugment", op) == 1


def test_every_bounded_transform_is_a_random_one_we_test():
    assert set(BOUNDS) <= {name for name, (_, random, _) in TRANSFORMS.items() if random}
