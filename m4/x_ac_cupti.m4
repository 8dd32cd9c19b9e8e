# X_AC_CUPTI: CUPTI headers and library in the CUDA toolkit. The injected library needs
# NVTX3 headers, CUPTI and cuda.h; the CUDA workload needs nvcc and cuBLAS.
AC_DEFUN([X_AC_CUPTI], [
  x_ac_cupti=no
  AS_IF([test "x$x_ac_cuda" = xyes && test -f "$x_ac_cuda_dir/include/cupti.h" && test -e "$x_ac_cuda_dir/lib64/libcupti.so"],
    [x_ac_cupti=yes])
  x_ac_inject=no
  AS_IF([test "x$x_ac_cupti" = xyes && test "x$x_ac_nvtx3" = xyes], [x_ac_inject=yes])
  x_ac_cuda_workload=no
  AS_IF([test "x$x_ac_nvcc" = xyes && test "x$x_ac_cublas" = xyes && test "x$x_ac_nvtx3" = xyes],
    [x_ac_cuda_workload=yes])
  AC_ARG_ENABLE([cuda-workload],
    AS_HELP_STRING([--disable-cuda-workload], [do not build the CUDA version of gpuprof-train-mlp]),
    [AS_IF([test "x$enableval" = xno], [x_ac_cuda_workload=no])])
  AM_CONDITIONAL([WITH_INJECT], [test "x$x_ac_inject" = xyes])
  AM_CONDITIONAL([WITH_CUDA_WORKLOAD], [test "x$x_ac_cuda_workload" = xyes])
])
