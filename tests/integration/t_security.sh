#!/bin/bash
# Security tests, numbered (as munge keeps them): root acting on what a user wrote. Each
# plants what a hostile user can in files of their own (a spool entry, a job directory)
# and runs gpuprof as root, as the epilog or an admin does, then checks that root wrote
# nothing outside the directory it was given, followed no link, read no other user's
# file, replaced no file of the user's with its own, and did not hang. Needs root and the
# user gpuprof-test (scripts/test creates it).
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
[ "$(id -u)" = 0 ] || skip_all "needs root"
U=gpuprof-test
id "$U" >/dev/null 2>&1 || skip_all "no user $U (useradd -M -s /bin/bash $U)"
UID_U=$(id -u "$U")
H=$B/tests/fuzz/mkhostile
T=$(mktemp -d /var/tmp/gp-sec.XXXXXX); chmod 755 "$T"; trap 'rm -rf "$T"' EXIT
as_user() { runuser -u "$U" -- "$@"; }
owner() { stat -c %U "$1"; }
"$H" absurd 10 "$T/src" >/dev/null || skip_all "mkhostile failed"
# a dead agent's spool entry of the user's (no process has pid 4194000), its dest as given
n_entry=0
entry() { # DEST -> prints the entry's path
	n_entry=$((n_entry + 1))
	local d=$T/spool$n_entry/gpuprof-$UID_U/job1.0.0.4194000
	mkdir -p "$d"; cp "$T/src/step0/rank0.gpr" "$d/rank.gpr"; printf '%s' "$1" >"$d/dest"
	chown -R "$U" "$T/spool$n_entry/gpuprof-$UID_U"; chmod 700 "$T/spool$n_entry/gpuprof-$UID_U" "$d"
	echo "$d"
}
userdir() { mkdir -p "$1"; chown "$U" "$1"; chmod 755 "$1"; }

# 1. salvage as root: an absolute dest naming a root-only file
mkdir -p "$T/rootonly/step0"; chmod 700 "$T/rootonly"; echo ROOT >"$T/rootonly/step0/rank0.gpr"
chmod 600 "$T/rootonly/step0/rank0.gpr"
e=$(entry "$T/rootonly/step0/rank0.gpr")
timeout 20 "$B/gpuprof" salvage "$e" >"$T/1.out" 2>&1
[ "$(cat "$T/rootonly/step0/rank0.gpr")" = ROOT ] && [ "$(owner "$T/rootonly/step0/rank0.gpr")" = root ]
ok $? "S01: root's salvage of a user's spool does not replace a root-only file its dest names"
# 2. salvage as root: no root-owned directory made on the user's word
mkdir -p "$T/rootdir"; chmod 755 "$T/rootdir"
e=$(entry "$T/rootdir/made/step0/rank0.gpr")
timeout 20 "$B/gpuprof" salvage "$e" >"$T/2.out" 2>&1
[ ! -e "$T/rootdir/made" ]; ok $? "S02: root's salvage makes no directory its dest names in a root directory"
# 3. --into: a dest with "../" out of it into a root-owned file
mkdir -p "$T/ssh"; echo KEYS >"$T/ssh/authorized_keys"; userdir "$T/into3"
e=$(entry "/j/step0/../../../../../../../..$T/ssh/authorized_keys")
timeout 20 "$B/gpuprof" salvage --into "$T/into3" "$e" >"$T/3.out" 2>&1
[ "$(cat "$T/ssh/authorized_keys")" = KEYS ]; ok $? "S03: a dest with ../ does not leave --into (authorized_keys untouched)"
grep -q "not salvaged" "$T/3.out"; ok $? "S03: and salvage says why ($(tail -1 "$T/3.out"))"
# 4. --into: a wrong count of ../ made root-owned directories outside it
userdir "$T/into4"
e=$(entry "/j/step0/../../made4/step0/rank0.gpr")
timeout 20 "$B/gpuprof" salvage --into "$T/into4" "$e" >/dev/null 2>&1
[ ! -e "$T/made4" ] && [ -z "$(find "$T/into4" -user root)" ]
ok $? "S04: no directory made outside --into, nothing of root's inside it"
# 5. the control: a well-formed dest is salvaged, as the user
userdir "$T/into5"
e=$(entry "/home/x/gpuprof-1/step0/rank3.gpr")
timeout 20 "$B/gpuprof" salvage --into "$T/into5" "$e" >"$T/5.out" 2>&1
[ -f "$T/into5/step0/rank3.gpr" ] && [ "$(owner "$T/into5/step0/rank3.gpr")" = "$U" ]
ok $? "S05: a well-formed spool is salvaged into --into, as its owner ($(tail -1 "$T/5.out"))"
# 6. a FIFO as dest: the epilog's salvage (as the user) and root's do not wait on it
e=$(entry x); rm -f "$e/dest"; mkfifo "$e/dest"; chown "$U" "$e/dest"
s=$(date +%s)
timeout 20 "$B/gpuprof" salvage "$e" >/dev/null 2>&1; r1=$?
as_user timeout 20 "$B/gpuprof" salvage --job 1 --spool "$(dirname "$(dirname "$e")")" --into "$T/into5" >/dev/null 2>&1; r2=$?
[ $r1 -ne 124 ] && [ $r2 -ne 124 ]; ok $? "S06: a FIFO named dest holds neither salvage ($(( $(date +%s) - s )) s; exits $r1, $r2)"

