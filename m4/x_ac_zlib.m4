# X_AC_ZLIB: zlib (Debian: zlib1g-dev) writes the gzip files an output named *.gz asks
# for (HTA, Perfetto and chrome://tracing read .json.gz traces). Required.
AC_DEFUN([X_AC_ZLIB], [
  AC_CHECK_HEADER([zlib.h], [], [AC_MSG_ERROR([zlib headers not found (Debian: zlib1g-dev)])])
  AC_CHECK_LIB([z], [gzdopen], [ZLIB_LIBS="-lz"],
    [AC_MSG_ERROR([zlib not found (Debian: zlib1g-dev)])])
  x_ac_zlib=yes
  AC_SUBST([ZLIB_LIBS])
])
