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

/* The scopes a kernel's name carries that say nothing of what it does: every namespace
 * ("at::native::", "std::", "cub::detail::scan::"), where the name is an identifier
 * followed by "::" (a class's member after '>' stays: "AccumulateType<float, true>::type"). */
static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static void drop_namespaces(char *s) /* not a lambda's function: "f::{lambda()#1}" */
{
	for (size_t i = 0; s[i]; i++) {
		if (!ident_char(s[i]) || (i && (ident_char(s[i - 1]) || strchr(":>)}", s[i - 1]))))
			continue;
		size_t j = i;
		while (ident_char(s[j]))
			j++;
		if (s[j] == ':' && s[j + 1] == ':' && s[j + 2] != '{' &&
		    strncmp(s + i, "const::", 7)) {
			cut(s, i, j + 2 - i);
			i--; /* the next scope starts where this one was */
		}
	}
}

/* The index just past the group opened at s[i] ('(' or '{' or '<'), or 0 if it never
 * closes (a name the collector cut). */
static size_t group_end(const char *s, size_t i)
{
	char open = s[i], close = open == '(' ? ')' : open == '{' ? '}' : '>';
	int depth = 0;
	for (; s[i]; i++) {
		depth += s[i] == open ? 1 : s[i] == close ? -1 : 0;
		if (!depth)
			return i + 1;
	}
	return 0;
}

/* A lambda is named by the function it is in and its own parameters: "direct_copy_kernel_
 * cuda(TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1}" becomes
 * "direct_copy_kernel_cuda::{lambda(float)#1}": the enclosing functions' parameters, the
 * call operators and the outer lambdas go. */
static void collapse_lambdas(char *s)
{
	char *p;
	for (size_t from = 0; (p = strstr(s + from, "::operator()("));) { /* call operators */
		size_t a = (size_t)(p - s), z = group_end(s, a + 12);
		if (!z)
			break;
		if (!strncmp(s + z, " const", 6))
			z += 6;
		if (strncmp(s + z, "::", 2)) {
			from = z;
			continue;
		}
		cut(s, a, z - a);
		from = a;
	}
	for (size_t i = 1; s[i]; i++) { /* a scope's parameters: "f(int)::" */
		if (s[i] != '(' || !(ident_char(s[i - 1]) || s[i - 1] == '>') ||
		    (i >= 7 && !strncmp(s + i - 7, "{lambda", 7)))
			continue;
		size_t z = group_end(s, i);
		if (!z)
			break;
		size_t k = !strncmp(s + z, " const", 6) ? z + 6 : z;
		if (!strncmp(s + k, "::", 2))
			cut(s, i, k - i);
	}
	for (size_t from = 0; (p = strstr(s + from, "}::{lambda("));) { /* outer lambdas */
		size_t z = (size_t)(p - s) + 3, a = z - 3;
		int depth = 0;
		for (;; a--) { /* back to the '{' that opened the outer lambda */
			depth += s[a] == '}' ? 1 : s[a] == '{' ? -1 : 0;
			if (!depth || !a)
				break;
		}
		if (depth || a < 2 || strncmp(s + a - 2, "::", 2)) {
			from = z;
			continue;
		}
		cut(s, a, z - a);
		from = a;
	}
}

/* PyTorch's launch wrappers around the operation: "gpu_kernel_impl_nocast<F>::{lambda(int)
 * #1}" is F. */
static void unwrap_launchers(char *s)
{
	static const char *wrap[] = {"gpu_kernel_impl_nocast<", "gpu_kernel_impl<"};
	for (size_t w = 0; w < sizeof(wrap) / sizeof(wrap[0]); w++) {
		size_t n = strlen(wrap[w]);
		for (char *p = s; (p = strstr(p, wrap[w]));) {
			size_t a = (size_t)(p - s), z = group_end(s, a + n - 1);
			if (!z || (a && ident_char(s[a - 1]))) {
				p += n;
				continue;
			}
			size_t e = z;
			if (!strncmp(s + z, "::{lambda(", 10) && group_end(s, z + 2))
				e = group_end(s, z + 2);
			cut(s, z - 1, e - (z - 1)); /* the closing '>' and the lambda */
			while (z - 2 > a + n && s[z - 2] == ' ')
				cut(s, --z - 1, 1);
			cut(s, a, n);
		}
	}
}

