#!/usr/bin/env python3
"""Summarizes an Autobahn|Testsuite fuzzingclient report (run.sh calls it).

Reads REPORT_DIR/index.json and, for each case that did not pass, its own
JSON file. Prints the counts by behavior and by behaviorClose, every failed
case with its description and Autobahn's account of it (result, resultClose,
expected and received events), the close problems of passing cases, and the
durations of the 9.* (limits/performance) cases. Exits 1 when a case failed
(or fewer cases ran than were asked for), 0 otherwise.

Usage: summarize.py REPORT_DIR [--expected N] [--strict-close]
"""
import argparse
import html
import json
import os
import re
import sys

# Autobahn's verdicts that count as a pass for "behavior".
PASSING = ("OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED")
# ... and for "behaviorClose".
PASSING_CLOSE = ("OK", "INFORMATIONAL")
ORDER = ("OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED", "FAILED",
         "WRONG CODE", "UNCLEAN", "FAILED BY CLIENT")


def case_key(case_id):
    return [int(p) if p.isdigit() else p for p in case_id.split(".")]


def counts_line(counter):
    keys = [k for k in ORDER if k in counter] + sorted(k for k in counter if k not in ORDER)
    return ", ".join("%s %d" % (k, counter[k]) for k in keys)


def text(s):
    """Autobahn's descriptions carry a little HTML (<br>, &nbsp;...)."""
    s = re.sub(r"<br\s*/?>", " ", str(s))
    s = re.sub(r"<[^>]+>", "", s)
    return re.sub(r"\s+", " ", html.unescape(s)).strip()


def short(value, limit=700):
    """An event list as JSON, long payloads cut (9.* echoes megabytes)."""
    def cut(v):
        if isinstance(v, str) and len(v) > 120:
            return "%s...(%d chars)" % (v[:60], len(v))
        if isinstance(v, list):
            return [cut(x) for x in v]
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        return v
    s = json.dumps(cut(value), ensure_ascii=True)
    return s if len(s) <= limit else s[:limit] + "...(%d chars in all)" % len(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report_dir")
    ap.add_argument("--expected", type=int, default=0,
                    help="cases wstest said it would run (0: unknown)")
    ap.add_argument("--strict-close", action="store_true",
                    help="a behaviorClose other than OK/INFORMATIONAL fails too")
    args = ap.parse_args()

    index_path = os.path.join(args.report_dir, "index.json")
    try:
        with open(index_path) as f:
            index = json.load(f)
    except (OSError, ValueError) as e:
        print("autobahn: no report at %s: %s" % (index_path, e))
        return 1
    if not index:
        print("autobahn: %s names no agent (no case ran)" % index_path)
        return 1

    failed_total = 0
    not_run = 0
    for agent, cases in sorted(index.items()):
        ids = sorted(cases, key=case_key)
        behavior = {}
        close = {}
        for cid in ids:
            c = cases[cid]
            behavior[c["behavior"]] = behavior.get(c["behavior"], 0) + 1
            close[c["behaviorClose"]] = close.get(c["behaviorClose"], 0) + 1
        print("autobahn: agent %s: %d case(s)%s" % (
            agent, len(ids), " of %d asked for" % args.expected if args.expected else ""))
        print("autobahn: behavior:      %s" % counts_line(behavior))
        print("autobahn: behaviorClose: %s" % counts_line(close))

        def details(cid, indent="    "):
            c = cases[cid]
            d = {}
            try:
                with open(os.path.join(args.report_dir, c["reportfile"])) as f:
                    d = json.load(f)
            except (OSError, ValueError, KeyError) as e:
                print("%s(no case report: %s)" % (indent, e))
            print("%sdescription: %s" % (indent, text(d.get("description", "?"))))
            print("%sexpectation: %s" % (indent, text(d.get("expectation", "?"))))
            print("%sresult:      %s" % (indent, d.get("result", "?")))
            print("%sresultClose: %s" % (indent, d.get("resultClose", "?")))
            print("%sexpected:    %s" % (indent, short(d.get("expected", "?"))))
            print("%sexpectedClose: %s" % (indent, short(d.get("expectedClose", "?"))))
            print("%sreceived:    %s" % (indent, short(d.get("received", "?"))))
            print("%sremoteCloseCode: %s, remoteCloseReason: %s, localCloseCode: %s, "
                  "wasClean: %s (%s), closedByMe: %s, droppedByMe: %s, failedByMe: %s" % (
                      indent, d.get("remoteCloseCode"), short(d.get("remoteCloseReason")),
                      d.get("localCloseCode"), d.get("wasClean"), d.get("wasNotCleanReason"),
                      d.get("closedByMe"), d.get("droppedByMe"), d.get("failedByMe")))
            wirelog = d.get("wirelog") or []
            if wirelog:
                print("%swirelog (last %d of %d): %s" % (
                    indent, min(8, len(wirelog)), len(wirelog), short(wirelog[-8:], 1200)))

        failed = [cid for cid in ids if cases[cid]["behavior"] not in PASSING]
        bad_close = [cid for cid in ids if cases[cid]["behavior"] in PASSING
                     and cases[cid]["behaviorClose"] not in PASSING_CLOSE]
        for cid in failed:
            c = cases[cid]
            print("autobahn: FAILED: %s: behavior %s, behaviorClose %s, close code %s, %d ms" % (
                cid, c["behavior"], c["behaviorClose"], c.get("remoteCloseCode"), c.get("duration", 0)))
            details(cid)
        for cid in bad_close:
            c = cases[cid]
            print("autobahn: %s: %s: behavior %s but behaviorClose %s, close code %s, %d ms" % (
                "FAILED" if args.strict_close else "close problem (not counted as failed)",
                cid, c["behavior"], c["behaviorClose"], c.get("remoteCloseCode"), c.get("duration", 0)))
            details(cid)
        failed_total += len(failed) + (len(bad_close) if args.strict_close else 0)

        for b in ("NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED"):
            these = [cid for cid in ids if cases[cid]["behavior"] == b]
            if not these:
                continue
            if len(these) > 20:  # 12.*/13.* when permessage-deflate is absent
                sections = {}
                for cid in these:
                    sec = cid.split(".")[0] + ".*"
                    sections[sec] = sections.get(sec, 0) + 1
                listed = ", ".join("%s: %d" % (k, sections[k]) for k in
                                   sorted(sections, key=case_key))
            else:
                listed = ", ".join(these)
            print("autobahn: %s (passing): %s" % (b, listed))

        nine = [cid for cid in ids if cid.startswith("9.")]
        if nine:
            print("autobahn: 9.* durations (ms): %s; %.1f s in all" % (
                ", ".join("%s %d" % (cid, cases[cid].get("duration", 0)) for cid in nine),
                sum(cases[cid].get("duration", 0) for cid in nine) / 1000.0))
        slow = sorted(ids, key=lambda cid: -cases[cid].get("duration", 0))[:5]
        print("autobahn: slowest: %s" % ", ".join(
            "%s %d ms" % (cid, cases[cid].get("duration", 0)) for cid in slow))
        print("autobahn: all cases: %.1f s" % (
            sum(cases[cid].get("duration", 0) for cid in ids) / 1000.0))

        if args.expected and len(ids) < args.expected:
            print("autobahn: FAILED: only %d of %d cases ran (the server stopped "
                  "answering? see wstest.log)" % (len(ids), args.expected))
            not_run += args.expected - len(ids)

    print("autobahn: %d failed%s" % (
        failed_total, ", %d not run" % not_run if not_run else ""))
    return 1 if failed_total or not_run else 0


if __name__ == "__main__":
    sys.exit(main())
