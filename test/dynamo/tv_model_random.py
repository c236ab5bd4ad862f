"""Random transforms for the torchvision-style model, shaped like torchvision's v2 ones.

* ``random_horizontal_flip``: ``_RandomApplyTransform``'s ``if torch.rand(1) >= p``;
* ``rand_augment_choice``: an op picked with ``int(torch.randint(...))``, then a branch on it;
* ``color_jitter_brightness``: a factor drawn with ``torch.empty(1).uniform_(a, b)``;
* ``random_resized_crop``: ``RandomResizedCrop``'s parameter search, up to ten tries of
  ``uniform_(...).item()`` fed to ``math.log``/``math.exp``/``int(round(...))`` and
  ``torch.randint``, then the ``resized_crop`` functional.

They compile fullgraph only with ``torch._dynamo.config.hoist_torch_rng_draws``
(the series' last patch); the audit rows turn it on where it exists.
"""

from __future__ import annotations

import math

import torch

from tv_dispatch_model import adjust_brightness, horizontal_flip, make_image, vertical_flip
from tv_model_kernels import resized_crop


def random_horizontal_flip(image: torch.Tensor, p: float = 0.5) -> torch.Tensor:
    if torch.rand(1) >= p:
        return image
    return horizontal_flip(image)


def rand_augment_choice(image: torch.Tensor) -> torch.Tensor:
    op = int(torch.randint(3, (1,)))
    if op == 0:
        return horizontal_flip(image)
    if op == 1:
        return vertical_flip(image)
    return adjust_brightness(image, 1.2)


def color_jitter_brightness(image: torch.Tensor, brightness: tuple[float, float] = (0.8, 1.2)) -> torch.Tensor:
    factor = float(torch.empty(1).uniform_(brightness[0], brightness[1]))
    return adjust_brightness(image, factor)


def _resized_crop_params(
    height: int, width: int, scale: tuple[float, float], ratio: tuple[float, float]
) -> tuple[int, int, int, int]:
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        aspect_ratio = math.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1]).item())
        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < w <= width and 0 < h <= height:
            i = int(torch.randint(0, height - h + 1, size=(1,)))
            j = int(torch.randint(0, width - w + 1, size=(1,)))
            return i, j, h, w
    # Fallback to a central crop, as torchvision does.
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif in_ratio > ratio[1]:
        h, w = height, int(round(height * ratio[1]))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def random_resized_crop(
    image: torch.Tensor,
    size: tuple[int, int] = (8, 8),
    scale: tuple[float, float] = (0.3, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
) -> torch.Tensor:
    height, width = image.shape[-2:]
    i, j, h, w = _resized_crop_params(height, width, scale, ratio)
    return resized_crop(image, i, j, h, w, list(size), antialias=True)


def seeded_calls(fn, compiled, seeds, make_args):
    """Call fn, then compiled, from ``torch.manual_seed(seed)`` for each seed.

    Yields ``(eager, eager_next, out, out_next)``: both outputs on the same
    arguments (``make_args()``, built once per seed), and the ``torch.rand(1)``
    drawn right after each call, which shows whether the compiled call left the
    RNG stream where eager leaves it.
    """
    for seed in seeds:
        args = make_args()
        torch.manual_seed(seed)
        eager, eager_next = fn(*args), torch.rand(1)
        torch.manual_seed(seed)
        out, out_next = compiled(*args), torch.rand(1)
        yield eager, eager_next, out, out_next


def _seeded_image(seed: int, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor]:
    # The audit builds arguments right before each call: seeding here makes the
    # eager and the compiled call draw the same values.
    image = make_image(dtype)
    torch.manual_seed(seed)
    return (image,)


_HOIST = {"hoist_torch_rng_draws": True}

# name -> (callable, argument factory, Dynamo config to apply where it exists)
AUDIT_CASES = {
    "random: horizontal flip branch (flag on)": (random_horizontal_flip, lambda: _seeded_image(0), _HOIST),
    "random: op choice by randint (flag on)": (rand_augment_choice, lambda: _seeded_image(1), _HOIST),
    "random: brightness factor by uniform_ (flag on)": (color_jitter_brightness, lambda: _seeded_image(2), _HOIST),
    "random: resized crop search (flag on)": (random_resized_crop, lambda: _seeded_image(3), _HOIST),
}
