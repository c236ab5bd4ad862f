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
  decide the comparison, so the branch depends on the value drawn;
* ``random_perspective``: ``RandomPerspective``'s corners, ``int(torch.randint(...))``
  bounded by the image's size, solved for the eight coefficients by least squares into a
  matrix built by item assignment, read back with ``.tolist()`` as floats, and put into
  ``torch.tensor`` for the projective warp (symbolic too, patch 42).

With ``torch._dynamo.config.hoist_torch_rng_draws`` the floats are traced as unbacked
symbols (one graph for every draw); the audit rows turn it on where it exists.
"""

from __future__ import annotations

import torch

from tv_model_errors import _get_perspective_coeffs
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


def _perspective_warp(image: torch.Tensor, coeffs: list[float]) -> torch.Tensor:
    """Sample image at ((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1))
    for each output pixel center (x, y)."""
    height, width = image.shape[-2:]
    theta = torch.tensor([coeffs[0:3], coeffs[3:6], [coeffs[6], coeffs[7], 1.0]])
    ys, xs = torch.meshgrid(
        torch.arange(height, dtype=torch.float32) + 0.5,
        torch.arange(width, dtype=torch.float32) + 0.5,
        indexing="ij",
    )
    points = torch.stack([xs, ys, torch.ones_like(xs)], dim=-1) @ theta.T
    grid = points[..., :2] / points[..., 2:] / torch.tensor([0.5 * width, 0.5 * height]) - 1.0
    return torch.nn.functional.grid_sample(image.unsqueeze(0), grid.unsqueeze(0), align_corners=False).squeeze(0)


def random_perspective(image: torch.Tensor, distortion_scale: float = 0.5) -> torch.Tensor:
    height, width = image.shape[-2:]
    bound_h = int(distortion_scale * (height // 2)) + 1
    bound_w = int(distortion_scale * (width // 2)) + 1

    def corner(x_low: int, y_low: int) -> list[int]:
        x = int(torch.randint(x_low, x_low + bound_w, size=(1,)))
        y = int(torch.randint(y_low, y_low + bound_h, size=(1,)))
        return [x, y]

    right, bottom = width - bound_w, height - bound_h
    startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
    endpoints = [corner(0, 0), corner(right, 0), corner(right, bottom), corner(0, bottom)]
    coeffs = _get_perspective_coeffs(startpoints, endpoints).to(torch.float32).tolist()
    return _perspective_warp(image, coeffs)


# name -> (callable, argument factory, Dynamo config to apply where it exists)
AUDIT_CASES = {
    "random: gaussian blur sigma by uniform_ (flag on)": (random_gaussian_blur, lambda: _seeded_image(4), _HOIST),
    "random: rotation angle by uniform_ (flag on)": (random_rotation, lambda: _seeded_image(5), _HOIST),
    "random: hue factor by uniform_ (flag on)": (color_jitter_hue, lambda: _seeded_image(6), _HOIST),
    "random: crop offsets by randint (flag on)": (random_crop, lambda: _seeded_image(7), _HOIST),
    "random: perspective corners by randint, coefficients by tolist (flag on)": (
        random_perspective,
        lambda: _seeded_image(8),
        _HOIST,
    ),
}
