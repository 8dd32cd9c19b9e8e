"""The text report read as a person reads it (issue 49 item 6): no line over 100 characters,
and the lines the report cut (report/wrap.c) joined back into the sentences it wrote.

usage: textwidth.py check REPORT.txt [REPORT.json]   every line <= 100 characters, no
                                                     mangled C++ name (_ZN...); with the
                                                     JSON, each finding's title, evidence,
                                                     threshold and fix whole in the text
       textwidth.py unwrap [FILE]                    the text with its cut lines joined
                                                     (stdin without FILE), for grep

The rule that joins (wrap.h): a line that begins with a space continues the line before it
when that line, a space and the next line's first unit (its first token, with the token
after it while a token is a number) would be over the width: only a cut makes that."""
import json
import re
import sys

WIDTH = 100
NUMBER = re.compile(r"^[(~+-]?[0-9][0-9.,-]*$")
MANGLED = re.compile(r"(?<![A-Za-z0-9_])_Z[NLZ0-9]\w{3,}")  # Itanium C++ ABI


def first_unit(rest):
    """The first piece the cutter would not have parted: a number keeps the word after it."""
    toks = rest.split(" ")
    toks = [t for t in toks if t]
    n = 0
    for i, t in enumerate(toks):
        n += len(t) + (1 if i else 0)
        if not NUMBER.match(t):
            break
    return n


def unwrap(text):
    out = []
    prev = None  # the last physical line, as the cutter saw it
    for line in text.split("\n"):
        body = line.lstrip(" ")
        if (out and prev is not None and line.startswith(" ") and body
                and len(prev) + 1 + first_unit(body) > WIDTH):
            out[-1] += " " + body
        else:
            out.append(line)
        prev = line
    return "\n".join(out)


def words(s):
    return " ".join(s.split())


def check(txt, js=None):
    text = open(txt, encoding="utf-8", errors="replace").read()
    bad = [(i + 1, len(l)) for i, l in enumerate(text.split("\n")) if len(l) > WIDTH]
    for n, w in bad[:5]:
        print("%s:%d: %d characters" % (txt, n, w))
    mangled = MANGLED.findall(text)
    for m in mangled[:3]:
        print("%s: a mangled name: %s" % (txt, m[:60]))
    missing = []
    if js:
        flat = words(unwrap(text))
        for f in json.load(open(js))["findings"]:
            for k in ("title", "evidence", "threshold", "fix"):
                # the text makes control characters '?' (output.c)
                want = words(re.sub(r"[\x00-\x1f\x7f]", "?", f[k]))
                if want and want not in flat:
                    missing.append("%s %s" % (f["id"], k))
    for m in missing[:5]:
        print("%s: finding's %s not whole in the joined text" % (txt, m))
    print("%d lines over %d, %d mangled names, %d finding texts not whole"
          % (len(bad), WIDTH, len(mangled), len(missing)))
    return 1 if bad or missing or mangled else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "check":
        return check(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    if len(sys.argv) in (2, 3) and sys.argv[1] == "unwrap":
        src = open(sys.argv[2], encoding="utf-8", errors="replace") if len(sys.argv) == 3 else sys.stdin
        sys.stdout.write(unwrap(src.read()))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
