# X_AC_UNWIND: libunwind (Debian: libunwind-dev) for allocation call stacks.
# Optional: without it the injected library falls back to glibc backtrace().
AC_DEFUN([X_AC_UNWIND], [
  x_ac_unwind=no
  UNWIND_LIBS=""
  AC_CHECK_HEADER([libunwind.h], [
    AC_CHECK_LIB([unwind], [unw_backtrace], [
      x_ac_unwind=yes
      UNWIND_LIBS="-lunwind"
      AC_DEFINE([HAVE_LIBUNWIND], [1], [Define if libunwind is available])
    ])
  ])
  AC_SUBST([UNWIND_LIBS])
])
