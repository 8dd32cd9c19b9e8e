/* Findings about device memory (findings.h): memory that grows every step, optimizer state
 * that holds much of a pressed card, and a peak close to the card's limit. Sized in bytes a
 * fix frees, ranked by their share of the peak. */
#include "config.h"
#include "findings.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The rank's device memory peak: CUDA's (CUPTI's records), else PyTorch's reserved. */
static uint64_t peak_of(const gp_rank_t *r)
{
	return r->memory.peak ? r->memory.peak : r->torch.max_reserved;
}

/* ---- memory_leak ---- */

enum { LEAK_MIN_GROWTH, LEAK_MIN_ALLOCS, LEAK_MIN_STEPS };
static const gp_threshold_t leak_th[] = {
    [LEAK_MIN_GROWTH] = {"min_growth", 1024, "B", "growth per step after warm-up, at least"},
    [LEAK_MIN_ALLOCS] = {"min_allocs", 2, "allocations",
                         "device allocations made after warm-up and never freed, at least ..."},
    [LEAK_MIN_STEPS] = {"min_steps", 3, "steps",
                        "... or PyTorch's allocated bytes known at this many steps"},
};

/* The leak's growth per step: PyTorch's allocated bytes where it said them (tensors, not
 * the caching allocator's segments), else the device allocations CUPTI saw. */
static double leak_growth(const gp_rank_t *r)
{
	return r->torch.nmem_steps >= leak_th[LEAK_MIN_STEPS].value ? r->torch.growth_per_step
	                                                            : r->memory.growth_per_step;
}

/* The owner of the growth: of what a window of the allocator history kept (PyTorch), the
 * stack whose bytes are nearest what the growth would leave in that many steps, with a
 * tensor or more per step; else CUPTI's most frequent stack of the allocations never
 * freed; else (no window saw it grow: a loop without optimizer steps records none) the
 * largest holder with several tensors at the OOM, or at the peak, in *held. bytes per
 * step in *per (0: not known). */
static const char *leak_owner(const gp_rank_t *r, double growth, double *per,
                              const gp_owner_t **held)
{
	*held = NULL;
	const gp_owner_t *g = gp_torch_owners(&r->torch, GP_OWN_GROW), *best = NULL;
	unsigned steps = r->torch.grow_steps ? r->torch.grow_steps : 2;
	double want = growth * steps, dist = 0;
	*per = 0;
	for (unsigned k = 0; g && k < r->torch.ngrow_owner; k++) {
		if (g[k].stack[0] == '(' || g[k].tensors < steps)
			continue;
		double d = fabs((double)g[k].bytes - want);
		if (!best || d < dist)
			best = &g[k], dist = d;
	}
	if (best && dist <= 0.5 * want) {
		*per = (double)best->bytes / steps;
		return best->stack;
	}
	if (r->memory.leak_stack.s)
		return gp_txt(r->memory.leak_stack);
	for (int kind = GP_OWN_OOM; kind >= GP_OWN_PEAK; kind--) {
		const gp_owner_t *o = gp_torch_owners(&r->torch, kind);
		unsigned n = kind == GP_OWN_OOM ? r->torch.noom_owner : r->torch.nowner;
		for (unsigned k = 0; o && k < n; k++)
			if (o[k].stack[0] != '(' && o[k].tensors >= 2 &&
			    (!*held || o[k].bytes > (*held)->bytes))
				*held = &o[k];
		if (*held)
			return (*held)->stack;
	}
	return NULL;
}

static bool leak_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	double growth = leak_growth(r);
	if (growth < leak_th[LEAK_MIN_GROWTH].value ||
	    !(r->memory.leak_allocs >= leak_th[LEAK_MIN_ALLOCS].value ||
	      r->torch.nmem_steps >= leak_th[LEAK_MIN_STEPS].value))
		return false;
	unsigned left = r->steps.n_post > 1 ? r->steps.n_post - 1 : 1;
	s->rank_by = growth;
	s->bytes = growth * left; /* what the post-warm-up steps kept */
	s->score = peak_of(r) ? s->bytes / peak_of(r) : 0;
	return true;
}

