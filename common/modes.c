/* Parser for the mode grammar (see modes.h) and the text checks every option shares. */
#include "config.h"
#include "modes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *word;
	unsigned bits;
	const char *help;
} mode_words[] = {
    {"timing", GP_MODE_TIMING, "wall/CPU time, peak RSS, step times (always on)"},
    {"nvtx", GP_MODE_NVTX, "NVTX ranges and marks on the timeline"},
    {"cuda", GP_MODE_CUDA, "CUDA kernels, memcpy, memset, synchronisation (CUPTI)"},
    {"mem", GP_MODE_MEM, "device allocations and frees with call stacks"},
    {"gpu", GP_MODE_GPU, "NVML sampling: utilisation, memory, power, clocks"},
    {"all", GP_MODES_ALL, "all of the above"},
    {"layers", GP_MODE_LAYERS,
     "PyTorch: an NVTX range per module forward and backward (opt-in, not in all)"},
    {"none", GP_MODE_NONE, "no profiling for this job or step"},
    {"help", GP_MODE_HELP, "print this list and submit nothing"},
};

const char *gp_modes_help(void)
{
	static char buf[1024];
	size_t off = 0;
	if (buf[0])
		return buf;
	for (size_t i = 0; i < sizeof(mode_words) / sizeof(mode_words[0]); i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "  %-7s %s\n",
		                        mode_words[i].word, mode_words[i].help);
	return buf;
}

void gp_text_escape(const char *s, size_t n, char *dst, size_t cap)
{
	size_t o = 0;
	if (cap == 0)
		return;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f)
			dst[o++] = (char)c;
		else
			o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
	}
	dst[o] = '\0';
}

