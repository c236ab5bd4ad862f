"""Child process of the stream workloads: ``python -m torch_overlay._stream_worker OUT.json WORKLOAD CONFIG N PASSES``."""

import json
import sys

from .stream import run_dataloader, run_stream, warm_header

if __name__ == "__main__":
    out, workload, config, n, passes = sys.argv[1:6]
    if workload == "header":
        result = warm_header()
    elif workload == "dataloader":
        result = run_dataloader(config, int(n))
    else:
        result = run_stream(workload, config, int(n), int(passes))
    with open(out, "w") as f:
        json.dump(result, f)