/* The name as a person reads it without what says nothing of what the kernel does: "void",
 * its parameters, namespaces, CUTLASS's wrapper, PyTorch's launchers, the scopes of its
 * lambdas; malloc'd, NULL out of memory. */
static char *simplified(const char *name)
{
	char *s = gp_readable_name(name ? name : "");
	if (!s)
		return NULL;
	drop_signature(s);
	drop_all(s, "(anonymous namespace)::");
	drop_boilerplate(s);
	drop_namespaces(s);
	collapse_lambdas(s);
	unwrap_launchers(s);
	for (char *p; (p = strstr(s, "> >"));) /* the demangler's spacing: ">>" */
		cut(s, (size_t)(p - s) + 1, 1);
	return s;
}

/* A name's template structure, folded piece by piece to fit a column: pre<args>post, pre the
 * identifier (or a cast, or a lambda), post what follows the closing '>' ("::type*"); both
 * point into the simplified name. */
enum { FOLD_ARGS = 24, FOLD_NODES = 256 };
typedef struct fnode {
	const char *pre, *post;
	size_t npre, npost;
	struct fnode *a[FOLD_ARGS];
	unsigned na;
	bool targs; /* has <...> */
	bool gone;  /* shown as part of one ".." at the end of its list */
	bool fold;  /* its arguments shown as "<..>" */
	bool nolam; /* its lambda's "::{lambda(..)#N}" left out */
} fnode_t;

typedef struct {
	fnode_t *n;
	unsigned used;
} fpool_t;

static size_t trimmed(const char *t, size_t n)
{
	while (n && t[n - 1] == ' ')
		n--;
	return n;
}

/* One argument from s[*i]: NULL where the name does not parse (unbalanced: cut short). */
static fnode_t *parse_arg(fpool_t *p, const char *s, size_t *i, int depth)
{
	if (p->used == FOLD_NODES || depth > 32)
		return NULL;
	fnode_t *n = &p->n[p->used++];
	memset(n, 0, sizeof(*n));
	while (s[*i] == ' ')
		(*i)++;
	n->pre = s + *i;
	for (int par = 0; s[*i]; (*i)++) {
		char c = s[*i];
		if (c == '(' || c == '{')
			par++;
		else if ((c == ')' || c == '}') && par)
			par--;
		else if (!par && (c == '<' || c == ',' || c == '>'))
			break;
	}
	n->npre = trimmed(n->pre, (size_t)(s + *i - n->pre));
	n->post = s + *i;
	if (s[*i] != '<')
		return n;
	n->targs = true;
	(*i)++;
	for (;;) {
		while (s[*i] == ' ')
			(*i)++;
		if (s[*i] == '>')
			break;
		if (n->na == FOLD_ARGS)
			return NULL;
		if (!(n->a[n->na++] = parse_arg(p, s, i, depth + 1)))
			return NULL;
		if (s[*i] == ',')
			(*i)++;
		else if (s[*i] != '>')
			return NULL;
	}
	(*i)++;
	n->post = s + *i;
	for (int par = 0, ang = 0; s[*i]; (*i)++) { /* "::type*", "::Policy<1>" */
		char c = s[*i];
		if (c == '(' || c == '{')
			par++;
		else if ((c == ')' || c == '}') && par)
			par--;
		else if (!par && c == '<')
			ang++;
		else if (!par && c == '>' && ang)
			ang--;
		else if (!par && !ang && (c == ',' || c == '>'))
			break;
	}
	n->npost = trimmed(n->post, (size_t)(s + *i - n->post));
	return n;
}

typedef struct {
	char *b;
	size_t n, cap;
} fbuf_t;

static void put(fbuf_t *o, const char *t, size_t n)
{
	for (size_t k = 0; k < n; k++, o->n++)
		if (o->n + 1 < o->cap)
			o->b[o->n] = t[k];
	if (o->cap)
		o->b[o->n + 1 < o->cap ? o->n : o->cap - 1] = '\0';
}

/* t[0, n) with its lambdas' "::{lambda(..)#N}" left out where nolam */
static void put_text(fbuf_t *o, const char *t, size_t n, bool nolam)
{
	for (size_t k = 0; k < n; k++) {
		if (nolam && !strncmp(t + k, "::{lambda(", 10) && k + 10 <= n) {
			size_t z = group_end(t, k + 2);
			if (z && z <= n) {
				k = z - 1;
				continue;
			}
		}
		put(o, t + k, 1);
	}
}

