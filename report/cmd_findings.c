/* gpuprof findings: the rules the report's findings come from (findings.h), each with its
 * id, kind, when it fires and what it saves, and every threshold with its name, value,
 * unit and meaning; --format=markdown writes doc/report.md's tables of them (kept current
 * by scripts/settings-docs, which the tree tier runs with --check). */
#include "config.h"
#include "commands.h"
#include "findings.h"

#include <stdio.h>
#include <string.h>

static const gp_cli_opt_t findings_opts[] = {
    {"format", 'f', "FORMAT", "text (the default) or markdown (doc/report.md's tables)"},
    {NULL, 0, NULL, NULL}};

const gp_cli_cmd_t gp_cmd_findings_doc = {
    "findings",
    "[OPTION]... [RULE]",
    "List the rules the report's findings come from: each one's id, kind, when it fires, "
    "what it saves, and its thresholds with their names, values and units.",
    findings_opts,
    "RULE is a finding's id as report.json gives it (straggler, idle_gaps, ...): that rule "
    "alone. The values are the ones the report applies; there is no setting to change them.",
    false};

int gp_cmd_findings(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &gp_cmd_findings_doc;
	const char *format = "text";
	const gp_rule_t *only = NULL;
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0)
		if (k == 'f')
			format = c.arg;
	if (k < 0)
		return c.status;
	if (gp_cli_operands(&c, 0, 1, "rule"))
		return GP_CLI_USAGE;
	if (strcmp(format, "text") && strcmp(format, "markdown"))
		return gp_cli_usage(cmd, "--format: '%s' is not text or markdown", format);
	if (c.ind < argc && !(only = gp_rule_by_id(argv[c.ind]))) {
		char ids[1024] = "";
		for (unsigned i = 0; i < gp_nrules; i++)
			gp_cat(ids, sizeof(ids), "%s%s", i ? ", " : "", gp_rules[i]->id);
		return gp_cli_usage(cmd, "'%s' is no rule (rules: %s)", argv[c.ind], ids);
	}
	gp_rules_print(stdout, only, !strcmp(format, "markdown"));
	return fflush(stdout) ? 1 : 0;
}
