"""Random parameters drawn as Python floats, shaped like torchvision's v2 transforms.

Each draws ``torch.empty(1).uniform_(a, b).item()`` and feeds the float to a functional:

* ``random_gaussian_blur``: ``GaussianBlur``'s sigma, into ``exp(-0.5 * (x / sigma) ** 2)``;
* ``random_rotation``: ``RandomRotation``'s angle, through ``math.radians``/``cos``/``sin``
  into the affine matrix of ``rotate``;
* ``color_jitter_hue``: ``ColorJitter``'s hue factor, checked against [-0.5, 0.5] by
  ``adjust_hue`` before it is used;
* ``random_crop``: ``RandomCrop``'s offsets, ``torch.randint(...).item()`` used as slice
  starts (symbolic too: the draw's range, ``[low, high - 1]``, bounds the slice);
* ``factor_then_branch``: a drawn factor compared with 0 where the draw's range does not
  decide the comparison, so the branch depends on the value drawn.

With ``torch._dynamo.config.hoist_torch_rng_draws`` the floats are traced as unbacked
symbols (one graph for every draw); the audit rows turn it on where it exists.
"""

from __future__ import annotations

import torch

from tv_model_kernels import adjust_hue, gaussian_blur, rotate
from tv_model_random import _HOIST, _seeded_image


def random_gaussian_blur(image: torch.Tensor, sigma: tuple[float, float] = (0.1, 2.0)) -> torch.Tensor:
    s = torch.empty(1).uniform_(sigma[0], sigma[1]).item()
    return gaussian_blur(image, [5, 5], [s, s])


def random_rotation(image: torch.Tensor, degrees: tuple[float, float] = (-30.0, 30.0)) -> torch.Tensor:
    angle = torch.empty(1).uniform_(degrees[0], degrees[1]).item()
    return rotate(image, angle)


def color_jitter_hue(image: torch.Tensor, hue: tuple[float, float] = (-0.1, 0.1)) -> torch.Tensor:
    hue_factor = float(torch.empty(1).uniform_(hue[0], hue[1]))
    return adjust_hue(image, hue_factor)


def factor_then_branch(x: torch.Tensor) -> torch.Tensor:
    # The range of the draw, [-0.5, 1.5], does not decide the comparison.
    factor = float(torch.empty(1).uniform_(-0.5, 1.5))
    if factor < 0:
        return x.neg()
    return x * factor


def random_crop(image: torch.Tensor, size: tuple[int, int] = (8, 8)) -> torch.Tensor:
    height, width = image.shape[-2:]
    i = torch.randint(0, height - size[0] + 1, size=(1,)).item()
    j = torch.randint(0, width - size[1] + 1, size=(1,)).item()
    return image[..., i : i + size[0], j : j + size[1]]


# name -> (callable, argument factory, Dynamo config to apply where it exists)
AUDIT_CASES = {
    "random: gaussian blur sigma by uniform_ (flag on)": (random_gaussian_blur, lambda: _seeded_image(4), _HOIST),
    "random: rotation angle by uniform_ (flag on)": (random_rotation, lambda: _seeded_image(5), _HOIST),
    "random: hue factor by uniform_ (flag on)": (color_jitter_hue, lambda: _seeded_image(6), _HOIST),
    "random: crop offsets by randint (flag on)": (random_crop, lambda: _seeded_image(7), _HOIST),
}
