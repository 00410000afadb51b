/* profile.c: hardware profiles and model descriptions: their key tables,
 * loading by embedded name or by file path, checks, the JSON writer that
 * `ema calibrate` output goes through, and the sizes derived from a model. */
#include "config_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HW(f) offsetof(struct ema_hw_profile, f)
#define MD(f) offsetof(struct ema_model, f)
#define SZ(t, f) sizeof(((struct t *)0)->f)
#define REQ EMA_CFG_REQUIRED
#define POS (EMA_CFG_REQUIRED | EMA_CFG_MIN_OPEN)


const struct ema_config_key ema_config_hw_keys[] = {
	{ "name", EMA_CFG_STR, HW(name), SZ(ema_hw_profile, name), 0, 0, 0, REQ | EMA_CFG_NONEMPTY, NULL, NULL, NULL,
	  "", "Identity, shown in outputs." },
	{ "source", EMA_CFG_STR, HW(source), SZ(ema_hw_profile, source), 0, 0, 0, REQ | EMA_CFG_NONEMPTY, NULL, NULL, NULL,
	  "", "`calibrated`, `measured` or `datasheet`: where the figures come from." },
	{ "date", EMA_CFG_STR, HW(date), SZ(ema_hw_profile, date), 0, 0, 0, 0, NULL, NULL, NULL,
	  "", "When the figures were taken." },
	{ "description", EMA_CFG_STR, HW(description), SZ(ema_hw_profile, description), 0, 0, 0, 0, NULL, NULL, NULL,
	  "", "What the profile describes and how its figures were obtained." },
	{ "gpu_name", EMA_CFG_STR, HW(gpu_name), SZ(ema_hw_profile, gpu_name), 0, 0, 0, 0, NULL, NULL, NULL,
	  "", "The GPU model." },
	{ "n_gpus", EMA_CFG_INT, HW(n_gpus), 0, 0, 1, EMA_MAX_GPUS, REQ, NULL, NULL, NULL,
	  "GPUs", "GPUs in the server." },
	{ "gpu_mem_gib", EMA_CFG_DBL, HW(gpu_mem_gib), 0, 0, 0, 1e5, POS, NULL, NULL, NULL,
	  "GiB", "Usable memory per GPU (ledger)." },
	{ "hbm_read_gbps", EMA_CFG_DBL, HW(hbm_read_gbps), 0, 0, 0, 1e6, POS, NULL, NULL, NULL,
	  "GB/s", "Peak HBM read bandwidth of one GPU (cost model, interference)." },
	{ "hbm_efficiency", EMA_CFG_DBL, HW(hbm_efficiency), 0, 0, 0, 1, POS, NULL, NULL, NULL,
	  "share", "Share of `hbm_read_gbps` that decode-like reads reach (cost model)." },
	{ "peak_tflops", EMA_CFG_DBL, HW(peak_tflops), 0, 0, 0, 1e6, POS, NULL, NULL, NULL,
	  "TFLOP/s", "Dense bf16 peak (cost model)." },
	{ "flops_efficiency", EMA_CFG_DBL, HW(flops_efficiency), 0, 0, 0, 1, POS, NULL, NULL, NULL,
	  "share", "Share of `peak_tflops` that large prefill GEMMs reach (cost model)." },
	{ "iter_overhead_us", EMA_CFG_DBL, HW(iter_overhead_us), 0, 0, 0, 1e6, REQ, NULL, NULL, NULL,
	  "us", "Fixed cost per iteration: scheduling, launches, sampling (cost model)." },
	{ "topology", EMA_CFG_ENUM, HW(topology), 0, 0, 0, 0, REQ, ema_topology_names, NULL, NULL,
	  "",
	  "`direct`: a link per GPU pair; `switch`: one port per GPU into a switch "
	  "(link model)." },
	{ "link_gbps", EMA_CFG_DBL, HW(link_gbps), 0, 0, 0, 1e6, POS, NULL, NULL, NULL,
	  "GB/s, one direction", "Per pair (`direct`) or per GPU port (`switch`) (link model)." },
	{ "host_link_gbps", EMA_CFG_DBL, HW(host_link_gbps), 0, 0, 0, 1e6, POS, NULL, NULL, NULL,
	  "GB/s, one direction", "PCIe per GPU (link model)." },
	{ "copy_engines", EMA_CFG_INT, HW(copy_engines), 0, 0, 1, 64, REQ, NULL, NULL, NULL,
	  "copies",
	  "Copy-engine transfers a GPU drives at once; more queue FIFO (link "
	  "model)." },
	{ "copy_fixed_us", EMA_CFG_DBL, HW(copy_fixed_us), 0, 0, 0, 1e6, REQ, NULL, NULL, NULL,
	  "us", "Device-side fixed cost of one copy (link model)." },
	{ "copy_call_us", EMA_CFG_DBL, HW(copy_call_us), 0, 0, 0, 1e6, REQ, NULL, NULL, NULL,
	  "us", "Host cost of issuing one cudaMemcpyPeerAsync (link model, `per_page`)." },
	{ "batch_page_us", EMA_CFG_DBL, HW(batch_page_us), 0, 0, 0, 1e6, REQ, NULL, NULL, NULL,
	  "us", "Host cost per page of cudaMemcpyBatchAsync (link model, `batch`)." },
	{ "gather_gbps", EMA_CFG_DBL, HW(gather_gbps), 0, 0, 0, 1e6, POS, NULL, NULL, NULL,
	  "GB/s",
	  "SM gather kernel on scattered pages (link model, ema's cap); at most "
	  "twice `link_gbps`." },
	{ "copy_curve", EMA_CFG_CURVE, HW(copy_curve), 0, HW(n_copy_curve), 1, EMA_CURVE_MAX, REQ, NULL, NULL, NULL,
	  "[bytes, GB/s]",
	  "cudaMemcpyPeerAsync rate by size, log-linear between points, increasing "
	  "bytes (link model)." },
	{ "remote_read_gbps", EMA_CFG_DBL, HW(remote_read_gbps), 0, 0, 0, 1e6, POS, NULL, NULL, NULL,
	  "GB/s",
	  "A kernel reading peer memory in place, per link (cost model of in-place "
	  "reads: `remote_direct`, ema's `inplace` path and its TPOT cap)." },
	{ "remote_read_efficiency", EMA_CFG_DBL, HW(remote_read_efficiency), 0, 0, 0, 1, 0, NULL, NULL, NULL,
	  "share",
	  "Share of `remote_read_gbps` that decode-like paged reads over the link "
	  "reach, as `hbm_efficiency` is of `hbm_read_gbps`: both peaks are "
	  "streaming kernels', and both derate alike (cost model of in-place reads). "
	  "Optional: 0 or absent = `hbm_efficiency`, until a decode-shaped kernel "
	  "is measured over the link." },
	{ "inplace_overlap_efficiency", EMA_CFG_DBL, HW(inplace_overlap_efficiency), 0, 0, 0, 1, EMA_CFG_MIN_OPEN, NULL, NULL, NULL,
	  "share",
	  "A step reading local HBM and peer memory in place at once (split SMs) "
	  "takes max(local time, slowest link's time) / this (cost model). "
	  "Optional: 1 when absent." },
	{ "interference_lender", EMA_CFG_DBL, HW(interference_lender), 0, 0, 0, 100, REQ, NULL, NULL, NULL,
	  "factor",
	  "Slowdown of memory-bound work per (GB/s leaving through the GPU's HBM / "
	  "`hbm_read_gbps`) while a peer pulls from it (sim)." },
	{ "interference_borrower", EMA_CFG_DBL, HW(interference_borrower), 0, 0, 0, 100, REQ, NULL, NULL, NULL,
	  "factor",
	  "Slowdown of memory-bound work per (GB/s entering the GPU / "
	  "`hbm_read_gbps`) while it pulls (sim; ema's staged path)." },
	{ "interference_compute", EMA_CFG_DBL, HW(interference_compute), 0, 0, 0, 1, REQ, NULL, NULL, NULL,
	  "factor", "Slowdown of compute-bound work at a full-link-rate transfer (sim)." },
	{ "pull_share_under_load", EMA_CFG_DBL, HW(pull_share_under_load), 0, 0, 0, 1, EMA_CFG_MIN_OPEN, NULL, NULL, NULL,
	  "share",
	  "Share of its rate a pull into a GPU keeps while that GPU reads its HBM, "
	  "as a prefetch does during the iteration it feeds (sim prefetch flows, "
	  "ema's cap). Optional." },
	{ "attention_gbps", EMA_CFG_DBL, HW(attention_gbps), 0, 0, 0, 1e6, 0, NULL, NULL, NULL,
	  "GB/s",
	  "Remote attention (`policy.ema.remote_path=compute`): a lender's split-K "
	  "decode-attention kernel over a borrower's paged KV, alone (cost model). "
	  "Optional: 0 = `hbm_read_gbps` x `hbm_efficiency`, what the borrower's "
	  "own decode kernels reach." },
	{ "attention_busy_share", EMA_CFG_DBL, HW(attention_busy_share), 0, 0, 0, 1, 0, NULL, NULL, NULL,
	  "share",
	  "Remote attention: the share of `attention_gbps` the kernel keeps "
	  "while the lender runs its own step (cost model). Optional: 0 = 0.5, "
	  "an estimate until measured." },
	{ "attention_lender_ms_per_gb", EMA_CFG_DBL, HW(attention_lender_ms_per_gb), 0, 0, 0, 1e6, 0, NULL, NULL, NULL,
	  "ms per GB",
	  "Remote attention: time each GB a lender reads for a borrower adds to "
	  "the lender's own step (sim; ema's lender budget). Optional: 0 = the "
	  "bytes alone, 1 / (`hbm_read_gbps` x `hbm_efficiency`)." },
	{ "attention_sync_us", EMA_CFG_DBL, HW(attention_sync_us), 0, 0, 0, 1e6, 0, NULL, NULL, NULL,
	  "us",
	  "Remote attention: per-layer round trip between borrower and lender "
	  "(queries out, partials back, the wait). Optional: 0 = 5 us, an "
	  "estimate until measured over NVLink." },
	{ "map_us_per_page", EMA_CFG_DBL, HW(map_us_per_page), 0, 0, 0, 1e6, REQ, NULL, NULL, NULL,
	  "us",
	  "VMM map + access cost per 2 MiB page; recorded only (doc/hardware.md "
	  "says why the design avoids it)." },
	{ "unmap_us_per_page", EMA_CFG_DBL, HW(unmap_us_per_page), 0, 0, 0, 1e6, REQ, NULL, NULL, NULL,
	  "us", "VMM unmap cost per 2 MiB page; recorded only." },
	{ "malloc_2mib_us", EMA_CFG_DBL, HW(malloc_2mib_us), 0, 0, 0, 1e6, REQ, NULL, NULL, NULL,
	  "us", "cudaMalloc of 2 MiB; recorded only." },
	{ NULL, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL }
};