# a user's job directory (the user's files in it, as the agent makes them)
userdir "$T/u"
job() { # DIR (under $T/u) CASE N
	as_user "$H" "$2" "$3" "$1" >/dev/null
	chmod 755 "$1" "$1/step0"; chmod 644 "$1/step0/rank0.gpr"
}
pick() { python3 -c 'import pickle,sys; pickle.dump({"segments": [{"device": 0, "address": 4096, "total_size": 4096, "allocated_size": 4096, "active_size": 4096, "stream": 0, "segment_type": "large", "blocks": [{"size": 4096, "state": "active_allocated", "frames": [{"filename": sys.argv[2], "line": 1, "name": "f"}]}]}], "device_traces": [[]]}, open(sys.argv[1], "wb"), protocol=2)' "$1" "$2"; }
# 7. memviz as root: a pickle that is a link to a root-only snapshot is not read
job "$T/u/mv" snapshot 5
pick "$T/secret.pickle" ROOT-SECRET; chmod 600 "$T/secret.pickle"
as_user ln -s "$T/secret.pickle" "$T/u/mv/step0/rank0.torch-exit.pickle"
timeout 60 "$B/gpuprof" export --format=memviz -o "$T/7.pickle" "$T/u/mv" >/dev/null 2>&1
! grep -q ROOT-SECRET "$T/7.pickle" 2>/dev/null; ok $? "S07: root's memviz export does not follow a user's link to a root-only pickle"
# 8. the control: the user's own pickle there is what the export holds
rm -f "$T/u/mv/step0/rank0.torch-exit.pickle"; pick "$T/u/mv/step0/rank0.torch-exit.pickle" USER-SNAPSHOT
chown "$U" "$T/u/mv/step0/rank0.torch-exit.pickle"
timeout 60 "$B/gpuprof" export --format=memviz -o "$T/8.pickle" "$T/u/mv" >/dev/null 2>&1
grep -q USER-SNAPSHOT "$T/8.pickle" 2>/dev/null; ok $? "S08: the user's own snapshot is exported (the path 7 attacks is the one taken)"
# 9. a FIFO as the pickle does not hang the export
rm -f "$T/u/mv/step0/rank0.torch-exit.pickle"; as_user mkfifo "$T/u/mv/step0/rank0.torch-exit.pickle"
timeout 60 "$B/gpuprof" export --format=memviz -o "$T/9.pickle" "$T/u/mv" >/dev/null 2>&1
[ $? -ne 124 ]; ok $? "S09: a FIFO named rank0.torch-exit.pickle does not hang root's memviz export"
# 10. a FIFO as a rank's summary does not hang the report (root's or the user's)
job "$T/u/gps" noise 200
as_user mkfifo "$T/u/gps/step0/rank0.gps"
timeout 60 "$B/gpuprof" report --quiet "$T/u/gps" >/dev/null 2>&1; r1=$?
as_user timeout 60 "$B/gpuprof" report --quiet "$T/u/gps" >/dev/null 2>&1; r2=$?
[ $r1 -eq 0 ] && [ $r2 -eq 0 ]; ok $? "S10: a FIFO named rank0.gps hangs no report (root exits $r1, the user $r2)"
# 11. root's report of a user's job leaves the user's report files the user's
job "$T/u/rep" absurd 10
as_user "$B/gpuprof" report --quiet "$T/u/rep" >/dev/null 2>&1
before=$(stat -c '%U %a %i' "$T/u/rep/report.txt" "$T/u/rep/report.json" "$T/u/rep/job.json" | tr '\n' ' ')
"$B/gpuprof" report "$T/u/rep" >"$T/11.txt" 2>"$T/11.err"; rc=$?
after=$(stat -c '%U %a %i' "$T/u/rep/report.txt" "$T/u/rep/report.json" "$T/u/rep/job.json" | tr '\n' ' ')
[ "$before" = "$after" ] && [ $rc -eq 0 ] && grep -q "ranks" "$T/11.txt"
ok $? "S11: root's report prints, and leaves the user's report.txt/json and job.json as they were ($after)"
# 12. a rank file that is a link to another user's file is not read by root's report
mkdir -p "$T/other"; cp "$T/src/step0/rank0.gpr" "$T/other/secret.gpr"; chmod 600 "$T/other/secret.gpr"
job "$T/u/lnk" absurd 10
as_user ln -s "$T/other/secret.gpr" "$T/u/lnk/step0/rank9.gpr"
"$B/gpuprof" report --format=json "$T/u/lnk" 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); assert [r["rank"] for r in j["ranks"]] == [0], j["ranks"]'
ok $? "S12: a rank file that is a link is not read (rank 9 left out)"

