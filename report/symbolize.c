/* Native frame symbolisation with libdwfl (see symbolize.h). */
#include "config.h"
#include "symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_LIBDW
#include <elfutils/libdwfl.h>

#define MAXMOD 256

struct gp_symbolizer {
	unsigned n;
	struct mod {
		char *path;
		Dwfl *dwfl; /* NULL: this module could not be read */
		Dwfl_Module *m;
		Dwarf_Addr start; /* where libdwfl placed it */
	} mod[MAXMOD];
};

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo, /* .debug files, build-id links */
    .section_address = dwfl_offline_section_address,
};

bool gp_symbolizer_available(void)
{
	return true;
}

gp_symbolizer_t *gp_symbolizer_new(void)
{
	return calloc(1, sizeof(gp_symbolizer_t));
}

void gp_symbolizer_free(gp_symbolizer_t *s)
{
	for (unsigned i = 0; s && i < s->n; i++) {
		if (s->mod[i].dwfl)
			dwfl_end(s->mod[i].dwfl);
		free(s->mod[i].path);
	}
	free(s);
}

static struct mod *module(gp_symbolizer_t *s, const char *path)
{
	for (unsigned i = 0; i < s->n; i++)
		if (!strcmp(s->mod[i].path, path))
			return &s->mod[i];
	if (s->n == MAXMOD)
		return NULL;
	struct mod *m = &s->mod[s->n];
	memset(m, 0, sizeof(*m));
	if (!(m->path = strdup(path)))
		return NULL;
	s->n++;
	m->dwfl = dwfl_begin(&callbacks);
	if (m->dwfl) {
		dwfl_report_begin(m->dwfl);
		m->m = dwfl_report_offline(m->dwfl, path, path, -1);
		dwfl_report_end(m->dwfl, NULL, NULL);
		if (!m->m) {
			dwfl_end(m->dwfl);
			m->dwfl = NULL;
		} else {
			dwfl_module_info(m->m, NULL, &m->start, NULL, NULL, NULL, NULL, NULL);
		}
	}
	return m;
}

bool gp_symbolize(gp_symbolizer_t *s, const char *path, uint64_t off, bool return_address,
                  char *func, size_t funclen, char *file, size_t filelen, int *line)
{
	func[0] = file[0] = '\0';
	*line = 0;
	struct mod *m = s && path && *path == '/' ? module(s, path) : NULL;
	if (!m || !m->dwfl)
		return false;
	/* the module's lowest load address is where the collector measured from */
	Dwarf_Addr a = m->start + off - (return_address && off ? 1 : 0);
	const char *name = dwfl_module_addrname(m->m, a);
	if (name)
		snprintf(func, funclen, "%s", name);
	Dwfl_Line *l = dwfl_module_getsrc(m->m, a);
	int ln = 0;
	const char *src = l ? dwfl_lineinfo(l, NULL, &ln, NULL, NULL, NULL) : NULL;
	if (src) {
		snprintf(file, filelen, "%s", src);
		*line = ln;
	}
	return name || src;
}

#else /* no libdw: nothing is ever found */

struct gp_symbolizer {
	int unused;
};

bool gp_symbolizer_available(void)
{
	return false;
}

gp_symbolizer_t *gp_symbolizer_new(void)
{
	return calloc(1, sizeof(gp_symbolizer_t));
}

void gp_symbolizer_free(gp_symbolizer_t *s)
{
	free(s);
}

bool gp_symbolize(gp_symbolizer_t *s, const char *path, uint64_t off, bool return_address,
                  char *func, size_t funclen, char *file, size_t filelen, int *line)
{
	(void)s, (void)path, (void)off, (void)return_address, (void)funclen, (void)filelen;
	func[0] = file[0] = '\0';
	*line = 0;
	return false;
}
#endif
