#!/bin/bash
# The Debian packages (debian/): built with dpkg-buildpackage from the tracked tree,
# lintian clean at its default level, Section admin, a licence in debian/copyright, the
# plugin's Slurm dependency pinned to the Slurm it was built against, man pages with the
# version and cross-references that resolve; and, with a cluster (SLURM_CONF), installed
# and not active until the admin links the shipped plugstack line (as pyxis), then a
# profiled job run from the installed files alone (the agent, the injected library, the
# CLI), found again by its job id through its AdminComment, an array task's too; removing
# the plugin package removes the admin's link (a dangling include would fail every srun);
# purged at the end. The RPM spec is built too.
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
# the release series of the spank.h it was built against (slurmstepd masks the micro
# release), of Debian's or SchedMD's plugins package
read -r smaj smin < <(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\(..\)\(..\)..$/0x\1 0x\2/p' /usr/include/slurm/slurm_version.h)
sv=$(printf '%d.%02d' "$smaj" "$smin"); snext=$(printf '%d.%02d' "$smaj" $((smin + 1)))
dpkg -I "$D2" | grep -qF "slurm-wlm-basic-plugins (>= $sv) | slurm-smd (>= $sv), slurm-wlm-basic-plugins (<< $snext~) | slurm-smd (<< $snext~)"
ok $? "the plugin depends on the series it was built against ($sv), Debian's or SchedMD's ($(dpkg -f "$D2" Depends | tr -s ' ' | head -c 200))"
grep -q "^Build-Depends:.*" "$S/debian/control" && grep -q "libslurm-dev | slurm-smd-dev," "$S/debian/control"
ok $? "it builds against Debian's libslurm-dev or SchedMD's slurm-smd-dev"
dpkg -c "$D2" 2>/dev/null | grep -q ' ./usr/share/gpuprof/plugstack.conf.d/gpuprof.conf$' &&
	! dpkg -c "$D2" 2>/dev/null | grep -q ' ./etc/' && dpkg -c "$D1" 2>/dev/null | grep -q ' ./usr/libexec/gpuprof/gpuprof-agent$'
ok $? "the plugstack line shipped under /usr/share (nothing in /etc/slurm), the agent in libexec"
[ "$(dpkg -f "$D1" Section)" = admin ] && [ "$(dpkg -f "$D2" Section)" = admin ]; ok $? "Section: admin, as pyxis, munge and Slurm's plugins"
grep -q '^License: GPL-2+' "$S/debian/gpuprof/usr/share/doc/gpuprof/copyright" && grep -q 'slurmstepd' "$S/debian/gpuprof/usr/share/doc/gpuprof/copyright"
ok $? "debian/copyright: GPL-2.0-or-later, and why (the plugin is loaded into slurmstepd)"
grep -q '^allowed_modes: all,layers$' "$S/debian/gpuprof/etc/gpuprof.yaml"; ok $? "/etc/gpuprof.yaml allows layers, as the documented default"
! dpkg -c "$D1" 2>/dev/null | grep -q '\.la$' && ! readelf -d "$S"/debian/gpuprof/usr/lib/*/gpuprof/libgpuprof-cupti.so | grep -qE 'RPATH|RUNPATH'
ok $? "no libtool archives, no RUNPATH into the build machine's CUDA"

# the RPM spec, kept buildable for RHEL-family sites (rpmbuild from Debian, the
# dependencies not checked: Debian has no slurm-devel package)
if command -v rpmbuild >/dev/null && [ -n "${GP_BUILD:-}" ]; then
	mkdir -p "$T/rpm/SOURCES"
	make -C "$GP_BUILD" dist >"$T/dist.log" 2>&1 && cp "$GP_BUILD/gpuprof-$V.tar.gz" "$T/rpm/SOURCES/" &&
		rpmbuild -bb --nodeps --define "_topdir $T/rpm" "$top/gpuprof.spec" >"$T/rpm.log" 2>&1
	ok $? "rpmbuild builds gpuprof.spec from make dist's tarball ($(tail -1 "$T/rpm.log"))"
	req=$(rpm -qp --requires "$T"/rpm/RPMS/*/slurm-spank-gpuprof-"$V"-*.rpm 2>/dev/null)
	echo "$req" | grep -q "^slurm(.*) >= $sv$" && echo "$req" | grep -q "^slurm(.*) < $snext$" &&
		rpm -qpl "$T"/rpm/RPMS/*/gpuprof-"$V"-*.rpm 2>/dev/null | grep -q '/usr/libexec/gpuprof/gpuprof-agent$' &&
		rpm -qpl "$T"/rpm/RPMS/*/slurm-spank-gpuprof-"$V"-*.rpm 2>/dev/null | grep -q '/usr/lib64/slurm/gpuprof.so$'
	ok $? "the RPM plugin requires the series it was built against ($sv, before $snext), in Slurm's RPM plugin directory; the agent in libexec"
