#!/usr/bin/env python3
"""The text report's kernel table names each kernel so a person can tell what it is (wave 12):
read against report.json's whole demangled names, row for row, every shown name
- differs from every other row's,
- carries no "void ", no namespace PyTorch's names are full of ("at::native::", "std::",
  "(anonymous namespace)") and no parameter list,
- where it is not the whole name, is made of the name's own pieces (each piece between ".."
  found in the whole name once namespaces are dropped, in order), and, for a template,
  holds whole at least one identifier of the template's arguments that names something
  (a functor, an op, a lambda's function), never only the wrapper's head.
usage: kernel_names.py report.txt report.json; the last line says what was checked."""
import json
import re
import sys

PLAIN = set("""void bool char short int long unsigned signed float double const Half BFloat16
float2 float4 true false size_t lambda operator array TrivialOffsetCalculator OffsetCalculator
LoadWithCast StoreWithCast TensorListMetadata TensorListScalarListMetadata policy_hub
ReduceOp func_wrapper_t gpu_kernel_impl_nocast gpu_kernel_impl""".split())


def table(lines):
    """(name, calls) rows of the 'Top kernels' table, by its heading's columns"""
    i = next((i for i, l in enumerate(lines) if l.startswith("Top kernels by total GPU time")), None)
    if i is None:
        return []
    while not lines[i].startswith("name "):
        i += 1
    end = lines[i].index(" calls") - 1  # the name column ends where calls' cell may start
    rows = []
    for l in lines[i + 1:]:
        if l.startswith("mean:") or not l.strip():
            break
        rows.append(l[:end].rstrip())
    return rows


def no_namespaces(s):
    s = re.sub(r"\(anonymous namespace\)::", "", s)
    return re.sub(r"(?<![\w:>)}])[A-Za-z_]\w*::(?!\{)", "", s)


def signature_dropped(s):
    """the name without its parameter list (the last top-level parentheses)"""
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(s[i], 0)
        if not depth:
            return s[:i] if i else s
    return s


def named_args(full):
    """identifiers of the template's arguments that name something (not a cast's type)"""
    s = no_namespaces(signature_dropped(full))
    if s.startswith("void "):
        s = s[5:]
    i = s.find("<")
    if i < 0:
        return set()
    s = re.sub(r"\(\w+\)-?\d+", "", s[i:])
    return {w for w in re.findall(r"[A-Za-z_]\w*", s) if w not in PLAIN and len(w) > 3}


def main():
    text = open(sys.argv[1], encoding="utf-8").read().split("\n")
    kernels = json.load(open(sys.argv[2]))["kernels"]
    rows = table(text)
    bad = []
    if len(set(rows)) != len(rows):
        bad.append("rows read alike: %s" % sorted({r for r in rows if rows.count(r) > 1}))
    for shown, k in zip(rows, kernels):
        full = k["name"]
        if (shown == full or shown == full[5:]) and "::" not in full:
            continue  # a C name shown whole
        why = []
        if shown.startswith("void ") or re.search(r"at::native::|std::|\(anonymous namespace\)", shown):
            why.append("a namespace or 'void'")
        if re.search(r"[\w>]\(", shown.replace("{lambda(", "{")):  # "f(" or "f<T>(", not a cast
            why.append("a parameter list")
        flat = no_namespaces(full)
        at = 0
        for piece in [p for p in re.sub(r" #\d+$", "", shown).split("..") if p]:
            # a piece shows parts of the name with left out arguments between them
            for part in [q for q in re.split(r", |<|>", piece) if len(q) > 3]:
                j = flat.find(part, at)
                if j < 0 and part not in flat:
                    why.append("'%s' is not in the name" % part)
                    break
        args = named_args(full)
        # whole, or, a name longer than a column, its start
        if args and not any(re.search(r"(?<!\w)%s(?!\w)" % re.escape(a[:16] if len(a) > 24 else a),
                                      shown) or (len(a) > 24 and a[:16] in shown) for a in args):
            why.append("none of %s whole" % sorted(args)[:6])
        if why:
            bad.append("%s (for %.60s): %s" % (shown, full, "; ".join(why)))
    for b in bad:
        print(b)
    print("%d kernel rows, %d named badly" % (len(rows), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