static void leak_evidence(gp_finding_t *f, const gp_rank_t *w, double growth, const char *who,
                          double per, const gp_owner_t *held)
{
	bool torch = w->torch.nmem_steps >= leak_th[LEAK_MIN_STEPS].value;
	char fill[200] = "";
	uint64_t total = w->id.gpu_total ? w->id.gpu_total : w->torch.oom_total;
	uint64_t now = torch && w->torch.allocated_end ? w->torch.allocated_end : w->memory.final;
	if (total > now && growth > 0)
		snprintf(fill, sizeof(fill),
		         "; at this rate the device's %.1f GiB fill after about %.0f more steps",
		         total / 1073741824.0, (double)(total - now) / growth);
	const char *what = torch ? "PyTorch's allocated memory (tensors)" : "live device memory";
	char gs[32], ps[32], ls[32]; /* scaled: "64.0 MiB", never "65536.0 KiB" */
	gp_rule_bytes(growth, gs, sizeof(gs));
	gp_rule_bytes(per, ps, sizeof(ps));
	gp_rule_bytes((double)w->memory.leak_bytes, ls, sizeof(ls));
	if (held) {
		const gp_owner_t *oo = gp_torch_owners(&w->torch, GP_OWN_OOM);
		bool at_oom = oo && held >= oo && held < oo + w->torch.noom_owner;
		char hs[32];
		gp_rule_bytes((double)held->bytes, hs, sizeof(hs));
		snprintf(f->evidence, sizeof(f->evidence),
		         "%s grows %s per step after warm-up; no window of the allocator history "
		         "saw it grow, and the largest holder of device memory at the %s was %s: "
		         "%llu tensors, %s%s",
		         what, gs, at_oom ? "out-of-memory error" : "peak", held->stack,
		         (unsigned long long)held->tensors, hs, fill);
		return;
	}
	if (who && per > 0)
		snprintf(f->evidence, sizeof(f->evidence),
		         "%s grows %s per step after warm-up; the allocator history's window of "
		         "%u steps kept %s per step allocated at %s, not freed%s",
		         what, gs, w->torch.grow_steps ? w->torch.grow_steps : 2, ps, who, fill);
	else
		snprintf(f->evidence, sizeof(f->evidence),
		         "%s grows %s per step after warm-up; %llu device allocations (%s) "
		         "made after warm-up were never freed; most came from: %s%s",
		         what, gs, (unsigned long long)w->memory.leak_allocs, ls,
		         who ? who
		         : torch
		             ? "(no stack: the allocator history recorded no growing allocation; "
		               "it records in windows when the peak grows)"
		             : "(no stack: allocation call stacks need mode mem with CUPTI's "
		               "callbacks)",
		         fill);
}

static void leak_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                          const gp_size_t *s)
{
	double growth = leak_growth(w), per = 0;
	const gp_owner_t *held;
	const char *who = leak_owner(w, growth, &per, &held);
	char gs[32];
	gp_rule_bytes(growth, gs, sizeof(gs));
	snprintf(f->title, sizeof(f->title), "Device memory grows %s per step on rank %d%s%.120s",
	         gs, w->id.rank, who ? ": " : "", who ? who : "");
	leak_evidence(f, w, growth, who, per, held);
	snprintf(f->threshold, sizeof(f->threshold),
	         "allocated memory grows >= %.0f B per step after warm-up",
	         leak_th[LEAK_MIN_GROWTH].value);
	snprintf(f->fix, sizeof(f->fix), "%s",
	         gp_words(w,
	                  "Something keeps a reference each step (tensors appended to a list, a "
	                  "loss kept with its graph, a cache): free it, or keep "
	                  ".item()/.detach().cpu() of what you need. The line named is where the "
	                  "kept tensors are made.",
	                  "Something keeps device arrays alive each step (a list of outputs or "
	                  "metrics, a cache of jitted functions over new shapes): keep "
	                  "jax.device_get() of what you need, or delete the references. The stack "
	                  "is where they are made.",
	                  "Device allocations made each step are never freed: free them (cudaFree, "
	                  "or the allocator's own free) when the step is done, or allocate once "
	                  "outside the loop. The stack is where they are made."));
}

const gp_rule_t gp_rule_memory_leak = {
    .id = "memory_leak",
    .name = "device memory grows every step",
    .tier = GP_F_MEMORY,
    .sized = true,
    .th = leak_th,
    .nth = GP_NTH(leak_th),
    .saving_th = -1,
    .fires = "growth >= {min_growth} per step after warm-up (PyTorch's allocated bytes where "
             "known at >= {min_steps}: tensors, not segments; else CUDA's live device bytes, "
             "with >= {min_allocs} never freed); named by the allocator history's stack whose "
             "kept bytes match the growth, with when the device fills at that rate",
    .saves = "what the post-warm-up steps kept",
    .advice = "Device memory grows every step: something is kept across steps (a tensor with "
              "its graph, a growing list).",
    .size = leak_size,
    .describe = leak_describe,
};

/* ---- optimizer_state ---- */

enum { OPT_SHARE, OPT_PRESSURE, OPT_SAVES };
static const gp_threshold_t opt_th[] = {
    [OPT_SHARE] = {"state_share", 25, "%", "optimizer state, of peak device memory, at least"},
    [OPT_PRESSURE] = {"pressure", 50, "%",
                      "the peak, of the card's memory, at least: below it memory is no "
                      "constraint and freeing some buys nothing"},
    [OPT_SAVES] = {"saves", 50, "%",
                   "of the state, freed by 16-bit states, 8-bit ones, or sharding over 2 ranks"},
};

