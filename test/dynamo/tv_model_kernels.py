"""More functionals and kernels for the torchvision-style model: geometry and color.

``rotate`` (grid-sample based), ``resized_crop`` (crop + antialiased bilinear
resize, uint8 kept uint8 on CPU), ``gaussian_blur`` (separable-kernel conv2d
with reflect padding) and ``adjust_hue`` (RGB -> HSV -> RGB), each registered
for plain tensors in the shared registry of ``tv_dispatch_model``, plus the
pipeline the benchmark measures.  Written from the structure of torchvision's
v2 kernels, not copied from them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as nnF

from tv_dispatch_model import (
    _dispatch,
    _inverse_affine_matrix,
    _register_kernel_internal,
    _resized_output_size,
    horizontal_flip,
    horizontal_flip_image,
    make_image,
    normalize,
    normalize_image,
    to_dtype,
    to_dtype_image,
)

# --------------------------------------------------------------------------- functionals


def rotate(inpt: torch.Tensor, angle: float, center: Sequence[float] | None = None) -> torch.Tensor:
    if torch.jit.is_scripting():
        return rotate_image(inpt, angle, center=center)
    return _dispatch(rotate, inpt, angle=angle, center=center)


def resized_crop(
    inpt: torch.Tensor, top: int, left: int, height: int, width: int, size: list[int], antialias: bool = True
) -> torch.Tensor:
    if torch.jit.is_scripting():
        return resized_crop_image(inpt, top, left, height, width, size, antialias)
    return _dispatch(resized_crop, inpt, top=top, left=left, height=height, width=width, size=size, antialias=antialias)


def gaussian_blur(inpt: torch.Tensor, kernel_size: list[int], sigma: list[float] | None = None) -> torch.Tensor:
    if torch.jit.is_scripting():
        return gaussian_blur_image(inpt, kernel_size, sigma)
    return _dispatch(gaussian_blur, inpt, kernel_size=kernel_size, sigma=sigma)


def adjust_hue(inpt: torch.Tensor, hue_factor: float) -> torch.Tensor:
    if torch.jit.is_scripting():
        return adjust_hue_image(inpt, hue_factor)
    return _dispatch(adjust_hue, inpt, hue_factor=hue_factor)


# --------------------------------------------------------------------------- kernels


def _as_batch(image: torch.Tensor) -> torch.Tensor:
    return image.reshape(-1, *image.shape[-3:])


@_register_kernel_internal(rotate, torch.Tensor)
def rotate_image(image: torch.Tensor, angle: float, center: Sequence[float] | None = None) -> torch.Tensor:
    height, width = image.shape[-2:]
    center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, (width, height))]
    m = _inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    theta = torch.tensor(
        [[m[0], m[1] * height / width, m[2] / (width * 0.5)], [m[3] * width / height, m[4], m[5] / (height * 0.5)]],
        dtype=torch.float32,
        device=image.device,
    )
    batch = _as_batch(image)
    work = batch if batch.is_floating_point() else batch.to(torch.float32)
    grid = nnF.affine_grid(theta.expand(work.shape[0], 2, 3), list(work.shape), align_corners=False)
    out = nnF.grid_sample(work, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    if not batch.is_floating_point():
        out = out.round_().clamp_(0, 255).to(batch.dtype)
    return out.reshape(image.shape)


@_register_kernel_internal(resized_crop, torch.Tensor)
def resized_crop_image(
    image: torch.Tensor, top: int, left: int, height: int, width: int, size: list[int], antialias: bool = True
) -> torch.Tensor:
    image = image[..., top : top + height, left : left + width]
    size = _resized_output_size(height, width, size)
    if size == [height, width]:  # torchvision's resize_image returns the crop
        return image
    batch = _as_batch(image)
    if batch.dtype == torch.uint8 and batch.device.type == "cpu":
        # The CPU kernel resizes uint8 directly (and rounds like PIL).
        out = nnF.interpolate(batch, size=size, mode="bilinear", align_corners=False, antialias=antialias)
    else:
        work = batch if batch.is_floating_point() else batch.to(torch.float32)
        out = nnF.interpolate(work, size=size, mode="bilinear", align_corners=False, antialias=antialias)
        if not batch.is_floating_point():
            out = out.round_().clamp_(0, 255).to(batch.dtype)
    return out.reshape(*image.shape[:-2], *size)


def _gaussian_kernel1d(kernel_size: int, sigma: float) -> torch.Tensor:
    half = (kernel_size - 1) * 0.5
    x = torch.linspace(-half, half, steps=kernel_size)
    pdf = torch.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


@_register_kernel_internal(gaussian_blur, torch.Tensor)
def gaussian_blur_image(image: torch.Tensor, kernel_size: list[int], sigma: list[float] | None = None) -> torch.Tensor:
    if len(kernel_size) != 2 or any(k <= 0 or k % 2 == 0 for k in kernel_size):
        raise ValueError(f"kernel_size should have two positive odd values. Got {kernel_size}")
    if sigma is None:
        sigma = [ksize * 0.15 + 0.35 for ksize in kernel_size]
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0]).to(image.device)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1]).to(image.device)
    batch = _as_batch(image)
    work = batch if batch.is_floating_point() else batch.to(torch.float32)
    channels = work.shape[1]
    kernel = (ky[:, None] * kx[None, :]).expand(channels, 1, kernel_size[1], kernel_size[0])
    pad = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
    out = nnF.conv2d(nnF.pad(work, pad, mode="reflect"), kernel.to(work.dtype), groups=channels)
    if not batch.is_floating_point():
        out = out.round_().clamp_(0, 255).to(batch.dtype)
    return out.reshape(image.shape)


def _rgb_to_hsv(image: torch.Tensor) -> torch.Tensor:
    r, g, b = image.unbind(dim=-3)
    maxc = image.amax(dim=-3)
    minc = image.amin(dim=-3)
    delta = maxc - minc
    s = delta / torch.where(maxc == 0, torch.ones_like(maxc), maxc)
    safe = torch.where(delta == 0, torch.ones_like(delta), delta)
    rc, gc, bc = (maxc - r) / safe, (maxc - g) / safe, (maxc - b) / safe
    h = torch.where(maxc == r, bc - gc, torch.where(maxc == g, 2.0 + rc - bc, 4.0 + gc - rc))
    h = torch.where(delta == 0, torch.zeros_like(h), h)
    h = (h / 6.0).remainder(1.0)
    return torch.stack((h, s, maxc), dim=-3)


def _hsv_to_rgb(image: torch.Tensor) -> torch.Tensor:
    h, s, v = image.unbind(dim=-3)
    i = torch.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.to(torch.int64).remainder(6)
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    table = torch.stack(
        (
            torch.stack((v, q, p, p, t, v), dim=-3),
            torch.stack((t, v, v, q, p, p), dim=-3),
            torch.stack((p, p, t, v, v, q), dim=-3),
        ),
        dim=-4,
    )  # (..., 3, 6, H, W)
    index = i.unsqueeze(-3).unsqueeze(-4).expand(*table.shape[:-3], 1, *i.shape[-2:])
    return table.gather(-3, index).squeeze(-3)


@_register_kernel_internal(adjust_hue, torch.Tensor)
def adjust_hue_image(image: torch.Tensor, hue_factor: float) -> torch.Tensor:
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if image.shape[-3] != 3:
        raise TypeError(f"Input image tensor permitted channel values are 3, but found {image.shape[-3]}")
    work = image if image.is_floating_point() else image.to(torch.float32) / 255.0
    hsv = _rgb_to_hsv(work)
    h, s, v = hsv.unbind(dim=-3)
    h = (h + hue_factor).remainder(1.0)
    out = _hsv_to_rgb(torch.stack((h, s, v), dim=-3))
    if not image.is_floating_point():
        out = out.mul(255.0).round_().to(image.dtype)
    return out


# --------------------------------------------------------------------------- the pipeline

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def pipeline_functionals(image: torch.Tensor) -> torch.Tensor:
    """resized_crop -> horizontal_flip -> to_dtype -> normalize, through dispatch."""
    out = resized_crop(image, 10, 20, 300, 400, [224, 224], antialias=True)
    out = horizontal_flip(out)
    out = to_dtype(out, torch.float32, scale=True)
    return normalize(out, MEAN, STD)


def pipeline_kernels(image: torch.Tensor) -> torch.Tensor:
    """The same pipeline calling the kernels directly (no dispatch)."""
    out = resized_crop_image(image, 10, 20, 300, 400, [224, 224], antialias=True)
    out = horizontal_flip_image(out)
    out = to_dtype_image(out, torch.float32, scale=True)
    return normalize_image(out, MEAN, STD)


def _rotate_30(image: torch.Tensor) -> torch.Tensor:
    return rotate(image, 30.0)


AUDIT_CASES = {
    "F.rotate": (rotate, lambda: (make_image(), 30.0)),
    "F.resized_crop (uint8, antialias)": (
        resized_crop,
        lambda: (make_image(torch.uint8, (3, 40, 50)), 2, 3, 30, 40, [16, 16], True),
    ),
    "F.gaussian_blur": (gaussian_blur, lambda: (make_image(), [5, 5], [1.0, 1.0])),
    "F.adjust_hue": (adjust_hue, lambda: (make_image(), 0.2)),
    "pipeline through functionals": (pipeline_functionals, lambda: (make_image(torch.uint8, (3, 320, 440)),)),
}