const struct ema_config_key ema_config_model_keys[] = {
	{ "name", EMA_CFG_STR, MD(name), SZ(ema_model, name), 0, 0, 0, REQ | EMA_CFG_NONEMPTY, NULL, NULL, NULL,
	  "", "Identity." },
	{ "layers", EMA_CFG_INT, MD(layers), 0, 0, 1, 1024, REQ, NULL, NULL, NULL,
	  "", "Transformer layers." },
	{ "heads", EMA_CFG_INT, MD(heads), 0, 0, 1, 1024, REQ, NULL, NULL, NULL,
	  "", "Attention heads." },
	{ "kv_heads", EMA_CFG_INT, MD(kv_heads), 0, 0, 1, 1024, REQ, NULL, NULL, NULL,
	  "", "KV heads (grouped-query attention); a divisor of `heads`." },
	{ "head_dim", EMA_CFG_INT, MD(head_dim), 0, 0, 1, 4096, REQ, NULL, NULL, NULL,
	  "", "Dimension of one head." },
	{ "hidden", EMA_CFG_INT, MD(hidden), 0, 0, 1, 1 << 20, REQ, NULL, NULL, NULL,
	  "", "Hidden size." },
	{ "ffn", EMA_CFG_INT, MD(ffn), 0, 0, 1, 1 << 22, REQ, NULL, NULL, NULL,
	  "", "Feed-forward size." },
	{ "params_b", EMA_CFG_DBL, MD(params_b), 0, 0, 0, 1e5, POS, NULL, NULL, NULL,
	  "billions", "Parameters; weights = params x bytes_per_param / tensor_parallel." },
	{ "bytes_per_param", EMA_CFG_INT, MD(bytes_per_param), 0, 0, 1, 8, 0, NULL, NULL, NULL,
	  "bytes", "2 for fp16/bf16; also the bytes of one KV element." },
	{ "tensor_parallel", EMA_CFG_INT, MD(tensor_parallel), 0, 0, 1, EMA_MAX_GPUS, 0, NULL, NULL, NULL,
	  "GPUs",
	  "Divides weights, KV heads and FLOPs per GPU (a divisor of `kv_heads`). "
	  "One instance still sits on one GPU: only the per-GPU share is modelled." },
	{ NULL, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL }
};