static void render(const fnode_t *n, fbuf_t *o)
{
	put_text(o, n->pre, n->npre, n->nolam);
	if (n->targs) {
		if (n->fold) {
			put(o, "<..>", 4);
		} else {
			bool first = true, gone = false;
			put(o, "<", 1);
			for (unsigned k = 0; k < n->na; k++) {
				if (n->a[k]->gone) {
					gone = true;
					continue;
				}
				if (!first)
					put(o, ", ", 2);
				render(n->a[k], o);
				first = false;
			}
			if (gone)
				put(o, first ? ".." : ", ..", first ? 2 : 4);
			put(o, ">", 1);
		}
	}
	put_text(o, n->post, n->npost, n->nolam);
}

static bool pre_is(const fnode_t *n, const char *const *list)
{
	for (; *list; list++)
		if (strlen(*list) == n->npre && !strncmp(n->pre, *list, n->npre))
			return true;
	return false;
}

/* Arguments that say how a kernel is launched, not what it does: PyTorch's buffers, offset
 * calculators, casts and tensor lists */
static const char *const noise[] = {"array",
                                    "TrivialOffsetCalculator",
                                    "OffsetCalculator",
                                    "LoadWithCast",
                                    "StoreWithCast",
                                    "LoadWithoutCast",
                                    "StoreWithoutCast",
                                    "TensorListMetadata",
                                    "TensorListScalarListMetadata",
                                    "FusedOptimizerTensorListMetadata",
                                    "policy_hub",
                                    NULL};

static bool literal(const fnode_t *n)
{
	const char *t = n->pre;
	return !n->targs && n->npre &&
	       (t[0] == '(' || t[0] == '-' || (t[0] >= '0' && t[0] <= '9') ||
	        (n->npre == 4 && !strncmp(t, "true", 4)) ||
	        (n->npre == 5 && !strncmp(t, "false", 5)));
}

/* Arguments that only carry the one that says what the kernel does */
static const char *const wrappers[] = {"ReduceOp", "func_wrapper_t", NULL};

/* A plain type or a literal ("float", "unsigned int", "char*", "4", "true", "(SortOrder)0") */
static bool plain(const fnode_t *n)
{
	static const char *const words[] = {
	    "void",   "bool",  "char",   "short",  "int",           "long",     "unsigned",
	    "signed", "float", "double", "const",  "Half",          "BFloat16", "float2",
	    "float4", "true",  "false",  "__half", "__nv_bfloat16", "size_t",   NULL};
	if (n->targs || !n->npre)
		return false;
	if (literal(n))
		return true;
	for (size_t k = 0; k < n->npre;) {
		if (!ident_char(n->pre[k])) {
			if (!strchr(" *&", n->pre[k]))
				return false;
			k++;
			continue;
		}
		size_t z = k;
		while (z < n->npre && ident_char(n->pre[z]))
			z++;
		bool known = false;
		for (const char *const *w = words; *w && !known; w++)
			known = strlen(*w) == z - k && !strncmp(n->pre + k, *w, z - k);
		if (!known)
			return false;
		k = z;
	}
	return true;
}

static void mark(fnode_t *n, int depth, int at, int what)
{
	if (depth == at || (what == 0 && depth >= 1)) {
		if (what == 0 && pre_is(n, noise))
			n->gone = true;
		if (what == 1 && n->targs)
			n->fold = true;
		if (what == 1)
			n->nolam = true;
	}
	for (unsigned k = 0; k < n->na; k++)
		mark(n->a[k], depth + 1, at, what);
}

static bool fits(const fnode_t *root, char *out, size_t width)
{
	fbuf_t o = {out, 0, width};
	render(root, &o);
	return o.n < width;
}

/* The root's head shortened so that its arguments show: "_kernel" dropped, then its end
 * cut (".."); the arguments as they are, else the first that names something alone (and
 * then without its own arguments: "<CUDAFunctor_add..>"); false where none leaves the head
 * 7 characters and its "..". */
