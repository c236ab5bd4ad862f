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
  of the cond then stores into).

They compile fullgraph, in one graph for both outcomes, only with
``torch._dynamo.config.data_dependent_branches_as_cond``; the audit rows turn it
on (and ``hoist_torch_rng_draws`` in one row) where it exists.
"""

from __future__ import annotations

import torch

from tv_dispatch_model import adjust_brightness, horizontal_flip, vertical_flip
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
}
