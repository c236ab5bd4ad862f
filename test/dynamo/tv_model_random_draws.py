"""Random draws of torchvision's v2 transforms beyond one-element draws with float bounds.

Each function draws as the torchvision transform it names does:

* ``color_jitter``: ``ColorJitter``'s op order, ``torch.randperm(4)``, iterated and
  branched on element by element (``for fn_id in fn_idx: if fn_id == 0 ...``);
* ``ColorJitter``: the same as a transform over a sample, as torchvision runs it: each
  leaf goes through the loop, the Image through the brightness kernel (re-wrapped as an
  Image), the boxes and the mask through the passthrough kernel, unchanged;
* ``elastic_displacement``: ``ElasticTransform``'s displacement field, two full-size
  ``torch.rand`` draws, blurred and scaled;
* ``random_erasing``: ``RandomErasing``'s search, ``uniform_`` draws bounded by the 0-d
  tensors of a log-ratio tensor, ``torch.exp`` of the draw read with ``.item()``, and the
  erased value, a ``normal_`` draw of the erased patch's shape;
* ``random_resized_crop_log_ratio``: ``RandomResizedCrop``'s search, drawn the same way;
* ``random_iou_crop``: ``RandomIoUCrop``'s search, whose attempts are tested against the
  boxes of the sample (``if not is_within_crop_area.any(): continue``, then the IoU of the
  boxes kept), a decision on drawn values and on an input tensor;
* ``random_shortest_size``: ``RandomShortestSize``'s size, an item of a tuple of ints picked
  by ``int(torch.randint(len(min_size), ()))``, then scaled by the input's size;
* ``perspective_coefficients_list``: ``_get_perspective_coeffs``, the lstsq solution of a
  system built from constant corners, returned as Python floats with ``.tolist()``;
* ``rand_augment_magnitude``: ``RandAugment``'s magnitude, ``float(magnitudes[i])`` of a
  constant ``torch.linspace``, its sign drawn, into an argument check;
* ``random_choice``: ``RandomChoice``'s ``int(torch.multinomial(torch.tensor(p), 1))``, a
  draw from a tensor built from constants, used as a list index;
* ``augmix_mix``: ``AugMix``'s ``torch._sample_dirichlet`` weights, then a chain depth drawn
  with ``torch.randint`` that bounds a loop;
* ``gaussian_noise``: ``GaussianNoise``'s ``torch.randn_like(image)``.

The log-ratio tensors are module globals, as torchvision keeps them on the transform
(``self._log_ratio``): the frame reads them.
"""

from __future__ import annotations

import math

import torch

from tv_dispatch_model import adjust_brightness, horizontal_flip, vertical_flip
from tv_model_errors import _get_perspective_coeffs, ENDPOINTS, erase, STARTPOINTS
from tv_model_kernels import adjust_hue, gaussian_blur, resized_crop
from tv_model_random import _HOIST, _seeded_image
from tv_model_tvtensors import (
    BoundingBoxes,
    Image,
    make_boxes,
    make_mask,
    Mask,
    resize_image,
    Transform,
)


def color_jitter(
    image: torch.Tensor, brightness: tuple[float, float] = (0.6, 1.4), hue: tuple[float, float] = (-0.1, 0.1)
) -> torch.Tensor:
    fn_idx = torch.randperm(4)
    b = float(torch.empty(1).uniform_(brightness[0], brightness[1]).item())
    h = float(torch.empty(1).uniform_(hue[0], hue[1]).item())
    output = image
    for fn_id in fn_idx:
        if fn_id == 0:
            output = adjust_brightness(output, b)
        elif fn_id == 3:
            output = adjust_hue(output, h)
    return output


class ColorJitter(Transform):
    """torchvision's ColorJitter with brightness only: the op order and the factor are
    drawn in make_params, the order's elements branched on per leaf in transform."""

    def __init__(self, brightness: tuple[float, float] = (0.6, 1.4)) -> None:
        super().__init__()
        self.brightness = brightness

    def make_params(self, flat_inputs: list) -> dict:
        fn_idx = torch.randperm(4)
        b = float(torch.empty(1).uniform_(self.brightness[0], self.brightness[1]))
        return dict(fn_idx=fn_idx, brightness_factor=b)

    def transform(self, inpt, params: dict):
        output = inpt
        brightness_factor = params["brightness_factor"]
        for fn_id in params["fn_idx"]:
            if fn_id == 0 and brightness_factor is not None:
                output = self._call_kernel(adjust_brightness, output, brightness_factor=brightness_factor)
        return output