# exports: whole or not at all, never through a link at -o
job "$T/u/ex" absurd 10
echo KEEP >"$T/keep.out"
"$B/gpuprof" export --format=memviz -o "$T/keep.out" "$T/u/ex" >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] && [ "$(cat "$T/keep.out")" = KEEP ]; ok $? "S13: a failed export leaves the -o file as it was (exit $rc)"
echo TARGET >"$T/target"; ln -s "$T/target" "$T/link.out"
"$B/gpuprof" export --format=chrome -o "$T/link.out" "$T/u/ex" >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] && [ "$(cat "$T/target")" = TARGET ] && [ -L "$T/link.out" ]
ok $? "S14: an export to a link at -o writes nothing through it and keeps the link (exit $rc)"
"$B/gpuprof" export --format=memviz -o "$T/link.out" "$T/u/ex" >/dev/null 2>&1
[ "$(cat "$T/target")" = TARGET ] && [ -L "$T/link.out" ]; ok $? "S15: nor does a failed one (the link's target was truncated, the link removed)"
"$B/gpuprof" export --format=chrome -o "$T/new.json" "$T/u/ex" >/dev/null 2>&1 && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/new.json" &&
	[ -z "$(ls -A "$T" | grep '\.tmp\.')" ]
ok $? "S16: the control: an export to a new file is written whole, no temporary file left"
"$B/gpuprof" report -o "$T/link.out" "$T/u/ex" >/dev/null 2>&1
[ "$(cat "$T/target")" = TARGET ]; ok $? "S17: report -o does not write through a link either"

# AdminComment: the summary line's directory is the user's text
d="$T/u/x; JS1:Zm9yZ2Vk; site:tag=999; d5"
job "$d" absurd 10
line=$(as_user "$B/gpuprof" report --quiet --summary-line "$d" 2>/dev/null)
case $line in gpuprof:*) r=0 ;; *) r=1 ;; esac
[ $r = 0 ] && ! printf '%s' "$line" | grep -q ';'; ok $? "S18: the summary line of a directory named '...; JS1:...; site:tag=999; ...' forges no '; KEY:' entry ($line)"

