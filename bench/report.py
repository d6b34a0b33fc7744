"""Reporting: the per-row table, means (and the PEER's best round), ratios,
targets (the PNG charts: charts.py)."""

from configs import LABELS, method_label
from measure import NOISY
from processes import log

ROW = "{:>5}  {:<18} {:<12} {:>7} {:>8} {:>8} {:>6}  {:>7} {:>7} {:>7}"


def _pct(x):
    return "?" if x is None else f"{x * 100:.0f}%"


def fmt_row(r):
    if r.get("skipped"):
        return ROW.format(r["round"], LABELS[r["config"]], method_label(r["config"], r["method"]), "-", "-", "-", "-",
                          "-", "-", "-") + "  skipped: " + r["skipped"]
    line = ROW.format(r["round"], LABELS[r["config"]], method_label(r["config"], r["method"]), f"{r['rps']:.0f}",
                      f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", r["errors"],
                      _pct(r.get("srv_cpu")), _pct(r["gen_cpu"]), _pct(r.get("other_cpu")))
    if (r.get("other_cpu") or 0) > NOISY:
        line += "  noisy"
    return line


def header():
    return ROW.format("round", "config", "method", "req/s", "p50 ms", "p99 ms", "errors",
                      "server", "loadgen", "other")


def mean_of(rows, cfg, method, key="rps"):
    vals = [r[key] for r in rows if r["config"] == cfg and r["method"] == method and not r.get("skipped")]
    return sum(vals) / len(vals) if vals else None


def worst_of(rows, cfg, method, key="p99_ms"):
    vals = [r[key] for r in rows if r["config"] == cfg and r["method"] == method and not r.get("skipped")]
    return max(vals) if vals else None


def best_of(rows, cfg, method, key="rps"):
    vals = [r[key] for r in rows if r["config"] == cfg and r["method"] == method and not r.get("skipped")]
    return max(vals) if vals else None


def make_row(rd, cfg, method, res, failures, max_requests):
    """Record (and print) one measured load; its errors are failures of the run."""
    row = dict(res, round=rd, config=cfg, method=method)
    row.pop("lat", None)
    log(fmt_row(row) + (f"   {res['error_reasons']} {res['error_samples'][:1]}" if res["errors"] else ""))
    if res["errors"]:
        failures.append(f"{LABELS[cfg]} {method_label(cfg, method)} round {rd}: {res['errors']} errors "
                        f"{res['error_reasons']} e.g. {res['error_samples'][:1]}")
    if res.get("capped"):
        log(f"    note: hit --max-requests ({max_requests}); req/s of this row is a lower bound")
    return row


def skipped_row(rd, cfg, method, why):
    row = {"round": rd, "config": cfg, "method": method, "skipped": why}
    log(fmt_row(row))
    return row


def _best_peer(rows, cfgs, method):
    """(rps, cfg) of the best round among the PEER configurations ``cfgs``.

    uvicorn splits keep-alive connections between its workers by chance, so a
    PEER's spread between rounds is uvicorn's: its better round is what it can do.
    """
    found = [(best_of(rows, c, method), c) for c in cfgs]
    found = [f for f in found if f[0] is not None]
    return max(found) if found else (None, None)


