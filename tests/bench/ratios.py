#!/usr/bin/env python3
"""Prints the ratios peers.sh quotes beside its table, from the same results file.

* the open loop's CPU per million requests over the closed loop's (one thread each), per
  scheduler setting (spin, batch window): the aim is at most 1.5x;
* the generator's requests per second on two runtime threads over one;
* the floor (`stormrig bench floor`: raw epoll, no policy, no runtime): its own open loop's
  CPU per million over its closed loop's, which is what pacing costs on this machine
  whatever the client, and stormrig's rows over the floor's.

Medians over rounds, as the table's.
"""
import statistics
import sys


def main(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path, encoding="utf-8") if l.strip()]

    def med(section, mode, col):
        xs = []
        for f in rows:
            if len(f) > col and f[0] == section and f[1] == "stormrig" and f[2] == mode:
                try:
                    xs.append(float(f[col]))
                except ValueError:
                    pass
        return statistics.median(xs) if xs else None

    def tool_med(section, tool, col):
        xs = []
        for f in rows:
            if len(f) > col and f[0] == section and f[1] == tool:
                try:
                    xs.append(float(f[col]))
                except ValueError:
                    pass
        return statistics.median(xs) if xs else None

    def modes(section):
        seen = []
        for f in rows:
            if f[0] == section and f[1] == "stormrig" and f[2] not in seen:
                seen.append(f[2])
        return seen

    closed = [m for m in modes("generator") if m.startswith("closed,")]
    one = next((m for m in closed if m.endswith("1 thread")), None)
    two = next((m for m in closed if m.endswith("2 threads")), None)
    closed_cpu = med("generator", one, 7) if one else None
    for m in modes("open-loop"):
        o = med("open-loop", m, 7)
        if o is not None and closed_cpu:
            print(f"open loop CPU-s/M over the closed loop's: {o / closed_cpu:5.2f}x  ({m})")
    floor_closed = tool_med("generator", "floor", 7)
    floor_open = tool_med("open-loop", "floor", 7)
    if floor_closed and floor_open:
        print(f"floor: open loop CPU-s/M over its closed loop's: {floor_open / floor_closed:5.2f}x"
              "  (what pacing costs on this machine, whatever the client)")
    first_open = next(iter(modes("open-loop")), None)
    if floor_open and first_open and med("open-loop", first_open, 7):
        print(f"open loop CPU-s/M over the floor's open loop: "
              f"{med('open-loop', first_open, 7) / floor_open:5.2f}x  ({first_open})")
    if floor_closed and closed_cpu:
        print(f"closed loop CPU-s/M over the floor's closed loop: {closed_cpu / floor_closed:5.2f}x  ({one})")
    if one and two:
        a, b = med("generator", one, 4), med("generator", two, 4)
        if a and b:
            print(f"generator req/s on 2 threads over 1: {b / a:5.2f}x  (nginx shares the second core)")


if __name__ == "__main__":
    main(sys.argv[1])
