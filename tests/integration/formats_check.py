"""Every figure the text and the HTML report show of a rank or of the job, held to the JSON
field it claims to be (issue 49: comm% was 30.5 in the text and 4.7 in the HTML).
The per-rank tables are read back through `gpuprof fields --format=tables` (each column's
heading, JSON field, condition, width, scale and the most characters a text cell shows):
the text's rows by the positions of their heading's columns (widths are the job's own,
a wide table comes in blocks), the HTML's cells by their data-key; the headline's median and throughput by the
job's fields; the attribution tables (kernel time by operation and by source line: table
"attribution" of the listing, the columns of both), read by their heading's positions as
well, by their rows' names in the JSON's "operations" and "source_lines" (and "*_others"
for the rest summed). In the text every cell lies under its heading: a left-aligned one
starts where its heading starts, a right-aligned one ends where its heading ends.
A cell holds "-" exactly where the column's condition fails (not measured);
else its number equals the field's within the digits shown (bytes: within the digits of
their unit). Prints one line per problem and a last line "checked N cells"; exit 1 on any
problem.
usage: formats_check.py TABLES REPORT.json REPORT.txt REPORT.html"""
import html
import json
import re
import sys

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4, "PiB": 1024**5}
problems = []
checked = 0


def load_cols(path):
    tables = {}
    for line in open(path):
        t, head, key, when, width, scale, kind, most = line.rstrip("\n").split("\t")
        tables.setdefault(t, []).append(dict(head=head, key=None if key == "-" else key,
                                             when=None if when == "-" else when,
                                             width=int(width), scale=float(scale), kind=kind,
                                             most=None if most == "-" else int(most)))
    return tables


def field(rank, key):
    """The JSON value of "section.key" (None: null, its section null, or absent)."""
    if "." in key:
        sec, k = key.split(".", 1)
        obj = rank.get(sec)
        return obj.get(k) if isinstance(obj, dict) else None
    return rank.get(key)


def holds(col, rank):
    if col["when"] is None:
        return True
    v = field(rank, col["key"] if col["when"] == "=" else col["when"])
    return bool(v) if not isinstance(v, str) else v != ""


def shown_digits(s):
    return len(s.split(".")[1]) if "." in s else 0


def check_cell(where, col, rank, cell):
    """cell as shown; col its column; rank the JSON rank it is in."""
    global checked
    checked += 1
    v = field(rank, col["key"])
    if col["kind"] == "text":
        want = v if isinstance(v, str) else ""
        want = (shown_text(want, col["most"]) if where.startswith("text") else want).strip()
        if cell != (want or "-"):
            problems.append("%s: %s shows %r, the JSON %r" % (where, col["key"], cell, v))
        return
    if cell == "-":
        if holds(col, rank) and v is not None:
            problems.append("%s: %s shows '-' where the JSON has %r (its condition %s holds)"
                            % (where, col["key"], v, col["when"]))
        return
    if not holds(col, rank) or v is None:
        problems.append("%s: %s shows %r where it is not measured (JSON %r, condition %s)"
                        % (where, col["key"], cell, v, col["when"]))
        return
    if col["kind"] == "bytes":
        m = re.fullmatch(r"(-?[0-9.]+) (B|KiB|MiB|GiB|TiB|PiB)", cell)
        if not m:
            problems.append("%s: %s: %r is not a size" % (where, col["key"], cell))
            return
        unit = UNITS[m.group(2)]
        got, tol = float(m.group(1)) * unit, 0.5 * 10 ** -shown_digits(m.group(1)) * unit
    else:
        try:
            got = float(cell)
        except ValueError:
            problems.append("%s: %s: %r is not a number" % (where, col["key"], cell))
            return
        tol = 0.5 * 10 ** -shown_digits(cell)
    want = float(v) / col["scale"]
    # the JSON's own rounding (at least as many digits as shown, or an integer) beside
    # the cell's
    if abs(got - want) > tol * 1.001 + 1e-6 * abs(want) + 0.5e-6:
        problems.append("%s: %s shows %s, the JSON %r (= %g shown)" % (where, col["key"], cell, v, want))


