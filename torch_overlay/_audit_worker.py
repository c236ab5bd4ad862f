"""Child process of the audit: ``python -m torch_overlay._audit_worker OUT.json``.

Runs under whichever torch the environment imports (base or overlay) and
writes the rows as JSON for the parent to print side by side.
"""

import json
import sys

from .audit import run_cases

if __name__ == "__main__":
    result = run_cases()
    with open(sys.argv[1], "w") as f:
        json.dump(result, f)
