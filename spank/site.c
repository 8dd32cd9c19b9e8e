/* The site's directory of a job it profiles without its asking (profile_all_jobs into
 * site_output, common/sitedir.h), made ready as root in slurmstepd's init_post_opt: the
 * admin's ROOT checked (root's all the way, or sticky), the user's directory ROOT/USER
 * made for the user when missing (0700, or 2750 in site_group so that the job's
 * directories and files below inherit the group), and what it holds against
 * site_quota_per_user (spank/quota.c). Root only ever makes that one directory; everything
 * below it is the user's to make (the agent, as the user). */
#include "config.h"
#include "plugin.h"
#include "log.h"
#include "path.h"
#include "sitedir.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A directory nobody but root can change: root's, and not writable by group or others,
 * or (on the way to ROOT, as /tmp) sticky, where a user cannot rename or remove another's
 * entry. Never a user's sticky directory (its owner may rename any entry in it), and ROOT
 * itself never sticky: a user could make another user's ROOT/USER first, and nobody but
 * root could remove it. */
static bool admins(const struct stat *st, bool last)
{
	return S_ISDIR(st->st_mode) && st->st_uid == 0 &&
	       (!(st->st_mode & 022) || (!last && (st->st_mode & S_ISVTX)));
}

/* ROOT opened, each component checked as it is reached (a link is followed only where it
 * is root's, and what it leads to is checked like any directory): a user who could
 * change a directory on the way could have root make the user's directory elsewhere. */
static int open_root(const char *root)
{
	char buf[1024], *save = NULL;
	int dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(buf, sizeof(buf), "%s", root);
	for (char *c = strtok_r(buf, "/", &save); c && dfd >= 0; c = strtok_r(NULL, "/", &save)) {
		struct stat st;
		int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
		if (fstatat(dfd, c, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    (S_ISLNK(st.st_mode) && st.st_uid != 0)) {
			int e = S_ISLNK(st.st_mode) ? EPERM : errno;
			close(dfd);
			return errno = e, -1;
		}
		if (!S_ISLNK(st.st_mode))
			flags |= O_NOFOLLOW;
		int nfd = openat(dfd, c, flags);
		close(dfd);
		dfd = nfd;
		bool last = !save || !save[strspn(save, "/")]; /* ROOT itself */
		if (dfd >= 0 && (fstat(dfd, &st) < 0 || !admins(&st, last))) {
			close(dfd);
			return errno = EPERM, -1;
		}
	}
	return dfd;
}

/* ROOT/USER, made for the user when missing; the user's own directory or -1. */
static int user_dir(int rfd, const char *user, uid_t uid, gid_t gid, mode_t mode, char *why,
                    size_t whylen)
{
	struct stat st;
	bool made = mkdirat(rfd, user, 0700) == 0;
	if (!made && errno != EEXIST)
		return snprintf(why, whylen,
		                "cannot make it as root: %s (make it for the user: "
		                "doc/admin.md, Profile every GPU job)",
		                strerror(errno)),
		       -1;
	int ufd = openat(rfd, user, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0)
		return snprintf(why, whylen, "cannot open it: %s", strerror(errno)), -1;
	if (made && fstat(ufd, &st) == 0 && st.st_uid == 0 &&
	    (fchown(ufd, uid, gid) < 0 || fchmod(ufd, mode) < 0)) {
		snprintf(why, whylen, "cannot give it to the user: %s", strerror(errno));
		close(ufd);
		unlinkat(rfd, user, AT_REMOVEDIR); /* never left as root's for the next job */
		return -1;
	}
	/* another node of the step made it a moment ago and gives it to the user now (a
	 * shared file system): a second at most for its fchown */
	for (int i = 0; i < 20 && !made && fstat(ufd, &st) == 0 && st.st_uid == 0 && uid != 0; i++)
		usleep(50000);
	if (fstat(ufd, &st) < 0 || st.st_uid != uid) {
		if (!*why)
			snprintf(why, whylen, "belongs to uid %u, not the job's user",
			         (unsigned)st.st_uid);
		close(ufd);
		return -1;
	}
	return ufd;
}

int gp_site_prepare(gp_plugin_t *p, const char *user, unsigned ntasks)
{
	gp_site_tmpl_t t;
	char why[512] = "";
	gid_t gid = p->gid;
	mode_t mode = 0700;
	int rfd = -1, ufd = -1, rc = -1;
	if (!user || gp_site_tmpl_split(p->cfg.site_output, &t, why, sizeof(why)) < 0)
		return gp_warn("site_output: %s; job %u is not profiled by the site",
		               user ? why : "the job's user has no name", p->job_id);
	p->site_group_ok = false;
	if (*p->cfg.site_group) {
		struct group *gr = getgrnam(p->cfg.site_group);
		if (gr) {
			gid = gr->gr_gid;
			mode = 02750;
			p->site_group_ok = true;
		} else
			gp_warn("site_group '%s' is not a group on this node: %s/%s is the user's "
			        "alone",
			        p->cfg.site_group, t.root, user);
	}
	if ((rfd = open_root(t.root)) < 0) {
		gp_warn("site_output: %s: %s; job %u is not profiled by the site", t.root,
		        errno == EPERM ? "not root's alone (every directory on the way root's and "
		                         "not writable by others, or sticky)"
		                       : strerror(errno),
		        p->job_id);
		goto out;
	}
	if ((ufd = user_dir(rfd, user, p->uid, gid, mode, why, sizeof(why))) < 0 ||
	    gp_site_quota_cap(p, &t, user, ntasks, &p->site_rank_cap, why, sizeof(why)) < 0) {
		gp_warn("site_output: %s/%s %s; job %u is not profiled by the site", t.root, user,
		        why, p->job_id);
		goto out;
	}
	rc = 0;
out:
	if (ufd >= 0)
		close(ufd);
	if (rfd >= 0)
		close(rfd);
	return rc;
}
