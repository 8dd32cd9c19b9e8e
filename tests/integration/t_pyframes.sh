#!/bin/bash
# Python frames in allocation stacks: the CUPTI module's frame walker, called from CPython
# through ctypes.PyDLL (the GIL stays held: the C API walker) and through ctypes.CDLL (the
# GIL released, as around every PyTorch operator and so around its caching allocator's
# cudaMalloc: the read-only walker, CPython 3.11 and 3.12). No GPU needed: the walker is
# the part of the allocation callback that touches Python.
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
def free_inner():
    n = free.gp_cupti_pyframes(buf, 8192)
    return buf.value.decode()
def free_middle(): return free_inner()
print("nogil", free_middle())
def thread_body(): print("thread", free_inner())
import threading
t = threading.Thread(target=thread_body); t.start(); t.join()
def deep_free(k): return deep_free(k - 1) if k else free.gp_cupti_pyframes(buf, 8192)
print("nogilcapped", deep_free(40))
t0 = time.perf_counter()
for _ in range(2000): deep_free(40)
print("cost16", round((time.perf_counter() - t0) / 2000 * 1e6, 1))
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
v=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
f=$(echo "$out" | sed -n 's/^nogil //p')
case "$v" in 3.11 | 3.12)
	case "$f" in "<stdin>:16 free_inner [python] <- <stdin>:18 free_middle [python] <- <stdin>:19 <module> [python]")
		ok 0 "GIL released (Python $v): the same frames, read without it ($f)" ;;
	*) ok 1 "GIL released (Python $v): the same frames, read without it ($f)" ;; esac
	f=$(echo "$out" | sed -n 's/^thread //p')
	case "$f" in "<stdin>:16 free_inner [python] <- <stdin>:20 thread_body [python] <- threading.py:"*)
		ok 0 "another thread's walk gives that thread's frames ($f)" ;;
	*) ok 1 "another thread's walk gives that thread's frames ($f)" ;; esac
	[ "$(echo "$out" | sed -n 's/^nogilcapped //p')" = 16 ]; ok $? "at most 16 frames without the GIL as well"
	echo "# 16 frames read without the GIL: $(echo "$out" | sed -n 's/^cost16 //p') us a walk (with the ctypes call)" ;;
*)
	[ "$f" = "" ]; ok $? "GIL released (Python $v, no read-only layout): no frames"
	skip "thread frames need CPython 3.11 or 3.12"; skip "cap without the GIL needs 3.11 or 3.12" ;;
esac
[ "$(echo "$out" | sed -n 's/^exc //p')" = "KeyError('pending')" ]; ok $? "the exception being handled is left as it was"
# under a seccomp filter (here one that allows everything) the read-only walker stays off:
# a filter may answer process_vm_readv by killing the process
sc=$(python3 - "$L" <<'PY'
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class Filt(ctypes.Structure): _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class Prog(ctypes.Structure): _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filt))]
allow = (Filt * 1)(Filt(0x06, 0, 0, 0x7FFF0000))  # BPF_RET|BPF_K, SECCOMP_RET_ALLOW
prog = Prog(1, allow)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(prog), 0, 0):  # NO_NEW_PRIVS, SECCOMP filter
    print("nofilter", ctypes.get_errno()); sys.exit(0)
free = ctypes.CDLL(sys.argv[1])
free.gp_cupti_pyframes.argtypes = [ctypes.c_char_p, ctypes.c_int]
buf = ctypes.create_string_buffer(8192)
held = ctypes.PyDLL(sys.argv[1]); held.gp_cupti_pyframes.argtypes = free.gp_cupti_pyframes.argtypes
print("filtered", free.gp_cupti_pyframes(buf, 8192), held.gp_cupti_pyframes(buf, 8192) > 0)
PY
)
case "$sc" in
"filtered 0 True") ok 0 "under a seccomp filter: no read-only walk, the GIL walker still works" ;;
nofilter*) skip "could not install a seccomp filter here ($sc)" ;;
*) ok 1 "under a seccomp filter: no read-only walk, the GIL walker still works ($sc)" ;;
esac
done_testing
