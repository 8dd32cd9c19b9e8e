# X_AC_SANITIZERS: --enable-sanitizers builds with ASan + UBSan (unit tier in CI).
AC_DEFUN([X_AC_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UndefinedBehaviorSanitizer]),
    [x_ac_sanitizers=$enableval], [x_ac_sanitizers=no])
  SAN_CFLAGS=""
  SAN_LDFLAGS=""
  AS_IF([test "x$x_ac_sanitizers" = xyes], [
    SAN_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    SAN_LDFLAGS="-fsanitize=address,undefined"
  ])
  AM_CONDITIONAL([WITH_SANITIZERS], [test "x$x_ac_sanitizers" = xyes])
  AC_SUBST([SAN_CFLAGS])
  AC_SUBST([SAN_LDFLAGS])
])