else
	skip "no rpmbuild or no configured build (GP_BUILD)"
	skip "no rpmbuild or no configured build (GP_BUILD)"
fi

# configure --with-slurm=PREFIX finds spank.h there and the plugin directory of that
# Slurm: here a SchedMD-package layout (PREFIX/lib/TRIPLET/slurm, Slurm's plugins in it)
if [ -n "${GP_BUILD:-}" ]; then
	L=$T/smd; trip=$(gcc -print-multiarch)
	mkdir -p "$L/include" "$L/lib/$trip/slurm" "$L/lib/$trip/slurm-none" "$T/cfg"
	cp -r /usr/include/slurm "$L/include/"
	touch "$L/lib/$trip/slurm/select_cons_tres.so" "$L/lib/$trip/slurm/proctrack_pgid.so"
	(cd "$T/cfg" && "$top/configure" --with-slurm="$L" --disable-cuda-workload >cfg.log 2>&1)
	grep -q "Slurm spank.h           : yes ($sv\." "$T/cfg/cfg.log" &&
		grep -qF "plugin directory      : $L/lib/$trip/slurm (Slurm's own plugins are there)" "$T/cfg/cfg.log" &&
		grep -qx "slurmdir = $L/lib/$trip/slurm" "$T/cfg/Makefile"
	ok $? "configure --with-slurm=PREFIX: its spank.h ($sv) and its plugin directory ($(grep 'plugin directory' "$T/cfg/cfg.log" | tr -s ' '))"
else
	skip "no configured build (GP_BUILD)"
fi

if [ -z "${SLURM_CONF:-}" ]; then
	for _ in $(seq 11); do skip "no cluster (SLURM_CONF unset)"; done
	done_testing
	exit 0
fi
dpkg -i "$D1" "$D2" >"$T/install.log" 2>&1; ok $? "dpkg -i installs both ($(tail -1 "$T/install.log"))"
# the man pages as installed: the version, no template left, every cross-reference there
bad=""
for m in gpuprof.1 gpuprof.yaml.5 gpuprof-agent.8 gpuprof-spank.8; do
	f=$(man -w "$m" 2>/dev/null) || { bad="$bad $m(not installed)"; continue; }
	zcat -f "$f" | grep -q "gpuprof $V" || bad="$bad $m(version)"
	zcat -f "$f" | grep -q '@[A-Z_]*@' && bad="$bad $m(template)"
	for ref in $(zcat -f "$f" | sed -n 's/^\.BR \([a-z][a-z.\\-]*\) (\([1-8]\)).*/\1.\2/p' | sed 's/\\-/-/g'); do
		man -w "${ref##*.}" "${ref%.*}" >/dev/null 2>&1 || bad="$bad $m:$ref"
	done
	for d in $(zcat -f "$f" | grep -o '/usr/share/doc/gpuprof/[a-z]*\.md'); do [ -f "$d" ] || bad="$bad $m:$d"; done
done
[ -z "$bad" ]; ok $? "installed man pages: version $V, no @...@, every cross-reference (spank(7) ...) and doc path resolves${bad:+;$bad}"
# installed, not enabled: the cluster reads what Debian's plugstack.conf reads
PLUG=$(dirname "$SLURM_CONF")/plugstack.conf
cp "$PLUG" "$PLUG.pkgtest"
echo "include /etc/slurm/plugstack.conf.d/*.conf" >"$PLUG"
mkdir -p "$T/user" && chown gpuprof-test "$T/user"
[ ! -e /etc/slurm/plugstack.conf.d/gpuprof.conf ] &&
	! (cd "$T/user" && timeout 60 runuser -u gpuprof-test -- env SLURM_CONF="$SLURM_CONF" srun --gpuprof=nvtx true) >"$T/off.out" 2>&1 &&
	grep -qi "unrecognized option\|invalid option\|unknown option" "$T/off.out"