/* `ema list` order; each has profiles/hardware/NAME.json or
 * profiles/models/NAME.json embedded (tests check both ways). */
static const char *const hw_names[] = {
	"h200x2", "h200x2_hw", "h200x8", "h100x8", "a100x4_40gb", "a100x8_80gb",
	"b200x8", "gb200nvl72", "l40sx8", NULL
};
static const char *const model_names[] = {
	"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
	"llama-3-70b", "opt-13b", "opt-30b", NULL
};

int ema_hw_profile_names(const char *const **names)
{
	*names = hw_names;
	return (int)(sizeof hw_names / sizeof hw_names[0]) - 1;
}

int ema_model_names(const char *const **names)
{
	*names = model_names;
	return (int)(sizeof model_names / sizeof model_names[0]) - 1;
}

void ema_config_hw_defaults(struct ema_hw_profile *hw)
{
	memset(hw, 0, sizeof *hw);
	hw->pull_share_under_load = 1.0; /* optional: older profiles lack it */
	hw->inplace_overlap_efficiency = 1.0; /* optional, as above */
}

void ema_config_model_defaults(struct ema_model *m)
{
	memset(m, 0, sizeof *m);
	m->bytes_per_param = 2;
	m->tensor_parallel = 1;
}


void ema_hw_profile_copy_link(struct ema_hw_profile *hw, const struct ema_hw_profile *ref)
{
	hw->link_gbps = ref->link_gbps;
	hw->copy_fixed_us = ref->copy_fixed_us;
	hw->copy_call_us = ref->copy_call_us;
	hw->batch_page_us = ref->batch_page_us;
	hw->gather_gbps = ref->gather_gbps;
	memcpy(hw->copy_curve, ref->copy_curve, sizeof hw->copy_curve);
	hw->n_copy_curve = ref->n_copy_curve;
	hw->remote_read_gbps = ref->remote_read_gbps;
	hw->remote_read_efficiency = ref->remote_read_efficiency;
	hw->inplace_overlap_efficiency = ref->inplace_overlap_efficiency;
	hw->interference_lender = ref->interference_lender;
	hw->interference_borrower = ref->interference_borrower;
	hw->interference_compute = ref->interference_compute;
	hw->pull_share_under_load = ref->pull_share_under_load;
	hw->attention_gbps = ref->attention_gbps;
	hw->attention_busy_share = ref->attention_busy_share;
	hw->attention_lender_ms_per_gb = ref->attention_lender_ms_per_gb;
	hw->attention_sync_us = ref->attention_sync_us;
}

