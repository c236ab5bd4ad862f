"""Child process of the benchmark: ``python -m torch_overlay._bench_worker OUT.json [options]``."""

import argparse
import json

from .bench import run

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--threads", default="1,0")
    parser.add_argument("--min-run-time", type=float, default=1.0)
    parser.add_argument("--case", action="append", default=[])
    args = parser.parse_args()
    result = run([int(t) for t in args.threads.split(",")], args.min_run_time, args.case)
    with open(args.out, "w") as f:
        json.dump(result, f)