def _seeded_tvtensors(seed: int) -> tuple[Image, BoundingBoxes, Mask]:
    (image,) = _seeded_image(seed)
    return Image(image), make_boxes(), make_mask()


def elastic_displacement(image: torch.Tensor, alpha: float = 5.0, sigma: float = 2.0) -> torch.Tensor:
    height, width = image.shape[-2:]
    k = int(8 * sigma + 1)
    k += 1 - k % 2
    dx = gaussian_blur(torch.rand(1, 1, height, width) * 2 - 1, [k, k], [sigma, sigma]) * alpha / width
    dy = gaussian_blur(torch.rand(1, 1, height, width) * 2 - 1, [k, k], [sigma, sigma]) * alpha / height
    return torch.concat([dx, dy], 1).permute([0, 2, 3, 1])


ERASE_LOG_RATIO = torch.log(torch.tensor((0.3, 3.3)))


def random_erasing(
    image: torch.Tensor, scale: tuple[float, float] = (0.02, 0.33), log_ratio: torch.Tensor = ERASE_LOG_RATIO
) -> torch.Tensor:
    img_c, img_h, img_w = image.shape[-3:]
    area = img_h * img_w
    for _ in range(10):
        erase_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
        h = int(round(math.sqrt(erase_area * aspect_ratio)))
        w = int(round(math.sqrt(erase_area / aspect_ratio)))
        if not (h < img_h and w < img_w):
            continue
        v = torch.empty([img_c, h, w], dtype=torch.float32).normal_()
        i = torch.randint(0, img_h - h + 1, size=(1,)).item()
        j = torch.randint(0, img_w - w + 1, size=(1,)).item()
        return erase(image, i, j, h, w, v)
    return image


CROP_LOG_RATIO = torch.log(torch.tensor((3 / 4, 4 / 3)))


def random_resized_crop_log_ratio(
    image: torch.Tensor,
    size: tuple[int, int] = (8, 8),
    scale: tuple[float, float] = (0.3, 1.0),
    log_ratio: torch.Tensor = CROP_LOG_RATIO,
) -> torch.Tensor:
    height, width = image.shape[-2:]
    area = height * width
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < w <= width and 0 < h <= height:
            i = torch.randint(0, height - h + 1, size=(1,)).item()
            j = torch.randint(0, width - w + 1, size=(1,)).item()
            return resized_crop(image, i, j, h, w, list(size), antialias=True)
    return resized_crop(image, 0, 0, height, width, list(size), antialias=True)


def box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor) -> torch.Tensor:
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


IOU_OPTIONS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)


def random_iou_crop(
    image: torch.Tensor,
    boxes: torch.Tensor,
    min_scale: float = 0.3,
    max_scale: float = 1.0,
    min_aspect_ratio: float = 0.5,
    max_aspect_ratio: float = 2.0,
    options: tuple[float, ...] = IOU_OPTIONS,
    trials: int = 40,
) -> tuple[torch.Tensor, torch.Tensor]:
    # boxes: XYXY, one row per box
    orig_h, orig_w = image.shape[-2:]
    while True:
        idx = int(torch.randint(low=0, high=len(options), size=(1,)))
        min_jaccard_overlap = options[idx]
        if min_jaccard_overlap >= 1.0:
            return image, boxes
        for _ in range(trials):
            r = min_scale + (max_scale - min_scale) * torch.rand(2)
            new_w = int(orig_w * r[0])
            new_h = int(orig_h * r[1])
            aspect_ratio = new_w / new_h
            if not (min_aspect_ratio <= aspect_ratio <= max_aspect_ratio):
                continue
            r = torch.rand(2)
            left = int((orig_w - new_w) * r[0])
            top = int((orig_h - new_h) * r[1])
            right = left + new_w
            bottom = top + new_h
            if left == right or top == bottom:
                continue
            cx = 0.5 * (boxes[..., 0] + boxes[..., 2])
            cy = 0.5 * (boxes[..., 1] + boxes[..., 3])
            is_within_crop_area = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
            if not is_within_crop_area.any():
                continue
            ious = box_iou(
                boxes[is_within_crop_area], torch.tensor([[left, top, right, bottom]], dtype=boxes.dtype)
            )
            if ious.max() < min_jaccard_overlap:
                continue
            cropped = boxes - torch.tensor([left, top, left, top], dtype=boxes.dtype)
            cropped[~is_within_crop_area] = 0
            return image[..., top:bottom, left:right], cropped