int ema_config_check_hw(const struct ema_hw_profile *hw,
			const struct ema_config_src *src, const char *path,
			struct ema_error *err)
{
	char p[512];

	/* an SM gather kernel reads through the same link as the copies */
	if (hw->gather_gbps > 2 * hw->link_gbps) {
		snprintf(p, sizeof p, "%s%sgather_gbps", path, *path ? "." : "");
		return ema_config_fail(src, p, true, err,
				       "expected at most twice link_gbps (%g), got %g",
				       hw->link_gbps, hw->gather_gbps);
	}
	return EMA_OK;
}

int ema_config_check_model(const struct ema_model *m,
			   const struct ema_config_src *src, const char *path,
			   struct ema_error *err)
{
	char p[512];

	snprintf(p, sizeof p, "%s%skv_heads", path, *path ? "." : "");
	if (m->kv_heads > m->heads || m->heads % m->kv_heads != 0)
		return ema_config_fail(src, p, true, err,
				       "expected a divisor of heads (%d), got %d",
				       m->heads, m->kv_heads);
	if (m->kv_heads % m->tensor_parallel != 0) {
		snprintf(p, sizeof p, "%s%stensor_parallel", path, *path ? "." : "");
		return ema_config_fail(src, p, true, err,
				       "expected a divisor of kv_heads (%d), got %d",
				       m->kv_heads, m->tensor_parallel);
	}
	return EMA_OK;
}