def rank_of(label, ranks):
    """The JSON rank a row's label names ("3", "batch/3", "3 (slowest)")."""
    m = re.match(r"(?:(\S+)/)?(-?\d+)", label)
    if not m:
        return None
    for r in ranks:
        if r["rank"] == int(m.group(2)) and (m.group(1) is None or r["step"].startswith(m.group(1))):
            return r
    return None


def head_spans(line, cols):
    """The columns a heading line of this table holds, with where each heading starts and
    ends: the label's column, then a run of the table's columns in order (a wide job's
    table comes in blocks, each with the label in front). None: not a heading of it."""
    label = cols[0]["head"]
    if not line.startswith(label + " "):
        return None
    for j in range(1, len(cols)):
        spans, pos, k = [(cols[0], 0, len(label))], len(label), j
        while k < len(cols) and pos < len(line):
            rest = line[pos:].lstrip(" ")
            s = len(line) - len(rest)
            e = s + len(cols[k]["head"])
            if s == pos or not rest.startswith(cols[k]["head"]) or line[e:e + 1] not in ("", " "):
                break
            spans.append((cols[k], s, e))
            pos, k = e, k + 1
        if len(spans) > 1 and pos == len(line):
            return spans
    return None


def left(col):
    return col["kind"] == "text" or col["key"] is None


def row_cells(line, spans):
    """A row's cells read by its heading's positions: a left-aligned column starts where its
    heading starts and a right-aligned one ends where its heading ends, cells one space
    apart; between a left-aligned cell and the right-aligned one after it (where the line
    alone fixes no boundary), the right one is its last word (a size its last two: "1.2 GiB";
    a number holds no space) and the left one the rest."""
    cells = []
    start = 0  # where the current column's cell may start
    for n, (c, s, e) in enumerate(spans):
        nxt = spans[n + 1] if n + 1 < len(spans) else None
        if len(cells) > n:  # read already, as the last word(s) after a left cell
            start = e + 1
        elif not left(c):
            cells.append(line[start:e].strip())
            start = e + 1
        elif nxt is None:
            cells.append(line[s:].strip())
        elif left(nxt[0]):
            cells.append(line[s:nxt[1] - 1].strip())
        else:
            seg = line[s:nxt[2]]
            words = seg.split()
            k = 2 if nxt[0]["kind"] == "bytes" and len(words) > 2 and words[-1] in UNITS else 1
            # the last k words whatever follows them (a cell that ends short of its
            # heading's edge is misaligned's to say, not a label's to swallow)
            parts = seg.rsplit(None, k)
            cells += [parts[0].strip() if len(parts) > k else "", " ".join(parts[-k:])]
    return cells


def misaligned(line, spans):
    """The first column whose cell is not under its heading: a left-aligned cell starts where
    its heading starts, a right-aligned one ends where its heading ends (the boundary
    between a left cell and the right one after it, which the cells alone do not fix, is
    held this way: a number read as the last word must also end at its heading's right
    edge). None: all are."""
    for c, s, e in spans:
        if left(c):
            if s < len(line) and (line[s] == " " or (s and line[s - 1] != " ")):
                return c["head"]
        elif line[e - 1:e] in ("", " ") or line[e:e + 1] not in ("", " "):
            return c["head"]
    return None


def shown_text(v, most):
    """A text field as the text shows it: whole, or cut past `most` characters with "..." """
    return v if most is None or len(v) <= most else v[:most - 3] + "..."


def text_tables(text, tables, ranks):
    lines = text.split("\n")
    found = 0
    for tid, cols in tables.items():
        starts = [(i, sp) for i, l in enumerate(lines) for sp in [head_spans(l, cols)] if sp]
        if not starts:
            continue
        found += 1
        shown = set()
        for i, spans in starts:
            shown.update(c["head"] for c, _, _ in spans)
            rows = 0
            for line in lines[i + 1:]:
                if not re.match(r"(\S+/)?-?\d+ ", line):
                    if line.startswith("       "):  # a rank's detail line under its row
                        continue
                    break
                label = line.split(" ")[0]
                rank = rank_of(label, ranks)
                if rank is None:
                    problems.append("text %s: row %r names no rank of the JSON" % (tid, label))
                    continue
                rows += 1
                off = misaligned(line, spans)
                if off:
                    problems.append("text %s rank %s: the cell of %r is not under its heading"
                                    % (tid, label, off))
                for (c, _, _), cell in list(zip(spans, row_cells(line, spans)))[1:]:
                    check_cell("text %s rank %s" % (tid, label), c, rank, cell)
            if not rows:
                problems.append("text %s: a heading without a row" % tid)
        missing = [c["head"] for c in cols if c["head"] not in shown]
        if missing:
            problems.append("text %s: columns %s in no heading" % (tid, missing))
    return found


