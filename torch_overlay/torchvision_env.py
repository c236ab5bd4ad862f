"""Make the pinned torchvision wheel import next to the CPU torch.

torchvision's PyPI wheel for the pinned release is a CUDA build.  Its C++
extension (``torchvision/_C``) does not load against the CPU torch, so the
operators it would define (``torchvision::nms``, ``torchvision::roi_align``, ...)
do not exist.  Importing torchvision still works except for one module:
``torchvision/_meta_registrations.py`` registers fake kernels for
``torchvision::nms`` and ``torchvision::qnms`` at import time, and
``register_fake`` refuses an operator without a schema.

:func:`prepare` defines just those two schemas, when the extension did not
define them, before torchvision is imported.  Nothing in site-packages changes;
the detection operators stay unavailable (calling them raises), and every v2
transform, which is Python over ATen, works.

Call it after ``import torch`` (the patched one, under the overlay) and before
``import torchvision``.  It is idempotent.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# The schemas torchvision/_meta_registrations.py registers fake kernels for at
# import time, as torchvision's csrc/ops/nms.cpp declares them.
_SCHEMAS = {
    "nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}

_defined: list[str] = []


def _has_op(torch, name: str) -> bool:
    try:
        torch._C._dispatch_find_schema_or_throw(f"torchvision::{name}", "")
    except RuntimeError:
        return False
    return True


def _load_extension(torch) -> bool:
    """Load torchvision's own C++ ops if this torch can; True when they loaded."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return False
    for lib in sorted(Path(list(spec.submodule_search_locations)[0]).glob("_C*.so")):
        try:
            torch.ops.load_library(str(lib))
        except (OSError, RuntimeError):
            return False
        return True
    return False


def prepare() -> list[str]:
    """Define the torchvision operator schemas that its import needs; return those defined.

    Returns an empty list when torchvision's extension provides them (a build
    that matches the installed torch) or when they are already defined.
    """
    if "torchvision" in sys.modules:
        return list(_defined)
    import torch

    if all(_has_op(torch, n) for n in _SCHEMAS) or _load_extension(torch):
        return list(_defined)
    for name, schema in _SCHEMAS.items():
        if not _has_op(torch, name):
            torch.library.define(f"torchvision::{name}", schema)
            _defined.append(name)
    return list(_defined)


def import_torchvision():
    """``prepare()`` then ``import torchvision``; the module, or raise ImportError as the import does."""
    prepare()
    import torchvision

    return torchvision
