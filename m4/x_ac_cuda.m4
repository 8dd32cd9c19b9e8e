# X_AC_CUDA: CUDA toolkit (--with-cuda=PREFIX, default /usr/local/cuda): nvcc, cudart,
# cuBLAS and the NVTX3 headers. Everything but the injected library and the GPU workload
# builds without it.
AC_DEFUN([X_AC_CUDA], [
  AC_ARG_WITH([cuda],
    AS_HELP_STRING([--with-cuda=PREFIX], [CUDA toolkit prefix (default /usr/local/cuda)]),
    [x_ac_cuda_dir=$withval], [x_ac_cuda_dir=/usr/local/cuda])
  x_ac_cuda=no
  x_ac_nvcc=no
  x_ac_cublas=no
  x_ac_nvtx3=no
  CUDA_CPPFLAGS=""
  CUDA_LDFLAGS=""
  NVCC=""
  AS_IF([test "x$x_ac_cuda_dir" != xno], [
    _x_ac_cuda_inc=$x_ac_cuda_dir/include
    _x_ac_cuda_lib=$x_ac_cuda_dir/lib64
    AS_IF([test -f "$_x_ac_cuda_inc/cuda.h"], [x_ac_cuda=yes])
    AS_IF([test -f "$_x_ac_cuda_inc/nvtx3/nvToolsExt.h"], [x_ac_nvtx3=yes])
    AS_IF([test -x "$x_ac_cuda_dir/bin/nvcc"], [x_ac_nvcc=yes; NVCC="$x_ac_cuda_dir/bin/nvcc"])
    AS_IF([test -e "$_x_ac_cuda_lib/libcublas.so"], [x_ac_cublas=yes])
    CUDA_CPPFLAGS="-I$_x_ac_cuda_inc"
    CUDA_LDFLAGS="-L$_x_ac_cuda_lib -Wl,-rpath,$_x_ac_cuda_lib"
    # the collector module links libcupti without a RUNPATH into the build machine's
    # toolkit: the injected library finds it at run time (inject.c, preload_cupti)
    CUPTI_LDFLAGS="-L$_x_ac_cuda_lib"
    _x_ac_cupti_soname=`objdump -p "$_x_ac_cuda_lib/libcupti.so" 2>/dev/null | awk '/SONAME/ {print $[]2}'`
    AS_IF([test -z "$_x_ac_cupti_soname"], [_x_ac_cupti_soname=libcupti.so])
    AC_DEFINE_UNQUOTED([GP_CUDA_LIBDIR], ["$_x_ac_cuda_lib"], [the CUDA toolkit's libraries at build time])
    AC_DEFINE_UNQUOTED([GP_CUPTI_SONAME], ["$_x_ac_cupti_soname"], [libcupti's soname at build time])
  ])
  AC_SUBST([CUPTI_LDFLAGS])
  AM_CONDITIONAL([WITH_NVTX3], [test "x$x_ac_nvtx3" = xyes])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([NVCC])
])
