#!/usr/bin/env python3
"""Same-run A/B of one Google Benchmark binary built from two trees.

A refactoring claims "no change in speed": this measures it. The two builds of
the same benchmark (say build-base/benchmarks/vm_dispatch from the commit before
the change and build/benchmarks/vm_dispatch from after it) run alternately,
round after round, so both meet the machine in the same states; the order
flips every round so drift favours neither. For every benchmark row the script
reports base time / new time per round (above 1: the new build is faster) as
the median and the range over the rounds, and the geometric mean of the
medians over all rows.

    benchmarks/ab_builds.py --base /work/base/build/benchmarks/vm_dispatch \\
        --new build/benchmarks/vm_dispatch --rounds 5 --filter 'chain|shape' \\
        -- --benchmark_min_time=0.2

Arguments after `--` go to both binaries. A row present in only one build is
listed apart. Prints a markdown table.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys


def run(binary, benchmark_filter, extra):
    command = [binary, "--benchmark_format=json"] + extra
    if benchmark_filter:
        command.append("--benchmark_filter=" + benchmark_filter)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{binary} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    rows = {}
    for row in json.loads(done.stdout)["benchmarks"]:
        if row.get("run_type") == "aggregate" or row.get("error_occurred"):
            continue
        rows[row["name"]] = row["real_time"]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the benchmark binary built before the change")
    parser.add_argument("--new", required=True, help="the same benchmark built after it")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of (base, new); at least 2")
    parser.add_argument("--filter", default="", help="--benchmark_filter for both")
    parser.add_argument("extra", nargs="*", help="more arguments for both binaries (after --)")
    args = parser.parse_args()
    if args.rounds < 2:
        sys.exit("--rounds must be at least 2: a range needs more than one round")
    for binary in (args.base, args.new):
        if not os.access(binary, os.X_OK):
            sys.exit(f"{binary}: not an executable file")

    ratios = {}
    for r in range(args.rounds):
        order = [("base", args.base), ("new", args.new)]
        if r % 2:
            order.reverse()
        times = {label: run(binary, args.filter, args.extra) for label, binary in order}
        for name in times["base"].keys() & times["new"].keys():
            ratios.setdefault(name, []).append(times["base"][name] / times["new"][name])
        only = times["base"].keys() ^ times["new"].keys()
        print(f"round {r + 1}/{args.rounds} done" + (f" ({len(only)} rows in one build only)" if only else ""),
              file=sys.stderr)

    print(f"| row | base/new median | range over {args.rounds} rounds |")
    print("|---|---|---|")
    medians = []
    for name in sorted(ratios):
        values = ratios[name]
        median = statistics.median(values)
        medians.append(median)
        print(f"| {name} | {median:.3f} | {min(values):.3f}-{max(values):.3f} |")
    if medians:
        geomean = math.exp(sum(math.log(m) for m in medians) / len(medians))
        print(f"\ngeometric mean of the medians over {len(medians)} rows: {geomean:.3f} (above 1: the new build is faster)")


if __name__ == "__main__":
    main()