# Round 3's second review (session 21)
# 19. a step directory that is a link to another user's job: root's report does not read it
mkdir -p "$T/victim"; "$H" absurd 10 "$T/victim/job" >/dev/null; mv "$T/victim/job/step0/rank0.gpr" "$T/victim/job/step0/rank7.gpr"
chmod -R go-rwx "$T/victim"
job "$T/u/sl" absurd 10
as_user ln -s "$T/victim/job/step0" "$T/u/sl/step1"
"$B/gpuprof" report --format=json "$T/u/sl" 2>"$T/19.err" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert [r["rank"] for r in j["ranks"]] == [0], j["ranks"]' &&
	grep -q "step1: a link; not read" "$T/19.err"
ok $? "S19: a step directory that is a link to another user's job is not read by root's report ($(head -c 200 "$T/19.err"))"
# 20. a rank file in the user's job that is not the user's (a hard link, where protected_hardlinks
#     is off, of another user's file; root stands in for the user, who could make it there)
job "$T/u/hl" absurd 10
cp "$T/src/step0/rank0.gpr" "$T/u/hl/step0/rank8.gpr"; chown nobody "$T/u/hl/step0/rank8.gpr"; chmod 600 "$T/u/hl/step0/rank8.gpr"
"$B/gpuprof" report --format=json "$T/u/hl" 2>"$T/20.err" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert [r["rank"] for r in j["ranks"]] == [0], j["ranks"]' &&
	grep -q "rank8.gpr: owned by uid $(id -u nobody), not by the job directory's owner" "$T/20.err"
ok $? "S20: a rank file of another user's in the job directory is not read by root's report"
# 27. nor a root-owned one there (a hard link of root's own job's file: the caller's own
#     files were taken, so root's report read it)
job "$T/u/rh" absurd 10
cp "$T/src/step0/rank0.gpr" "$T/u/rh/step0/rank6.gpr"; chmod 600 "$T/u/rh/step0/rank6.gpr"
"$B/gpuprof" report --format=json "$T/u/rh" 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); assert [r["rank"] for r in j["ranks"]] == [0], j["ranks"]'
ok $? "S27: a root-owned rank file in a user's job directory is not read by root's report"
# 28. a job directory that is the user's link to another user's job is not followed by root
as_user ln -s "$T/victim/job" "$T/u/jl"
"$B/gpuprof" report --format=json "$T/u/jl" >/dev/null 2>"$T/28.err"; rc=$?
[ $rc -ne 0 ] && grep -q "not followed as root" "$T/28.err"; ok $? "S28: root does not report another user's job through a user's link to it (exit $rc)"
# 29. the control: the user's own report of a job assembled from links to their own steps
job "$T/u/own1" absurd 10; mkdir -p "$T/u/own2"; chown "$U" "$T/u/own2"; as_user ln -s "$T/u/own1/step0" "$T/u/own2/step0"
as_user "$B/gpuprof" report --format=json "$T/u/own2" 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); assert [r["rank"] for r in j["ranks"]] == [0], j["ranks"]'
ok $? "S29: the control: a user's own report follows their own step links"
# 21. a rank file that is a link is not even opened by root (the summary lookup opened it,
#     read its ends, and only then refused it: a device's open runs with root's rights)
if command -v strace >/dev/null; then
	job "$T/u/so" absurd 10
	echo "root secret" >"$T/secret"; chmod 600 "$T/secret"
	as_user ln -s "$T/secret" "$T/u/so/step0/rank3.gpr"
	GPUPROF_SUMMARY_MIN_BYTES=0 strace -f -e trace=openat -o "$T/21.trace" "$B/gpuprof" report --quiet "$T/u/so" >/dev/null 2>&1
	! grep "rank3.gpr" "$T/21.trace" | grep -v O_NOFOLLOW | grep -q . && grep -q "rank3.gpr" "$T/21.trace"
	ok $? "S21: a rank file that is a link is opened by root only with O_NOFOLLOW ($(grep -c rank3.gpr "$T/21.trace") opens, $(grep rank3.gpr "$T/21.trace" | grep -vc O_NOFOLLOW) without)"
else
	skip "S21: strace not installed (scripts/deps installs it)"
