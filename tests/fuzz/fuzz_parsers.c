/* libFuzzer target for what users and admins type: the site configuration (YAML, loaded
 * from a file as the plugin does), and the option grammars (--gpuprof modes, capture
 * windows, rank lists, output templates and their expansion). The first byte picks the
 * parser; any input must be accepted or rejected with a message, never crash, leak or
 * hang. */
#include "config.h"
#include "modes.h"
#include "path.h"
#include "ranks.h"
#include "siteconf.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	if (!size || size > 65536)
		return 0;
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0: {
		static char path[64];
		if (!path[0])
			snprintf(path, sizeof(path), "/tmp/gp-fuzz-yaml.%d", (int)getpid());
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			if (write(fd, data + 1, size - 1) == (ssize_t)(size - 1)) {
				gp_config_t cfg;
				gp_config_load(&cfg, path, false, err, sizeof(err));
				gp_config_allowed(&cfg, "gpu", "acct");
				const char *why;
				gp_config_admits(&cfg, "alice", "acct", &why);
				gp_config_describe(&cfg, err, sizeof(err));
				gp_config_free(&cfg);
			}
			close(fd);
		}
		break;
	}
	case 1: {
		unsigned m;
		if (gp_modes_parse(s, &m, err, sizeof(err)) == 0)
			gp_modes_format(m, err, sizeof(err));
		break;
	}
	case 2: {
		gp_capture_t c;
		if (gp_capture_parse(s, &c, err, sizeof(err)) == 0)
			gp_capture_in(&c, 12345);
		break;
	}
	case 3: {
		gp_ranks_t r;
		if (gp_ranks_parse(s, &r, err, sizeof(err)) == 0) {
			gp_ranks_contains(&r, 0);
			gp_ranks_contains(&r, 100000);
		}
		break;
	}
	case 4: {
		char out[4096];
		gp_tmpl_vars_t v = {
		    .job = "42", .user = "u", .name = "n", .step = "0", .node = "x"};
		if (gp_tmpl_check(s, err, sizeof(err)) == 0)
			gp_tmpl_expand(s, &v, out, sizeof(out));
		break;
	}
	}
	free(s);
	return 0;
}
