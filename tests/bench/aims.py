#!/usr/bin/env python3
"""Prints the aims table of peers.sh: each figure the product holds itself to, with its aim
and whether this run met it.

Input (tab-separated, one line per figure):
    figure  measured  aim  rule  unit  how
rule is "le" (met when measured <= aim) or "ge" (met when measured >= aim). A measured value
that is empty or "NA" (the step was skipped or failed) is shown as not measured, never as met.
Exit status 0 always: the table reports, it does not gate (a benchmark is no CI gate).
"""
import sys


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def fmt(x):
    if x is None:
        return "-"
    if x == int(x) and abs(x) >= 100:
        return f"{int(x):,}"
    return f"{x:,.3f}"


def main(path):
    rows = []
    for line in open(path, encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 6:
            continue
        figure, measured, aim, rule, unit, how = f[:6]
        m, a = num(measured), num(aim)
        if m is None or a is None:
            verdict = "not measured"
        elif rule == "le":
            verdict = "pass" if m <= a else "FAIL"
        else:
            verdict = "pass" if m >= a else "FAIL"
        sign = "<=" if rule == "le" else ">="
        rows.append((figure, fmt(m), f"{sign} {fmt(a)}", unit, verdict, how))
    head = ("figure", "measured", "aim", "unit", "result", "how")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    line = lambda r: "  ".join(
        [r[0].ljust(widths[0])] + [r[i].rjust(widths[i]) for i in (1, 2)]
        + [r[3].ljust(widths[3]), r[4].ljust(widths[4]), r[5]]
    )
    print(line(head))
    print("-" * (sum(widths) + 12 + max(len(r[5]) for r in rows + [head])))
    for r in rows:
        print(line(r))


if __name__ == "__main__":
    main(sys.argv[1])
