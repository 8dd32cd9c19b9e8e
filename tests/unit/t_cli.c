/* The command line's grammar (report/cli.c) and its outputs (report/outfile.c): option
 * values parsed strictly (NaN, infinity and hexadecimal refused), getopt_long's errors as
 * usage errors, -- and abbreviations; an output renamed into place only when whole,
 * never through a planted link (refused), gzip when the name ends in .gz, a FIFO or a
 * device written in place. */
#include "config.h"
#include "cli.h"
#include "outfile.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const gp_cli_opt_t opts[] = {{"format", 'f', "FORMAT", "a format"},
                                    {"quiet", 'q', NULL, "say nothing"},
                                    {"steps-from", 300, "HOW", "where steps come from"},
                                    {"step", 's', "S", "one step"},
                                    {NULL, 0, NULL, NULL}};
static const gp_cli_cmd_t cmd = {"report", "[OPTION]... JOB", "Test.", opts, NULL, false};

/* parse argv (NULL-terminated); the keys seen as a string, the operands after '|' */
static int parse(char **argv, char *seen, size_t len, int *status)
{
	int argc = 0, k;
	gp_cli_t c;
	while (argv[argc])
		argc++;
	seen[0] = '\0';
	gp_cli_begin(&c, &cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		size_t n = strlen(seen);
		snprintf(seen + n, len - n, "%c%s%s;", k < 256 ? k : 'L', c.arg ? "=" : "",
		         c.arg ? c.arg : "");
	}
	*status = c.status;
	if (k < 0)
		return -1;
	for (int i = c.ind; i < argc; i++) {
		size_t n = strlen(seen);
		snprintf(seen + n, len - n, "|%s", argv[i]);
	}
	return 0;
}

/* what path holds (up to 63 bytes) */
static const char *slurp(const char *path, char *got, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, got, len - 1);
	if (fd >= 0)
		close(fd);
	got[n > 0 ? n : 0] = '\0';
	return got;
}

static int quiet_stderr(void)
{
	int saved = dup(2), null = open("/dev/null", O_WRONLY);
	dup2(null, 2);
	close(null);
	return saved;
}

static void restore_stderr(int saved)
{
	dup2(saved, 2);
	close(saved);
}

