#!/usr/bin/env python3
"""Prints the peers.sh table from its results file.

Input (tab-separated, one line per measurement):
    section  tool  mode  round  req_per_s  p50_ms  p99_ms  cpu_s_per_million  note
Empty or "NA" fields are unknown. For each (section, tool, mode) the table shows the median of
the rounds; the ratio column compares stormrig with each peer of the same section as the
median of per-round ratios (rounds alternate A/B/A/B, so a round's pair saw the same noise).
"""
import statistics
import sys
from collections import OrderedDict, defaultdict


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    if x is None:
        width = int(spec.split(".")[0] or 0)
        return "-".rjust(width)
    return format(x, spec)


def main(path):
    rows = OrderedDict()
    notes = defaultdict(list)
    for line in open(path, encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 8:
            continue
        section, tool, mode, rnd = f[0], f[1], f[2], int(f[3])
        vals = dict(rps=num(f[4]), p50=num(f[5]), p99=num(f[6]), cpu=num(f[7]))
        rows.setdefault((section, tool, mode), {})[rnd] = vals
        if len(f) > 8 and f[8]:
            notes[(section, tool, mode)].append(f[8])

    # The stormrig row of each section is the reference of its ratios; a section may have
    # several stormrig rows (e.g. two schedulers): each peer is compared with the first.
    head = (
        f"{'section':<10} {'tool':<9} {'mode':<40} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'CPU-s/M':>8}  {'stormrig/peer req/s':>19} {'CPU-s/M ratio':>13}  note"
    )
    print(head)
    print("-" * len(head))
    for (section, tool, mode), by_round in rows.items():
        rps = med(v["rps"] for v in by_round.values())
        p50 = med(v["p50"] for v in by_round.values())
        p99 = med(v["p99"] for v in by_round.values())
        cpu = med(v["cpu"] for v in by_round.values())
        ratio = cpu_ratio = None
        if tool != "stormrig":
            ours = next(
                (r for (s, t, _), r in rows.items() if s == section and t == "stormrig"),
                None,
            )
            if ours:
                ratio = med(
                    ours[k]["rps"] / v["rps"]
                    for k, v in by_round.items()
                    if k in ours and ours[k]["rps"] and v["rps"]
                )
                cpu_ratio = med(
                    ours[k]["cpu"] / v["cpu"]
                    for k, v in by_round.items()
                    if k in ours and ours[k]["cpu"] and v["cpu"]
                )
        note = "; ".join(OrderedDict.fromkeys(notes[(section, tool, mode)]))
        print(
            f"{section:<10} {tool:<9} {mode:<40} {fmt(rps, '9.0f')} {fmt(p50, '8.3f')} "
            f"{fmt(p99, '8.3f')} {fmt(cpu, '8.2f')}  {fmt(ratio, '19.3f')} "
            f"{fmt(cpu_ratio, '13.3f')}  {note}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
