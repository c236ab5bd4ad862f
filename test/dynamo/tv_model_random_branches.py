"""Data-dependent branches for the torchvision-style model, compiled as torch.cond.

* ``random_horizontal_flip``: ``_RandomApplyTransform``'s ``if torch.rand(1) >= p``
  (from tv_model_random), the rest of the frame as a cond over both outcomes;
* ``flip_if_bright``: a branch on the data, not on a random draw;
* ``random_flip_then_brighten``: the random branch in an inlined call, its
  caller going on after it;
* ``random_apply_flip``: ``_RandomApplyTransform.forward`` on a sample: its leaves
  are listed before the branch, and after it the parameters are made and a list
  comprehension applies the kernel to each leaf with them (up to Python 3.11 the
  comprehension closes over ``params``, a cell of the frame, which each outcome
  of the cond then stores into);
* ``trivial_augment_one_op``: ``TrivialAugmentWide.forward`` over a space of one op:
  the image is taken out of the flattened inputs, the op and a magnitude bin drawn,
  the magnitude negated on a draw if the op is signed (``if signed and torch.rand(())
  <= 0.5``), the op applied (Brightness: ``adjust_brightness``; ShearX: ``affine``
  with the shear ``math.degrees(math.atan(magnitude))``), and the image put back into
  the list of flattened inputs that the frame made before the branch
  (``flat_inputs[idx] = image``);
* ``rand_augment_one_op``: ``RandAugment.forward`` over a space of one op: the same
  steps in a loop over ``num_ops`` ops, the magnitude a fixed bin, its sign drawn
  (``if signed and torch.rand(()) <= 0.5: magnitude *= -1``) in each iteration.

They compile fullgraph, in one graph for both outcomes, only with
``torch._dynamo.config.data_dependent_branches_as_cond``; the audit rows turn it
on (and ``hoist_torch_rng_draws`` in the rows that draw) where it exists.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from tv_dispatch_model import adjust_brightness, affine, horizontal_flip, vertical_flip
from tv_model_random import _HOIST, _seeded_image, rand_augment_choice, random_horizontal_flip


def flip_if_bright(image: torch.Tensor) -> torch.Tensor:
    if image.mean() > 0.5:
        return vertical_flip(image)
    return image


def check_positive(image: torch.Tensor) -> torch.Tensor:
    # An assert on a tensor is not a branch: it stays torch._assert_async.
    # (Here rather than in a test file, which pytest's assert rewriting changes.)
    assert image.sum() > 0, "positive"
    return image + 1


def random_flip_then_brighten(image: torch.Tensor) -> torch.Tensor:
    return adjust_brightness(random_horizontal_flip(image), 1.1)


def _flip_params(leaves: list[torch.Tensor]) -> dict[str, bool]:
    return {"horizontal": True}


def random_apply_flip(sample: tuple[torch.Tensor, ...], p: float = 0.5) -> tuple[torch.Tensor, ...]:
    leaves = list(sample)
    if torch.rand(1) >= p:
        return sample
    params = _flip_params(leaves)
    return tuple([horizontal_flip(leaf) if params["horizontal"] else leaf for leaf in leaves])


def _flatten_and_extract_image(inputs: tuple[Any, ...]) -> tuple[tuple[list[Any], Any, int], torch.Tensor]:
    flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
    idx = next(i for i, leaf in enumerate(flat_inputs) if isinstance(leaf, torch.Tensor))
    return (flat_inputs, spec, idx), flat_inputs[idx]


def _unflatten_and_insert_image(flat_inputs_with_spec: tuple[list[Any], Any, int], image: torch.Tensor) -> Any:
    flat_inputs, spec, idx = flat_inputs_with_spec
    flat_inputs[idx] = image
    return tree_unflatten(flat_inputs, spec)


def _apply_op(image: torch.Tensor, transform_id: str, magnitude: float) -> torch.Tensor:
    # _AutoAugmentBase._apply_image_or_video_transform, for two of its ops
    if transform_id == "ShearX":
        shear = [math.degrees(math.atan(magnitude)), 0.0]
        return affine(image, angle=0.0, translate=[0, 0], scale=1.0, shear=shear)
    return adjust_brightness(image, 1.0 + magnitude)


def trivial_augment_one_op(*inputs: Any, op: str = "Brightness", signed: bool = True, num_bins: int = 31) -> Any:
    flat_inputs_with_spec, image = _flatten_and_extract_image(inputs)
    space = (op,)
    transform_id = space[int(torch.randint(len(space), ()))]
    magnitudes = torch.linspace(0.0, 0.99, num_bins)
    magnitude = float(magnitudes[int(torch.randint(num_bins, ()))])
    if signed and torch.rand(()) <= 0.5:
        magnitude *= -1
    image = _apply_op(image, transform_id, magnitude)
    return _unflatten_and_insert_image(flat_inputs_with_spec, image)


def rand_augment_one_op(
    *inputs: Any, op: str = "Brightness", num_ops: int = 2, magnitude_bin: int = 9, num_bins: int = 31
) -> Any:
    flat_inputs_with_spec, image = _flatten_and_extract_image(inputs)
    space = (op,)
    for _ in range(num_ops):
        transform_id = space[int(torch.randint(len(space), ()))]
        magnitude = float(torch.linspace(0.0, 0.99, num_bins)[magnitude_bin])
        if torch.rand(()) <= 0.5:
            magnitude *= -1
        image = _apply_op(image, transform_id, magnitude)
    return _unflatten_and_insert_image(flat_inputs_with_spec, image)


def _seeded_sample(seed: int) -> tuple[tuple[torch.Tensor, torch.Tensor]]:
    # Plain tensors (test_tv_branch_tvtensors runs it on TVTensors).
    (image,) = _seeded_image(seed)
    return ((image, image.mean(0, keepdim=True)),)


_COND = {"data_dependent_branches_as_cond": True}
_COND_HOIST = {**_COND, **_HOIST}

# name -> (callable, argument factory, Dynamo config to apply where it exists)
AUDIT_CASES = {
    "branch as cond: random horizontal flip": (random_horizontal_flip, lambda: _seeded_image(0), _COND),
    "branch as cond: random horizontal flip (hoisted draw)": (
        random_horizontal_flip,
        lambda: _seeded_image(0),
        _COND_HOIST,
    ),
    "branch as cond: flip if bright": (flip_if_bright, lambda: _seeded_image(4), _COND),
    "branch as cond: op choice by randint (hoisted draw)": (rand_augment_choice, lambda: _seeded_image(1), _COND_HOIST),
    "branch as cond: random flip in an inlined call": (random_flip_then_brighten, lambda: _seeded_image(5), _COND),
    "branch as cond: random apply to a sample's leaves": (random_apply_flip, lambda: _seeded_sample(0), _COND),
    "branch as cond: TrivialAugmentWide's signed magnitude, Brightness (hoisted draws)": (
        trivial_augment_one_op,
        lambda: _seeded_image(2),
        _COND_HOIST,
    ),
    "branch as cond: TrivialAugmentWide's signed magnitude, ShearX (hoisted draws)": (
        functools.partial(trivial_augment_one_op, op="ShearX"),
        lambda: _seeded_image(3),
        _COND_HOIST,
    ),
    "branch as sym_ite: RandAugment's signed magnitude in its loop, Brightness (hoisted draws)": (
        rand_augment_one_op,
        lambda: _seeded_image(6),
        _COND_HOIST,
    ),
    "branch as sym_ite: RandAugment's signed magnitude in its loop, ShearX (hoisted draws)": (
        functools.partial(rand_augment_one_op, op="ShearX"),
        lambda: _seeded_image(7),
        _COND_HOIST,
    ),
}
