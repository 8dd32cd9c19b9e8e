/* The command line's shared grammar (cli.h): getopt_long over a command's option table,
 * usage errors as one line, the help and the man page's OPTIONS made from the table. */
#include "config.h"
#include "cli.h"
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const gp_cli_opt_t help_opt = {"help", 'h', NULL, "print this help and exit"};

void gp_cli_begin(gp_cli_t *c, const gp_cli_cmd_t *cmd, int argc, char **argv)
{
	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	c->argc = argc;
	c->argv = argv;
	/* "+": run's options end at the program's name; ":": a missing value is told apart
	 * from an unknown option */
	char *s = c->so;
	if (cmd->stop_at_operand)
		*s++ = '+';
	*s++ = ':';
	unsigned n = 0;
	for (const gp_cli_opt_t *o = cmd->opts; o && o->name && n < GP_CLI_MAXOPT; o++, n++) {
		c->lo[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
		                           o->key};
		if (o->key < 256) {
			*s++ = (char)o->key;
			if (o->arg)
				*s++ = ':';
		}
	}
	c->lo[n++] = (struct option){help_opt.name, no_argument, NULL, help_opt.key};
	*s++ = 'h';
	*s = '\0';
	c->lo[n] = (struct option){NULL, 0, NULL, 0};
	optind = 0; /* glibc: a full reinitialisation, permutation state included */
	opterr = 0; /* our messages, one line each */
}

static const gp_cli_opt_t *by_key(const gp_cli_cmd_t *cmd, int key)
{
	for (const gp_cli_opt_t *o = cmd->opts; o && o->name; o++)
		if (o->key == key)
			return o;
	return key == 'h' ? &help_opt : NULL;
}

int gp_cli_next(gp_cli_t *c)
{
	int k = getopt_long(c->argc, c->argv, c->so, c->lo, NULL);
	const char *word = optind > 0 && optind <= c->argc ? c->argv[optind - 1] : "";
	const gp_cli_opt_t *o;
	c->arg = optarg;
	if (k == -1) {
		c->ind = optind;
		return 0;
	}
	if (k == 'h') {
		gp_cli_help(c->cmd, stdout);
		c->status = fflush(stdout) ? 1 : 0;
		return -1;
	}
	if (k == ':') { /* a value-taking option at the end of the line */
		o = by_key(c->cmd, optopt);
		if (o && !strncmp(word, "--", 2))
			c->status = gp_cli_usage(c->cmd, "--%s needs a value (--%s=%s)", o->name,
			                         o->name, o->arg);
		else
			c->status = gp_cli_usage(c->cmd, "-%c needs a value (%s)", optopt,
			                         o ? o->arg : "a value");
		return -1;
	}
	if (k == '?') {
		o = optopt ? by_key(c->cmd, optopt) : NULL;
		if (o && !strncmp(word, "--", 2)) /* --quiet=1 */
			c->status = gp_cli_usage(c->cmd, "--%s takes no value", o->name);
		else if (optopt && optopt < 256)
			c->status = gp_cli_usage(
			    c->cmd, "unknown option '-%c' (gpuprof %s --help lists them)", optopt,
			    c->cmd->name);
		else
			c->status = gp_cli_usage(c->cmd,
			                         "unknown or ambiguous option '%.*s' (gpuprof %s "
			                         "--help lists them)",
			                         (int)strcspn(word, "="), word, c->cmd->name);
		return -1;
	}
	return k;
}

int gp_cli_usage(const gp_cli_cmd_t *cmd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gp_log_shown(msg); /* it quotes what was typed */
	fprintf(stderr, "gpuprof: %s%s%s\n", cmd ? cmd->name : "", cmd ? ": " : "", msg);
	return GP_CLI_USAGE;
}

