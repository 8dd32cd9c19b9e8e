/* The GPUPROF_* environment variables: the only channel from the plugin to the agent to
 * the injected library. Each is documented in doc/environment.md; those that are
 * settings (a default, a type, a site key) are read through settings.h. */
#ifndef GP_ENV_H
#define GP_ENV_H

/* set by the user (defaults for unset options) and by the plugin for the agent */
#define GP_ENV_MODES  "GPUPROF_MODES"  /* mode list (common grammar) */
#define GP_ENV_OUTPUT "GPUPROF_OUTPUT" /* job directory template or path */
#define GP_ENV_RANKS  "GPUPROF_RANKS"  /* rank list */
/* plugin -> agent */
#define GP_ENV_JOBDIR         "GPUPROF_JOBDIR"   /* expanded absolute job directory */
#define GP_ENV_ARGV0          "GPUPROF_ARGV0"    /* the task's original argv[0] (22.05 rewrite) */
#define GP_ENV_SPOOL          "GPUPROF_SPOOL"    /* node-local spool directory */
#define GP_ENV_WRAPPED        "GPUPROF_WRAPPED"  /* "agent" in a wrapped task, "env" in fallback */
#define GP_ENV_FALLBACK       "GPUPROF_FALLBACK" /* why the task was not wrapped */
#define GP_ENV_INJECT         "GPUPROF_INJECT"   /* absolute path of libgpuprof-inject.so */
#define GP_ENV_REQUIRED       "GPUPROF_REQUIRED" /* "1": failures are fatal (site policy) */
#define GP_ENV_MAXBYTES       "GPUPROF_MAX_BYTES"
#define GP_ENV_NVML_HZ        "GPUPROF_NVML_HZ"
#define GP_ENV_WARMUP         "GPUPROF_WARMUP_STEPS"
#define GP_ENV_STEP_RANGE     "GPUPROF_STEP_RANGE"
#define GP_ENV_LIVE_INTERVAL  "GPUPROF_LIVE_INTERVAL"
#define GP_ENV_CAPTURE        "GPUPROF_CAPTURE" /* cuda capture windows: steps=A-B,... */
#define GP_ENV_STEP           "GPUPROF_STEP" /* step name for the rank file path: 0, 1, batch, ... */
#define GP_ENV_RANK           "GPUPROF_RANK" /* global rank (S_TASK_GLOBAL_ID) */
#define GP_ENV_GROUP_READABLE "GPUPROF_GROUP_READABLE"
#define GP_ENV_PYTHON         "GPUPROF_PYTHON"  /* directory of the Python hook (agent/python) */
#define GP_ENV_PYTORCH        "GPUPROF_PYTORCH" /* "0": no PyTorch integration */
#define GP_ENV_TORCH_HISTORY  "GPUPROF_TORCH_HISTORY" /* its allocator history entries */
#define GP_ENV_TORCH_LAYERS   "GPUPROF_TORCH_LAYERS"  /* its module ranges in windows */
#define GP_ENV_TORCH_OPS      "GPUPROF_TORCH_OPS"     /* its operation ranges in windows */
#define GP_ENV_SITE           "GPUPROF_SITE" /* the modes profile_all_jobs set (inner steps) */
/* agent -> injected library and Python hook */
#define GP_ENV_RANK_FILE "GPUPROF_RANK_FILE" /* where the rank file ends up (.gpr) */
#define GP_ENV_RING      "GPUPROF_RING"      /* ring file path */
#define GP_ENV_CUPTI     "GPUPROF_CUPTI"     /* libcupti path (doc/admin.md) */
#define GP_ENV_AGENT_PID "GPUPROF_AGENT_PID" /* the agent that owns the ring */
/* the user's, for one job (settings.h documents them) */
#define GP_ENV_ALLOC_STACKS         "GPUPROF_ALLOC_STACKS"
#define GP_ENV_STEP_MARKERS         "GPUPROF_STEP_MARKERS"
#define GP_ENV_CUPTI_FLUSH_MS       "GPUPROF_CUPTI_FLUSH_MS"
#define GP_ENV_CUPTI_DETACH_POLL_MS "GPUPROF_CUPTI_DETACH_POLL_MS"
#define GP_ENV_CUPTI_DISCARD        "GPUPROF_CUPTI_DISCARD"
#define GP_ENV_CUPTI_API            "GPUPROF_CUPTI_API"
#define GP_ENV_CUPTI_DETACH         "GPUPROF_CUPTI_DETACH"
#define GP_ENV_LAUNCH_SITES         "GPUPROF_LAUNCH_SITES"
#define GP_ENV_AGENT                "GPUPROF_AGENT" /* `gpuprof run`: the agent to exec */
#define GP_ENV_REPORT_THREADS       "GPUPROF_REPORT_THREADS"
#define GP_ENV_REPORT_SUMMARIES     "GPUPROF_REPORT_SUMMARIES"
#define GP_ENV_SUMMARY_MIN          "GPUPROF_SUMMARY_MIN_BYTES"
/* anything */
#define GP_ENV_DEBUG "GPUPROF_DEBUG"

#endif
