# X_AC_SLURM: spank.h for the plugin, and where that Slurm loads plugins from.
#   --with-slurm=PREFIX          the Slurm whose include/slurm/spank.h the plugin is built
#                                against: Debian's (slurm-wlm, libslurm-dev), SchedMD's
#                                packages (slurm-smd-dev), an RPM's (slurm-devel) or one
#                                built from source; without it, pkg-config's slurm where
#                                there is one, else /usr
#   --with-slurm-plugindir=DIR   where the plugin is installed (slurmdir); without it, the
#                                plugin directory of that Slurm when --with-slurm or
#                                pkg-config named one (Debian's PREFIX/lib/TRIPLET/slurm-wlm,
#                                SchedMD's PREFIX/lib/TRIPLET/slurm, PREFIX/lib64/slurm,
#                                PREFIX/lib/slurm: the first that holds Slurm's own plugins),
#                                else $(libdir)/slurm
# Never links libslurm: slurmstepd loads the plugin and provides every spank_* symbol.
# slurmstepd loads a SPANK plugin only of its own major.minor release (plugin.c masks the
# micro release): the summary names the release the plugin is for.
AC_DEFUN([X_AC_SLURM], [
  AC_ARG_WITH([slurm],
    AS_HELP_STRING([--with-slurm=PREFIX], [Slurm installation prefix holding include/slurm/spank.h]),
    [x_ac_slurm_dir=$withval; x_ac_slurm_given=yes], [x_ac_slurm_dir=/usr; x_ac_slurm_given=no])
  AC_ARG_WITH([slurm-plugindir],
    AS_HELP_STRING([--with-slurm-plugindir=DIR], [install the SPANK plugin in DIR (default: that Slurm's plugin directory)]),
    [x_ac_slurm_plugindir=$withval], [x_ac_slurm_plugindir=])
  AC_PATH_TOOL([PKG_CONFIG], [pkg-config])
  x_ac_slurm=no
  x_ac_slurm_prepend=no
  x_ac_slurm_version=none
  x_ac_slurm_found_by=prefix
  SLURM_CPPFLAGS=""
  AS_IF([test "x$x_ac_slurm_given" = xno && test -n "$PKG_CONFIG" && $PKG_CONFIG --exists slurm 2>/dev/null], [
    x_ac_slurm_dir=$($PKG_CONFIG --variable=prefix slurm)
    x_ac_slurm_pc_libdir=$($PKG_CONFIG --variable=libdir slurm)
    x_ac_slurm_found_by=pkg-config
  ])
  AS_IF([test "x$x_ac_slurm_dir" != xno], [
    _x_ac_save_CPPFLAGS=$CPPFLAGS
    SLURM_CPPFLAGS="-I$x_ac_slurm_dir/include"
    AS_IF([test "x$x_ac_slurm_found_by" = xpkg-config],
      [SLURM_CPPFLAGS="$($PKG_CONFIG --cflags-only-I slurm) $SLURM_CPPFLAGS"])
    CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
    AC_CHECK_HEADER([slurm/spank.h], [x_ac_slurm=yes], [], [[#include <stdint.h>]])
    AS_IF([test "x$x_ac_slurm" = xyes], [
      AC_CHECK_DECL([spank_prepend_task_argv], [
        x_ac_slurm_prepend=yes
        AC_DEFINE([HAVE_SPANK_PREPEND_TASK_ARGV], [1], [spank_prepend_task_argv (Slurm >= 23.11)])
      ], [], [[#include <stdint.h>
#include <slurm/spank.h>]])
      AC_COMPUTE_INT([_x_ac_sv], [SLURM_VERSION_NUMBER], [[#include <slurm/slurm_version.h>]], [_x_ac_sv=0])
      x_ac_slurm_version=$(( _x_ac_sv >> 16 )).$(printf %02d $(( (_x_ac_sv >> 8) & 255 ))).$(( _x_ac_sv & 255 ))
    ])
    CPPFLAGS=$_x_ac_save_CPPFLAGS
  ])
  _X_AC_SLURM_PLUGINDIR
  AM_CONDITIONAL([WITH_SLURM], [test "x$x_ac_slurm" = xyes])
  AC_SUBST([SLURM_CPPFLAGS])
  AC_SUBST([SLURM_PLUGINDIR])
])

# The plugin directory of the Slurm found above (SLURM_PLUGINDIR, the Makefile's slurmdir).
AC_DEFUN([_X_AC_SLURM_PLUGINDIR], [
  AC_MSG_CHECKING([where that Slurm loads plugins from])
  SLURM_PLUGINDIR='${libdir}/slurm'
  x_ac_slurm_plugindir_why="the default; --with-slurm-plugindir=DIR names another"
  _x_ac_triplet=$($CC -print-multiarch 2>/dev/null)
  AS_IF([test -n "$x_ac_slurm_plugindir"], [
    SLURM_PLUGINDIR=$x_ac_slurm_plugindir
    x_ac_slurm_plugindir_why="--with-slurm-plugindir"
  ], [test "x$x_ac_slurm" = xyes && { test "x$x_ac_slurm_given" = xyes || test "x$x_ac_slurm_found_by" = xpkg-config; }], [
    _x_ac_first=""
    _x_ac_plugins=no
    for _x_ac_d in ${x_ac_slurm_pc_libdir:+$x_ac_slurm_pc_libdir/slurm} \
        ${_x_ac_triplet:+$x_ac_slurm_dir/lib/$_x_ac_triplet/slurm-wlm} \
        ${_x_ac_triplet:+$x_ac_slurm_dir/lib/$_x_ac_triplet/slurm} \
        $x_ac_slurm_dir/lib64/slurm $x_ac_slurm_dir/lib/slurm; do
      test -d "$_x_ac_d" || continue
      test -n "$_x_ac_first" || _x_ac_first=$_x_ac_d
      # Slurm's own plugins (every build has proctrack, select or auth plugins)
      for _x_ac_p in "$_x_ac_d"/proctrack_*.so "$_x_ac_d"/select_*.so "$_x_ac_d"/auth_*.so; do
        test -f "$_x_ac_p" && _x_ac_plugins=yes
      done
      if test "x$_x_ac_plugins" = xyes; then
        _x_ac_first=$_x_ac_d
        break
      fi
    done
    AS_IF([test -n "$_x_ac_first"], [
      SLURM_PLUGINDIR=$_x_ac_first
      AS_IF([test "x$_x_ac_plugins" = xyes],
        [x_ac_slurm_plugindir_why="Slurm's own plugins are there"],
        [x_ac_slurm_plugindir_why="the first of Slurm's plugin directories there (none holds a plugin yet)"])
    ], [
      AC_MSG_WARN([no plugin directory of Slurm under $x_ac_slurm_dir: the plugin goes to \$(libdir)/slurm; --with-slurm-plugindir=DIR names it])
    ])
  ])
  AC_MSG_RESULT([$SLURM_PLUGINDIR])
])
