/* Writing a file the user named (-o/--output of report and export, an export's files
 * under a directory): into a temporary file beside it, renamed over it once complete. */
#ifndef GP_OUTFILE_H
#define GP_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

typedef struct gp_outfile {
	FILE *f;
	int dfd;          /* the target's directory; -1 when written in place or to stdout */
	char tmp[300];    /* the temporary file in it */
	char name[300];   /* the target's name in it */
	const char *path; /* as given, for messages */
} gp_outfile_t;

/* "-" is standard output. A symbolic link at path is refused (ELOOP: never written
 * through), a directory too (EISDIR); an existing FIFO or device is written in place (a
 * stream: /dev/null, a pipe); anything else gets a new file in path's directory that
 * replaces path only at gp_outfile_close. NULL with errno on failure. */
FILE *gp_outfile_open(gp_outfile_t *o, const char *path);
/* Finish: with ok, flush, sync and rename over the target (0, or -1 with errno when any of
 * it fails); without, remove the temporary file and leave the target as it was (-1).
 * Accepts an o whose open failed. */
int gp_outfile_close(gp_outfile_t *o, bool ok);

#endif
