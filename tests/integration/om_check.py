"""A strict checker of the Prometheus/OpenMetrics text exposition (what node_exporter's
textfile collector and promtool read), for where promtool is not installed: every line a
HELP, TYPE, UNIT, sample or the final # EOF; names and label names as the format allows;
label values quoted with only \\\\, \\" and \\n escaped; values numbers; TYPE before a
family's samples, each family once and not interleaved; no duplicate sample; a UNIT's
name ending in it; gauges not named _total.
    python3 om_check.py FILE   (exit 1 with the line that is wrong)"""
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(rf"^({NAME})(\{{(?:{LABEL}(?:,{LABEL})*)?\}})? (-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?|NaN|[+-]Inf)$")
META = re.compile(rf"^# (HELP|TYPE|UNIT) ({NAME}) (.*)$")


def check(lines):
    types, helps, units, done, seen = {}, set(), {}, set(), set()
    current = None
    if not lines or lines[-1] != "# EOF":
        return "the last line is not # EOF"
    for n, line in enumerate(lines[:-1], 1):
        m = META.match(line)
        if m:
            kind, name, rest = m.groups()
            if name in done:
                return f"line {n}: family {name} again after others"
            if current and current != name:
                done.add(current)
            current = name
            if kind == "TYPE":
                if name in types or rest not in ("gauge", "counter", "info", "stateset", "unknown"):
                    return f"line {n}: TYPE twice or unknown: {line}"
                if rest == "gauge" and name.endswith("_total"):
                    return f"line {n}: a gauge named _total"
                types[name] = rest
            elif kind == "HELP":
                if name in helps:
                    return f"line {n}: HELP twice"
                helps.add(name)
            else:
                if not name.endswith("_" + rest):
                    return f"line {n}: UNIT {rest} but the name does not end in it"
                units[name] = rest
            continue
        m = SAMPLE.match(line)
        if not m:
            return f"line {n}: not a sample: {line!r}"
        name = m.group(1)
        if name != current or name not in types:
            return f"line {n}: sample of {name} outside its family (TYPE first)"
        key = (name, m.group(2) or "")
        if key in seen:
            return f"line {n}: duplicate sample {line}"
        seen.add(key)
    return None


if __name__ == "__main__":
    text = open(sys.argv[1], encoding="utf-8").read()
    why = check(text.split("\n")[:-1] if text.endswith("\n") else [text])
    if why:
        print(f"om_check: {sys.argv[1]}: {why}", file=sys.stderr)
        sys.exit(1)