fi
# 22. a rank file with a 20 GB hole in it (16 KB on disk): the reader skips holes
job "$T/u/sp" absurd 10
truncate -s +20G "$T/u/sp/step0/rank0.gpr"
s=$(date +%s%N); timeout 60 "$B/gpuprof" report --quiet "$T/u/sp" >/dev/null 2>&1; rc=$?; e=$((($(date +%s%N) - s) / 1000000))
[ $rc -eq 0 ] && [ $e -lt 30000 ]; ok $? "S22: a rank file with a 20 GB hole is reported in $e ms (exit $rc; byte by byte it took 95 s)"
# 25. after a bad chunk, a file of nothing but chunk magics ("GPC1" every 4 bytes, 32 MiB):
#     the resynchronising reader re-read its 1 MiB window after each false magic (hours)
# 26. after it, 24-byte chunk headers whose own CRC holds but whose 500 KB payload's does
#     not, 8 MiB of them: each a CRC over 500 KB
for n in 25 26; do
	job "$T/u/rs$n" absurd 10
	python3 - "$T/u/rs$n/step0/rank0.gpr" $n <<'PY'
import struct, sys
path, n = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, "rb").read())
hlen = struct.unpack_from("<I", b, 12)[0]
first = 20 + hlen
b[first + 20] ^= 0xFF  # the first chunk's header CRC: a bad chunk, the reader resynchronises
t = []
for i in range(256):
    c = i
    for _ in range(8): c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    t.append(c)
def crc(d):
    c = 0xFFFFFFFF
    for x in d: c = t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
if n == 25:
    tail = b"GPC1" * (8 << 20)
