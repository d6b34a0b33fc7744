#!/usr/bin/env python3
"""The benchmark's charts, as PNG files the documentation includes:

- ``throughput.png``: req/s of every row (the mean of its rounds), one panel
  per method (message/send, tasks/get), the scale run's rows beside;
- ``p99.png``: the p99 latency of every row (its worst round), likewise;
- ``background.png``: completed turns/s of the background-agent rows
  (bench/background.py throughput, or any row with ``turns_per_s``), when
  there are such rows.

bench/run.py and bench/background.py write them after a run (needs
matplotlib, in the bench extra). To draw them again from saved results:

    python bench/charts.py bench/results.json [bench/results-background.json] --out bench/figures
"""

import argparse
import json
import os
import sys

#: The rows that bound (CEILING, FLOOR) or compare (PEER) are grey; ours
#: stand out.
OTHERS = ("CEILING", "FLOOR", "PEER")
COLORS = {"ours": "#1f6fb4", "other": "#9aa5b1"}


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _label(row):
    from configs import LABELS

    return LABELS.get(row["config"], row["config"])


def _per_row(rows, method, value, pick):
    """[(label, value)] in the rows' order: ``pick`` (mean, max) over rounds."""
    found = {}
    for row in rows:
        if row.get("skipped") or row["method"] != method or row.get(value) is None:
            continue
        found.setdefault(_label(row), []).append(row[value])
    return [(label, pick(values)) for label, values in found.items()]


def _mean(values):
    return sum(values) / len(values)


def _bars(ax, pairs, unit, title):
    labels = [label for label, _ in pairs]
    values = [value for _, value in pairs]
    colors = [COLORS["other" if any(word in label for word in OTHERS) else "ours"]
              for label in labels]
    positions = list(range(len(pairs)))[::-1]
    bars = ax.barh(positions, values, color=colors)
    ax.set_yticks(positions)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel(unit)
    ax.set_title(title, fontsize=10)
    ax.bar_label(bars, labels=["%.0f" % v if v >= 10 else "%.1f" % v for v in values],
                 fontsize=7, padding=2)
    if values and min(values) > 0 and max(values) / min(values) > 50:
        ax.set_xscale("log")  # a 2 s p99 beside 7 ms ones: both readable
        ax.set_xlabel(unit + " (log scale)")
    ax.margins(x=0.15)


def _figure(plt, path, panels, unit, caption):
    panels = [(title, pairs) for title, pairs in panels if pairs]
    if not panels:
        return None
    height = max(2.5, 0.32 * max(len(pairs) for _, pairs in panels) + 1.2)
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), height),
                             squeeze=False)
    for ax, (title, pairs) in zip(axes[0], panels):
        _bars(ax, pairs, unit, title)
    if caption:
        fig.text(0.01, 0.005, caption, fontsize=7, color="#555")
    fig.tight_layout(rect=(0, 0.03 if caption else 0, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def caption_of(meta):
    """One line saying which run a chart shows."""
    if not meta:
        return ""
    if "turns" in meta:  # bench/background.py throughput
        return ("%s; %s; %s turns from %s connections, %s threads per worker"
                % (meta["when"], meta["machine"], meta["turns"], meta["connections"],
                   meta["threads"]))
    machine = ",".join(meta.get("machine", "?").split(",")[:2])  # not the OS
    return ("%s; %s; %s s loads, %s round(s), %s connections, %s workers"
            % (meta.get("when", "?"), machine, meta.get("duration_s", "?"),
               meta.get("rounds", "?"), meta.get("connections", "?"), meta.get("workers", "?")))


def write_charts(folder, rows, scale_rows=(), background_rows=(), meta=None,
                 background_meta=None):
    """The PNG charts of a run into ``folder``; their paths (none without
    matplotlib). ``meta``: the run's, for the caption."""
    plt = _pyplot()
    if plt is None:
        print("charts: skipped (matplotlib not installed; pip install -e '.[bench]')",
              file=sys.stderr)
        return []
    os.makedirs(folder, exist_ok=True)
    caption = caption_of(meta)
    all_rows = list(rows) + list(scale_rows or ())
    written = [
        _figure(plt, os.path.join(folder, "throughput.png"), [
            ("message/send (1.0: SendMessage), mean of rounds",
             _per_row(all_rows, "send", "rps", _mean)),
            ("tasks/get (1.0: GetTask), mean of rounds",
             _per_row(all_rows, "get", "rps", _mean))], "requests/s", caption),
        _figure(plt, os.path.join(folder, "p99.png"), [
            ("message/send p99, worst round", _per_row(all_rows, "send", "p99_ms", max)),
            ("tasks/get p99, worst round", _per_row(all_rows, "get", "p99_ms", max))],
            "ms", caption),
    ]
    turns = [(row["row"], row["turns_per_s"]) for row in background_rows
             if row.get("turns_per_s") is not None]
    turns += [(_label(row), row["turns_per_s"]) for row in all_rows
              if row.get("turns_per_s") is not None and not row.get("skipped")]
    sends = [(row["row"], row["sends_per_s"]) for row in background_rows
             if row.get("sends_per_s") is not None]
    written.append(_figure(plt, os.path.join(folder, "background.png"), [
        ("background agent: turns/s, send to completed", turns),
        ("sends/s (the web answers at once)", sends)], "per second",
        caption_of(background_meta) if background_meta else caption))
    paths = [path for path in written if path]
    for path in paths:
        print("chart: %s" % path, file=sys.stderr)
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="results JSON of bench/run.py "
                        "and/or bench/background.py")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "figures"), help="folder of the PNG files")
    args = parser.parse_args(argv)
    rows, scale_rows, background_rows, meta, background_meta = [], [], [], None, None
    for path in args.results:
        with open(path) as f:
            data = json.load(f)
        if "background" in data:
            background_rows += data["background"]
            background_meta = data.get("meta")
        else:
            rows += data.get("runs", [])
            scale_rows += data.get("scale_runs") or []
            meta = meta or data.get("meta")
    written = write_charts(args.out, rows, scale_rows, background_rows, meta,
                           background_meta)
    return 0 if written else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
