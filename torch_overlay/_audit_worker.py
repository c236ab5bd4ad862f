"""Child process of the audit: ``python -m torch_overlay._audit_worker OUT.json PART...``.

Runs under whichever torch the environment imports (base, the torch series, or
torch + vision) and writes its results as JSON for the parent to print side by
side.  A part is ``model`` (the model's cases, with explain), ``mirrors`` (each
model case's torchvision mirror) or ``tv:eager`` / ``tv:flags`` / ``tv:inductor``
(one column of the torchvision table).
"""

import json
import sys

from .audit import run

if __name__ == "__main__":
    result = run(sys.argv[2:] or ["model"])
    with open(sys.argv[1], "w") as f:
        json.dump(result, f)
