# X_AC_HARDENING: stack protector, fortify, RELRO/now for everything we install.
AC_DEFUN([X_AC_HARDENING], [
  HARDEN_CFLAGS="-fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIC"
  HARDEN_LDFLAGS="-Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack"
  AC_SUBST([HARDEN_CFLAGS])
  AC_SUBST([HARDEN_LDFLAGS])
])
