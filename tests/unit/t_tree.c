/* The site's directory: site_output split into ROOT, the user's directory and the job's
 * part (common/sitedir.c); a tree measured and removed without following a link
 * (common/tree.c), as the quota and `gpuprof prune` use them. */
#include "config.h"
#include "sitedir.h"
#include "tree.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static void file(const char *path, size_t bytes)
{
	FILE *f = fopen(path, "w");
	for (size_t i = 0; f && i < bytes; i++)
		fputc('x', f);
	if (f)
		fclose(f);
}

static void age(const char *path, long seconds_ago)
{
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= seconds_ago;
	t[1] = t[0];
	utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW);
}

/* gpuprof prune's walk: a name on another file system than its parent's (a mount point)
 * is neither entered nor removed; as root, in a mount namespace of the test's own. */
static void within(int dfd)
{
	gp_tree_usage_t u = {0}, gone = {0};
	mkdir("plain", 0700);
	file("plain/f", 10);
	ok(gp_tree_measure_within(dfd, "plain", 0, &u) == 0 && u.entries == 2 &&
	       gp_tree_remove_within(dfd, "plain", &gone) == 0 && gone.entries == 2,
	   "within: a directory on its parent's file system measured and removed");
	mkdir("mnt", 0700);
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("gp-t-tree", "mnt", "tmpfs", 0, NULL) < 0) {
		skip("no mount namespace (not root)");
		skip("no mount namespace (not root)");
		rmdir("mnt");
		return;
	}
	file("mnt/data", 10);
	/* a descriptor opened before unshare() sees the old namespace's mounts */
	dfd = open(".", O_RDONLY | O_DIRECTORY);
	u = (gp_tree_usage_t){0};
	gone = (gp_tree_usage_t){0};
	errno = 0;
	ok(gp_tree_measure_within(dfd, "mnt", 0, &u) < 0 && errno == EXDEV && u.entries == 0,
	   "within: a mount point is not measured (EXDEV)");
	ok(gp_tree_remove_within(dfd, "mnt", &gone) < 0 && errno == EXDEV &&
	       access("mnt/data", F_OK) == 0,
	   "within: nor emptied: the file on it stays");
	close(dfd);
	umount("mnt");
	rmdir("mnt");
}

