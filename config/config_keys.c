/* config_keys.c: the table-driven engine behind scenario files, hardware
 * profiles and model files: one walk over a key table parses a JSON object,
 * applies a --set override, checks types and ranges, and writes the object
 * back, so that every format behaves alike and a knob is one table row. */
#include "config_internal.h"
#include "json_text.h"
#include "readfile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_BUF 512

_Static_assert(sizeof(enum ema_trace_format) == sizeof(int),
	       "EMA_CFG_ENUM stores enums as int");

/* --- messages ---------------------------------------------------------- */

int ema_config_fail(const struct ema_config_src *src, const char *path,
		    bool with_path, struct ema_error *err, const char *fmt, ...)
{
	char msg[EMA_ERROR_MSG_MAX];
	char where[EMA_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (path == NULL || *path == '\0')
		with_path = false;
	if (src->set_arg != NULL) {
		size_t k = (size_t)snprintf(where, sizeof where, "--set ");

		/* a control byte (a newline in a value) would split the message */
		for (const char *c = src->set_arg; *c != '\0' && k + 5 < sizeof where; c++) {
			if ((unsigned char)*c < 0x20)
				k += (size_t)snprintf(where + k, sizeof where - k,
						      "\\x%02x", (unsigned char)*c);
			else
				where[k++] = *c;
		}
		where[k] = '\0';
		/* the key path is already in the argument */
		if (src->set_path != NULL && strcmp(path, src->set_path) == 0)
			with_path = false;
		if (with_path)
			return ema_error_at(err, where, 0, "%s: %s", path, msg);
		return ema_error_at(err, where, 0, "%s", msg);
	}
	{
		long line = ema_config_json_near_line(src->text, src->len,
						      path ? path : "");

		if (with_path)
			return ema_error_at(err, src->file, line, "%s: %s", path, msg);
		return ema_error_at(err, src->file, line, "%s", msg);
	}
}

static const char *json_kind(const cJSON *v)
{
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsBool(v))
		return "true/false";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsObject(v))
		return "an object";
	return "an invalid value";
}

static void join_names(char *buf, size_t size, const char *const *names)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; names[i] != NULL && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
				      names[i]);
}

static void join_keys(char *buf, size_t size, const struct ema_config_key *tbl)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; tbl[i].key != NULL && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
				      tbl[i].key);
}

