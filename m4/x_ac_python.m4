# X_AC_PYTHON: Python's headers (Debian: python3-dev, RPM: python3-devel) for the PyTorch
# integration's C extension (agent/python/_gpuprof_fast.c: the limited API of 3.10, one
# build for every CPython from 3.10 on). Optional: without it the integration calls the
# injected library through ctypes, which costs ~11 us more a step on the H200.
# --without-python-ext leaves it out; --with-python-ext insists on it.
AC_DEFUN([X_AC_PYTHON], [
  AC_ARG_WITH([python-ext],
    [AS_HELP_STRING([--without-python-ext],
      [no C extension for the PyTorch integration (it then uses ctypes)])],
    [], [with_python_ext=check])
  x_ac_python_ext=no
  PYTHON_CFLAGS=
  AS_IF([test "x$with_python_ext" != xno], [
    AC_PATH_PROGS([PYTHON3_CONFIG], [python3-config])
    AS_IF([test -n "$PYTHON3_CONFIG"], [PYTHON_CFLAGS=`$PYTHON3_CONFIG --includes 2>/dev/null`])
    x_ac_python_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $PYTHON_CFLAGS"
    AC_MSG_CHECKING([for Python.h with the 3.10 limited API])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#define Py_LIMITED_API 0x030a0000
#include <Python.h>]], [[int f = METH_FASTCALL; (void)f; return PY_VERSION_HEX < 0x030a0000;]])],
      [x_ac_python_ext=yes], [x_ac_python_ext=no])
    AC_MSG_RESULT([$x_ac_python_ext])
    CPPFLAGS=$x_ac_python_save_CPPFLAGS
    AS_IF([test "x$with_python_ext$x_ac_python_ext" = xyesno],
      [AC_MSG_ERROR([Python 3.10+ headers not found (Debian: python3-dev)])])
  ])
  AC_SUBST([PYTHON_CFLAGS])
  AM_CONDITIONAL([WITH_PYEXT], [test "x$x_ac_python_ext" = xyes])
])
