# X_AC_ZSTD: zstd (Debian: libzstd-dev) compresses rank-file chunks. Required.
AC_DEFUN([X_AC_ZSTD], [
  AC_CHECK_HEADER([zstd.h], [], [AC_MSG_ERROR([zstd headers not found (Debian: libzstd-dev)])])
  AC_CHECK_LIB([zstd], [ZSTD_compress], [ZSTD_LIBS="-lzstd"],
    [AC_MSG_ERROR([libzstd not found (Debian: libzstd-dev)])])
  x_ac_zstd=yes
  AC_SUBST([ZSTD_LIBS])
])