static int name_index(const char *const *names, const char *s)
{
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

/* Shortest text that reads back as the same double. */
static void fmt_double(char *buf, size_t size, double x)
{
	/* integers in full: 1000000, not 1e+06 */
	if (x == floor(x) && fabs(x) < 1e15) {
		snprintf(buf, size, "%.0f", x);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

static void sub_path(char *out, size_t size, const char *path, const char *comp)
{
	if (*path == '\0')
		snprintf(out, size, "%s", comp);
	else
		snprintf(out, size, "%s.%s", path, comp);
}

/* Appends ".comp" (or "comp" to an empty path) in place, truncating. */
static void append_comp(char *path, size_t size, const char *comp)
{
	size_t n = strlen(path);

	size_t c = strlen(comp);

	if (n > 0 && n + 1 < size)
		path[n++] = '.';
	if (c > size - n - 1)
		c = size - n - 1;
	memcpy(path + n, comp, c);
	path[n + c] = '\0';
}

/* --- files and paths --------------------------------------------------- */

bool ema_config_is_path(const char *s)
{
	size_t n = strlen(s);

	return strchr(s, '/') != NULL ||
	       (n >= 5 && strcmp(s + n - 5, ".json") == 0);
}

int ema_config_join_path(char *out, size_t size, const char *dir,
			 const char *path)
{
	int n;

	/* a relative path kept relative would name another file once the
	 * effective configuration (config.json) is run from elsewhere */
	if (path[0] != '/' && path[0] != '\0' && (dir == NULL || dir[0] != '/'))
		return -2;
	if (path[0] == '/' || path[0] == '\0')
		n = snprintf(out, size, "%s", path);
	else if (dir[strlen(dir) - 1] == '/')
		n = snprintf(out, size, "%s%s", dir, path);
	else
		n = snprintf(out, size, "%s/%s", dir, path);
	return n >= 0 && (size_t)n < size ? 0 : -1;
}

_Static_assert(EMA_PATH_MAX == 1024, "ema_config_join_why says 1024 bytes");

const char *ema_config_join_why(int rc)
{
	if (rc == -2)
		return "a relative path, but the folder it is relative to cannot be named (the "
		       "current folder's path is longer than ema can hold, or unreadable): give "
		       "the path absolute, or run from a shorter folder";
	return "expected a path shorter than 1024 bytes once made absolute "
	       "(joined to the config file's folder, or to the current folder for --set)";
}

int ema_config_read_file(const char *path, char **text, size_t *len,
			 struct ema_error *err)
{
	return ema_read_file(path, "a JSON file", 64u << 20, text, len, err);
}

int ema_config_parse_text(const char *file, const char *text, size_t len,
			  cJSON **root, struct ema_error *err)
{
	const char *end = NULL;
	char where[EMA_PATH_MAX + 32];
	long line, col;
	size_t i;

	const char *why = ema_json_check_text(text, len, &i);

	/* what cJSON would let through: a NUL or a raw control character
	 * cuts a string short, bytes that are not UTF-8 reach config.json */
	if (why != NULL) {
		ema_config_json_pos(text, i, &line, &col);
		snprintf(where, sizeof where, "%s:%ld", file, line);
		return ema_error_at(err, where, col, "%s", why);
	}
	for (i = 0; i < len && strchr(" \t\r\n", text[i]) != NULL; i++)
		;
	if (i == len)
		return ema_error_at(err, file, 1, "empty file, expected a JSON object");
	/* len + 1 takes the NUL in, so that trailing garbage is an error */
	*root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
	if (*root != NULL)
		return EMA_OK;
	ema_config_json_pos(text, end ? (size_t)(end - text) : 0, &line, &col);
	snprintf(where, sizeof where, "%s:%ld", file, line);
	return ema_error_at(err, where, col,
			    "malformed JSON: expected a value, a ',' or a closing bracket here");
}

/* --- values -------------------------------------------------------------- */

static int check_number(const struct ema_config_key *k, const cJSON *v,
			const char *path, const struct ema_config_src *src,
			struct ema_error *err, double *out)
{
	double x;
	char lo[32], hi[32], got[32];
	bool integral = k->type == EMA_CFG_INT || k->type == EMA_CFG_U64;

	if (!cJSON_IsNumber(v))
		return ema_config_fail(src, path, true, err, "expected %s, got %s",
				       integral ? "an integer" : "a number",
				       json_kind(v));
	x = v->valuedouble;
	fmt_double(lo, sizeof lo, k->min);
	fmt_double(hi, sizeof hi, k->max);
	fmt_double(got, sizeof got, x);
	if (!isfinite(x))
		return ema_config_fail(src, path, true, err,
				       "expected a finite number");
	if (integral && x != floor(x))
		return ema_config_fail(src, path, true, err,
				       "expected an integer, got %s", got);
	/* -1, where it means something of its own (metrics.warmup_s) */
	if ((k->flags & EMA_CFG_OR_MINUS_ONE) && x == -1) {
		*out = x;
		return EMA_OK;
	}
	if (integral && (x < k->min || x > k->max))
		return ema_config_fail(src, path, true, err,
				       "expected an integer in %s..%s, got %s",
				       lo, hi, got);
	if ((k->flags & EMA_CFG_MIN_OPEN ? x <= k->min : x < k->min) ||
	    x > k->max)
		return ema_config_fail(src, path, true, err,
				       "expected %sa number in %c%s, %s], got %s",
				       k->flags & EMA_CFG_OR_MINUS_ONE ? "-1 or " : "",
				       k->flags & EMA_CFG_MIN_OPEN ? '(' : '[',
				       lo, hi, got);
	if (k->flags & EMA_CFG_POW2) {
		int e;

		if (frexp(x, &e) != 0.5)
			return ema_config_fail(src, path, true, err,
					       "expected a power of two in [%s, %s], got %s",
					       lo, hi, got);
	}
	*out = x;
	return EMA_OK;
}

static int set_string(const struct ema_config_key *k, char *field,
		      const cJSON *v, const char *path,
		      const struct ema_config_src *src, struct ema_error *err)
{
	char joined[EMA_PATH_MAX];
	const char *s;

	if (!cJSON_IsString(v))
		return ema_config_fail(src, path, true, err,
				       "expected a string, got %s", json_kind(v));
	s = v->valuestring;
	if ((k->flags & EMA_CFG_NONEMPTY) && *s == '\0')
		return ema_config_fail(src, path, true, err,
				       "expected a non-empty string");
	if (k->type == EMA_CFG_CHOICE && name_index(k->names, s) < 0) {
		char names[512];

		join_names(names, sizeof names, k->names);
		return ema_config_fail(src, path, true, err,
				       "expected one of: %s; got \"%s\"", names, s);
	}
	if (k->type == EMA_CFG_PATH) {
		int j = ema_config_join_path(joined, sizeof joined, src->base_dir, s);

		if (j < 0)
			return ema_config_fail(src, path, true, err, "%s", ema_config_join_why(j));
		/* the folder joined in front is held to what the value is: the
		 * path is written into config.json and read back from it */
		if (!ema_text_is_clean(joined))
			return ema_config_fail(src, path, true, err, "the path becomes \"%s\" (the "
					       "folder it is relative to joined in front), which holds "
					       "control characters or bytes that are not UTF-8; give it "
					       "absolute", joined);
		s = joined;
	}
	if (strlen(s) >= k->size)
		return ema_config_fail(src, path, true, err,
				       "expected a string of at most %zu bytes",
				       k->size - 1);
	memcpy(field, s, strlen(s) + 1);
	return EMA_OK;
}

static int set_strlist(const struct ema_config_key *k, char *base,
		       const cJSON *v, const char *path,
		       const struct ema_config_src *src, struct ema_error *err)
{
	int n, i = 0;
	const cJSON *e;
	char epath[PATH_BUF];

	if (!cJSON_IsArray(v))
		return ema_config_fail(src, path, true, err,
				       "expected an array of names, got %s", json_kind(v));
	n = cJSON_GetArraySize(v);
	if (n < k->min || n > k->max)
		return ema_config_fail(src, path, true, err,
				       "expected %g to %g names, got %d", k->min, k->max, n);
	cJSON_ArrayForEach(e, v) {
		char *dst = base + k->off + (size_t)i * k->size;

		snprintf(epath, sizeof epath, "%s.%d", path, i);
		if (!cJSON_IsString(e) || e->valuestring[0] == '\0' ||
		    !ema_text_is_clean(e->valuestring))
			return ema_config_fail(src, epath, true, err,
					       "expected a non-empty name, in UTF-8 without control "
					       "characters");
		if (strlen(e->valuestring) >= k->size)
			return ema_config_fail(src, epath, true, err,
					       "expected a name of at most %zu bytes",
					       k->size - 1);
		memcpy(dst, e->valuestring, strlen(e->valuestring) + 1);
		i++;
	}
	*(int *)(base + k->off2) = n;
	return EMA_OK;
}

static int set_curve(const struct ema_config_key *k, char *base,
		     const cJSON *v, const char *path,
		     const struct ema_config_src *src, struct ema_error *err)
{
	struct ema_curve_point *pts = (struct ema_curve_point *)(base + k->off);
	struct ema_curve_point tmp[EMA_CURVE_MAX];
	char epath[PATH_BUF];
	const cJSON *e;
	int n, i = 0;

	if (!cJSON_IsArray(v))
		return ema_config_fail(src, path, true, err,
				       "expected an array of [bytes, gbps] pairs, got %s",
				       json_kind(v));
	n = cJSON_GetArraySize(v);
	if (n < 1 || n > EMA_CURVE_MAX)
		return ema_config_fail(src, path, true, err,
				       "expected 1 to %d [bytes, gbps] pairs, got %d",
				       EMA_CURVE_MAX, n);
	cJSON_ArrayForEach(e, v) {
		const cJSON *b = cJSON_GetArrayItem(e, 0);
		const cJSON *g = cJSON_GetArrayItem(e, 1);

		snprintf(epath, sizeof epath, "%s.%d", path, i);
		if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 ||
		    !cJSON_IsNumber(b) || !cJSON_IsNumber(g) ||
		    !isfinite(b->valuedouble) || !isfinite(g->valuedouble) ||
		    b->valuedouble <= 0 || g->valuedouble <= 0)
			return ema_config_fail(src, epath, true, err,
					       "expected a [bytes, gbps] pair of positive numbers");
		if (i > 0 && b->valuedouble <= tmp[i - 1].bytes)
			return ema_config_fail(src, epath, true, err,
					       "expected points sorted by increasing bytes");
		tmp[i].bytes = b->valuedouble;
		tmp[i].gbps = g->valuedouble;
		i++;
	}
	memcpy(pts, tmp, (size_t)n * sizeof *tmp);
	*(int *)(base + k->off2) = n;
	return EMA_OK;
}

static int set_array(const struct ema_config_key *k, char *base,
		     const cJSON *v, const char *path,
		     const struct ema_config_src *src, struct ema_error *err)
{
	char epath[PATH_BUF];
	const cJSON *e;
	int n, i = 0, rc;

	if (!cJSON_IsArray(v))
		return ema_config_fail(src, path, true, err,
				       "expected an array of objects, got %s", json_kind(v));
	n = cJSON_GetArraySize(v);
	if (n > k->max)
		return ema_config_fail(src, path, true, err,
				       "expected at most %g elements, got %d", k->max, n);
	cJSON_ArrayForEach(e, v) {
		char *elem = base + k->off + (size_t)i * k->size;

		snprintf(epath, sizeof epath, "%s.%d", path, i);
		k->init(elem, i);
		rc = ema_config_parse_object(k->sub, elem, e, epath, src, err);
		if (rc < 0)
			return rc;
		i++;
	}
	*(int *)(base + k->off2) = n;
	return EMA_OK;
}

/* What EMA_CFG_HW and EMA_CFG_MODEL values resolve to, given by config.c
 * (profile.c describes them): the engine stays free of profile code. */
static const struct ema_config_named *named_kinds[2];

void ema_config_keys_use_named(const struct ema_config_named *hw,
			       const struct ema_config_named *model)
{
	named_kinds[0] = hw;
	named_kinds[1] = model;
}

static const struct ema_config_named *named_of(const struct ema_config_key *k)
{
	return named_kinds[k->type == EMA_CFG_HW ? 0 : 1];
}

static int set_hw_or_model(const struct ema_config_key *k, char *base,
			   const cJSON *v, const char *path,
			   const struct ema_config_src *src,
			   struct ema_error *err)
{
	const struct ema_config_named *nk = named_of(k);
	char *name = base + k->off;
	int rc;

	if (cJSON_IsString(v)) {
		char value[EMA_PATH_MAX];

		if (v->valuestring[0] == '\0')
			return ema_config_fail(src, path, true, err,
					       "expected a name or a path, got \"\"");
		if (ema_config_is_path(v->valuestring)) {
			int j = ema_config_join_path(value, sizeof value, src->base_dir,
						     v->valuestring);

			if (j < 0)
				return ema_config_fail(src, path, true, err, "%s",
						       ema_config_join_why(j));
		} else {
			snprintf(value, sizeof value, "%s", v->valuestring);
		}
		if (strlen(value) >= k->size)
			return ema_config_fail(src, path, true, err,
					       "expected at most %zu bytes", k->size - 1);
		rc = nk->resolve(base + k->off2, value, src, path, err);
		if (rc < 0)
			return rc;
		memcpy(name, value, strlen(value) + 1);
		return EMA_OK;
	}
	if (!cJSON_IsObject(v))
		return ema_config_fail(src, path, true, err,
				       "expected a %s name or an inline object, got %s",
				       nk->what, json_kind(v));
	{
		/* both kinds start with their name (struct ema_hw_profile,
		 * struct ema_model) */
		char *tmp = malloc(nk->size);

		if (tmp == NULL)
			return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		nk->defaults(tmp);
		rc = ema_config_parse_object(nk->keys, tmp, v, path, src, err);
		if (rc == 0)
			rc = nk->check(tmp, src, path, err);
		if (rc == 0) {
			memcpy(base + k->off2, tmp, nk->size);
			snprintf(name, k->size, "%s", tmp);
		}
		free(tmp);
		if (rc < 0)
			return rc;
	}
	return EMA_OK;
}

static int set_value(const struct ema_config_key *k, char *base,
		     const cJSON *v, const char *path,
		     const struct ema_config_src *src, struct ema_error *err)
{
	char *field = base + k->off;
	double x = 0;
	int rc;

	/* a --set value, or an inline object's: a file's strings were
	 * checked with its text (ema_config_parse_text) */
	if (cJSON_IsString(v) && !ema_text_is_clean(v->valuestring))
		return ema_config_fail(src, path, true, err,
				       "expected text in UTF-8 without control characters, got \"%s\"",
				       v->valuestring);
	switch (k->type) {
	case EMA_CFG_STR:
	case EMA_CFG_PATH:
	case EMA_CFG_CHOICE:
		return set_string(k, field, v, path, src, err);
	case EMA_CFG_INT:
	case EMA_CFG_U64:
	case EMA_CFG_DBL:
		rc = check_number(k, v, path, src, err, &x);
		if (rc < 0)
			return rc;
		if (k->type == EMA_CFG_INT)
			*(int *)field = (int)x;
		else if (k->type == EMA_CFG_U64)
			*(uint64_t *)field = (uint64_t)x;
		else
			*(double *)field = x;
		return EMA_OK;
	case EMA_CFG_BOOL:
		if (!cJSON_IsBool(v))
			return ema_config_fail(src, path, true, err,
					       "expected true or false, got %s",
					       json_kind(v));
		*(bool *)field = cJSON_IsTrue(v);
		return EMA_OK;
	case EMA_CFG_ENUM: {
		char names[512];
		int idx = cJSON_IsString(v) ? name_index(k->names, v->valuestring) : -1;

		if (idx < 0) {
			join_names(names, sizeof names, k->names);
			if (cJSON_IsString(v))
				return ema_config_fail(src, path, true, err,
						       "expected one of: %s; got \"%s\"",
						       names, v->valuestring);
			return ema_config_fail(src, path, true, err,
					       "expected one of: %s; got %s",
					       names, json_kind(v));
		}
		*(int *)field = idx;
		return EMA_OK;
	}
	case EMA_CFG_STRLIST:
		return set_strlist(k, base, v, path, src, err);
	case EMA_CFG_CURVE:
		return set_curve(k, base, v, path, src, err);
	case EMA_CFG_OBJ:
		return ema_config_parse_object(k->sub, field, v, path, src, err);
	case EMA_CFG_ARRAY:
		return set_array(k, base, v, path, src, err);
	case EMA_CFG_HW:
	case EMA_CFG_MODEL:
		return set_hw_or_model(k, base, v, path, src, err);
	}
	return ema_error_set(err, EMA_ERR_INTERNAL, "%s: bad key type", path);
}

static int find_key(const struct ema_config_key *tbl, const char *key, size_t n)
{
	for (int i = 0; tbl[i].key != NULL; i++)
		if (strlen(tbl[i].key) == n && memcmp(tbl[i].key, key, n) == 0)
			return i;
	return -1;
}

int ema_config_parse_object(const struct ema_config_key *tbl, void *base,
			    const cJSON *obj, const char *path,
			    const struct ema_config_src *src,
			    struct ema_error *err)
{
	uint64_t seen = 0;
	char cpath[PATH_BUF];
	const cJSON *c;
	int rc;

	if (!cJSON_IsObject(obj)) {
		if (*path == '\0')
			return ema_config_fail(src, path, false, err,
					       "expected a JSON object at the top, got %s",
					       json_kind(obj));
		return ema_config_fail(src, path, true, err,
				       "expected an object, got %s", json_kind(obj));
	}
	cJSON_ArrayForEach(c, obj) {
		int i = find_key(tbl, c->string, strlen(c->string));

		sub_path(cpath, sizeof cpath, path, c->string);
		if (i < 0) {
			char keys[1024];

			join_keys(keys, sizeof keys, tbl);
			return ema_config_fail(src, cpath, false, err,
					       "unknown key \"%s\"; expected one of: %s",
					       cpath, keys);
		}
		if (seen & (UINT64_C(1) << i))
			return ema_config_fail(src, cpath, false, err,
					       "duplicate key \"%s\"", cpath);
		seen |= UINT64_C(1) << i;
		rc = set_value(&tbl[i], base, c, cpath, src, err);
		if (rc < 0)
			return rc;
	}
	for (int i = 0; tbl[i].key != NULL; i++) {
		if ((tbl[i].flags & EMA_CFG_REQUIRED) && !(seen & (UINT64_C(1) << i))) {
			sub_path(cpath, sizeof cpath, path, tbl[i].key);
			return ema_config_fail(src, path, false, err,
					       "missing key \"%s\"", cpath);
		}
	}
	return EMA_OK;
}

/* --- --set ------------------------------------------------------------- */

/* Turns the text after '=' into the JSON value a file would hold. */
static int set_text_to_json(const struct ema_config_key *k, const char *value,
			    const struct ema_config_src *src, cJSON **out,
			    struct ema_error *err)
{
	char *end;
	const char *p = src->set_path;

	*out = NULL;
	switch (k->type) {
	case EMA_CFG_INT:
	case EMA_CFG_U64: {
		double x;

		errno = 0;
		if (k->type == EMA_CFG_INT)
			x = (double)strtoll(value, &end, 10);
		else
			x = (double)strtoull(value, &end, 10);
		if (*value == '\0' || *end != '\0' || errno != 0 ||
		    (k->type == EMA_CFG_U64 && strchr(value, '-') != NULL))
			return ema_config_fail(src, p, false, err, "expected an integer");
		/* a double holds integers exactly only up to 2^53 */
		if (k->type == EMA_CFG_U64 && strtoull(value, NULL, 10) > (1ULL << 53))
			return ema_config_fail(src, p, false, err,
					       "expected an integer in 0..%llu, got %s",
					       1ULL << 53, value);
		*out = cJSON_CreateNumber(x);
		break;
	}
	case EMA_CFG_DBL: {
		double x = strtod(value, &end);

		/* a share as a percentage: "+20%", "-10%" */
		if ((k->flags & EMA_CFG_PERCENT) && *value != '\0' && end != value &&
		    end[0] == '%' && end[1] == '\0') {
			x /= 100.0;
			end++;
		}
		if (*value == '\0' || *end != '\0')
			return ema_config_fail(src, p, false, err,
					       (k->flags & EMA_CFG_PERCENT) ?
					       "expected a number or a percentage (\"+20%%\")" :
					       "expected a number");
		*out = cJSON_CreateNumber(x);
		break;
	}
	case EMA_CFG_BOOL:
		if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
			*out = cJSON_CreateTrue();
		else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
			*out = cJSON_CreateFalse();
		else
			return ema_config_fail(src, p, false, err, "expected true or false");
		break;
	case EMA_CFG_STR:
	case EMA_CFG_PATH:
	case EMA_CFG_CHOICE:
	case EMA_CFG_ENUM:
		*out = cJSON_CreateString(value);
		break;
	case EMA_CFG_HW:
	case EMA_CFG_MODEL:
		if (value[0] != '{') {
			*out = cJSON_CreateString(value);
			break;
		}
		/* an inline object: parsed as JSON below */
		__attribute__((fallthrough));
	case EMA_CFG_CURVE:
	case EMA_CFG_OBJ:
	case EMA_CFG_ARRAY:
	json:
		*out = cJSON_ParseWithLengthOpts(value, strlen(value) + 1, NULL, 1);
		if (*out == NULL)
			return ema_config_fail(src, p, false, err,
					       "expected a JSON %s",
					       k->type == EMA_CFG_OBJ ||
					       k->type == EMA_CFG_HW ||
					       k->type == EMA_CFG_MODEL ? "object" : "array");
		break;
	case EMA_CFG_STRLIST: {
		const char *s = value;

		if (value[0] == '[')
			goto json;
		*out = cJSON_CreateArray();
		if (*out == NULL)
			break;
		for (;;) {
			const char *comma = strchr(s, ',');
			size_t n = comma ? (size_t)(comma - s) : strlen(s);
			char name[EMA_NAME_MAX];

			while (n > 0 && (*s == ' ' || *s == '\t')) {
				s++;
				n--;
			}
			while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
				n--;
			if (n == 0 || n >= sizeof name) {
				cJSON_Delete(*out);
				*out = NULL;
				return ema_config_fail(src, p, false, err,
						       "expected a comma-separated list of names");
			}
			memcpy(name, s, n);
			name[n] = '\0';
			cJSON_AddItemToArray(*out, cJSON_CreateString(name));
			if (comma == NULL)
				break;
			s = comma + 1;
		}
		break;
	}
	}
	if (*out == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "--set %s: out of memory",
				     src->set_arg);
	return EMA_OK;
}

int ema_config_apply_set(const struct ema_config_key *tbl, void *base,
			 const void *defaults, const char *arg,
			 const char *base_dir, struct ema_error *err)
{
	char keypath[PATH_BUF], sofar[PATH_BUF];
	const char *eq = strchr(arg, '=');
	const struct ema_config_key *t = tbl;
	char *b = base;
	/* walks beside b: the same place in the defaults (NULL = merge) */
	const char *d = defaults;
	char *elem_defaults = NULL;
	struct ema_config_src src = { "--set", NULL, 0, arg, keypath, base_dir };
	const char *comp;
	cJSON *v = NULL;
	int rc;

	if (eq == NULL || eq == arg || (size_t)(eq - arg) >= sizeof keypath) {
		snprintf(sofar, sizeof sofar, "--set %s", arg);
		return ema_error_at(err, sofar, 0, "expected key.path=value");
	}
	memcpy(keypath, arg, (size_t)(eq - arg));
	keypath[eq - arg] = '\0';
	comp = keypath;
	sofar[0] = '\0';
	for (;;) {
		const char *dot = strchr(comp, '.');
		size_t n = dot ? (size_t)(dot - comp) : strlen(comp);
		const struct ema_config_key *k;
		int i = find_key(t, comp, n);
		char cname[PATH_BUF];

		memcpy(cname, comp, n);
		cname[n] = '\0';
		append_comp(sofar, sizeof sofar, cname);
		if (i < 0) {
			char keys[1024];

			join_keys(keys, sizeof keys, t);
			rc = ema_config_fail(&src, sofar, false, err,
					     "unknown key \"%s\"; expected one of: %s",
					     sofar, keys);
			goto out;
		}
		k = &t[i];
		if (dot == NULL) {
			rc = set_text_to_json(k, eq + 1, &src, &v, err);
			if (rc == 0 && k->type == EMA_CFG_OBJ && d != NULL) {
				if (k->size == 0) {
					rc = ema_error_set(err, EMA_ERR_INTERNAL,
							   "key table: object %s has no size", sofar);
					goto out;
				}
				memcpy(b + k->off, d + k->off, k->size);
			}
			if (rc == 0)
				rc = set_value(k, b, v, keypath, &src, err);
			goto out;
		}
		comp = dot + 1;
		switch (k->type) {
		case EMA_CFG_OBJ:
			t = k->sub;
			b += k->off;
			if (d != NULL)
				d += k->off;
			continue;
		case EMA_CFG_HW:
		case EMA_CFG_MODEL:
			/* no objects inside: nothing to reset below */
			t = named_of(k)->keys;
			b += k->off2;
			d = NULL;
			continue;
		case EMA_CFG_ARRAY: {
			int *count = (int *)(b + k->off2);
			char *e;
			long idx;
			char *elem;
			char num[24];

			dot = strchr(comp, '.');
			n = dot ? (size_t)(dot - comp) : strlen(comp);
			idx = strtol(comp, &e, 10);
			if (n == 0 || e != comp + n || idx < 0 || idx > *count ||
			    idx >= k->max) {
				rc = ema_config_fail(&src, sofar, false, err,
						     "expected an element index of %s in 0..%d (%d appends one)",
						     sofar, *count < k->max ? *count : *count - 1,
						     *count);
				goto out;
			}
			elem = b + k->off + (size_t)idx * k->size;
			if (idx == *count) {
				k->init(elem, (int)idx);
				(*count)++;
			}
			snprintf(num, sizeof num, "%ld", idx);
			append_comp(sofar, sizeof sofar, num);
			if (dot == NULL) {
				/* a whole element: it replaces the old one, so what
				 * it leaves out takes the element defaults */
				struct ema_config_key whole = *k;

				whole.type = EMA_CFG_OBJ;
				rc = set_text_to_json(&whole, eq + 1, &src, &v, err);
				if (rc == 0 && d != NULL)
					k->init(elem, (int)idx);
				if (rc == 0)
					rc = ema_config_parse_object(k->sub, elem, v,
								     keypath, &src, err);
				goto out;
			}
			comp = dot + 1;
			t = k->sub;
			b = elem;
			/* an element's defaults are its init, not element idx
			 * of the defaults (which may have fewer elements) */
			if (d != NULL) {
				free(elem_defaults);
				elem_defaults = malloc(k->size);
				if (elem_defaults == NULL) {
					rc = ema_error_set(err, EMA_ERR_NOMEM,
							   "--set %s: out of memory", arg);
					goto out;
				}
				k->init(elem_defaults, (int)idx);
				d = elem_defaults;
			}
			continue;
		}
		default:
			rc = ema_config_fail(&src, sofar, false, err,
					     "%s has no sub-keys; expected %s=value",
					     sofar, sofar);
			goto out;
		}
	}
out:
	cJSON_Delete(v);
	free(elem_defaults);
	return rc;
}

/* --- writer ------------------------------------------------------------ */

static void put_indent(FILE *out, int n)
{
	for (int i = 0; i < n; i++)
		fputs("  ", out);
}

/* every JSON file ema writes escapes strings the same way (json_text.h) */
static void put_string(FILE *out, const char *s)
{
	ema_json_put_string(out, s);
}

static void put_double(FILE *out, double x)
{
	char buf[40];

	fmt_double(buf, sizeof buf, x);
	fputs(buf, out);
}

static void write_value(FILE *out, const struct ema_config_key *k,
			const char *base, int indent)
{
	const char *field = base + k->off;

	switch (k->type) {
	case EMA_CFG_STR:
	case EMA_CFG_PATH:
	case EMA_CFG_CHOICE:
		put_string(out, field);
		break;
	case EMA_CFG_INT:
		fprintf(out, "%d", *(const int *)field);
		break;
	case EMA_CFG_U64:
		fprintf(out, "%" PRIu64, *(const uint64_t *)field);
		break;
	case EMA_CFG_DBL:
		put_double(out, *(const double *)field);
		break;
	case EMA_CFG_BOOL:
		fputs(*(const bool *)field ? "true" : "false", out);
		break;
	case EMA_CFG_ENUM: {
		int idx = *(const int *)field, n = 0;

		while (k->names[n] != NULL)
			n++;
		put_string(out, idx >= 0 && idx < n ? k->names[idx] : "?");
		break;
	}
	case EMA_CFG_STRLIST: {
		int n = *(const int *)(base + k->off2);

		fputc('[', out);
		for (int i = 0; i < n; i++) {
			if (i)
				fputs(", ", out);
			put_string(out, field + (size_t)i * k->size);
		}
		fputc(']', out);
		break;
	}
	case EMA_CFG_CURVE: {
		const struct ema_curve_point *p = (const struct ema_curve_point *)field;
		int n = *(const int *)(base + k->off2);

		fputs("[\n", out);
		for (int i = 0; i < n; i++) {
			put_indent(out, indent + 1);
			fputc('[', out);
			put_double(out, p[i].bytes);
			fputs(", ", out);
			put_double(out, p[i].gbps);
			fputs(i + 1 < n ? "],\n" : "]\n", out);
		}
		put_indent(out, indent);
		fputc(']', out);
		break;
	}
	case EMA_CFG_OBJ:
		ema_config_write_object(out, k->sub, field, indent);
		break;
	case EMA_CFG_ARRAY: {
		int n = *(const int *)(base + k->off2);

		if (n == 0) {
			fputs("[]", out);
			break;
		}
		fputs("[\n", out);
		for (int i = 0; i < n; i++) {
			put_indent(out, indent + 1);
			ema_config_write_object(out, k->sub, field + (size_t)i * k->size,
						indent + 1);
			fputs(i + 1 < n ? ",\n" : "\n", out);
		}
		put_indent(out, indent);
		fputc(']', out);
		break;
	}
	case EMA_CFG_HW:
	case EMA_CFG_MODEL:
		ema_config_write_object(out, named_of(k)->keys, base + k->off2, indent);
		break;
	}
}

void ema_config_write_object(FILE *out, const struct ema_config_key *tbl,
			     const void *base, int indent)
{
	fputs("{\n", out);
	for (int i = 0; tbl[i].key != NULL; i++) {
		put_indent(out, indent + 1);
		put_string(out, tbl[i].key);
		fputs(": ", out);
		write_value(out, &tbl[i], base, indent + 1);
		fputs(tbl[i + 1].key != NULL ? ",\n" : "\n", out);
	}
	put_indent(out, indent);
	fputc('}', out);
}