def summarize(rows, scale_rows, scale_info=None):
    """Ratios (means over rounds, and against the PEERs' best rounds) and targets
    (issue 12 for SQLite, issue 11 for PostgreSQL), reported, never enforced."""
    ratios, targets = {}, []

    def ratio(name, a, b):
        if a is not None and b:
            ratios[name] = a / b
            return a / b
        return None

    def target(text, value, ok, shown):
        if value is not None:
            targets.append({"target": text, "value": value, "pass": bool(ok), "shown": shown})

    us_send, us_get = mean_of(rows, "us", "send"), mean_of(rows, "us", "get")
    r_durable = ratio("US/DURABLE CEILING message/send", us_send, mean_of(rows, "durable", "send"))
    ratio("US/CEILING message/send", us_send, mean_of(rows, "ceiling", "send"))
    for cfg in ("peer-sqlite", "peer-memory", "peer13-sqlite", "peer13-memory"):
        mean, best = mean_of(rows, cfg, "send"), best_of(rows, cfg, "send")
        ratio(f"US/{LABELS[cfg]} message/send", us_send, mean)
        if best != mean:
            ratio(f"US/{LABELS[cfg]} message/send (its best round)", us_send, best)
    r_get = ratio("US/CEILING tasks/get", us_get, mean_of(rows, "ceiling", "get"))
    ratio("US/DURABLE CEILING tasks/get", us_get, mean_of(rows, "durable", "get"))
    for cfg in ("peer-sqlite", "peer-memory", "peer13-sqlite", "peer13-memory"):
        ratio(f"US/{LABELS[cfg]} tasks/get", us_get, mean_of(rows, cfg, "get"))
    # The limit (servers/floor.py): the contract's own work in one bare route.
    # A target above FLOOR's ratio is beyond any implementation on this stack.
    ratio("FLOOR/DURABLE CEILING message/send (the limit)", mean_of(rows, "floor", "send"),
          mean_of(rows, "durable", "send"))
    ratio("US/FLOOR message/send (how close)", us_send, mean_of(rows, "floor", "send"))
    ratio("FLOOR/CEILING tasks/get (the limit)", mean_of(rows, "floor", "get"), mean_of(rows, "ceiling", "get"))
    ratio("US/FLOOR tasks/get (how close)", us_get, mean_of(rows, "floor", "get"))
    peer_rps, peer_cfg = _best_peer(rows, ("peer-memory", "peer13-memory"), "send")
    r_peer = ratio("US/fastest PEER in memory, best round, message/send", us_send, peer_rps)

    if r_durable is not None:
        target("message/send US >= 70% of DURABLE CEILING", r_durable, r_durable >= 0.7, f"{r_durable * 100:.0f}%")
    if r_peer is not None:
        target(f"message/send US >= 1.0x fastest PEER in memory, best round ({LABELS[peer_cfg]})",
               r_peer, r_peer >= 1.0, f"{r_peer:.2f}x")
    p99 = worst_of(rows, "us", "send")
    if p99 is not None:
        target("message/send US p99 <= 15 ms (worst round)", p99, p99 <= 15, f"{p99:.1f} ms")
    if r_get is not None:
        target("tasks/get US >= 80% of CEILING", r_get, r_get >= 0.8, f"{r_get * 100:.0f}%")
    for m, label in (("send", "SendMessage/message/send"), ("get", "GetTask/tasks/get")):
        r10 = ratio(f"US 1.0/US {label}", mean_of(rows, "us10", m), mean_of(rows, "us", m))
        if r10 is not None:
            target(f"{label.split('/')[0]} (US 1.0) within 5% of {label.split('/', 1)[1]} (US)",
                   r10, r10 >= 0.95, f"{r10 * 100:.0f}%")
    for m in ("send", "get"):
        e, s = mean_of(scale_rows, "us-empty", m), mean_of(scale_rows, "us-scale", m)
        if e and s is not None:
            ratios[f"prefilled/empty {method_label('us', m)}"] = s / e
            target(f"{method_label('us', m)} prefilled db within 5% of empty db", s / e, s / e >= 0.95,
                   f"{s / e * 100:.0f}% of empty")
    per_task = (scale_info or {}).get("bytes_per_task")
    if per_task:
        target("bytes per task on disk <= 1.5 kB (prefilled db)", per_task, per_task <= 1500, f"{per_task:,.0f} B")

    # PostgreSQL (issue 11): US on PostgreSQL against its ceiling and the best PEER there
    pg_send, pg_get = mean_of(rows, "us-pg", "send"), mean_of(rows, "us-pg", "get")
    r_pg = ratio("US postgres/PG DURABLE CEILING message/send", pg_send, mean_of(rows, "pg-durable", "send"))
    r_pg_get = ratio("US postgres/PG DURABLE CEILING tasks/get", pg_get, mean_of(rows, "pg-durable", "get"))
    ratio("PG FLOOR/PG DURABLE CEILING message/send (the limit)", mean_of(rows, "pg-floor", "send"),
          mean_of(rows, "pg-durable", "send"))
    ratio("US postgres/PG FLOOR message/send (how close)", pg_send, mean_of(rows, "pg-floor", "send"))
    ratio("PG FLOOR/PG DURABLE CEILING tasks/get (the limit)", mean_of(rows, "pg-floor", "get"),
          mean_of(rows, "pg-durable", "get"))
    ratio("US postgres/PG FLOOR tasks/get (how close)", pg_get, mean_of(rows, "pg-floor", "get"))
    pg_peer, pg_peer_cfg = _best_peer(rows, ("peer-pg", "peer13-pg"), "send")
    r_pg_peer = ratio("US postgres/best PEER on PostgreSQL, best round, message/send", pg_send, pg_peer)
    if r_pg is not None:
        target("message/send US postgres >= 55% of PG DURABLE CEILING", r_pg, r_pg >= 0.55, f"{r_pg * 100:.0f}%")
    if r_pg_peer is not None:
        target(f"message/send US postgres >= 4x best PEER on PostgreSQL ({LABELS[pg_peer_cfg]})",
               r_pg_peer, r_pg_peer >= 4, f"{r_pg_peer:.1f}x")
    if r_pg_get is not None:
        target("tasks/get US postgres >= 70% of PG DURABLE CEILING", r_pg_get, r_pg_get >= 0.7,
               f"{r_pg_get * 100:.0f}%")
    # What the demo's in-process claimers (wsgi.py) cost the production setting.
    for m in ("send", "get"):
        ratio(f"US demo/US {method_label('us', m)} (the demo's in-process claimers)",
              mean_of(rows, "us-demo", m), mean_of(rows, "us", m))
        ratio(f"US skewed/US {method_label('us', m)} (every connection opened on one worker)",
              mean_of(rows, "us-skewed", m), mean_of(rows, "us", m))
    # The shipped gunicorn.conf.py (gthread, 1,024 threads) against the same
    # tree on sync workers, in the same run (issue 31). FLOOR, the contract's
    # work in one bare route, on the same two: where it misses a target too,
    # its figure is the limit, and the LIMIT line says how close US is to it.
    for base, sync, floor, floor_sync in (("us", "us-sync", "floor", "floor-sync"),
                                          ("us-pg", "us-pg-sync", "pg-floor", "pg-floor-sync")):
        for m in ("send", "get"):
            label = f"{method_label(base, m)} {LABELS[base]} (shipped gthread)"
            r = ratio(f"{LABELS[base]}/{LABELS[sync]} {method_label(base, m)}",
                      mean_of(rows, base, m), mean_of(rows, sync, m))
            rf = ratio(f"{LABELS[floor]}/{LABELS[floor_sync]} {method_label(base, m)} (the limit)",
                       mean_of(rows, floor, m), mean_of(rows, floor_sync, m))
            if r is not None:
                target(f"{label} >= 0.90x {LABELS[sync]}", r, r >= 0.9, f"{r:.2f}x")
                if rf is not None and rf < 0.9:
                    target(f"{label} >= {LABELS[floor]}'s {rf:.2f}x of {LABELS[floor_sync]} "
                           "(LIMIT: FLOOR misses 0.90x too)", r, r >= rf, f"{r:.2f}x")
            p99, p99_sync = worst_of(rows, base, m), worst_of(rows, sync, m)
            f99, f99_sync = worst_of(rows, floor, m), worst_of(rows, floor_sync, m)
            if f99 is not None and f99_sync:
                ratio(f"{LABELS[floor]}/{LABELS[floor_sync]} {method_label(base, m)} p99 (the limit)",
                      f99, f99_sync)
            if p99 is not None and p99_sync:
                target(f"{label} p99 <= 2x {LABELS[sync]}'s (worst rounds)", p99 / p99_sync,
                       p99 <= 2 * p99_sync, f"{p99:.1f} ms against {p99_sync:.1f} ms")
                if f99 is not None and f99_sync and f99 > 2 * f99_sync:
                    target(f"{label} p99 / {LABELS[sync]}'s <= {LABELS[floor]}'s "
                           f"{f99 / f99_sync:.1f}x of {LABELS[floor_sync]} (LIMIT: FLOOR misses 2x too)",
                           p99 / p99_sync, p99 / p99_sync <= f99 / f99_sync,
                           f"{p99 / p99_sync:.1f}x ({p99:.1f} ms against {p99_sync:.1f} ms)")
    return ratios, targets