ok $? "installed, not active: srun knows no --gpuprof until the admin links the line ($(tail -1 "$T/off.out"))"
ln -s /usr/share/gpuprof/plugstack.conf.d/gpuprof.conf /etc/slurm/plugstack.conf.d/gpuprof.conf
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
# the job by its id: the directory from the dir= its AdminComment carries (written by the
# detached report once the job has ended)
jid=$(basename "$j"); jid=${jid#gpuprof-} # the default template: gpuprof-%j
for _ in $(seq 60); do sacct -j "$jid" -X -n -P -o AdminComment 2>/dev/null | grep -q "dir=" && break; sleep 1; done
ac=$(sacct -j "$jid" -X -n -P -o AdminComment 2>/dev/null)
(cd / && runuser -u gpuprof-test -- env SLURM_CONF="$SLURM_CONF" /usr/bin/gpuprof report --format=json "$jid") 2>"$T/byid.err" |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["ranks"][0]["steps"]["count"] == 12' 2>>"$T/byid.err"
ok $? "gpuprof report $jid, from /: the directory its AdminComment names ($ac) $(tail -1 "$T/byid.err")"
mkdir -p "$T/user/elsewhere" && chown gpuprof-test "$T/user/elsewhere"
(cd "$T/user" && timeout 120 runuser -u gpuprof-test -- env SLURM_CONF="$SLURM_CONF" sbatch --wait -o /dev/null --array=1-2 \
	--gpuprof=nvtx --gpuprof-output="$T/user/elsewhere/arr-%j" \
	--wrap "srun /usr/libexec/gpuprof/gpuprof-train-mlp --steps 12 --dim 16 --layers 3 --batch 4" >"$T/arr.out" 2>&1)
aj=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$T/arr.out")
for _ in $(seq 60); do sacct -j "${aj}_2" -X -n -P -o AdminComment 2>/dev/null | grep -q "dir=" && break; sleep 1; done
(cd / && runuser -u gpuprof-test -- env SLURM_CONF="$SLURM_CONF" /usr/bin/gpuprof report --format=json "${aj}_2") 2>"$T/arr.err" |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert "/elsewhere/arr-" in d["dir"] and d["ranks"], d["dir"]' 2>>"$T/arr.err"
ok $? "an array task by its id (${aj}_2), its directory where --gpuprof-output put it $(tail -1 "$T/arr.err")"
# accounting may list the second task a moment after the first: wait until it has both
for _ in $(seq 60); do [ "$(sacct -j "$aj" -X -n -P -o JobID 2>/dev/null | grep -c .)" -ge 2 ] && break; sleep 1; done
(cd / && /usr/bin/gpuprof report "$aj" >/dev/null 2>"$T/arr2.err"); rc=$?
[ $rc = 1 ] && grep -q "name one, as ${aj}_N" "$T/arr2.err"; ok $? "the array's own id: which task? ($(cat "$T/arr2.err"))"
# removing the plugin removes the admin's link with it; srun works without it
dpkg -r slurm-spank-gpuprof >/dev/null 2>&1
[ ! -e /etc/slurm/plugstack.conf.d/gpuprof.conf ] && [ ! -L /etc/slurm/plugstack.conf.d/gpuprof.conf ] &&
	(cd "$T/user" && timeout 60 runuser -u gpuprof-test -- env SLURM_CONF="$SLURM_CONF" srun true) >"$T/rm.out" 2>&1
ok $? "dpkg -r: the link to the shipped line goes with the package, srun still runs ($(tail -1 "$T/rm.out"))"
mv "$PLUG.pkgtest" "$PLUG"
dpkg -P slurm-spank-gpuprof gpuprof >/dev/null 2>&1
[ ! -e /etc/slurm/plugstack.conf.d/gpuprof.conf ] && [ ! -e /etc/gpuprof.yaml ] && [ ! -e /usr/bin/gpuprof ] &&
	[ ! -e /usr/share/gpuprof ] && ! dpkg -l gpuprof slurm-spank-gpuprof 2>/dev/null | grep -q '^[a-z][a-z] '
ok $? "purged: site config, shipped line, binaries and the packages' records gone"
done_testing
