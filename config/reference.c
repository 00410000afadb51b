/* reference.c: the key reference (doc/keys.md) written from the key
 * tables themselves, so that the manual's list of keys, types, ranges,
 * defaults and units cannot drift from what the parser accepts: a new row
 * in a table appears in the reference, and tests/test_keys fails until
 * the committed doc/keys.md is regenerated (`make keys-doc`). */
#include "config_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Numbers as a reader writes them: 8192 in full, 2^53 and 1e9 as such,
 * profile figures to 6 significant digits (4357.44, not 4357.435446...). */
static void fmt_num(char *buf, size_t size, double x)
{
	double l2 = log2(fabs(x)), l10 = log10(fabs(x));

	if (x == floor(x) && fabs(x) < 1e6)
		snprintf(buf, size, "%.0f", x);
	else if (x == 2147483647.0)
		snprintf(buf, size, "2^31-1");
	else if (x == floor(x) && l2 == floor(l2))
		snprintf(buf, size, "2^%.0f", l2);
	else if (x == floor(x) && l10 == floor(l10))
		snprintf(buf, size, "1e%.0f", l10);
	else
		snprintf(buf, size, "%.6g", x);
}

/* A table cell: '|' and newlines would break the markdown row. */
static void put_cell(FILE *out, const char *s)
{
	fputs(" ", out);
	for (; *s != '\0'; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else if (*s == '\n')
			fputc(' ', out);
		else
			fputc(*s, out);
	}
	fputs(" |", out);
}

