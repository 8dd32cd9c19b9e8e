/* Readable kernel names (names.h). */
#include "config.h"
#include "names.h"
#include "json.h"

#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
static demangle_fn demangler;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

static void load_demangler(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		*(void **)&demangler = dlsym(h, "__cxa_demangle");
}

const char *gp_demangle(const char *name, char **buf, size_t *len)
{
	int st = -1;
	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	pthread_once(&demangle_once, load_demangler);
	if (!demangler)
		return NULL;
	char *r = demangler(name, *buf, len, &st);
	if (st != 0 || !r)
		return NULL;
	*buf = r; /* realloc'd by the demangler when it needed more */
	return r;
}

char *gp_readable_name(const char *name)
{
	char *buf = NULL;
	size_t len = 0;
	const char *d = gp_demangle(name, &buf, &len);
	char *out = strdup(d ? d : name);
	free(buf);
	return out;
}

/* Remove [at, at + n) from s. */
static void cut(char *s, size_t at, size_t n)
{
	memmove(s + at, s + at + n, strlen(s + at + n) + 1);
}

/* The function's signature around the name: a leading "void " and the trailing
 * parameter list (the last top-level parentheses that end the name). */
static void drop_signature(char *s)
{
	if (!strncmp(s, "void ", 5))
		cut(s, 0, 5);
	size_t n = strlen(s);
	if (n && s[n - 1] == ')') {
		int depth = 0;
		for (size_t i = n; i-- > 0;) {
			depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
			if (!depth) {
				/* "(anonymous namespace)" is part of a name, not parameters */
				if (i > 0)
					s[i] = '\0';
				break;
			}
		}
	}
}

static void drop_all(char *s, const char *what)
{
	size_t n = strlen(what);
	for (char *p; (p = strstr(s, what));)
		cut(s, (size_t)(p - s), n);
}

/* Template arguments nested deeper than one level become "<..>". */
static void fold_nested(char *s)
{
	int depth = 0;
	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '<' && ++depth == 2) {
			size_t j = i + 1;
			for (int d = 1; s[j] && d; j++)
				d += s[j] == '<' ? 1 : s[j] == '>' ? -1 : 0;
			/* s[i..j) is "<...>"; keep "<..>" */
			if (j - i > 4) {
				s[i + 1] = s[i + 2] = '.';
				s[i + 3] = '>';
				cut(s, i + 4, j - (i + 4));
			}
			depth = 1;
			i += 3;
		} else if (s[i] == '>') {
			depth--;
		}
	}
}

/* Inside template arguments, "a::b::C" becomes "C". */
static void drop_inner_namespaces(char *s)
{
	int depth = 0;
	size_t word = 0; /* where the current qualified name began */
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		if (c == '<' || c == ',' || c == ' ' || c == '(') {
			depth += c == '<';
			word = i + 1;
		} else if (c == '>') {
			depth--;
			word = i + 1;
		} else if (depth > 0 && c == ':' && s[i + 1] == ':') {
			cut(s, word, i + 2 - word);
			i = word - 1;
		}
	}
}

/* What tells no two kernels apart, where a name is too long: CUTLASS's kernel wrapper
 * around the one argument that names the kernel ("cutlass::Kernel2<cutlass_80_simt_sgemm_
 * 256x128_8x4_nt_align1>": the precision and tile are in the argument), and the tail every
 * cuBLAS xmma kernel has. */
static void drop_boilerplate(char *s)
{
	static const char *wrap[] = {"cutlass::Kernel2<", "cutlass::Kernel<",
	                             "cutlass::device_kernel<"};
	for (size_t i = 0; i < sizeof(wrap) / sizeof(wrap[0]); i++) {
		size_t w = strlen(wrap[i]), n = strlen(s);
		if (strncmp(s, wrap[i], w) || n < w + 2 || s[n - 1] != '>' ||
		    memchr(s + w, '<', n - w - 1))
			continue;
		s[n - 1] = '\0';
		cut(s, 0, w);
		break;
	}
	drop_all(s, "_execute_kernel__5x_cublas");
}

/* The name as a person reads it without its anonymous namespaces, its template
 * arguments and its signature whole (overloads differ only there); malloc'd, NULL out of
 * memory. */
static char *unfolded(const char *name)
{
	char *s = gp_readable_name(name ? name : "");
	if (s && !strncmp(s, "void ", 5))
		cut(s, 0, 5);
	if (s)
		drop_all(s, "(anonymous namespace)::");
	if (s)
		drop_boilerplate(s);
	return s;
}

size_t gp_utf8_back(const char *s, size_t i)
{
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	return i;
}

