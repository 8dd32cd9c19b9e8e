# X_AC_YAML: libyaml (Debian: libyaml-dev) for the site configuration. Required.
AC_DEFUN([X_AC_YAML], [
  AC_CHECK_HEADER([yaml.h], [], [AC_MSG_ERROR([libyaml headers not found (Debian: libyaml-dev)])])
  AC_CHECK_LIB([yaml], [yaml_parser_initialize], [YAML_LIBS="-lyaml"],
    [AC_MSG_ERROR([libyaml not found (Debian: libyaml-dev)])])
  x_ac_yaml=yes
  AC_SUBST([YAML_LIBS])
])
