# X_AC_DW: elfutils' libdw (Debian: libdw-dev) for `gpuprof export --format=memviz`:
# native frames of allocation stacks symbolised to function and file:line at report time.
# Optional: without it native frames keep the collector's symbol+offset (library).
AC_DEFUN([X_AC_DW], [
  x_ac_dw=no
  DW_LIBS=""
  AC_CHECK_HEADER([elfutils/libdwfl.h], [
    AC_CHECK_LIB([dw], [dwfl_module_getsrc], [
      x_ac_dw=yes
      DW_LIBS="-ldw -lelf"
      AC_DEFINE([HAVE_LIBDW], [1], [Define if elfutils libdw is available])
    ], [], [-lelf])
  ])
  AC_SUBST([DW_LIBS])
])