/* Parses one profile or model text into out (already holding defaults). */
static int load_text(const char *file, const char *text, size_t len,
		     const struct ema_config_key *tbl, void *out, bool hw,
		     struct ema_error *err)
{
	struct ema_config_src src = { file, text, len, NULL, NULL, NULL };
	cJSON *root = NULL;
	int rc;

	rc = ema_config_parse_text(file, text, len, &root, err);
	if (rc < 0)
		return rc;
	rc = ema_config_parse_object(tbl, out, root, "", &src, err);
	if (rc == 0)
		rc = hw ? ema_config_check_hw(out, &src, "", err)
			: ema_config_check_model(out, &src, "", err);
	cJSON_Delete(root);
	return rc;
}

/* Loads from a file path or from an embedded table; the caller reports
 * unknown names. Returns 1 when name is neither a path nor embedded. */
static int load_any(const char *name_or_path, bool hw, void *out,
		    struct ema_error *err)
{
	const struct ema_config_key *tbl = hw ? ema_config_hw_keys : ema_config_model_keys;
	char fname[EMA_PATH_MAX];
	char *text;
	size_t len;
	int rc;

	if (hw)
		ema_config_hw_defaults(out);
	else
		ema_config_model_defaults(out);
	if (ema_config_is_path(name_or_path)) {
		rc = ema_config_read_file(name_or_path, &text, &len, err);
		if (rc < 0)
			return rc;
		rc = load_text(name_or_path, text, len, tbl, out, hw, err);
		free(text);
		return rc;
	}
	{
		const struct ema_embedded *e;

		snprintf(fname, sizeof fname, "%s.json", name_or_path);
		e = ema_embedded_find(hw ? ema_config_hw_files : ema_config_model_files,
				      fname);
		if (e == NULL)
			return 1;
		snprintf(fname, sizeof fname, "profiles/%s/%s.json",
			 hw ? "hardware" : "models", name_or_path);
		return load_text(fname, e->data, e->len, tbl, out, hw, err);
	}
}

static void names_list(char *buf, size_t size, const char *const *names)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; names[i] != NULL && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
				      names[i]);
}

int ema_hw_profile_load(struct ema_hw_profile *hw, const char *name_or_path,
			struct ema_error *err)
{
	char names[512];
	int rc = load_any(name_or_path, true, hw, err);

