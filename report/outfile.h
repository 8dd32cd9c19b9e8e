/* Writing a file the user named (-o/--output of report and export, an export's files
 * under a directory): into a temporary file beside it, renamed over it once complete; a
 * name ending in ".gz" is written gzip-compressed (HTA, Perfetto and chrome://tracing
 * read .json.gz). */
#ifndef GP_OUTFILE_H
#define GP_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

typedef struct gp_outfile {
	FILE *f;
	bool gz;          /* compressed (the name ends in .gz) */
	int dfd;          /* the target's directory; -1 when written in place or to stdout */
	int sync_fd;      /* the temporary file's, for the fsync after the compressor's last
	                   * write; -1 without one */
	char tmp[300];    /* the temporary file in dfd */
	char name[300];   /* the target's name in dfd */
	const char *path; /* as given, for messages */
} gp_outfile_t;

/* Does this name ask for gzip? */
bool gp_outfile_gzip_name(const char *path);
/* "-" is standard output (never compressed). A symbolic link at path is refused (ELOOP:
 * never written through, nor replaced), a directory too (EISDIR); an existing FIFO or
 * device is written in place (a stream: /dev/null, a pipe); anything else gets a new file
 * in path's directory (O_EXCL, O_NOFOLLOW, 0666 less the umask) that replaces path only
 * at gp_outfile_close. NULL with errno on failure. */
FILE *gp_outfile_open(gp_outfile_t *o, const char *path);
/* The same for name, one component (no '/', not "." or ".."), in the directory open as
 * dirfd, which is never left: a link there is refused as above. path: for messages. */
FILE *gp_outfile_open_at(gp_outfile_t *o, int dirfd, const char *name, const char *path);
/* Finish: with ok, flush (and for .gz write the compressor's last block), sync and rename
 * over the target (0, or -1 with errno when any of it fails, the temporary file removed);
 * without, remove the temporary file and leave the target as it was (-1). Standard output
 * is flushed, not closed. Accepts an o whose open failed. */
int gp_outfile_close(gp_outfile_t *o, bool ok);

#endif
