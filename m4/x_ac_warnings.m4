# X_AC_WARNINGS: -Wall -Wextra always; --enable-werror (CI) adds -Werror.
AC_DEFUN([X_AC_WARNINGS], [
  AC_ARG_ENABLE([werror],
    AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors]),
    [x_ac_werror=$enableval], [x_ac_werror=no])
  WARN_CFLAGS="-Wall -Wextra -Wno-unused-parameter -Wformat=2 -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-format-truncation"
  AS_IF([test "x$x_ac_werror" = xyes], [WARN_CFLAGS="$WARN_CFLAGS -Werror"])
  AC_SUBST([WARN_CFLAGS])
])