static void join_choices(char *buf, size_t size, const char *const *names)
{
	size_t n = (size_t)snprintf(buf, size, "one of");

	for (int i = 0; names[i] != NULL && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s `%s`", i ? "," : "", names[i]);
}

static void type_text(char *buf, size_t size, const struct ema_config_key *k)
{
	switch (k->type) {
	case EMA_CFG_STR: snprintf(buf, size, "string"); break;
	case EMA_CFG_PATH: snprintf(buf, size, "path"); break;
	case EMA_CFG_INT:
	case EMA_CFG_U64: snprintf(buf, size, "integer"); break;
	case EMA_CFG_DBL: snprintf(buf, size, "number"); break;
	case EMA_CFG_BOOL: snprintf(buf, size, "`true` or `false`"); break;
	case EMA_CFG_ENUM:
	case EMA_CFG_CHOICE: join_choices(buf, size, k->names); break;
	case EMA_CFG_STRLIST: snprintf(buf, size, "list of names"); break;
	case EMA_CFG_CURVE: snprintf(buf, size, "list of [bytes, GB/s]"); break;
	case EMA_CFG_OBJ: snprintf(buf, size, "object"); break;
	case EMA_CFG_ARRAY: snprintf(buf, size, "list of objects"); break;
	case EMA_CFG_HW:
	case EMA_CFG_MODEL: snprintf(buf, size, "name, path or object"); break;
	}
}

static void range_text(char *buf, size_t size, const struct ema_config_key *k)
{
	char lo[32], hi[32];

	fmt_num(lo, sizeof lo, k->min);
	fmt_num(hi, sizeof hi, k->max);
	buf[0] = '\0';
	switch (k->type) {
	case EMA_CFG_STR:
	case EMA_CFG_PATH:
		snprintf(buf, size, "%d..%zu bytes", (k->flags & EMA_CFG_NONEMPTY) ? 1 : 0,
			 k->size - 1);
		break;
	case EMA_CFG_INT:
	case EMA_CFG_U64:
		snprintf(buf, size, "%s..%s", lo, hi);
		break;
	case EMA_CFG_DBL:
		snprintf(buf, size, "%s%s%s%s, %s]", (k->flags & EMA_CFG_OR_MINUS_ONE) ? "-1 or " : "",
			 (k->flags & EMA_CFG_POW2) ? "power of two in " : "",
			 (k->flags & EMA_CFG_MIN_OPEN) ? "(" : "[", lo, hi);
		break;
	case EMA_CFG_STRLIST:
	case EMA_CFG_CURVE:
	case EMA_CFG_ARRAY:
		snprintf(buf, size, "%s..%s items", lo, hi);
		break;
	default:
		break;
	}
}

/* The value of k in base, as JSON on one line; "" for objects, whose
 * keys have rows of their own. */
static void value_text(char *buf, size_t size, const struct ema_config_key *k,
		       const char *base)
{
	const char *field = base + k->off;

	buf[0] = '\0';
	switch (k->type) {
	case EMA_CFG_STR:
	case EMA_CFG_PATH:
	case EMA_CFG_CHOICE:
	case EMA_CFG_HW:
	case EMA_CFG_MODEL:
	{
		/* long descriptions would swamp the table; a backtick inside
		 * needs a double-backtick code span */
		const char *q = strchr(field, '`') != NULL ? "`` " : "`";
		const char *q2 = *q == '`' && q[1] == '`' ? " ``" : "`";

		if (strlen(field) > 40)
			snprintf(buf, size, "%s\"%.36s...\"%s", q, field, q2);
		else
			snprintf(buf, size, "%s\"%s\"%s", q, field, q2);
		break;
	}
	case EMA_CFG_INT:
		snprintf(buf, size, "`%d`", *(const int *)field);
		break;
	case EMA_CFG_U64:
		snprintf(buf, size, "`%" PRIu64 "`", *(const uint64_t *)field);
		break;
	case EMA_CFG_DBL: {
		char num[32];

		fmt_num(num, sizeof num, *(const double *)field);
		snprintf(buf, size, "`%s`", num);
		break;
	}
	case EMA_CFG_BOOL:
		snprintf(buf, size, "`%s`", *(const bool *)field ? "true" : "false");
		break;
	case EMA_CFG_ENUM: {
		int idx = *(const int *)field, n = 0;

		while (k->names[n] != NULL)
			n++;
		snprintf(buf, size, "`\"%s\"`", idx >= 0 && idx < n ? k->names[idx] : "?");
		break;
	}
	case EMA_CFG_STRLIST: {
		int n = *(const int *)(base + k->off2);
		size_t len = (size_t)snprintf(buf, size, "`[");

		for (int i = 0; i < n && len < size; i++)
			len += (size_t)snprintf(buf + len, size - len, "%s\"%s\"", i ? ", " : "",
						field + (size_t)i * k->size);
		if (len < size)
			snprintf(buf + len, size - len, "]`");
		break;
	}
	case EMA_CFG_CURVE:
		snprintf(buf, size, "%d points", *(const int *)(base + k->off2));
		break;
	case EMA_CFG_ARRAY:
		snprintf(buf, size, "`[]`%s", *(const int *)(base + k->off2) ? " (not empty)" : "");
		break;
	case EMA_CFG_OBJ:
		break;
	}
}

/* The rows of tbl, recursing into objects and array elements; key paths
 * are prefixed with prefix. base holds the defaults; other (may be NULL)
 * the same object from a second source, shown in an extra column (the
 * default profile's figures). For array elements, base1 is the element a
 * second index gets, so that index-dependent defaults show as such. */
static void write_rows(FILE *out, const struct ema_config_key *tbl, const char *prefix,
		       const char *base, const char *base1, const char *other)
{
	for (int i = 0; tbl[i].key != NULL; i++) {
		const struct ema_config_key *k = &tbl[i];
		char path[512], type[256], range[128], def[1100], def1[512], oth[512];

		snprintf(path, sizeof path, "%s%s", prefix, k->key);
		type_text(type, sizeof type, k);
		range_text(range, sizeof range, k);
		value_text(def, sizeof def, k, base);
		if (base1 != NULL) {
			value_text(def1, sizeof def1, k, base1);
			if (strcmp(def, def1) != 0) {
				size_t n = strlen(def);

				snprintf(def + n, sizeof def - n, " for i = 0, %s for 1, ...", def1);
			}
		}
		if (k->flags & EMA_CFG_REQUIRED)
			snprintf(def, sizeof def, "required");
		fputs("| `", out);
		fputs(path, out);
		fputs("` |", out);
		put_cell(out, type);
		put_cell(out, range);
		put_cell(out, def);
		if (other != NULL) {
			value_text(oth, sizeof oth, k, other);
			put_cell(out, oth);
		}
		put_cell(out, k->unit != NULL ? k->unit : "");
		put_cell(out, k->help != NULL ? k->help : "");
		fputc('\n', out);
		if (k->type == EMA_CFG_OBJ) {
			char sub[520];

			snprintf(sub, sizeof sub, "%s.", path);
			write_rows(out, k->sub, sub, base + k->off, base1 ? base1 + k->off : NULL,
				   other ? other + k->off : NULL);
		} else if (k->type == EMA_CFG_ARRAY && k->init != NULL) {
			char sub[520];
			/* the largest element struct of the tables (a tenant) */
			static char e0[sizeof(struct ema_tenant_cfg)], e1[sizeof(struct ema_tenant_cfg)];

			if (k->size > sizeof e0)
				continue;
			k->init(e0, 0);
			k->init(e1, 1);
			snprintf(sub, sizeof sub, "%s[i].", path);
			write_rows(out, k->sub, sub, e0, e1, NULL);
		}
	}
}

/* Keys where scenarios/default.json departs from the built-in values,
 * found by comparing the two as the reference shows them. */
static void write_default_json_diff(FILE *out, const struct ema_config_key *tbl,
				    const char *prefix, const char *builtin, const char *dflt)
{
	for (int i = 0; tbl[i].key != NULL; i++) {
		const struct ema_config_key *k = &tbl[i];
		char a[512], b[512];

		if (k->type == EMA_CFG_OBJ) {
			char sub[256];

			snprintf(sub, sizeof sub, "%s%s.", prefix, k->key);
			write_default_json_diff(out, k->sub, sub, builtin + k->off, dflt + k->off);
			continue;
		}
		if (k->type == EMA_CFG_ARRAY) {
			int n0 = *(const int *)(builtin + k->off2), n1 = *(const int *)(dflt + k->off2);

			if (n0 != n1)
				fprintf(out, "- `%s%s`: %d element%s (built-in: %d)\n", prefix, k->key, n1,
					n1 == 1 ? "" : "s", n0);
			continue;
		}
		value_text(a, sizeof a, k, builtin);
		value_text(b, sizeof b, k, dflt);
		if (strcmp(a, b) != 0)
			fprintf(out, "- `%s%s`: %s (built-in: %s)\n", prefix, k->key, b, a);
	}
}

int ema_config_write_reference(FILE *out, struct ema_error *err)
{
	static struct ema_config builtin, dflt;
	struct ema_hw_profile hw0;
	struct ema_model m0;
	int rc;

	rc = ema_config_builtin(&builtin, err);
	if (rc == EMA_OK)
		rc = ema_config_load(&dflt, NULL, NULL, 0, err);
	if (rc != EMA_OK)
		return rc;
	ema_config_hw_defaults(&hw0);
	ema_config_model_defaults(&m0);

	fputs("# Configuration keys\n\n"
	      "<!-- Generated by tools/gen_keys from the key tables of config/ "
	      "(config.c, profile.c); do not edit: run `make keys-doc`. "
	      "tests/test_keys fails while this file differs from the tables. -->\n\n"
	      "[README](../README.md) > [doc](README.md) > keys. "
	      "Prose, examples and `--set` syntax: [configuration.md](configuration.md).\n\n"
	      "Every key a scenario, a hardware profile or a model file may hold. "
	      "Unknown keys are errors. *Default* is the value a key takes when "
	      "neither the file nor `--set` gives it; *required* keys have none. "
	      "Ranges are checked when the file is read (`[` closed, `(` open); "
	      "some keys have cross-field checks too, which their text names, "
	      "and a few combinations of in-range values are refused for what "
	      "the counts can hold: a step past simulated time's 146 years, a "
	      "pool of more than 2^26 pages "
	      "([limitations.md](limitations.md#limits-of-the-numbers)). "
	      "`tenants[i]` is written `tenants.0`, `tenants.1`, ... in `--set` "
	      "paths.\n\n", out);

	fputs("## Scenario\n\n"
	      "| key | type | range | default | unit | meaning |\n"
	      "| --- | --- | --- | --- | --- | --- |\n", out);
	write_rows(out, ema_config_top_keys, "", (const char *)&builtin, NULL, NULL);
	fputs("\n`scenarios/default.json`, the scenario `ema run` and `ema config` "
	      "use without `--config`, differs from the built-in values in:\n\n", out);
	write_default_json_diff(out, ema_config_top_keys, "", (const char *)&builtin,
				(const char *)&dflt);

	fprintf(out, "\n## Hardware profile\n\n"
		"The keys of `profiles/hardware/*.json`, of `ema calibrate` output "
		"and of an inline `hardware` object. The `%s` column is the "
		"embedded profile the built-in scenario uses (`ema list hardware` "
		"lists them all).\n\n"
		"| key | type | range | default | `%s` | unit | meaning |\n"
		"| --- | --- | --- | --- | --- | --- | --- |\n",
		builtin.hardware, builtin.hardware);
	write_rows(out, ema_config_hw_keys, "", (const char *)&hw0, NULL,
		   (const char *)&builtin.hw);

	fprintf(out, "\n## Model\n\n"
		"The keys of `profiles/models/*.json` and of an inline `model` "
		"object. The `%s` column is the built-in scenario's model "
		"(`ema list models` lists them all).\n\n"
		"| key | type | range | default | `%s` | unit | meaning |\n"
		"| --- | --- | --- | --- | --- | --- | --- |\n",
		builtin.model_name, builtin.model_name);
	write_rows(out, ema_config_model_keys, "", (const char *)&m0, NULL,
		   (const char *)&builtin.model);

	if (fflush(out) != 0 || ferror(out))
		return ema_error_set(err, EMA_ERR_IO, "key reference: write failed");
	return EMA_OK;
}

/* The unit of a key path as the tables give it (tenants.0.workload.rate_rps:
 * "requests/s"): for axis labels and column names of results. Array
 * indices are skipped; hardware.KEY and model.KEY look in their tables. */
const char *ema_config_key_unit(const char *path)
{
	const struct ema_config_key *tbl = ema_config_top_keys;
	const char *p = path;

	while (tbl != NULL && *p != '\0') {
		size_t n = strcspn(p, ".");
		const struct ema_config_key *k = NULL;

		if (n > 0 && strspn(p, "0123456789") == n) {
			p += n + (p[n] == '.');
			continue;
		}
		for (const struct ema_config_key *q = tbl; q->key != NULL; q++)
			if (strlen(q->key) == n && strncmp(q->key, p, n) == 0)
				k = q;
		if (k == NULL)
			return NULL;
		p += n + (p[n] == '.');
		if (*p == '\0')
			return k->unit;
		if (k->type == EMA_CFG_OBJ || k->type == EMA_CFG_ARRAY)
			tbl = k->sub;
		else if (k->type == EMA_CFG_HW)
			tbl = ema_config_hw_keys;
		else if (k->type == EMA_CFG_MODEL)
			tbl = ema_config_model_keys;
		else
			return NULL;
	}
	return NULL;
}