static bool head_cut(fnode_t *root, unsigned key, char *out, size_t width)
{
	char args[512];
	fbuf_t o = {args, 0, sizeof(args)};
	size_t npre = root->npre, npost = root->npost;
	root->npre = root->npost = 0;
	render(root, &o);
	root->npre = npre, root->npost = npost;
	for (int v = 1; v < 3 && key < root->na && o.n + 12 >= width; v++) { /* head whole */
		fnode_t *k = root->a[key];
		o.n = 0;
		put(&o, "<", 1);
		if (v == 1)
			render(k, &o);
		else
			put_text(&o, k->pre, k->npre, true);
		put(&o, "..>", 3);
	}
	/* the head cut to 4 characters at the least ("vect..<pow_tensor_scalar_kernel_impl..>"
	 * in 40 columns) rather than the whole name cut in its middle, which keeps its end,
	 * "array<char*, 2ul>>", and loses the functor */
	if (o.n >= sizeof(args) || o.n + 7 > width)
		return false;
	size_t room = width - 1 - o.n, keep = npre;
	if (keep > 7 && !strncmp(root->pre + keep - 7, "_kernel", 7))
		keep -= 7;
	if (keep <= room) {
		snprintf(out, width, "%.*s%s", (int)keep, root->pre, args);
		return true;
	}
	keep = gp_utf8_back(root->pre, room - 2);
	snprintf(out, width, "%.*s..%s", (int)keep, root->pre, args);
	return true;
}

/* The head's arguments that are what (literal, plain) says, shown as "..". */
static void leave_out(fnode_t *root, bool (*what)(const fnode_t *))
{
	for (unsigned k = 0; k < root->na; k++)
		if (what(root->a[k]))
			root->a[k]->gone = true;
}

/* s folded into out (width bytes) step by step, each step only if the name still does not
 * fit: the launch's arguments left out, the head's literal arguments, the arguments three
 * deep, the head's plain types, the wrappers and the arguments two deep, then the head's
 * arguments from the last but the first that names something (the functor, the op), then
 * the head shortened; false where even that does not fit. */
static bool fold_tree(const char *s, char *out, size_t width)
{
	fpool_t p = {malloc(FOLD_NODES * sizeof(fnode_t)), 0};
	size_t i = 0;
	bool done = false;
	fnode_t *root = p.n ? parse_arg(&p, s, &i, 0) : NULL;
	if (!root || s[i])
		goto out;
	mark(root, 0, -1, 0); /* noise */
	if ((done = fits(root, out, width)))
		goto out;
	leave_out(root, literal);
	if ((done = fits(root, out, width)))
		goto out;
	mark(root, 0, 2, 1);
	if ((done = fits(root, out, width)))
		goto out;
	leave_out(root, plain);
	if ((done = fits(root, out, width)))
		goto out;
	for (unsigned k = 0; k < root->na; k++) /* ReduceOp<float, MaxOps<float>, ..> is MaxOps */
		for (fnode_t *w = root->a[k]; pre_is(w, wrappers);) {
			unsigned j = 0;
			while (j < w->na && plain(w->a[j]))
				j++;
			if (j == w->na)
				break;
			root->a[k] = w = w->a[j];
		}
	mark(root, 0, 1, 1);
	if ((done = fits(root, out, width)))
		goto out;
	unsigned key = 0;
	while (key < root->na && root->a[key]->gone)
		key++;
	for (unsigned k = root->na; k-- > key + 1;) {
		if (root->a[k]->gone)
			continue;
		root->a[k]->gone = true;
		if ((done = fits(root, out, width)))
			goto out;
	}
	done = root->targs && head_cut(root, key, out, width);
out:
	free(p.n);
	return done;
}

static void middle_cut(char *s, char *out, size_t width);

void gp_display_name(const char *name, char *out, size_t width)
{
	if (!width)
		return;
	char *s = gp_readable_name(name ? name : "");
	if (!s) {
		snprintf(out, width, "%s", name ? name : "");
		return;
	}
	if (!strncmp(s, "void ", 5))
		cut(s, 0, 5);
	/* too long whole, or scoped (a namespace says nothing of what the kernel does, and a
	 * table's rows read alike without them): what says nothing goes, then folding */
	if (strlen(s) >= width || strstr(s, "::")) {
		free(s);
		if (!(s = simplified(name))) {
			snprintf(out, width, "%s", name ? name : "");
			return;
		}
		if (strlen(s) >= width && fold_tree(s, out, width)) {
			gp_text_safe(out);
			free(s);
			return;
		}
	}
	middle_cut(s, out, width);
	free(s);
}

