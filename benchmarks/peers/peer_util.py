"""What the peer scripts share: timing peers called from Python, printing the table."""
import statistics
import time


def median_ns(fn, warmup_seconds, seconds, min_calls, min_warmup_calls=10):
    """Median wall time of one call of fn(), in nanoseconds: fn is called for
    at least warmup_seconds (and min_warmup_calls times) untimed, then timed
    one call at a time for at least `seconds` and `min_calls` calls."""
    deadline = time.perf_counter() + warmup_seconds
    calls = 0
    while calls < min_warmup_calls or time.perf_counter() < deadline:
        fn()
        calls += 1
    samples = []
    deadline = time.perf_counter() + seconds
    while len(samples) < min_calls or time.perf_counter() < deadline:
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples)


def print_table(header, rows, markdown, right_align=False):
    """Rows of strings under `header`, as Markdown or as aligned columns."""
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    pad = (lambda c, w: c.rjust(w)) if right_align else (lambda c, w: c.ljust(w))
    print("  ".join(pad(h, w) for h, w in zip(header, widths)))
    for row in rows:
        print("  ".join(pad(c, w) for c, w in zip(row, widths)))