int gp_cli_missing(const gp_cli_cmd_t *cmd, const char *what)
{
	fprintf(stderr, "gpuprof: %s: %s; usage: gpuprof %s %s\n", cmd->name, what, cmd->name,
	        cmd->synopsis);
	return GP_CLI_USAGE;
}

int gp_cli_operands(const gp_cli_t *c, int min, int max, const char *what)
{
	int n = c->argc - c->ind;
	char q[160];
	if (n < min) {
		if (n)
			snprintf(q, sizeof(q), "%d %ss needed, %d given", min, what, n);
		else
			snprintf(q, sizeof(q), "which %s?", what);
		return gp_cli_missing(c->cmd, q);
	}
	if (max >= 0 && n > max && max == 1)
		return gp_cli_usage(c->cmd, "one %s, not '%s' and '%s'", what, c->argv[c->ind],
		                    c->argv[c->ind + 1]);
	if (max >= 0 && n > max)
		return gp_cli_usage(c->cmd, "%d %ss, not '%s' too", max, what,
		                    c->argv[c->ind + max]);
	return 0;
}

/* ---- the help ---- */

#define HELP_COL   26 /* where an option's text starts */
#define HELP_WIDTH 79

/* text from column col (the cursor at column at), wrapped at HELP_WIDTH */
static void wrap(FILE *f, const char *text, int at, int col)
{
	const char *p = text;
	while (*p) {
		size_t w = strcspn(p, " \n");
		if (at > col && at + 1 + (int)w > HELP_WIDTH) {
			fprintf(f, "\n%*s", col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', f);
			at++;
		}
		fwrite(p, 1, w, f);
		at += (int)w;
		p += w;
		if (*p == '\n') { /* a line of its own (lists in the text) */
			fprintf(f, "\n%*s", col, "");
			at = col;
		}
		while (*p == ' ' || *p == '\n')
			p++;
	}
	fputc('\n', f);
}

static void help_opt_line(FILE *f, const gp_cli_opt_t *o)
{
	char head[96];
	int n;
	if (o->key < 256)
		n = snprintf(head, sizeof(head), "  -%c, --%s%s%s", o->key, o->name,
		             o->arg ? "=" : "", o->arg ? o->arg : "");
	else
		n = snprintf(head, sizeof(head), "      --%s%s%s", o->name, o->arg ? "=" : "",
		             o->arg ? o->arg : "");
	fputs(head, f);
	if (n + 2 > HELP_COL) {
		fprintf(f, "\n%*s", HELP_COL, "");
		n = HELP_COL;
	} else {
		fprintf(f, "%*s", HELP_COL - n, "");
		n = HELP_COL;
	}
	wrap(f, o->help, n, HELP_COL);
}

void gp_cli_help(const gp_cli_cmd_t *cmd, FILE *f)
{
	fprintf(f, "usage: gpuprof %s %s\n", cmd->name, cmd->synopsis);
	wrap(f, cmd->about, 0, 0);
	fprintf(f, "\noptions:\n");
	for (const gp_cli_opt_t *o = cmd->opts; o && o->name; o++)
		help_opt_line(f, o);
	help_opt_line(f, &help_opt);
	if (cmd->more) { /* paragraphs, each wrapped */
		const char *p = cmd->more;
		while (*p) {
			const char *e = strstr(p, "\n\n");
			size_t n = e ? (size_t)(e - p) : strlen(p);
			char *para = strndup(p, n);
			fputc('\n', f);
			if (para)
				wrap(f, para, 0, 0);
			free(para);
			p += n;
			while (*p == '\n')
				p++;
		}
	}
}

/* ---- man(7) ---- */

/* Text for a man page: '-' as \- (options are typed, not hyphenated), '\' as \e, a line
 * that would start with '.' or '\'' guarded by \&. */
static void man_text(FILE *f, const char *s, size_t n)
{
	bool bol = true;
	for (size_t i = 0; i < n && s[i]; i++) {
		char ch = s[i];
		if (bol && (ch == '.' || ch == '\''))
			fputs("\\&", f);
		bol = ch == '\n';
		if (ch == '-')
			fputs("\\-", f);
		else if (ch == '\\')
			fputs("\\e", f);
		else
			fputc(ch, f);
	}
}

void gp_cli_man(const gp_cli_cmd_t *cmd, FILE *f)
{
	fprintf(f, ".SS gpuprof %s\n.B gpuprof %s\n", cmd->name, cmd->name);
	man_text(f, cmd->synopsis, strlen(cmd->synopsis));
	fputs("\n.PP\n", f);
	man_text(f, cmd->about, strlen(cmd->about));
	fputc('\n', f);
	const gp_cli_opt_t *o = cmd->opts;
	for (bool last = false; !last; o++) {
		if (!o || !o->name) {
			o = &help_opt;
			last = true;
		}
		fputs(".TP\n", f);
		if (o->key < 256)
			fprintf(f, ".BR \\-%c \", \" \\-\\-", o->key);
		else
			fputs(o->arg ? ".BR \\-\\-" : ".B \\-\\-", f);
		man_text(f, o->name, strlen(o->name));
		if (o->arg) {
			fputs(" =\\fI", f);
			man_text(f, o->arg, strlen(o->arg));
			fputs("\\fR", f);
		}
		fputc('\n', f);
		man_text(f, o->help, strlen(o->help));
		fputc('\n', f);
	}
	for (const char *p = cmd->more; p && *p;) {
		const char *e = strstr(p, "\n\n");
		size_t n = e ? (size_t)(e - p) : strlen(p);
		fputs(".PP\n", f);
		man_text(f, p, n);
		fputc('\n', f);
		p += n;
		while (*p == '\n')
			p++;
	}
}

/* ---- values ---- */

int gp_cli_count(const gp_cli_cmd_t *cmd, const char *option, const char *v, uint64_t max,
                 uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = 0;
	if (!v || !isdigit((unsigned char)*v) || (x = strtoull(v, &end, 10), errno) || *end ||
	    x > max)
		return gp_cli_usage(cmd, "%s: '%s' is not a whole number from 0 to %llu", option,
		                    v ? v : "", (unsigned long long)max);
	*out = x;
	return 0;
}

/* [-]digits[.digits][e[+-]digits], or [-].digits...: what a person types as a number */
static bool decimal(const char *s)
{
	size_t i = 0, d = 0;
	if (s[i] == '-')
		i++;
	for (; isdigit((unsigned char)s[i]); i++)
		d++;
	if (s[i] == '.')
		for (i++; isdigit((unsigned char)s[i]); i++)
			d++;
	if (!d)
		return false;
	if (s[i] == 'e' || s[i] == 'E') {
		i++;
		if (s[i] == '+' || s[i] == '-')
			i++;
		if (!isdigit((unsigned char)s[i]))
			return false;
		while (isdigit((unsigned char)s[i]))
			i++;
	}
	return s[i] == '\0';
}

int gp_cli_number(const gp_cli_cmd_t *cmd, const char *option, const char *v, double lo,
                  bool lo_open, double hi, bool hi_open, const char *example, double *out)
{
	double x = 0;
	errno = 0;
	if (!v || !decimal(v) || (x = strtod(v, NULL), errno == ERANGE) || !isfinite(x) || x < lo ||
	    (lo_open && x == lo) || x > hi || (hi_open && x == hi))
		return gp_cli_usage(cmd, "%s: '%s' is not a number %s %.15g %s %.15g%s (e.g. %s)",
		                    option, v ? v : "", lo_open || hi_open ? "between" : "from", lo,
		                    lo_open || hi_open ? "and" : "to", hi,
		                    lo_open && hi_open ? ", both excluded"
		                    : lo_open          ? ", above the first"
		                    : hi_open          ? ", below the second"
		                                       : "",
		                    example);
	*out = x;
	return 0;
}