else:
    h = struct.pack("<5I", 0x31435047, 500000, 1000, 1, 0)
    h += struct.pack("<I", crc(h))
    tail = h * ((8 << 20) // 24)
open(path, "wb").write(bytes(b[:first + 24]) + tail)
PY
	s=$(date +%s%N); timeout 120 "$B/gpuprof" report --quiet "$T/u/rs$n" >/dev/null 2>&1; rc=$?; e=$((($(date +%s%N) - s) / 1000000))
	[ $rc -ne 124 ] && [ $e -lt 60000 ]; ok $? "S$n: a rank file of $([ $n = 25 ] && echo '32 MiB of chunk magics' || echo '8 MiB of chunk headers whose payloads are not theirs') after a bad chunk is read in $e ms (exit $rc)"
done
# 23. a directory named like a job id in the current directory does not stand in for the job
mkdir -p "$T/fake"; cat >"$T/fake/sacct" <<SACCT
#!/bin/sh
# a stand-in for sacct that knows job 94, whose directory is $T/u/j94
j=; p=; for a; do [ "\$p" = -j ] && j=\$a; p=\$a; f=\$a; done
case \$j:\$f in
94:JobIDRaw) echo 94 ;;
94:AdminComment) echo "gpuprof: steps=1 dir=$T/u/j94" ;;
94:WorkDir) echo "$T/u" ;;
96:JobIDRaw) echo 96 ;; # a job without a gpuprof directory
96:WorkDir) echo "$T/u" ;;
esac
SACCT
chmod 755 "$T/fake/sacct"
job "$T/u/j94" absurd 10
userdir "$T/cwd"; as_user mkdir -p "$T/cwd/94/step0"; "$H" noise 200 "$T/n" >/dev/null; cp "$T/n/step0/rank0.gpr" "$T/cwd/94/step0/rank5.gpr"; chown -R "$U" "$T/cwd/94"
dir_is() { python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["dir"] == sys.argv[1], j["dir"]' "$1"; }
(cd "$T/cwd" && PATH=$T/fake:$PATH "$B/gpuprof" report --format=json 94 2>"$T/23.err") | dir_is "$T/u/j94" &&
	grep -q "not the directory 94 here" "$T/23.err" &&
	(cd "$T/cwd" && PATH=$T/fake:$PATH "$B/gpuprof" report --format=json ./94 2>/dev/null) | dir_is ./94
ok $? "S23: 'gpuprof report 94' is job 94 even with a directory 94 here (said); './94' is the directory"
as_user cp -r "$T/cwd/94" "$T/cwd/95"; as_user cp -r "$T/cwd/94" "$T/cwd/96"
(cd "$T/cwd" && PATH=$T/fake:$PATH "$B/gpuprof" report --format=json 95 2>"$T/24.err") | dir_is 95 && grep -q "sacct knows no such job" "$T/24.err"
ok $? "S24: the control: where sacct knows no job 95, another user's directory 95 here is what '95' names (said)"
(cd "$T/cwd" && PATH=$T/fake:$PATH "$B/gpuprof" report --format=json 96 >/dev/null 2>"$T/30.err"); rc=$?
[ $rc -ne 0 ] && grep -q "(./96 names the directory 96 here)" "$T/30.err"
ok $? "S30: where sacct knows job 96 but not its directory, another user's directory 96 does not stand in for it (exit $rc)"
mkdir -p "$T/cwd/97"; cp -r "$T/cwd/94/step0" "$T/cwd/97/"
(cd "$T/cwd" && PATH=$T/fake:$PATH "$B/gpuprof" report --format=json 97 2>"$T/31.err") | dir_is 97 && ! grep -q . "$T/31.err"
ok $? "S31: the control: the caller's own directory 97 is taken at once, sacct not asked"
# Round 4 (issue 51)
# a rank file's header rewritten (the user's to write: the agent writes it as the user)
sethdr() { # FILE KEY VALUE
	python3 - "$@" <<'PY'
import struct, sys
path, key, val = sys.argv[1:4]
b = open(path, "rb").read()
ver, tl = struct.unpack_from("<II", b, 8)
text = b[20:20 + tl].decode()
lines = [l for l in text.split("\n") if l and not l.startswith(key + "=")]
text = "\n".join([key + "=" + val] + lines) + "\n"
t = []
for i in range(256):
    c = i
    for _ in range(8): c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    t.append(c)
c = 0xFFFFFFFF
for x in text.encode(): c = t[(c ^ x) & 0xFF] ^ (c >> 8)
hdr = b[:8] + struct.pack("<III", ver, len(text.encode()), c ^ 0xFFFFFFFF) + text.encode()
open(path, "wb").write(hdr + b[20 + tl:])
PY
}
# 32. root's Kineto export of a user's job whose header names the step
#     "/../../../victim/t": it wrote root's rank0.json over another user's file there
job "$T/u/kx" noise 200
sethdr "$T/u/kx/step0/rank0.gpr" step /../../../victim/t # (root stands in for the user: the file stays theirs)
mkdir -p "$T/victim/t" "$T/o/x"; echo VICTIM >"$T/victim/t/rank0.json"; chown -R nobody "$T/victim/t"
"$B/gpuprof" export --format=kineto -o "$T/o/x" "$T/u/kx" >/dev/null 2>"$T/32.err"; rc=$?
[ "$(cat "$T/victim/t/rank0.json")" = VICTIM ] && [ "$(owner "$T/victim/t/rank0.json")" = nobody ] &&
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/o/x/step0/rank0.json" && [ ! -e "$T/o/x/step" ]
ok $? "S32: root's Kineto export writes under -o by its own names (step0/rank0.json), never where a header's step '/../../../victim/t' leads (exit $rc)"
# 33. a requeued job's attempts (step0, step0.attempt1: the same step in both headers)
#     each keep their trace; one overwrote the other
job "$T/u/kq" noise 200
as_user mkdir "$T/u/kq/step0.attempt1"; as_user cp "$T/u/kq/step0/rank0.gpr" "$T/u/kq/step0.attempt1/rank0.gpr"
"$B/gpuprof" export --format=kineto -o "$T/o/q" "$T/u/kq" >/dev/null 2>&1
[ -s "$T/o/q/step0/rank0.json" ] && [ -s "$T/o/q/step0.attempt1/rank0.json" ]
ok $? "S33: a requeued attempt's Kineto trace is kept apart ($(cd "$T/o/q" 2>/dev/null && find . -name '*.json' | sort | tr '\n' ' '))"
# 34. -o inside the user's job (the user can write there): a link the user planted at
#     -o/step0 is not followed by root
userdir "$T/u/ko"; as_user ln -s "$T/rootdir" "$T/u/ko/step0"; mkdir -p "$T/rootdir"
"$B/gpuprof" export --format=kineto -o "$T/u/ko" "$T/u/kx" >/dev/null 2>"$T/34.err"; rc=$?
[ $rc -ne 0 ] && [ -z "$(ls -A "$T/rootdir")" ] && grep -q "a link is not followed" "$T/34.err"
ok $? "S34: a link planted at -o/step0 is not written through by root's Kineto export (exit $rc: $(head -c 160 "$T/34.err"))"
# 35. the link check covers every component: a user's link to another's directory in the
#     middle of the path (u/mid -> victim, then u/mid/job) was followed as root
as_user ln -s "$T/victim" "$T/u/mid"
"$B/gpuprof" report --format=json "$T/u/mid/job" >/dev/null 2>"$T/35.err"; rc=$?
[ $rc -ne 0 ] && grep -q "u/mid: a link of uid $UID_U's to uid 0's directory: not followed as root" "$T/35.err"
ok $? "S35: root's report does not follow a user's link in the middle of the path (exit $rc: $(head -c 160 "$T/35.err"))"
# 36-38. the live view (ledger --running, top): alice's WorkDir holds gpuprof-500 -> bob's
#     running job 600; ledger --running showed bob's figures on alice's job, top read them
live() { # DIR JOB OWNER: a running rank's live file
	mkdir -p "$1/step0"
	python3 -c 'import json,sys,time; t=time.time(); open(sys.argv[1]+"/step0/rank0.live.json","w").write(json.dumps({"gpuprof_live": 1, "job": sys.argv[2], "step": "0", "rank": 0, "node": "n1", "pid": 1, "state": "running", "seq": 1, "started": t-100, "written": t, "elapsed_s": 100, "interval_s": 30, "steps": 100, "median_ms": 10, "last_steps": 10, "last_median_ms": 10, "gpus": 1, "busy_pct": 77, "last_busy_pct": 77, "findings": []})+"\n")' "$1" "$2"
	chown -R "$3" "$1"; chmod -R a+rX "$1"
}
mkdir -p "$T/lv"; chmod 755 "$T/lv"; userdir "$T/lv/alice"; mkdir -p "$T/lv/bob"; chown 65534 "$T/lv/bob"
live "$T/lv/bob/gpuprof-600" 600 65534
as_user ln -s "$T/lv/bob/gpuprof-600" "$T/lv/alice/gpuprof-500"
printf '600|nobody|a|p|1:40|%s\n500|%s|a|p|1:40|%s\n' "$T/lv/bob" "$U" "$T/lv/alice" >"$T/lv/sq"
"$B/gpuprof" ledger --running --from-file "$T/lv/sq" -f json >"$T/36.out" 2>"$T/36.err"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert [r["job"] for r in j["running"]] == ["600"], j' "$T/36.out" &&
	grep -q "job 500: .*gpuprof-500: a link of uid $UID_U's to uid 65534's directory: not followed as root" "$T/36.err"
ok $? "S36: ledger --running does not show another user's live figures through a user's link (job 500: $(head -c 200 "$T/36.err"))"
"$B/gpuprof" top --once "$T/lv/alice/gpuprof-500" >"$T/36t.out" 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "not followed as root" "$T/36t.out" && ! grep -q "busy" "$T/36t.out"
ok $? "S36: nor does top on the link (exit $rc)"
# 37. a live file that names another job (a copy in the user's own directory) is left out
live "$T/lv/alice/gpuprof-501" 600 "$U"
printf '501|%s|a|p|1:40|%s\n' "$U" "$T/lv/alice" >"$T/lv/sq37"
"$B/gpuprof" ledger --running --from-file "$T/lv/sq37" -f json >"$T/37.out" 2>"$T/37.err"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["running"] == [], j' "$T/37.out" &&
	grep -q "job 501: 1 of the 1 live file(s) in .* are of job 600: left out" "$T/37.err"
ok $? "S37: ledger --running leaves out a live file of another job ($(head -c 160 "$T/37.err"))"
# 38. a job directory not the job's user's (another user's under the WorkDir squeue gives)
live "$T/lv/bob/gpuprof-502" 502 65534
printf '502|%s|a|p|1:40|%s\n' "$U" "$T/lv/bob" >"$T/lv/sq38"
"$B/gpuprof" ledger --running --from-file "$T/lv/sq38" -f json >"$T/38.out" 2>"$T/38.err"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["running"] == [], j' "$T/38.out" &&
	grep -q "job 502: .* is uid 65534's, not its user $U's" "$T/38.err"
ok $? "S38: ledger --running leaves out a job directory not the job's user's ($(head -c 160 "$T/38.err"))"
# 39. prune of a job directory the user made partly unremovable (a 0500 subdirectory):
#     counted "removed" though it was not, and the partial removal made its directories
#     new, so the next run kept it another AGE, exit 0, no word
mkdir -p "$T/pr"; chmod 755 "$T/pr"; userdir "$T/pr/$U"; chmod 700 "$T/pr/$U"
printf 'site_output: %s/pr/%%u/%%j\n' "$T" >"$T/pr.yaml"
as_user bash -c "cd '$T/pr/$U' && mkdir -p 7/step0/ro && echo big >7/step0/data && echo x >7/step0/ro/f && chmod 0500 7/step0/ro && find 7 -exec touch -d 2020-01-01 {} +"
"$B/gpuprof" prune --older-than=1d --config="$T/pr.yaml" >"$T/39a.out" 2>&1; rc1=$?
"$B/gpuprof" prune --older-than=1d --config="$T/pr.yaml" >"$T/39b.out" 2>&1; rc2=$?
[ $rc1 = 1 ] && [ $rc2 = 1 ] && [ -f "$T/pr/$U/7/step0/ro/f" ] &&
	grep -q "removed 0 job directories" "$T/39a.out" && grep -q "^could not remove all of $T/pr/$U/7 " "$T/39b.out" &&
	grep -q "removed 0 job directories .* 0 kept" "$T/39b.out"
ok $? "S39: prune counts a job directory it could not remove whole as not removed (exit $rc1), and the next run tries again and says so (exit $rc2: $(tail -1 "$T/39b.out" | cut -c1-120))"
# ... and a job directory whose old attempt's files sit beside a new, still empty step
#     directory (a requeued job in its first seconds) is not old: kept (the reviewer,
#     session 34: the file-only age removed it)
as_user bash -c "cd '$T/pr/$U' && mkdir -p 8/step0 && echo old >8/step0/data && find 8 -exec touch -d 2020-01-01 {} + && mkdir 8/step1"
"$B/gpuprof" prune --older-than=1d --config="$T/pr.yaml" >"$T/39c.out" 2>&1
[ -d "$T/pr/$U/8/step1" ] && [ -f "$T/pr/$U/8/step0/data" ]
ok $? "S39b: a job directory with a new empty step directory beside old files is kept ($(tail -1 "$T/39c.out" | cut -c1-100))"
chmod -R u+w "$T/pr"
# 40. another user plants all ten spool names of the user's uid in a shared spool root
#     (gpuprof-UID, .1 ... .9): the task ran unprofiled ("spool ...: Operation not
#     permitted"), and under GPUPROF_REQUIRED=1 it was not started at all (exit 1)
S="$T/spool"; install -d -m 1777 "$S"; userdir "$T/sp-out"
for n in "" .1 .2 .3 .4 .5 .6 .7 .8 .9; do runuser -u nobody -- mkdir "$S/gpuprof-$UID_U$n"; done
(cd "$T/sp-out" && as_user env TMPDIR="$S" GPUPROF_REQUIRED=1 "$B/gpuprof" run -m timing -o "$T/sp-out/j" -- /bin/true) >"$T/40.out" 2>&1; rc=$?
sp=$(find "$S" -maxdepth 1 -name "gpuprof-$UID_U.r??????" -user "$U" -perm 0700)
[ $rc = 0 ] && [ -f "$T/sp-out/j/step0/rank0.gpr" ] && [ -n "$sp" ] && ! grep -q "not permitted\|unprofiled\|required" "$T/40.out"
ok $? "S40: all ten spool names planted by another user: the task is profiled all the same under GPUPROF_REQUIRED=1 (exit $rc, spool ${sp##*/}: $(head -c 160 "$T/40.out"))"
done_testing