	if (rc <= 0)
		return rc;
	names_list(names, sizeof names, hw_names);
	return ema_error_set(err, EMA_ERR_INPUT,
			     "unknown hardware profile \"%s\"; expected one of: %s, or a path to a .json file",
			     name_or_path, names);
}

int ema_model_load(struct ema_model *m, const char *name, struct ema_error *err)
{
	char names[512];
	int rc = load_any(name, false, m, err);

	if (rc <= 0)
		return rc;
	names_list(names, sizeof names, model_names);
	return ema_error_set(err, EMA_ERR_INPUT,
			     "unknown model \"%s\"; expected one of: %s, or a path to a .json file",
			     name, names);
}

/* A config names hardware or a model: unknown names and unreadable files
 * are the config's error, at its line; bad content is the file's. */
static int resolve(void *out, bool hw, const char *value,
		   const struct ema_config_src *src, const char *path,
		   struct ema_error *err)
{
	char names[512];
	int rc;

	if (ema_config_is_path(value)) {
		FILE *f = fopen(value, "rb");
		struct stat st;
		bool dir;

		if (f == NULL)
			return ema_config_fail(src, path, true, err,
					       "cannot open \"%s\"; expected a readable %s file",
					       value, hw ? "hardware profile" : "model");
		dir = fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode);
		fclose(f);
		if (dir)
			return ema_config_fail(src, path, true, err,
					       "\"%s\" is a folder; expected a %s file",
					       value, hw ? "hardware profile" : "model");
	}
	rc = load_any(value, hw, out, err);
	if (rc <= 0)
		return rc;
	names_list(names, sizeof names, hw ? hw_names : model_names);
	return ema_config_fail(src, path, true, err,
			       "unknown %s \"%s\"; expected one of: %s, or a path to a .json file",
			       hw ? "hardware profile" : "model", value, names);
}

int ema_config_resolve_hw(struct ema_hw_profile *hw, const char *value,
			  const struct ema_config_src *src, const char *path,
			  struct ema_error *err)
{
	return resolve(hw, true, value, src, path, err);
}

int ema_config_resolve_model(struct ema_model *m, const char *value,
			     const struct ema_config_src *src, const char *path,
			     struct ema_error *err)
{
	return resolve(m, false, value, src, path, err);
}

int ema_hw_profile_write_json(const struct ema_hw_profile *hw, FILE *out)
{
	ema_config_write_object(out, ema_config_hw_keys, hw, 0);
	fputc('\n', out);
	return ferror(out) ? EMA_ERR_IO : EMA_OK;
}

/* ---- the two named kinds, for the key engine ---------------------------- */

static void hw_defaults(void *obj)
{
	ema_config_hw_defaults(obj);
}

static void model_defaults(void *obj)
{
	ema_config_model_defaults(obj);
}

static int hw_resolve(void *obj, const char *value, const struct ema_config_src *src,
		      const char *path, struct ema_error *err)
{
	return ema_config_resolve_hw(obj, value, src, path, err);
}

static int model_resolve(void *obj, const char *value, const struct ema_config_src *src,
			 const char *path, struct ema_error *err)
{
	return ema_config_resolve_model(obj, value, src, path, err);
}

static int hw_check(const void *obj, const struct ema_config_src *src, const char *path,
		    struct ema_error *err)
{
	return ema_config_check_hw(obj, src, path, err);
}

static int model_check(const void *obj, const struct ema_config_src *src, const char *path,
		       struct ema_error *err)
{
	return ema_config_check_model(obj, src, path, err);
}

const struct ema_config_named ema_config_hw_named = {
	"hardware profile", ema_config_hw_keys, sizeof(struct ema_hw_profile),
	hw_defaults, hw_resolve, hw_check,
};

const struct ema_config_named ema_config_model_named = {
	"model", ema_config_model_keys, sizeof(struct ema_model),
	model_defaults, model_resolve, model_check,
};