static const char torch_opt_source[] = "PyTorch optimizer state";

static bool opt_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const gp_rule_t *rule = &gp_rule_optimizer_state;
	/* known only from the framework's own figures (PyTorch's state tensors), or, in a
	 * program that is not PyTorch, from what its first optimizer range allocated */
	bool known = !strcmp(r->memory.optimizer_source, torch_opt_source) || !r->torch.seen;
	/* held against the card: at a small share of it, the state costs nothing */
	bool pressed = !r->id.gpu_total ||
	               (double)peak_of(r) >= gp_th(rule, OPT_PRESSURE) * (double)r->id.gpu_total;
	if (!known || !pressed || !peak_of(r) ||
	    (double)r->memory.optimizer_bytes / peak_of(r) < gp_th(rule, OPT_SHARE))
		return false;
	s->rank_by = (double)r->memory.optimizer_bytes;
	s->bytes = r->memory.optimizer_bytes * gp_th(rule, OPT_SAVES);
	s->score = (double)r->memory.optimizer_bytes / peak_of(r);
	return true;
}

/* The rank's peak against its card: "; the peak is 1.41 GiB of the card's 79.6 GiB (1.8%),
 * ... left". Empty when the card's memory is not known. */
static void against_card(const gp_rank_t *r, uint64_t peak, char *out, size_t len)
{
	char p[32], t[32], left[32];
	out[0] = 0;
	if (!r->id.gpu_total || !peak)
		return;
	gp_rule_bytes((double)peak, p, sizeof(p));
	gp_rule_bytes((double)r->id.gpu_total, t, sizeof(t));
	gp_rule_bytes(peak < r->id.gpu_total ? (double)(r->id.gpu_total - peak) : 0, left,
	              sizeof(left));
	snprintf(out, len, "; the peak is %s of the card's %s (%.1f%%), %s left", p, t,
	         100.0 * peak / r->id.gpu_total, left);
}

/* what the optimizer keeps, by its class ("SGD: 391.9 MiB float32 on cuda") */
static void opt_keeps(const gp_rank_t *w, char *keeps, size_t len)
{
	char kind[40] = "";
	for (unsigned k = 0; k < w->torch.nopt && k < 8 && !kind[0]; k++)
		sscanf(gp_txt(w->torch.opt[k].what), "%39[A-Za-z0-9_]", kind);
	if (strstr(kind, "Adam") || strstr(kind, "Lamb") || strstr(kind, "Lion") == kind)
		snprintf(keeps, len, "%s keeps %s per parameter. ", kind,
		         strstr(kind, "Lion") == kind ? "one momentum tensor"
		                                      : "two extra tensors (its moments)");
	else if (!strcmp(kind, "SGD"))
		snprintf(keeps, len, "SGD keeps one momentum buffer per parameter. ");
	else if (kind[0])
		snprintf(keeps, len, "%s keeps state tensors beside the parameters. ", kind);
	else
		keeps[0] = 0;
}

static void opt_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                         const gp_size_t *s)
{
	uint64_t peak = peak_of(w);
	bool torch = !strcmp(w->memory.optimizer_source, torch_opt_source);
	snprintf(f->title, sizeof(f->title),
	         "Optimizer state holds %.0f%% of peak device memory on rank %d",
	         100.0 * w->memory.optimizer_bytes / peak, w->id.rank);
	bool low = false; /* states already in 16 bits: then only sharding or 8 bits help */
	for (unsigned k = 0; k < w->torch.nopt && k < 8; k++)
		low |= strstr(gp_txt(w->torch.opt[k].what), "bfloat16") ||
		       strstr(gp_txt(w->torch.opt[k].what), "float16");
	bool multi = c->job->nranks > 1; /* ranks to shard over */
	char card[160];
	against_card(w, peak, card, sizeof(card));
	char os[32], pk[32], fr[32];
	gp_rule_bytes(w->memory.optimizer_bytes, os, sizeof(os));
	gp_rule_bytes(peak, pk, sizeof(pk));
	gp_rule_bytes(f->saving_bytes, fr, sizeof(fr));
	snprintf(f->evidence, sizeof(f->evidence), "%s %s; peak %s; %s%s would free about %s%s", os,
	         torch ? "in the optimizers' state tensors on the GPU (PyTorch's own figures)"
	               : "allocated in the first optimizer step and still held at the last step",
	         pk, low ? "8-bit states" : "bf16 states", multi ? " or sharding over 2 ranks" : "",
	         fr, card);
	snprintf(f->threshold, sizeof(f->threshold),
	         "optimizer state >= %.0f%% of peak, the peak >= %.0f%% of the card's memory",
	         opt_th[OPT_SHARE].value, opt_th[OPT_PRESSURE].value);
	char keeps[120];
	opt_keeps(w, keeps, sizeof(keeps));
	snprintf(f->fix, sizeof(f->fix), "%s%s%s", keeps,
	         low ? "The optimizer's states are already 16-bit: an 8-bit optimizer "
	               "(bitsandbytes) halves them"
	             : "Keep the optimizer's states in lower precision (bf16 states, an 8-bit "
	               "optimizer)",
	         multi ? ", or shard them across the ranks (ZeRO, FSDP, "
	                 "torch.distributed.optim.ZeroRedundancyOptimizer)."
	               : "; on several GPUs, sharding them (ZeRO, FSDP) divides them among "
	                 "the ranks.");
}

