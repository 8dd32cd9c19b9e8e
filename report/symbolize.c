/* Native frame symbolisation with libdwfl (see symbolize.h). */
#include "config.h"
#include "symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
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

/* a scope's function: its linkage name (through abstract_origin and specification), else
 * its name */
static const char *scope_name(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	const char *n = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
		n = dwarf_formstring(&at);
	return n ? n : dwarf_diename(die);
}

/* The functions around pc below parent, outermost first, into chain (their number
 * returned): the subprogram, then each function inlined in it there. Walked by hand:
 * dwarf_getscopes follows an inlined function's abstract origin (the CU where the
 * function is defined), not the function it was inlined into. */
#define CHAIN_MAX 16
static int pc_chain(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *chain, int n, int level)
{
	Dwarf_Die c;
	if (level > 32 || dwarf_child(parent, &c) != 0)
		return n;
	do {
		int tag = dwarf_tag(&c);
		bool fn = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
		if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
		    tag == DW_TAG_structure_type) /* no address of their own */
			n = pc_chain(&c, pc, chain, n, level + 1);
		else if ((fn || tag == DW_TAG_lexical_block) && dwarf_haspc(&c, pc) > 0) {
			if (fn && n < CHAIN_MAX)
				chain[n++] = c;
			return pc_chain(&c, pc, chain, n, level + 1);
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return n;
}

int gp_symbolize_inlined(gp_symbolizer_t *s, const char *path, uint64_t off, bool return_address,
                         gp_sym_frame_t *out, int max)
{
	struct mod *m = s && path && *path == '/' ? module(s, path) : NULL;
	if (!m || !m->dwfl || max <= 0)
		return 0;
	Dwarf_Addr a = m->start + off - (return_address && off ? 1 : 0), bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(m->m, a, &bias), chain[CHAIN_MAX];
	Dwfl_Line *l = dwfl_module_getsrc(m->m, a);
	int line = 0, nc = cu ? pc_chain(cu, a - bias, chain, 0, 0) : 0, n = 0;
	const char *src = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (cu)
		dwarf_getsrcfiles(cu, &files, &nfiles);
	char file[256];
	snprintf(file, sizeof(file), "%s", src ? src : "");
	for (int i = nc - 1; i >= 0 && n < max; i--) { /* innermost first */
		const char *nm = scope_name(&chain[i]);
		snprintf(out[n].func, sizeof(out[n].func), "%s", nm ? nm : "");
		snprintf(out[n].file, sizeof(out[n].file), "%s", file);
		out[n++].line = line;
		/* the function it was inlined into: at the call's file and line */
		Dwarf_Attribute at;
		Dwarf_Word w;
		if (dwarf_attr(&chain[i], DW_AT_call_line, &at) && dwarf_formudata(&at, &w) == 0)
			line = (int)w;
		const char *cf = NULL;
		if (files && dwarf_attr(&chain[i], DW_AT_call_file, &at) &&
		    dwarf_formudata(&at, &w) == 0 && w < nfiles)
			cf = dwarf_filesrc(files, w, NULL, NULL);
		if (cf)
			snprintf(file, sizeof(file), "%s", cf);
	}
	/* no DWARF function there (code linked in without debug info, such as the static CUDA
	 * runtime nvcc links by default): the ELF symbol table's name, so the frame can
	 * still be told (cudaLaunchKernel, libcudart_static_...) */
	const char *sym = n ? NULL : dwfl_module_addrname(m->m, a);
	if (sym && max > 0) {
		snprintf(out[0].func, sizeof(out[0].func), "%s", sym);
		snprintf(out[0].file, sizeof(out[0].file), "%s", file);
		out[n++].line = line;
	}
	return n;
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

int gp_symbolize_inlined(gp_symbolizer_t *s, const char *path, uint64_t off, bool return_address,
                         gp_sym_frame_t *out, int max)
{
	(void)s, (void)path, (void)off, (void)return_address, (void)out, (void)max;
	return 0;
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
