#!/bin/bash
# Python frames in allocation stacks: the CUPTI module's frame walker, called from CPython
# through ctypes.PyDLL (the GIL stays held, as in a cudaMalloc made by PyTorch on the
# Python thread) and through ctypes.CDLL (the GIL released: no frames). No GPU needed: the
# walker is the part of the allocation callback that touches Python.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
L=$B/.libs/libgpuprof-cupti.so
[ -f "$L" ] || skip_all "CUPTI module not built (no CUPTI headers)"
out=$(python3 - "$L" <<'PY'
import ctypes, sys, time
lib = ctypes.PyDLL(sys.argv[1])
lib.gp_cupti_pyframes.argtypes = [ctypes.c_char_p, ctypes.c_int]
buf = ctypes.create_string_buffer(8192)
def inner():
    lib.gp_cupti_pyframes(buf, 8192)
    return buf.value.decode()
def middle(): return inner()
def outer(): return middle()
print("frames", outer())
def deep(k): return deep(k - 1) if k else lib.gp_cupti_pyframes(buf, 8192)
print("capped", deep(40))
free = ctypes.CDLL(sys.argv[1])
free.gp_cupti_pyframes.argtypes = [ctypes.c_char_p, ctypes.c_int]
print("nogil", free.gp_cupti_pyframes(buf, 8192))
try:
    raise KeyError("pending")
except KeyError:
    lib.gp_cupti_pyframes(buf, 8192)
    print("exc", repr(sys.exc_info()[1]))
PY
)
ok $? "the walker runs inside CPython"
f=$(echo "$out" | sed -n 's/^frames //p')
case "$f" in "<stdin>:6 inner [python] <- <stdin>:8 middle [python] <- <stdin>:9 outer [python] <- <stdin>:10 <module> [python]")
	ok 0 "innermost first, file:line function ($f)" ;;
*) ok 1 "innermost first, file:line function ($f)" ;; esac
[ "$(echo "$out" | sed -n 's/^capped //p')" = 16 ]; ok $? "at most 16 frames from a 40-deep recursion"
[ "$(echo "$out" | sed -n 's/^nogil //p')" = 0 ]; ok $? "no frames for a thread without the GIL"
[ "$(echo "$out" | sed -n 's/^exc //p')" = "KeyError('pending')" ]; ok $? "the exception being handled is left as it was"
done_testing
