# TAP helpers for the shell tiers (sourced).
_n=0
_fail=0
ok() { # ok CONDITION-EXIT-STATUS DESCRIPTION
	local st=$1; shift
	_n=$((_n + 1))
	if [ "$st" -eq 0 ]; then echo "ok $_n - $*"; else echo "not ok $_n - $*"; _fail=$((_fail + 1)); fi
}
check() { # check DESCRIPTION -- COMMAND...
	local d=$1; shift; [ "$1" = "--" ] && shift
	if "$@" >/dev/null 2>&1; then ok 0 "$d"; else ok 1 "$d"; fi
}
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
skip() { _n=$((_n + 1)); echo "ok $_n # SKIP $*"; }
diag() { echo "# $*"; }
done_testing() { echo "1..$_n"; [ "$_fail" -eq 0 ]; }
# The text report (stdin, or FILE) with the lines its cutter made joined back into the
# sentences it wrote (textwidth.py, report/wrap.h), for a grep of a phrase a cut may part.
_tap_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # the tiers cd away
unwrap() { python3 "$_tap_dir/textwidth.py" unwrap "$@"; }