const gp_rule_t gp_rule_optimizer_state = {
    .id = "optimizer_state",
    .name = "optimizer state",
    .tier = GP_F_MEMORY,
    .sized = true,
    .th = opt_th,
    .nth = GP_NTH(opt_th),
    .saving_th = -1,
    .fires = "optimizer state >= {state_share} of peak, where it can be known: PyTorch's state "
             "tensors, or outside PyTorch what the first optimizer range allocated (never a "
             "caching allocator's segments), and the peak >= {pressure} of the card's memory "
             "(`gpu_memory_bytes`, NVML's total; where it is not known, any peak): below it "
             "memory is no constraint; the evidence holds the peak against the card and says "
             "what is left",
    .saves = "{saves} of it (16-bit states, or sharding when they already are)",
    .advice = "The optimizer's state holds much of the memory: a lighter optimizer or sharded "
              "state (ZeRO, FSDP) frees it.",
    .size = opt_size,
    .describe = opt_describe,
};

/* ---- memory_near_limit ---- */

/* The peak close to the card's memory in a run that did not run out (yet): a longer
 * sequence, a larger batch or fragmentation will. The rank nearest the limit. */
enum { NEAR_SHARE };
static const gp_threshold_t near_th[] = {
    [NEAR_SHARE] = {"peak_share", 90, "%",
                    "the memory in use at its peak, of the card's, at least (no allocation "
                    "refused)"},
};

static bool near_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const char *what;
	uint64_t p = gp_rank_in_use_peak(r, &what);
	double share = r->id.gpu_total ? (double)p / (double)r->id.gpu_total : 0;
	s->rank_by = s->score = share;
	return share >= gp_th(&gp_rule_near_limit, NEAR_SHARE) && !r->memory.oom_calls &&
	       !r->torch.oom;
}

static void near_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                          const gp_size_t *s)
{
	const char *what = "";
	uint64_t p = gp_rank_in_use_peak(w, &what);
	char card[160];
	against_card(w, p, card, sizeof(card));
	snprintf(f->title, sizeof(f->title),
	         "Device memory peaks at %.0f%% of the GPU on rank %d: close to out of memory",
	         100 * s->score, w->id.rank);
	char ps[32];
	gp_rule_bytes((double)p, ps, sizeof(ps));
	snprintf(f->evidence, sizeof(f->evidence), "%s peaked at %s%s%s%.120s", what, ps, card,
	         w->memory.peak_stack.s ? "; the peak reached by: " : "",
	         gp_txt(w->memory.peak_stack));
	snprintf(f->threshold, sizeof(f->threshold),
	         "the memory in use at its peak >= %.0f%% of the card's, no allocation refused",
	         near_th[NEAR_SHARE].value);
	snprintf(f->fix, sizeof(f->fix), "%s",
	         gp_words(w,
	                  "A longer sequence, a larger batch or fragmentation will run out: keep "
	                  "headroom with activation checkpointing (torch.utils.checkpoint), a "
	                  "smaller micro-batch with gradient accumulation, or "
	                  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation.",
	                  "A larger batch or a new shape will run out: rematerialise activations "
	                  "(jax.checkpoint), use smaller micro-batches with gradient accumulation "
	                  "(optax.MultiSteps), or shard the state over devices.",
	                  "A larger problem will run out: free buffers as soon as they are done "
	                  "with, reuse them across steps, or split the work into smaller pieces."));
}

const gp_rule_t gp_rule_near_limit = {
    .id = "memory_near_limit",
    .name = "memory close to the card's limit",
    .tier = GP_F_MEMORY,
    .role = GP_ROLE_CAUSE,
    .th = near_th,
    .nth = GP_NTH(near_th),
    .saving_th = -1,
    .fires = "the memory in use at its peak (PyTorch's max allocated, a framework pool's in-use "
             "peak, else CUDA's live bytes: never a pool's reservation) >= {peak_share} of the "
             "card's, and no allocation refused",
    .saves = "- (how close to out of memory)",
    .advice = "The memory peak is close to the card's: leave headroom (a smaller batch, "
              "activation checkpointing) before a longer input fails.",
    .size = near_size,
    .describe = near_describe,
};