/* s (malloc'd, changed) into out, cut in the middle where it is too long: both ends kept,
 * whole characters */
static void middle_cut(char *s, char *out, size_t width)
{
	size_t n = strlen(s);
	if (n >= width && width > 8) {
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
}

void gp_display_label(const char *name, char *out, size_t width)
{
	if (!width)
		return;
	char *s = gp_readable_name(name ? name : "");
	if (!s) {
		snprintf(out, width, "%s", name ? name : "");
		gp_text_safe(out);
		return;
	}
	/* a function's parameter list goes where the whole does not fit; its scope stays
	 * (Model::forward and Encoder::forward are two functions) */
	size_t n = strlen(s);
	if (n >= width && n && s[n - 1] == ')') {
		int depth = 0;
		for (size_t i = n; i-- > 0;) {
			depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
			if (!depth) {
				if (i > 0)
					s[i] = 0;
				break;
			}
		}
	}
	middle_cut(s, out, width);
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
	/* the head and a little around each place, narrower where that does not fit */
	static const size_t head[] = {16, 12, 8}, before[] = {4, 2, 1}, after[] = {12, 8, 5};
	for (int m = 0; m < 3 && (!k || used > room); m++) {
		k = 0, used = 0;
		lo[k] = 0, hi[k++] = head[m];
		for (unsigned i = 0; i < np && k < 8; i++) {
			size_t a = p[i] > before[m] ? p[i] - before[m] : 0,
			       z = p[i] + after[m] < len ? p[i] + after[m] : len;
			if (a <= hi[k - 1] + 2) /* touches the piece before: one piece */
				hi[k - 1] = z > hi[k - 1] ? z : hi[k - 1];
			else
				lo[k] = a, hi[k++] = z;
		}
		for (size_t i = 0; i < k; i++)
			used += hi[i] - lo[i] + (i ? 2 : 0);
		used += hi[k - 1] < len ? 2 : 0;
	}
	while (used > room && k > 1) /* too many pieces: the last ones go */
		used -= hi[k - 1] - lo[k - 1] + 2, k--;
	if (used < room) { /* what is left widens the last piece, then the head */
		size_t more = room - used, can = len - hi[k - 1];
		if (more >= can + (hi[k - 1] < len ? 2 : 0)) {
			used += can - (hi[k - 1] < len ? 2 : 0);
			hi[k - 1] = len;
		} else {
			hi[k - 1] += more;
			used = room;
		}
	}
	if (used < room && k > 1) {
		size_t more = room - used, gap = lo[1] - hi[0];
		if (more >= gap) { /* the head reaches the next piece: one piece */
			hi[0] = hi[1];
			for (size_t i = 1; i + 1 < k; i++)
				lo[i] = lo[i + 1], hi[i] = hi[i + 1];
			k--;
		} else {
			hi[0] += more;
		}
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

void gp_display_names(const char *const *names, const bool *kernel, unsigned n, char *out,
                      size_t width)
{
	for (unsigned i = 0; i < n; i++)
		if (!kernel || kernel[i])
			gp_display_name(names[i], out + i * width, width);
		else
			gp_display_label(names[i], out + i * width, width);
	if (width < 12 || !n)
		return;
	char *now = malloc(n * width), **full = calloc(n, sizeof(char *));
	size_t(*pos)[4] = calloc(n, sizeof(*pos));
	unsigned *npos = calloc(n, sizeof(unsigned));
	if (!now || !full || !pos || !npos)
		goto out;
	for (unsigned i = 0; i < n; i++)
		full[i] = !kernel || kernel[i] ? simplified(names[i]) : gp_readable_name(names[i]);
	/* two kernels the shortening made one name (overloads differing in their parameters,
	 * templates in what was dropped): told apart by their whole readable names */
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; full[i] && j < n; j++) {
			if (!full[j] || strcmp(full[i], full[j]) || !strcmp(names[i], names[j]))
				continue;
			char *a = gp_readable_name(names[i]), *b = gp_readable_name(names[j]);
			if (a && b) {
				free(full[i]), free(full[j]);
				full[i] = a, full[j] = b;
			} else {
				free(a), free(b);
			}
		}
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
