"""torch_overlay: a Dynamo/Inductor patch series applied over an installed torch.

In a script, activate the overlay before anything imports torch::

    import torch_overlay
    torch_overlay.activate()
    import torch  # the patched torch

From a shell, ``python -m torch_overlay run -- python script.py``.
"""

from .errors import OverlayError
from .overlay import activate, is_active

__all__ = ["OverlayError", "activate", "is_active"]