/* Length of the UTF-8 sequence at p, or 0 if it is not well-formed. */
static size_t utf8_seq_len(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		return (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (p[0] >= 0xe0 && p[0] <= 0xef) {
		if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
			return 0;
		if (p[0] == 0xe0 && p[1] < 0xa0)
			return 0; /* overlong */
		if (p[0] == 0xed && p[1] >= 0xa0)
			return 0; /* surrogate */
		return 3;
	}
	if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
			return 0;
		if ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

bool gp_bidi_control(uint32_t cp)
{
	return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t gp_utf8_next(const unsigned char *s, size_t n, uint32_t *cp, size_t *bad)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t v, min;
	*bad = 1;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, v = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, v = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, v = c & 0x07, min = 0x10000;
	else
		return 0; /* a continuation byte, C0/C1 (overlong by construction), F5-FF */
	for (size_t i = 1; i < len; i++) {
		if (i >= n || (s[i] & 0xc0) != 0x80)
			return 0; /* *bad: the bytes so far, each a valid prefix */
		v = v << 6 | (s[i] & 0x3f);
		/* the second byte decides overlongs, surrogates and the top: E0 A0.., ED ..9F,
		 * F0 90.., F4 ..8F (Unicode table 3-7), so a bad second byte ends the subpart */
		if (i == 1 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
		               (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f)))
			return 0;
		*bad = i + 1;
	}
	if (v < min)
		return *bad = 1, 0; /* not reached: the checks above exclude overlongs */
	*cp = v;
	return len;
}

size_t gp_utf8_shown(const unsigned char *s, size_t n, const char *keep, size_t *skip)
{
	uint32_t cp;
	size_t len = gp_utf8_next(s, n, &cp, skip);
	if (!len)
		return 0;
	*skip = len;
	if ((cp < 0x20 && !(cp && strchr(keep, (int)cp))) || (cp >= 0x7f && cp < 0xa0) ||
	    gp_bidi_control(cp))
		return 0;
	return len;
}

size_t gp_shown(char *buf, size_t len, const char *keep)
{
	size_t w = 0;
	for (size_t i = 0, n, skip; buf && i < len; i += n) {
		if (!(n = gp_utf8_shown((unsigned char *)buf + i, len - i, keep, &skip))) {
			buf[w++] = '?';
			n = skip;
			continue;
		}
		memmove(buf + w, buf + i, n);
		w += n;
	}
	return w;
}

size_t gp_utf8_char(const unsigned char *p)
{
	if (p[0] < 0x20 || p[0] == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
		return 0;
	size_t n = utf8_seq_len(p);
	if (n == 3 && gp_bidi_control((uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 |
	                              (p[2] & 0x3f)))
		return 0;
	return n;
}

int gp_text_check(const char *s, size_t maxlen, char *err, size_t errlen)
{
	size_t n = strnlen(s, maxlen + 1);
	if (n > maxlen) {
		snprintf(err, errlen, "value is longer than %zu bytes", maxlen);
		return -1;
	}
	for (size_t i = 0; i < n;) {
		const unsigned char *p = (const unsigned char *)s + i;
		if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0)) {
			snprintf(err, errlen, "control character \\x%02x at position %zu",
			         *p == 0xc2 ? p[1] : *p, i + 1);
			return -1;
		}
		size_t l = utf8_seq_len(p);
		if (l == 0) {
			snprintf(err, errlen, "value is not valid UTF-8 at position %zu", i + 1);
			return -1;
		}
		i += l;
	}
	return 0;
}

int gp_modes_parse(const char *s, unsigned *modes, char *err, size_t errlen)
{
	char why[128];
	unsigned acc = 0;
	unsigned standalone = 0; /* none/help seen */
	size_t ntok = 0;

	if (!s) {
		snprintf(err, errlen, "missing value (modes: %s)", GP_MODES_WORDS);
		return -1;
	}
	if (gp_text_check(s, GP_MODES_MAXLEN, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s (modes: %s)", why, GP_MODES_WORDS);
		return -1;
	}
	if (*s == '\0') {
		snprintf(err, errlen, "empty value (modes: %s)", GP_MODES_WORDS);
		return -1;
	}
	for (const char *p = s;; p++) {
		const char *tok = p;
		size_t len = strcspn(p, ",");
		unsigned bits = 0;
		ntok++;
		if (len == 0) {
			snprintf(err, errlen, "empty mode at position %zu (modes: %s)",
			         (size_t)(tok - s) + 1, GP_MODES_WORDS);
			return -1;
		}
		for (size_t i = 0; i < sizeof(mode_words) / sizeof(mode_words[0]); i++) {
			if (strlen(mode_words[i].word) == len &&
			    !strncmp(mode_words[i].word, tok, len))
				bits = mode_words[i].bits;
		}
		if (!bits) {
			char esc[GP_MODES_MAXLEN * 4 + 1];
			gp_text_escape(tok, len, esc, sizeof(esc));
			snprintf(err, errlen, "unknown mode '%s' at position %zu (modes: %s)", esc,
			         (size_t)(tok - s) + 1, GP_MODES_WORDS);
			return -1;
		}
		if (bits & (GP_MODE_NONE | GP_MODE_HELP))
			standalone |= bits;
		acc |= bits;
		p += len;
		if (*p == '\0')
			break;
	}
	if (standalone && ntok > 1) {
		snprintf(err, errlen, "'%s' cannot be combined with other modes (modes: %s)",
		         (standalone & GP_MODE_HELP) ? "help" : "none", GP_MODES_WORDS);
		return -1;
	}
	if (!standalone)
		acc |= GP_MODE_TIMING;
	*modes = acc;
	return 0;
}

int gp_modes_format(unsigned modes, char *buf, size_t len)
{
	static const char *names[] = {"timing", "nvtx", "cuda", "mem", "gpu", "layers"};
	size_t off = 0;
	int total = 0;
	if (len)
		buf[0] = '\0';
	if (modes & GP_MODE_NONE)
		return snprintf(buf, len, "none");
	if (modes & GP_MODE_HELP)
		return snprintf(buf, len, "help");
	for (unsigned i = 0; i < 6; i++) {
		if (!(modes & (1u << i)))
			continue;
		int n = snprintf(buf + off, off < len ? len - off : 0, "%s%s", total ? "," : "",
		                 names[i]);
		total += n;
		off = (size_t)total < len ? (size_t)total : len;
	}
	return total;
}

int gp_capture_parse(const char *s, gp_capture_t *c, char *err, size_t errlen)
{
	gp_capture_t t = {.how = GP_CAP_ALWAYS};
	const char *p;
	if (!s || !*s || !strcmp(s, "all")) {
		*c = t;
		return 0;
	}
	if (!strcmp(s, "cudaprofilerapi")) {
		t.how = GP_CAP_PROFILER;
		*c = t;
		return 0;
	}
	if (!strncmp(s, "sampled", 7) && (!s[7] || s[7] == '=')) {
		char *end;
		t.how = GP_CAP_SAMPLED;
		t.len = GP_SAMPLE_LEN;
		t.every = GP_SAMPLE_EVERY;
		if (s[7] == '=') {
			if (s[8] < '1' || s[8] > '9')
				goto bad;
			errno = 0;
			t.len = strtoull(s + 8, &end, 10);
			if (*end != '/' || end[1] < '1' || end[1] > '9')
				goto bad;
			t.every = strtoull(end + 1, &end, 10);
			if (*end || errno == ERANGE || t.every < t.len || t.every > 1000000000ull)
				goto bad;
		}
		t.first_end = t.len; /* the caller adds the warm-up (gp_capture_warmup) */
		*c = t;
		return 0;
	}
	if (strncmp(s, "steps=", 6))
		goto bad;
	t.how = GP_CAP_STEPS;
	for (p = s + 6; *p;) {
		char *end;
		unsigned long long a, b;
		if (*p < '0' || *p > '9')
			goto bad;
		errno = 0;
		a = b = strtoull(p, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				goto bad;
			b = strtoull(end + 1, &end, 10);
			if (b < a)
				goto bad;
		}
		if (errno == ERANGE) { /* strtoull saturates: 2^64 would read as 2^64 - 1 */
			snprintf(err, errlen, "'%.64s': a step number past 2^64 - 1", s);
			return -1;
		}
		if (t.nwin == GP_CAPTURE_MAXWIN) {
			snprintf(err, errlen, "'%.64s': at most %d windows", s, GP_CAPTURE_MAXWIN);
			return -1;
		}
		t.win[t.nwin][0] = a;
		t.win[t.nwin][1] = b;
		t.nwin++;
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	if (!t.nwin)
		goto bad;
	*c = t;
	return 0;
bad:
	snprintf(err, errlen,
	         "'%.64s' is not a capture window: all, cudaprofilerapi, sampled[=LEN/EVERY] "
	         "(LEN <= EVERY, both > 0) or steps=A-B[,C-D...] (0-based step numbers, "
	         "inclusive)",
	         s);
	return -1;
}

void gp_capture_warmup(gp_capture_t *c, unsigned long long warmup)
{
	if (c->how == GP_CAP_SAMPLED)
		c->first_end = warmup + c->len;
}

int gp_capture_in(const gp_capture_t *c, unsigned long long idx)
{
	if (c->how == GP_CAP_SAMPLED)
		return idx < c->first_end || (c->every && idx % c->every < c->len);
	if (c->how != GP_CAP_STEPS)
		return 1;
	for (unsigned i = 0; i < c->nwin; i++)
		if (idx >= c->win[i][0] && idx <= c->win[i][1])
			return 1;
	return 0;
}