int main(void)
{
	char seen[256];
	int st, e = quiet_stderr();
	double d;
	uint64_t u;

	/* numbers */
	static const char *no[] = {"nan",   "NaN", "inf", "-inf", "infinity", "0x10",
	                           "1e400", "",    " 5",  "5 ",   "5%",       "1,5",
	                           "--1",   "1e",  ".",   "-0.5"};
	unsigned bad = 0;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		bad += gp_cli_number(&cmd, "--x", no[i], 0, false, 100, false, "5", &d) !=
		       GP_CLI_USAGE;
	ok(!bad, "NaN, infinity, hexadecimal, overflow, blanks and junk are usage errors (%u not)",
	   bad);
	ok(gp_cli_number(&cmd, "--x", "2.5", 0, false, 100, false, "5", &d) == 0 && d == 2.5,
	   "2.5 is a number");
	ok(gp_cli_number(&cmd, "--x", "1e-3", 0, true, 1, true, "5", &d) == 0 && d == 0.001,
	   "1e-3 in (0, 1)");
	ok(gp_cli_number(&cmd, "--x", "0", 0, true, 1, true, "5", &d) == GP_CLI_USAGE &&
	       gp_cli_number(&cmd, "--x", "1", 0, true, 1, true, "5", &d) == GP_CLI_USAGE,
	   "open bounds exclude themselves");
	ok(gp_cli_number(&cmd, "--x", "100.5", 0, false, 100, false, "5", &d) == GP_CLI_USAGE,
	   "above the range");
	ok(gp_cli_count(&cmd, "--n", "42", 100, &u) == 0 && u == 42, "a count");
	ok(gp_cli_count(&cmd, "--n", "-1", 100, &u) == GP_CLI_USAGE &&
	       gp_cli_count(&cmd, "--n", "abc", 100, &u) == GP_CLI_USAGE &&
	       gp_cli_count(&cmd, "--n", "101", 100, &u) == GP_CLI_USAGE &&
	       gp_cli_count(&cmd, "--n", "99999999999999999999999", UINT64_MAX, &u) == GP_CLI_USAGE,
	   "counts: negative, junk, too big, overflowing");

	/* getopt_long as a person types it: the keys seen (L: long-only), '|' the operands;
	 * NULL: a usage error */
	static const struct {
		const char *argv[6];
		const char *want, *what;
	} cmdlines[] = {
	    {{"report", "--format=json", "-q", "dir"}, "f=json;q;|dir", "--format=json -q dir"},
	    {{"report", "dir", "--format", "text"}, "f=text;|dir", "options after the operand"},
	    {{"report", "--form=json", "dir"}, "f=json;|dir", "an unambiguous prefix (--form)"},
	    {{"report", "--ste=1", "dir"}, NULL, "an ambiguous prefix (--ste: step, steps-from)"},
	    {{"report", "-q", "--", "-dir"}, "q;|-dir", "-- ends the options"},
	    {{"report", "dir", "--"}, "|dir", "a trailing --"},
	    {{"report", "--steps-from", "nvtx", "d"}, "L=nvtx;|d", "a long-only option"},
	    {{"report", "dir", "--format"}, NULL, "--format with no value"},
	    {{"report", "--bogus", "dir"}, NULL, "an unknown long option"},
	    {{"report", "-x", "dir"}, NULL, "an unknown short option"},
	    {{"report", "--quiet=1", "dir"}, NULL, "a value for an option that takes none"},
	};
	for (size_t i = 0; i < sizeof(cmdlines) / sizeof(cmdlines[0]); i++) {
		char *av[7] = {0}; /* getopt_long permutes argv: a copy of the table's */
		memcpy(av, cmdlines[i].argv, sizeof(cmdlines[i].argv));
		int r = parse(av, seen, sizeof(seen), &st);
		if (cmdlines[i].want)
			ok(r == 0 && !strcmp(seen, cmdlines[i].want), "%s: %s", cmdlines[i].what,
			   seen);
		else
			ok(r < 0 && st == GP_CLI_USAGE, "%s: a usage error", cmdlines[i].what);
	}
	restore_stderr(e);
	int saved = dup(1), null = open("/dev/null", O_WRONLY);
	dup2(null, 1);
	int r = parse((char *[]){"report", "dir", "--help", NULL}, seen, sizeof(seen), &st);
	dup2(saved, 1);
	close(saved);
	close(null);
	ok(r < 0 && st == 0, "--help anywhere: help printed, status 0");
	char *hb = NULL;
	size_t hn = 0;
	FILE *hf = open_memstream(&hb, &hn);
	gp_cli_help(&cmd, hf);
	fclose(hf);
	ok(strstr(hb, "usage: gpuprof report [OPTION]... JOB") &&
	       strstr(hb, "-f, --format=FORMAT") && strstr(hb, "--steps-from=HOW") &&
	       strstr(hb, "-h, --help"),
	   "the help names every option with its value");
	free(hb);
	hb = NULL;
	hf = open_memstream(&hb, &hn);
	gp_cli_man(&cmd, hf);
	fclose(hf);
	ok(strstr(hb, ".BR \\-f \", \" \\-\\-format =\\fIFORMAT\\fR") &&
	       strstr(hb, ".BR \\-\\-steps\\-from =\\fIHOW\\fR") &&
	       strstr(hb, ".SS gpuprof report"),
	   "the man markup: options as \\-\\-name with the value in italics");
	free(hb);

	/* outputs */
	char dir[] = "/tmp/gp-t-cli.XXXXXX", path[128], link[128], got[64];
	gp_outfile_t o;
	if (!mkdtemp(dir))
		return ok(0, "mkdtemp"), done_testing();
	snprintf(path, sizeof(path), "%s/out.json", dir);
	FILE *f = fopen(path, "w");
	fputs("old", f);
	fclose(f);
	ok(gp_outfile_open(&o, path) != NULL, "open %s", path);
	fputs("new", o.f);
	is_str(slurp(path, got, sizeof(got)), "old",
	       "while it is written the name keeps the old file");
	ok(gp_outfile_close(&o, false) < 0, "a failed export closes, said as failed");
	is_str(slurp(path, got, sizeof(got)), "old",
	       "a failed export leaves the old file as it was");
	gp_outfile_open(&o, path);
	fputs("new", o.f);
	ok(gp_outfile_close(&o, true) == 0, "a whole one goes into place");
	is_str(slurp(path, got, sizeof(got)), "new", "... with its content");
	/* a link planted under the name: refused, the link and its target as they were */
	char target[128];
	snprintf(target, sizeof(target), "%s/target", dir);
	f = fopen(target, "w");
	fputs("precious", f);
	fclose(f);
	snprintf(link, sizeof(link), "%s/link.json", dir);
	if (symlink(target, link) != 0)
		diag("symlink: %s", strerror(errno));
	struct stat sb;
	errno = 0;
	f = gp_outfile_open(&o, link);
	ok(!f && errno == ELOOP, "a symlink under the name is refused (ELOOP)");
	gp_outfile_close(&o, true);
	slurp(target, got, sizeof(got));
	ok(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode) && !strcmp(got, "precious"),
	   "... the link kept, its target left as it was");
	/* gzip */
	snprintf(path, sizeof(path), "%s/t.json.gz", dir);
	ok(gp_outfile_open(&o, path) && o.gz, "a .gz name is compressed");
	for (int i = 0; i < 100000; i++)
		fprintf(o.f, "{\"i\": %d},\n", i);
	ok(gp_outfile_close(&o, true) == 0, "... written");
	gzFile z = gzopen(path, "rb");
	char line[64];
	int lines = 0, good = 1;
	while (z && gzgets(z, line, sizeof(line))) {
		char want[64];
		snprintf(want, sizeof(want), "{\"i\": %d},\n", lines++);
		good &= !strcmp(line, want);
	}
	if (z)
		gzclose(z);
	stat(path, &sb);
	ok(good && lines == 100000 && sb.st_size < 1300000 / 4,
	   "... and reads back whole with zlib (%d lines, %lld bytes)", lines,
	   (long long)sb.st_size);
	/* a failed .gz export: the old file kept, no temporary file left */
	gp_outfile_open(&o, path);
	fputs("half", o.f);
	gp_outfile_close(&o, false);
	z = gzopen(path, "rb");
	ok(z && gzgets(z, line, sizeof(line)) && !strcmp(line, "{\"i\": 0},\n"),
	   "a failed .gz export leaves the old file");
	if (z)
		gzclose(z);
	ok(gp_outfile_open(&o, "/dev/null") && o.dfd < 0, "/dev/null is written in place");
	fputs("x", o.f);
	ok(gp_outfile_close(&o, true) == 0 && stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode),
	   "... and stays a device");
	/* a FIFO: written in place, .gz compressed through it */
	snprintf(path, sizeof(path), "%s/fifo.gz", dir);
	if (mkfifo(path, 0600) == 0) {
		int rfd = open(path, O_RDONLY | O_NONBLOCK);
		ok(gp_outfile_open(&o, path) && o.dfd < 0 && o.gz, "a FIFO is written in place");
		fputs("through the pipe", o.f);
		ok(gp_outfile_close(&o, true) == 0 && lstat(path, &sb) == 0 && S_ISFIFO(sb.st_mode),
		   "... and stays a FIFO");
		unsigned char mag[2] = {0, 0};
		ok(rfd >= 0 && read(rfd, mag, 2) == 2 && mag[0] == 0x1f && mag[1] == 0x8b,
		   "... gzip-compressed by its name");
		if (rfd >= 0)
			close(rfd);
	} else
		ok(0, "mkfifo: %s", strerror(errno));
	errno = 0;
	f = gp_outfile_open(&o, dir);
	int oe = errno;
	ok(!f && oe == EISDIR, "a directory is refused: %s", strerror(oe));
	snprintf(path, sizeof(path), "%s/no/such/dir/x.json", dir);
	errno = 0;
	f = gp_outfile_open(&o, path);
	oe = errno;
	ok(!f && oe == ENOENT, "a missing directory is said: %s", strerror(oe));
	ok(gp_outfile_open(&o, "-") == stdout && !o.gz && gp_outfile_close(&o, true) == 0,
	   "- is standard output");
	char ls[300];
	snprintf(ls, sizeof(ls), "ls -A '%s' | grep -q '\\.tmp\\.'", dir);
	ok(system(ls) != 0, "no temporary file left behind");
	char cmdl[300];
	snprintf(cmdl, sizeof(cmdl), "rm -rf '%s'", dir);
	if (system(cmdl) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