int main(void)
{
	gp_site_tmpl_t t = {{0}, {0}, 0};
	char why[256], top[64], q[256];

	int rc = gp_site_tmpl_split("/srv/gpuprof/%u/%j", &t, why, sizeof(why));
	ok(rc == 0 && !strcmp(t.root, "/srv/gpuprof") && !strcmp(t.rest, "%j") && t.depth == 1,
	   "/srv/gpuprof/%%u/%%j: root /srv/gpuprof, the job's %%j, depth 1 (%s|%s|%u)", t.root,
	   t.rest, t.depth);
	rc = gp_site_tmpl_split("//data//gp/%u/%x/gpuprof-%j/", &t, why, sizeof(why));
	ok(rc == 0 && !strcmp(t.root, "/data/gp") && !strcmp(t.rest, "%x/gpuprof-%j") &&
	       t.depth == 2,
	   "doubled and trailing slashes: %s, %s, depth %u", t.root, t.rest, t.depth);
	ok(gp_site_tmpl_split("/a/%u/%u/%j", &t, why, sizeof(why)) == 0 && t.depth == 2,
	   "a second %%u is the job's part");
	ok(gp_site_tmpl_split("/srv/%%/%u/%j", &t, why, sizeof(why)) < 0 && strstr(why, "escape"),
	   "no escape in ROOT, not even %%%%: %s", why);
	/* the names prune walks: what the template could have made at each level */
	gp_site_tmpl_split("/home/%u/gpuprof/%x-%j.%%/%s", &t, why, sizeof(why));
	ok(gp_site_tmpl_level_match(&t, 1, "gpuprof") &&
	       !gp_site_tmpl_level_match(&t, 1, "thesis") &&
	       !gp_site_tmpl_level_match(&t, 1, "gpuprofx") &&
	       !gp_site_tmpl_level_match(&t, 1, "gpupro"),
	   "a literal level: its own name only");
	ok(gp_site_tmpl_level_match(&t, 2, "train-a-4242.%") &&
	       gp_site_tmpl_level_match(&t, 2, "x-7.%") &&
	       gp_site_tmpl_level_match(&t, 2, "-4242.%") &&
	       !gp_site_tmpl_level_match(&t, 2, "train-42a.%") &&
	       !gp_site_tmpl_level_match(&t, 2, "train-4242.") &&
	       !gp_site_tmpl_level_match(&t, 2, "train-4242"),
	   "escapes: %%x any text (an empty job name too), %%j digits, %%%% a '%%' (backtracking "
	   "over '-' in the name)");
	ok(gp_site_tmpl_level_match(&t, 3, "0") && !gp_site_tmpl_level_match(&t, 4, "0") &&
	       !gp_site_tmpl_level_match(&t, 0, "gpuprof") &&
	       !gp_site_tmpl_level_match(&t, 3, "") && !gp_site_tmpl_level_match(&t, 2, ""),
	   "a level past the template's, level 0 and an empty name match nothing");
	/* a run of escapes (the review of session 29: each escape tried at every length was
	 * exponential; 40 of them against a 200-byte name did not finish) */
	char tmpl[400] = "/srv/%u/", name[260];
	for (int i = 0; i < 40; i++)
		strcat(tmpl, "%x");
	strcat(tmpl, "%j");
	memset(name, 'a', 200);
	name[200] = 'b', name[201] = 0;
	gp_site_tmpl_split(tmpl, &t, why, sizeof(why));
	bool none = !gp_site_tmpl_level_match(&t, 1, name);
	name[200] = '7';
	ok(none && gp_site_tmpl_level_match(&t, 1, name),
	   "40 escapes in a row against a 201-byte name: no match ending in a letter, a match "
	   "ending in a digit, at once");
	ok(gp_site_group_name_ok("gpu-admins") && gp_site_group_name_ok("dom_users") &&
	       !gp_site_group_name_ok("-x") && !gp_site_group_name_ok("a:b") &&
	       !gp_site_group_name_ok("") && !gp_site_group_name_ok("a\tb"),
	   "group names");

	snprintf(top, sizeof(top), "/tmp/gp-t-tree.%d", (int)getpid());
	mkdir(top, 0700);
	if (chdir(top) < 0)
		return 1;
	mkdir("job", 0700);
	mkdir("job/step0", 0700);
	file("job/step0/rank0.gpr", 100000);
	/* what a link leads to is neither measured nor removed */
	mkdir("outside", 0700);
	file("outside/keep", 50000);
	snprintf(q, sizeof(q), "%s/outside", top);
	ok(symlink(q, "job/link") == 0, "a link in the job directory to a directory outside it");
	const char *old[] = {"job/step0/rank0.gpr", "job/link", "job/step0"};
	for (int i = 0; i < 3; i++)
		age(old[i], 7200);
	age("job", 3600);

	int dfd = open(top, O_RDONLY | O_DIRECTORY);
	gp_tree_usage_t u = {0};
	time_t now = time(NULL);
	rc = gp_tree_measure(dfd, "job", 0, &u);
	ok(rc == 0 && u.entries == 4 && !u.cut && !u.skipped,
	   "measured: the directory, step0, the rank file and the link (%llu entries)",
	   (unsigned long long)u.entries);
	ok(u.bytes >= 100000 && u.bytes < 100000 + 4 * 65536,
	   "its size is the rank file's and the directories', not the linked file's (%llu)",
	   (unsigned long long)u.bytes);
	ok(u.newest <= now - 3590 && u.newest >= now - 3610,
	   "newest: the job directory's own time, an hour ago (%ld s)", (long)(now - u.newest));
	gp_tree_usage_t cut = {0};
	ok(gp_tree_measure(dfd, "job", 2, &cut) == 0 && cut.cut && cut.entries == 2,
	   "stopped at the entry limit, said as cut");
	gp_tree_usage_t gone = {0};
	ok(gp_tree_remove(dfd, "job", &gone) == 0 && gone.entries == 4 && !gone.skipped,
	   "removed the job directory, its 4 entries");
	struct stat st;
	ok(fstatat(dfd, "job", &st, AT_SYMLINK_NOFOLLOW) < 0 &&
	       fstatat(dfd, "outside/keep", &st, 0) == 0 && st.st_size == 50000,
	   "gone, and what its link led to is untouched");
	/* a link as the tree itself: removed as a link */
	int ln = symlink(q, "tolink");
	gone = (gp_tree_usage_t){0};
	ok(ln == 0 && gp_tree_remove(dfd, "tolink", &gone) == 0 &&
	       fstatat(dfd, "outside/keep", &st, 0) == 0,
	   "a link named as the tree is removed, not followed");
	ok(gp_tree_measure(dfd, "missing", 0, &u) < 0 && gp_tree_remove(dfd, "missing", &gone) < 0,
	   "a name that is not there: -1");
	within(dfd);
	gone = (gp_tree_usage_t){0};
	gp_tree_remove(dfd, "outside", &gone);
	close(dfd);
	if (chdir("/") == 0)
		rmdir(top);
	return done_testing();
}