def html_tables(page, tables, ranks):
    found = 0
    for tid, cols in tables.items():
        m = re.search(r'<table id="table-%s">(.*?)</table>' % re.escape(tid), page, re.S)
        if not m:
            problems.append("html: no table %s" % tid)
            continue
        found += 1
        bykey = {c["key"]: c for c in cols if c["key"]}
        for row in re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S)[1:]:
            who = re.search(r'<td class="who">(.*?)</td>', row)
            rank = rank_of(html.unescape(who.group(1)), ranks) if who else None
            if rank is None:
                problems.append("html %s: a row that names no rank" % tid)
                continue
            cells = re.findall(r'<td data-key="([^"]+)">(.*?)</td>', row)
            if len(cells) != len(bykey):
                problems.append("html %s: %d cells for %d columns" % (tid, len(cells), len(bykey)))
            for key, cell in cells:
                if key not in bykey:
                    problems.append("html %s: a cell of %s, no column" % (tid, key))
                    continue
                check_cell("html %s rank %d" % (tid, rank["rank"]), dict(bykey[key], width=0),
                           rank, html.unescape(cell))
    return found


def attr_row_of(label, rows, others):
    """The JSON row a label of an attribution table names (cut with "..." to its width)."""
    if re.fullmatch(r"\(\d+ others\)", label):
        return others if others and others.get("name") == label else None
    exact = [r for r in rows if r["name"] == label]
    if exact:
        return exact[0]
    cut = [r for r in rows if label.endswith("...") and r["name"].startswith(label[:-3])]
    return cut[0] if len(cut) == 1 else None


def attr_cell(where, col, row, cell):
    """A cell of an attribution table held to its row's JSON field."""
    global checked
    checked += 1
    if col["key"] not in row:
        problems.append("%s: %s is no field of the JSON's row" % (where, col["key"]))
        return
    v = row[col["key"]]
    if cell == "-":  # not known (null: JAX's calls), or a time per call where there is no call
        if v is not None and (col["key"] != "mean_ns_per_call" or row.get("calls")):
            problems.append("%s: %s shows '-' where the JSON has %r" % (where, col["key"], v))
        return
    if v is None:
        problems.append("%s: %s shows %r where the JSON has null (not known)" % (where, col["key"], cell))
        return
    if col["kind"] == "percent":
        cell = cell.rstrip("%").strip()
    try:
        got = float(cell)
    except ValueError:
        problems.append("%s: %s: %r is not a number" % (where, col["key"], cell))
        return
    tol, want = 0.5 * 10 ** -shown_digits(cell), float(v) / col["scale"]
    # the JSON's own rounding (share %.3f, ns per call an integer) beside the cell's
    if abs(got - want) > tol * 1.001 + 1e-6 * abs(want) + 0.5e-6:
        problems.append("%s: %s shows %s, the JSON %r (= %g shown)" % (where, col["key"], cell, v, want))


