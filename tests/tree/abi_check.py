"""The collector's ABI, C against Python: common/event.h's GP_FW_* and GP_SNAP_* numbers
against FW_* and SNAP_* in agent/python/_gpuprof_abi.py, and agent/inject/inject.h's
gpuprof_fw_* prototypes against its SIGNATURES (read, not imported: nothing runs).
Prints each difference on one line (nothing: they agree); run from the source tree.
usage: python3 tests/tree/abi_check.py [PATH_OF_ABI_PY]"""
import ast
import re
import sys

CTYPES = {"int": "c_int", "unsigned": "c_uint", "uint64_t": "c_uint64", "const char *": "c_char_p",
          "void": None}


def c_numbers():
    src = open("common/event.h").read()
    out = {"FW_" + m.group(1): int(m.group(2))
           for m in re.finditer(r"GP_FW_([A-Z_]+)\s*=\s*(\d+)", src) if m.group(1) != "N"}
    out.update(("SNAP_" + m.group(1), int(m.group(2)))
               for m in re.finditer(r"GP_SNAP_([A-Z_]+)\s*=\s*(\d+)", src))
    return out


def c_calls():
    """gpuprof_fw_* in inject.h: name -> (result, [arguments]) as ctypes type names."""
    src = re.sub(r"\s+", " ", open("agent/inject/inject.h").read())
    out = {}
    for m in re.finditer(r"([a-z_0-9 ]+?\*?) ?(gpuprof_fw_\w+)\(([^)]*)\);", src):
        res = m.group(1).strip()
        args = [] if m.group(3).strip() == "void" else [
            re.sub(r"\s*\w+$", "", a.strip()).replace("char*", "char *") for a in m.group(3).split(",")]
        out[m.group(2)] = (CTYPES.get(res, "?" + res), [CTYPES.get(a, "?" + a) for a in args])
    return out


def py_side(path):
    tree = ast.parse(open(path).read())
    nums, sigs = {}, None
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        name = getattr(node.targets[0], "id", "")
        if re.match(r"(FW|SNAP)_[A-Z_]+$", name):
            nums[name] = ast.literal_eval(node.value)
        elif name == "SIGNATURES":
            sigs = ast.literal_eval(node.value)
    return nums, sigs or ()


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "agent/python/_gpuprof_abi.py"
    c, (py, sigs) = c_numbers(), py_side(path)
    bad = ["%s=%s" % kv for kv in sorted(set(c.items()) ^ set(py.items()))]
    if not c or not py:
        bad.append("no numbers found")
    calls = c_calls()
    for name, res, args in sigs:
        want = calls.get(name)
        if want is None:
            bad.append("%s: not in agent/inject/inject.h" % name)
        elif want != (res, list(args)):
            bad.append("%s: C %s%s, Python %s%s" % (name, want[0], tuple(want[1]), res, tuple(args)))
    if not sigs:
        bad.append("no SIGNATURES found")
    print("; ".join(bad))


main()
