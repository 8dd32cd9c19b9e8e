#!/bin/bash
# The Debian packages (debian/): built with dpkg-buildpackage from the tracked tree,
# lintian clean at its default level, the plugin's Slurm dependency pinned to the Slurm
# it was built against, and, with a cluster (SLURM_CONF), installed and a profiled job
# run from the installed files alone: the snippet the package puts in
# /etc/slurm/plugstack.conf.d, the agent, the injected library and the CLI at their
# installed paths. The packages are purged at the end. The RPM spec is built too.
. "$(dirname "$0")/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || skip_all "no dpkg-buildpackage/debhelper"
[ "$(id -u)" = 0 ] || skip_all "installing packages needs root"
T=$(mktemp -d /var/tmp/gp-pkg.XXXXXX)
chmod 755 "$T"
PLUG=""
cleanup() {
	[ -n "$PLUG" ] && [ -f "$PLUG.pkgtest" ] && mv "$PLUG.pkgtest" "$PLUG"
	dpkg -P slurm-spank-gpuprof gpuprof >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
V=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
S=$T/gpuprof-$V
mkdir -p "$S"
(cd "$top" && git ls-files -co --exclude-standard | grep -v '^tests/fixtures/' | tar -cf - -T -) | tar -xf - -C "$S"
(cd "$S" && dpkg-buildpackage -us -uc -b) >"$T/build.log" 2>&1
ok $? "dpkg-buildpackage builds gpuprof and slurm-spank-gpuprof ($(tail -1 "$T/build.log"))"
D1=$T/gpuprof_${V}_$(dpkg --print-architecture).deb
D2=$T/slurm-spank-gpuprof_${V}_$(dpkg --print-architecture).deb
[ -f "$D1" ] && [ -f "$D2" ]; ok $? "both packages made"
if command -v lintian >/dev/null; then
	lintian "$T"/gpuprof_"${V}"_*.changes >"$T/lintian.out" 2>&1
	! grep -qE '^[EW]: ' "$T/lintian.out"; ok $? "lintian: no error or warning ($(grep -cE '^[EW]: ' "$T/lintian.out") $(grep -E '^[EW]: ' "$T/lintian.out" | head -2 | tr '\n' ' '))"
else
	skip "lintian not installed"
fi
sv=$(dpkg-query -W -f='${Version}' libslurm-dev | sed -e 's/^[0-9]*://' -e 's/-[^-]*$//')
dpkg -I "$D2" | grep -q "slurm-wlm-basic-plugins (>= $sv), slurm-wlm-basic-plugins (<< $sv+~)"
ok $? "the plugin depends on the Slurm it was built against ($sv)"
dpkg -c "$D2" 2>/dev/null | grep -q ' ./etc/slurm/plugstack.conf.d/gpuprof.conf$' && dpkg -c "$D1" 2>/dev/null | grep -q ' ./usr/libexec/gpuprof/gpuprof-agent$'
ok $? "the plugstack snippet and the agent where Debian's Slurm and FHS put them"
! dpkg -c "$D1" 2>/dev/null | grep -q '\.la$' && ! readelf -d "$S"/debian/gpuprof/usr/lib/*/gpuprof/libgpuprof-cupti.so | grep -qE 'RPATH|RUNPATH'
ok $? "no libtool archives, no RUNPATH into the build machine's CUDA"

# the RPM spec, kept buildable for RHEL-family sites (rpmbuild from Debian, the
# dependencies not checked: Debian has no slurm-devel package)
if command -v rpmbuild >/dev/null && [ -n "${GP_BUILD:-}" ]; then
	mkdir -p "$T/rpm/SOURCES"
	make -C "$GP_BUILD" dist >"$T/dist.log" 2>&1 && cp "$GP_BUILD/gpuprof-$V.tar.gz" "$T/rpm/SOURCES/" &&
		rpmbuild -bb --nodeps --define "_topdir $T/rpm" "$top/gpuprof.spec" >"$T/rpm.log" 2>&1
	ok $? "rpmbuild builds gpuprof.spec from make dist's tarball ($(tail -1 "$T/rpm.log"))"
	rpm -qp --requires "$T"/rpm/RPMS/*/slurm-spank-gpuprof-"$V"-*.rpm 2>/dev/null | grep -q "^slurm(.*) = $sv$" &&
		rpm -qpl "$T"/rpm/RPMS/*/gpuprof-"$V"-*.rpm 2>/dev/null | grep -q '/usr/libexec/gpuprof/gpuprof-agent$'
	ok $? "the RPM plugin requires the Slurm it was built against ($sv); the agent in libexec"
else
	skip "no rpmbuild or no configured build (GP_BUILD)"
	skip "no rpmbuild or no configured build (GP_BUILD)"
fi

if [ -z "${SLURM_CONF:-}" ]; then
	for _ in 1 2 3 4 5; do skip "no cluster (SLURM_CONF unset)"; done
	done_testing
	exit 0
fi
dpkg -i "$D1" "$D2" >"$T/install.log" 2>&1; ok $? "dpkg -i installs both ($(tail -1 "$T/install.log"))"
# the cluster loads what the package installed: its snippet, nothing of the build tree
PLUG=$(dirname "$SLURM_CONF")/plugstack.conf
cp "$PLUG" "$PLUG.pkgtest"
echo "include /etc/slurm/plugstack.conf.d/*.conf" >"$PLUG"
mkdir -p "$T/user" && chown gpuprof-test "$T/user"
(cd "$T/user" && timeout 120 runuser -u gpuprof-test -- env SLURM_CONF="$SLURM_CONF" srun --gpuprof=nvtx \
	/usr/libexec/gpuprof/gpuprof-train-mlp --steps 12 --dim 16 --layers 3 --batch 4 >"$T/job.out" 2>&1)
ok $? "a profiled srun step from the installed packages ($(tail -1 "$T/job.out"))"
j=$(ls -d "$T"/user/gpuprof-*/ 2>/dev/null | head -1)
[ -n "$j" ] && [ -f "$j/step0/rank0.gpr" ]; ok $? "its rank file in the job directory (${j:-none})"
/usr/bin/gpuprof report --format=json "$j" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"][0]
assert r["steps"]["count"] == 12 and r["complete"], r["steps"]' 2>"$T/rep.err"
ok $? "the installed gpuprof reports its 12 NVTX steps (the installed agent and injected library) $(tail -1 "$T/rep.err")"
mv "$PLUG.pkgtest" "$PLUG"
dpkg -P slurm-spank-gpuprof gpuprof >/dev/null 2>&1
[ ! -e /etc/slurm/plugstack.conf.d/gpuprof.conf ] && [ ! -e /etc/gpuprof.yaml ] && [ ! -e /usr/bin/gpuprof ]
ok $? "purged: snippet, site config and binaries gone"
done_testing