CPU_NOTE = ("server/loadgen/other: CPU used during the load by the server's processes (and its PostgreSQL), the load "
            "generator, and everything else on the machine (100% = one core); 'noisy': other > "
            f"{NOISY * 100:.0f}%")


def print_table(title, rows):
    log(f"\n== {title}")
    log(header())
    for r in rows:
        log(fmt_row(r))
    log(CPU_NOTE)


def print_summary(rows, scale_rows, ratios, targets, scale_info):
    log("\n== mean over rounds, and the best round (drift = (max-min)/mean of req/s)")
    log("{:<18} {:<12} {:>10} {:>9} {:>8} {:>9}  {}".format(
        "config", "method", "mean req/s", "best", "drift", "worst p99", "per round req/s"))
    seen = []
    for r in rows + scale_rows:
        k = (r["config"], r["method"])
        if k in seen or r.get("skipped"):
            continue
        seen.append(k)
        vals = [x["rps"] for x in rows + scale_rows if (x["config"], x["method"]) == k and not x.get("skipped")]
        m = sum(vals) / len(vals)
        log("{:<18} {:<12} {:>10.0f} {:>9.0f} {:>7.1f}% {:>7.1f}ms  {}".format(
            LABELS[k[0]], method_label(*k), m, max(vals), (max(vals) - min(vals)) / m * 100,
            worst_of(rows + scale_rows, *k), " ".join(f"{v:.0f}" for v in vals)))
    skipped = {}
    for r in rows:
        if r.get("skipped") and not any(x["config"] == r["config"] and not x.get("skipped") for x in rows):
            skipped.setdefault(r["config"], r["skipped"])
    for cfg, why in skipped.items():
        log("{:<18} skipped: {}".format(LABELS[cfg], why))
    if ratios:
        log("\n== ratios (means over rounds unless said)")
        for k, v in ratios.items():
            log(f"{k:<60} {v:8.2f}")
    if scale_info:
        log("\n== scale")
        for k, v in scale_info.items():
            if isinstance(v, str):  # the numbers beside are for the targets
                log(f"{k:<36} {v}")
    if targets:
        log("\n== targets (issue 12; PostgreSQL: issue 11)")
        for t in targets:
            log(f"{'PASS' if t['pass'] else 'FAIL'}  {t['target']}: {t['shown']}")