void gp_text_safe(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* The name as a person reads it, folded to fit width as far as folding goes (the middle
 * cut aside); malloc'd, NULL out of memory. */
static char *folded(const char *name, size_t width)
{
	char *s = gp_readable_name(name ? name : "");
	if (!s)
		return NULL;
	if (strlen(s) >= width) {
		drop_signature(s);
		drop_all(s, "(anonymous namespace)::");
		drop_boilerplate(s);
	}
	if (strlen(s) >= width)
		fold_nested(s);
	if (strlen(s) >= width)
		drop_inner_namespaces(s);
	return s;
}

void gp_display_name(const char *name, char *out, size_t width)
{
	char *s = width ? folded(name, width) : NULL;
	size_t n;
	if (!width)
		return;
	if (!s) {
		snprintf(out, width, "%s", name ? name : "");
		return;
	}
	n = strlen(s);
	if (n >= width && width > 8) { /* the middle cut: both ends kept, whole characters */
		size_t keep = width - 1 - 2, head = gp_utf8_back(s, keep / 2),
		       tail = keep - keep / 2;
		size_t from = n - tail;
		while (s[from] && ((unsigned char)s[from] & 0xc0) == 0x80)
			from++;
		memmove(s + head + 2, s + from, n - from + 1);
		s[head] = s[head + 1] = '.';
	}
	gp_text_safe(s);
	snprintf(out, width, "%s", s);
	free(s);
}

/* s cut to room characters so that it shows its head and each of the np positions p[]
 * (sorted) with a little around it, the pieces joined by "..". */
static void cut_around(const char *s, const size_t *p, unsigned np, char *o, size_t room)
{
	size_t len = strlen(s), lo[8], hi[8], k = 0, used = 0;
	if (len <= room) {
		snprintf(o, room + 1, "%s", s);
		gp_text_safe(o);
		return;
	}
	lo[k] = 0, hi[k++] = 16; /* the head */
	for (unsigned i = 0; i < np && k < 8; i++) {
		size_t a = p[i] > 4 ? p[i] - 4 : 0, z = p[i] + 12 < len ? p[i] + 12 : len;
		if (a <= hi[k - 1] + 2) /* touches the piece before: one piece */
			hi[k - 1] = z > hi[k - 1] ? z : hi[k - 1];
		else
			lo[k] = a, hi[k++] = z;
	}
	for (size_t i = 0; i < k; i++)
		used += hi[i] - lo[i] + (i ? 2 : 0);
	used += hi[k - 1] < len ? 2 : 0;
	while (used > room && k > 1) /* too many pieces: the last ones go */
		used -= hi[k - 1] - lo[k - 1] + 2, k--;
	if (used < room) { /* what is left widens the last piece */
		size_t more = room - used, can = len - hi[k - 1];
		if (more >= can + (hi[k - 1] < len ? 2 : 0))
			hi[k - 1] = len;
		else
			hi[k - 1] += more;
	}
	size_t w = 0;
	for (size_t i = 0; i < k && w < room; i++) {
		if (i)
			w += (size_t)snprintf(o + w, room + 1 - w, "..");
		size_t a = lo[i], z = hi[i];
		while (a < z && ((unsigned char)s[a] & 0xc0) == 0x80) /* whole characters */
			a++;
		if (w + (z - a) > room)
			z = a + (room - w);
		z = z < len ? gp_utf8_back(s, z) : z;
		if (z < a)
			z = a;
		memcpy(o + w, s + a, z - a);
		w += z - a;
	}
	if (hi[k - 1] < len && w + 2 <= room)
		w += (size_t)snprintf(o + w, room + 1 - w, "..");
	o[w < room ? w : room] = '\0';
	gp_text_safe(o);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

void gp_display_names(const char *const *names, unsigned n, char *out, size_t width)
{
	for (unsigned i = 0; i < n; i++)
		gp_display_name(names[i], out + i * width, width);
	if (width < 12 || !n)
		return;
	char *now = malloc(n * width), **full = calloc(n, sizeof(char *));
	size_t(*pos)[4] = calloc(n, sizeof(*pos));
	unsigned *npos = calloc(n, sizeof(unsigned));
	if (!now || !full || !pos || !npos)
		goto out;
	for (unsigned i = 0; i < n; i++)
		full[i] = unfolded(names[i]);
	/* rows that read the same are cut around where their names differ, as often as that
	 * leaves two rows reading the same (a few rounds: each adds a place to show), where
	 * the column has room for pieces */
	for (int round = 0; round < 3 && width >= 40; round++) {
		bool changed = false;
		memcpy(now, out, n * width);
		for (unsigned i = 0; i < n; i++) {
			for (unsigned j = 0; full[i] && j < n; j++) {
				if (j == i || !full[j] || strcmp(now + i * width, now + j * width))
					continue;
				size_t d = 0;
				while (full[i][d] && full[i][d] == full[j][d])
					d++;
				bool known = false;
				for (unsigned k = 0; k < npos[i]; k++)
					known |= pos[i][k] == d;
				if (!known && full[i][d] && npos[i] < 4) {
					pos[i][npos[i]++] = d;
					changed = true;
				}
			}
			if (npos[i]) {
				qsort(pos[i], npos[i], sizeof(size_t), cmp_size);
				cut_around(full[i], pos[i], npos[i], out + i * width, width - 1);
			}
		}
		if (!changed)
			break;
	}
	/* rows that still read alike (names differing in more places than a row can show):
	 * numbered, the first left as it is */
	memcpy(now, out, n * width);
	for (unsigned i = 1; i < n; i++) {
		unsigned same = 1;
		for (unsigned j = 0; j < i; j++)
			same += !strcmp(now + i * width, now + j * width);
		if (same > 1) {
			char tag[16];
			int t = snprintf(tag, sizeof(tag), " #%u", same);
			char *o = out + i * width;
			size_t l = strlen(o),
			       at = l + (size_t)t < width ? l : width - 1 - (size_t)t;
			at = gp_utf8_back(o, at);
			memcpy(o + at, tag, (size_t)t + 1);
		}
	}
out:
	for (unsigned i = 0; full && i < n; i++)
		free(full[i]);
	free(full);
	free(now);
	free(pos);
	free(npos);
}

/* The kinds, in the order their patterns are tried: a name is the first kind one of whose
 * patterns it holds (lower-cased). Attention before convolution and GEMM (cuDNN's SDPA,
 * CUTLASS's FMHA), convolution before GEMM (cuDNN's implicit GEMMs), Triton's and XLA's
 * own prefixes among the generic words; copies before the elementwise kernels that run
 * them (direct_copy_kernel_cuda inside an elementwise kernel). */
static const struct {
	const char *kind;
	const char *pat[12];
} kinds[] = {
    {"communication", {"nccl"}},
    {"attention", {"flash", "fmha", "attention", "sdpa", "mha_"}},
    {"convolution",
     {"convolution", "convolve", "conv1d", "conv2d", "conv3d", "depthwise", "fprop_implicit",
      "dgrad", "wgrad"}},
    {"GEMM",
     {"triton_tem", "gemm", "cutlass", "cublas", "nvjet", "xmma", "matmul", "wgmma", "gemv",
      "sm90_", "sm80_"}},
    {"softmax", {"softmax"}},
    {"normalisation",
     {"layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm", "group_norm",
      "groupnorm", "gammabeta", "norm_kernel"}},
    {"optimizer", {"multi_tensor_apply", "adam", "_sgd", "lamb_", "fused_optim"}},
    {"reduction/scan/sort",
     {"triton_red", "triton_per", "reduce", "reduction", "cub::", "radixsort", "scan", "argmax",
      "argmin", "topk"}},
    {"indexing",
     {"embedding", "index_select", "indexselect", "gather", "scatter", "index_put", "indexing",
      "index_elementwise", "segment", "grad_weight"}},
    {"copy/transpose/fill", {"copy", "transpose", "catarray", "concat", "fill"}},
    {"elementwise",
     {"triton_poi", "elementwise", "functor", "pointwise", "dropout", "philox", "loop_"}},
    {"XLA fusion", {"fusion"}}, /* XLA's names only: no C++ scope (cudnn::fusion::...) */
};

const char *gp_kernel_kind(const char *name)
{
	char low[512];
	size_t n = 0;
	for (; name && name[n] && n + 1 < sizeof(low); n++)
		low[n] = (char)(name[n] >= 'A' && name[n] <= 'Z' ? name[n] + 32 : name[n]);
	low[n] = 0;
	bool scoped = strstr(low, "::") != NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		for (size_t p = 0; p < 12 && kinds[i].pat[p]; p++)
			if (strstr(low, kinds[i].pat[p]) &&
			    !(scoped && !strcmp(kinds[i].kind, "XLA fusion")))
				return kinds[i].kind;
	return "other";
}

void gp_html_escn(FILE *o, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0, len; s && i < n && s[i]; i += len) {
		/* bytes that are not UTF-8 and control characters are no page's text (a name
		 * the collector cut at 1 024 bytes ends inside a character): U+FFFD */
		size_t skip;
		if (!(len = gp_utf8_shown(p + i, n - i, "\t\n", &skip))) {
			fputs("\xef\xbf\xbd", o);
			len = skip;
			continue;
		}
		switch (s[i]) {
		case '<':
			fputs("&lt;", o);
			break;
		case '>':
			fputs("&gt;", o);
			break;
		case '&':
			fputs("&amp;", o);
			break;
		case '"':
			fputs("&quot;", o);
			break;
		default:
			fwrite(p + i, 1, len, o);
		}
	}
}