SHORTEST_SIDES = (6, 8, 10)


def random_shortest_size(
    image: torch.Tensor, min_size: tuple[int, ...] = SHORTEST_SIDES, max_size: int | None = None
) -> torch.Tensor:
    orig_height, orig_width = image.shape[-2:]
    side = min_size[int(torch.randint(len(min_size), ()))]
    r = side / min(orig_height, orig_width)
    if max_size is not None:
        r = min(r, max_size / max(orig_height, orig_width))
    return resize_image(image, [int(orig_height * r), int(orig_width * r)])


def perspective_coefficients_list(startpoints, endpoints) -> list[float]:
    return _get_perspective_coeffs(startpoints, endpoints).to(torch.float32).tolist()


def rand_augment_magnitude(image: torch.Tensor, num_bins: int = 31, magnitude_bin: int = 9) -> torch.Tensor:
    magnitudes = torch.linspace(0.0, 0.9, num_bins)
    magnitude = float(magnitudes[magnitude_bin])
    if torch.rand(()) <= 0.5:
        magnitude *= -1
    return adjust_brightness(image, 1.0 + magnitude)


def random_choice(image: torch.Tensor, p: tuple[float, ...] = (0.5, 0.5)) -> torch.Tensor:
    idx = int(torch.multinomial(torch.tensor(p), 1))
    return (horizontal_flip, vertical_flip)[idx](image)


def augmix_mix(image: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    m = torch._sample_dirichlet(torch.tensor([alpha, alpha]).expand(1, -1))
    aug = image
    for _ in range(int(torch.randint(low=1, high=4, size=(1,)).item())):
        aug = horizontal_flip(aug) * 0.5
    return m[:, 0] * image + m[:, 1] * aug


def gaussian_noise(image: torch.Tensor, mean: float = 0.0, sigma: float = 0.1) -> torch.Tensor:
    return (image + mean + torch.randn_like(image) * sigma).clamp_(0, 1)


IOU_BOXES = ((2.0, 1.0, 9.0, 7.0), (10.0, 3.0, 18.0, 12.0), (4.0, 9.0, 8.0, 15.0))


def _seeded_sample(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    (image,) = _seeded_image(seed)
    return image, torch.tensor(IOU_BOXES)


# name -> (callable, argument factory, Dynamo config to apply where it exists)
AUDIT_CASES = {
    "random: op order by randperm (flag on)": (color_jitter, lambda: _seeded_image(8), _HOIST),
    "random: op order by randperm on TVTensors (flag on)": (ColorJitter(), lambda: _seeded_tvtensors(18), _HOIST),
    "random: elastic displacement by rand (flag on)": (elastic_displacement, lambda: _seeded_image(9), _HOIST),
    "random: erasing with tensor-bounded draws (flag on)": (random_erasing, lambda: _seeded_image(10), _HOIST),
    "random: resized crop with tensor-bounded draws (flag on)": (
        random_resized_crop_log_ratio, lambda: _seeded_image(11), _HOIST,
    ),
    "random: IoU crop search against the boxes (flag on)": (random_iou_crop, lambda: _seeded_sample(16), _HOIST),
    "random: shortest side picked from a tuple (flag on)": (random_shortest_size, lambda: _seeded_image(17), _HOIST),
    "perspective coefficients as floats": (perspective_coefficients_list, lambda: (STARTPOINTS, ENDPOINTS)),
    "random: magnitude from a constant linspace (flag on)": (rand_augment_magnitude, lambda: _seeded_image(12), _HOIST),
    "random: choice by multinomial (flag on)": (random_choice, lambda: _seeded_image(13), _HOIST),
    "random: dirichlet weights, then a drawn depth (flag on)": (augmix_mix, lambda: _seeded_image(14), _HOIST),
    "random: noise by randn_like (flag on)": (gaussian_noise, lambda: _seeded_image(15), _HOIST),
}