def attr_tables(job, text, page, cols):
    """The text's and the HTML's tables of kernel time by operation and by line: each row
    named in the JSON, each cell its field. Returns the tables found."""
    attr = job.get("attribution") or {}
    arrays = ["operations", "source_lines"]
    lines = text.split("\n")
    # a heading: the rows' label ("operation", "line" or "function", left-aligned), then
    # every column of the listing in order, each cell read by its heading's positions as
    # the per-rank tables' are (head_spans, row_cells), whatever the widths
    heads = []
    for i, l in enumerate(lines):
        for lab in ("operation", "line", "function"):
            spans = head_spans(l, [dict(head=lab, key=None, kind="text")] + cols)
            if spans and len(spans) == len(cols) + 1:
                heads.append((i, spans))
    found = 0
    for n, (i, spans) in enumerate(heads[:2]):
        found += 1
        rows, others = attr.get(arrays[n], []), attr.get(arrays[n] + "_others")
        for line in lines[i + 1:]:
            if not line or line.startswith("share:"):
                break
            cells = row_cells(line, spans)
            label = cells[0]
            row = attr_row_of(label, rows, others)
            if row is None:
                problems.append("text %s: row %r names no row of the JSON" % (arrays[n], label))
                continue
            off = misaligned(line, spans)
            if off:
                problems.append("text %s %r: the cell of %r is not under its heading" % (arrays[n], label, off))
            for (c, _, _), cell in list(zip(spans, cells))[1:]:
                attr_cell("text %s %r" % (arrays[n], label), c, row, cell)
    bykey = {c["key"]: c for c in cols}
    for n, tid in enumerate(["attr-ops", "attr-lines"]):
        m = re.search(r'<table id="%s">(.*?)</table>' % tid, page, re.S)
        if not m:
            continue
        found += 1
        rows, others = attr.get(arrays[n], []), attr.get(arrays[n] + "_others")
        for tr in re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S)[1:]:
            name = re.match(r"<td>(.*?)</td>", tr)
            label = html.unescape(name.group(1)) if name else ""
            row = attr_row_of(label, rows, others)
            if row is None:
                problems.append("html %s: row %r names no row of the JSON" % (tid, label))
                continue
            cells = re.findall(r'<td data-key="([^"]+)">(.*?)</td>', tr)
            if [k for k, _ in cells] != [c["key"] for c in cols]:
                problems.append("html %s %r: cells %s, columns %s" % (tid, label, [k for k, _ in cells],
                                                                       [c["key"] for c in cols]))
            for key, cell in cells:
                if key in bykey:
                    attr_cell("html %s %r" % (tid, label), bykey[key], row, html.unescape(cell))
    if attr.get("operations") and found < 4:
        problems.append("the JSON has %d operation rows, %d of the 4 tables shown" %
                        (len(attr["operations"]), found))
    return found


def job_figures(job, text, page):
    """The headline's median and throughput in the text and the HTML."""
    global checked
    m = re.search(r"job median ([0-9.]+) ms", text)
    shown = [("text", "step_median_ms", m.group(1))] if m else []
    m = re.search(r"throughput: ([0-9.e+]+) steps/s, a step every ([0-9.]+) ms", text)
    if m:
        shown += [("text", "steps_per_second", m.group(1)), ("text", "step_mean_period_ms", m.group(2))]
    elif job.get("steps_per_second"):
        problems.append("text: no throughput line where the JSON has %r steps/s" % job["steps_per_second"])
    for key, val in re.findall(r'<span data-job="([^"]+)">([^<]*)</span>', page):
        shown.append(("html", key, val))
    if job.get("steps_per_second") and not any(w == "html" and k == "steps_per_second" for w, k, _ in shown):
        problems.append("html: no throughput where the JSON has %r steps/s" % job["steps_per_second"])
    for where, key, val in shown:
        checked += 1
        want = float(job[key])
        digits = shown_digits(val)
        # %.4g: four significant digits
        tol = 0.5 * 10 ** -digits if "e" not in val else abs(float(val)) * 5e-4
        if key == "steps_per_second" and "." in val:
            tol = max(tol, abs(want) * 5e-4)
        if abs(float(val) - want) > tol * 1.001 + 1e-9:
            problems.append("%s: %s shows %s, the JSON %r" % (where, key, val, job[key]))


def main():
    tables = load_cols(sys.argv[1])
    acols = tables.pop("attribution", [])
    job = json.load(open(sys.argv[2]))
    text = open(sys.argv[3]).read()
    page = open(sys.argv[4]).read()
    ranks = job["ranks"]
    nt = text_tables(text, tables, ranks)
    nh = html_tables(page, tables, ranks)
    job_figures(job, text, page)
    na = attr_tables(job, text, page, acols)
    for p in problems[:40]:
        print(p)
    print("checked %d cells (%d text tables, %d HTML tables, %d attribution tables)" % (checked, nt, nh, na))
    sys.exit(1 if problems else 0)


main()
