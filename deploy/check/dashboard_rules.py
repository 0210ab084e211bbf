#!/usr/bin/env python3
"""Lint deploy/monitoring/dashboard.json and turn every panel query into a recording rule, so
`promtool check rules` parses each PromQL expression offline.

Own rules (exit 1 with one line per problem): unique panel ids; every panel and target uses the
$datasource template variable (no hard-coded data source uid); every range selector is
[$__rate_interval]; every query filters on job=~"$job"; every metric named is an smg_* series
the gateway exports (names listed in deploy/check/known_series.txt); every query that rates an
smg_*_total counter has a zero fallback (`or on() vector(0)`, or `or <denominator> * 0` in a
ratio), so an event counter with no children yet plots 0, not "No data" (the values are tested
by deploy/check/dashboard_test.yaml).
Usage: dashboard_rules.py dashboard.json known_series.txt out-rules.yaml
"""
import json
import re
import sys

def main(src, known_path, out):
    d = json.load(open(src))
    known = {l.strip() for l in open(known_path) if l.strip() and not l.startswith("#")}
    problems, rules, ids = [], [], set()
    for p in d.get("panels", []):
        pid, title = p.get("id"), p.get("title", "?")
        if pid in ids:
            problems.append("panel %r: duplicate id %s" % (title, pid))
        ids.add(pid)
        for obj in [p] + p.get("targets", []):
            if obj.get("datasource", {}).get("uid") != "${datasource}":
                problems.append("panel %r: datasource must be ${datasource}, got %r" % (title, obj.get("datasource")))
        if not p.get("targets"):
            problems.append("panel %r: no queries" % title)
        for t in p.get("targets", []):
            e = t.get("expr", "")
            for rng in re.findall(r"\[([^\]]+)\]", e):
                if rng != "$__rate_interval":
                    problems.append("panel %r: range [%s] must be [$__rate_interval]" % (title, rng))
            if 'job=~"$job"' not in e:
                problems.append("panel %r: query does not filter job=~\"$job\": %s" % (title, e))
            if re.search(r"rate\(smg_[a-z0-9_]+_total\b", e) and "or on() vector(0)" not in e and not re.search(r"\bor .* \* 0\)", e):
                problems.append("panel %r: a counter rate without a zero fallback (or on() vector(0)) shows No data until the counter has children: %s" % (title, e))
            for name in set(re.findall(r"\b(smg_[a-z0-9_]+)", e)):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if name not in known and base not in known:
                    problems.append("panel %r: unknown series %s" % (title, name))
            expr = e.replace("$__rate_interval", "5m").replace("$job", ".*")
            rules.append({"record": "dashboard:panel%s:%s" % (pid, t.get("refId", "A")), "expr": expr})
    with open(out, "w") as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f, indent=1)
    for pr in problems:
        print("dashboard: " + pr)
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
