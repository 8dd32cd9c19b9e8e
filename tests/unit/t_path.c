/* Path templates and link-safe creation. */
#include "config.h"
#include "path.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
	char out[256], err[256];
	gp_tmpl_vars_t v = {.job = "42",
	                    .user = "alice",
	                    .name = "../../etc",
	                    .step = "0",
	                    .node = "n1",
	                    .task = "3",
	                    .rank = "3"};
	static const struct {
		const char *tmpl, *want;
	} good[] = {
	    {"gpuprof-%j", "gpuprof-42"},
	    {"/scratch/%u/%j/%s.%n.%t", "/scratch/alice/42/0.n1.3"},
	    {"%x-%%-%r", ".._.._etc-%-3"},
	    {"plain", "plain"},
	};
	static const struct {
		const char *tmpl, *msg;
	} bad[] = {
	    {"out-%q", "unknown escape '%q' at position 5"},
	    {"out-%", "trailing '%'"},
	    {"", "empty directory"},
	    {"a\nb", "control character"},
	    {"\xfe", "not valid UTF-8"},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ok(gp_tmpl_check(good[i].tmpl, err, sizeof(err)) == 0, "check '%s'", good[i].tmpl);
		ok(gp_tmpl_expand(good[i].tmpl, &v, out, sizeof(out)) == 0, "expand '%s'",
		   good[i].tmpl);
		is_str(out, good[i].want, "expansion of '%s'", good[i].tmpl);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(gp_tmpl_check(bad[i].tmpl, err, sizeof(err)) == -1, "reject template %zu", i);
		if (!ok(strstr(err, bad[i].msg) != NULL, "message %zu", i))
			diag("got %s", err);
	}
	ok(gp_tmpl_expand("%j%j%j", &v, out, 5) == -1 && errno == ENAMETOOLONG, "overflow");

	char base[] = "/tmp/gp-t-path.XXXXXX";
	ok(mkdtemp(base) != NULL, "tmpdir");
	char p[512];
	snprintf(p, sizeof(p), "%s/a/b/c", base);
	int fd = gp_mkdir_p(p, 0700);
	ok(fd >= 0, "mkdir -p");
	struct stat st;
	ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0700, "mode 0700");
	ok(gp_write_file_at(fd, "x.json", "{}", 2, 0600) == 0, "atomic write");
	int fd2 = gp_open_at(fd, "x.json", O_CREAT | O_EXCL, 0600);
	ok(fd2 < 0 && errno == EEXIST, "O_EXCL refuses an existing file");
	close(fd);
	/* a planted symlink in the middle of the path is refused */
	char link[512], target[512];
	snprintf(target, sizeof(target), "%s/target", base);
	mkdir(target, 0700);
	snprintf(link, sizeof(link), "%s/evil", base);
	ok(symlink(target, link) == 0, "plant symlink");
	/* one of our own (or root's: an admin's /scratch -> /lustre/scratch) is followed */
	snprintf(p, sizeof(p), "%s/evil/own", base);
	fd = gp_mkdir_p(p, 0700);
	snprintf(p, sizeof(p), "%s/target/own", base);
	ok(fd >= 0 && access(p, F_OK) == 0, "a link of our own is followed");
	if (fd >= 0)
		close(fd);
	/* one planted by another user is not (needs root to plant it for someone else) */
	if (geteuid() == 0 && lchown(link, 65534, 65534) == 0) {
		snprintf(p, sizeof(p), "%s/evil/sub", base);
		errno = 0;
		ok(gp_mkdir_p(p, 0700) == -1 && errno == ELOOP,
		   "another user's symlink component refused (ELOOP)");
		snprintf(p, sizeof(p), "%s/target/sub", base);
		ok(access(p, F_OK) != 0, "nothing created through the link");
	} else {
		skip("not root: cannot plant a link owned by another user");
		skip("not root: cannot plant a link owned by another user");
	}
	/* a symlink as the final file is refused too */
	fd = open(base, O_RDONLY | O_DIRECTORY);
	ok(symlinkat("/etc/passwd", fd, "f") == 0, "plant file symlink");
	ok(gp_open_at(fd, "f", O_CREAT, 0600) == -1 && errno == ELOOP, "file symlink refused");
	close(fd);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	ok(system(cmd) == 0, "cleanup");
	return done_testing();
}
