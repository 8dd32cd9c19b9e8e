# X_AC_SLURM: spank.h for the plugin (--with-slurm=PREFIX). Never links libslurm:
# slurmstepd loads the plugin and provides every spank_* symbol itself.
AC_DEFUN([X_AC_SLURM], [
  AC_ARG_WITH([slurm],
    AS_HELP_STRING([--with-slurm=PREFIX], [Slurm installation prefix holding include/slurm/spank.h]),
    [x_ac_slurm_dir=$withval], [x_ac_slurm_dir=/usr])
  x_ac_slurm=no
  x_ac_slurm_prepend=no
  x_ac_slurm_version=none
  SLURM_CPPFLAGS=""
  AS_IF([test "x$x_ac_slurm_dir" != xno], [
    _x_ac_save_CPPFLAGS=$CPPFLAGS
    SLURM_CPPFLAGS="-I$x_ac_slurm_dir/include"
    CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
    AC_CHECK_HEADER([slurm/spank.h], [x_ac_slurm=yes], [], [[#include <stdint.h>]])
    AS_IF([test "x$x_ac_slurm" = xyes], [
      AC_CHECK_DECL([spank_prepend_task_argv], [
        x_ac_slurm_prepend=yes
        AC_DEFINE([HAVE_SPANK_PREPEND_TASK_ARGV], [1], [spank_prepend_task_argv (Slurm >= 23.11)])
      ], [], [[#include <stdint.h>
#include <slurm/spank.h>]])
      AC_COMPUTE_INT([_x_ac_sv], [SLURM_VERSION_NUMBER], [[#include <slurm/slurm_version.h>]], [_x_ac_sv=0])
      x_ac_slurm_version=$(( _x_ac_sv >> 16 )).$(( (_x_ac_sv >> 8) & 255 )).$(( _x_ac_sv & 255 ))
    ])
    CPPFLAGS=$_x_ac_save_CPPFLAGS
  ])
  AM_CONDITIONAL([WITH_SLURM], [test "x$x_ac_slurm" = xyes])
  AC_SUBST([SLURM_CPPFLAGS])
])
