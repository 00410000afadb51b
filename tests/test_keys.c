/* test_keys.c: the key reference (doc/keys.md) against the key tables:
 * every row of every table carries a help text and a unit, the reference
 * has one row per key path, the committed doc/keys.md is exactly what the
 * tables generate (so the manual cannot drift from the parser), and a
 * failed write is reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_internal.h"
#include "engine.h"
#include "test_main.h"

/* The reference as text (caller frees), or NULL after a CUnit failure. */
static char *reference_text(size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	struct ema_error err = { 0 };
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rc = ema_config_write_reference(f, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "reference: %s\n", err.msg);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	fclose(f);
	*len = n;
	return buf;
}

/* Walks a table as the reference does: calls fn on every key path. */
static int walk(const struct ema_config_key *tbl, const char *prefix,
		void (*fn)(const struct ema_config_key *k, const char *path, void *arg),
		void *arg)
{
	int n = 0;

	for (int i = 0; tbl[i].key != NULL; i++) {
		char path[512];

		snprintf(path, sizeof path, "%s%s", prefix, tbl[i].key);
		fn(&tbl[i], path, arg);
		n++;
		if (tbl[i].type == EMA_CFG_OBJ || tbl[i].type == EMA_CFG_ARRAY) {
			char sub[520];

			snprintf(sub, sizeof sub, "%s%s", path,
				 tbl[i].type == EMA_CFG_ARRAY ? "[i]." : ".");
			n += walk(tbl[i].sub, sub, fn, arg);
		}
	}
	return n;
}

static void check_help(const struct ema_config_key *k, const char *path, void *arg)
{
	int *missing = arg;

	if (k->help == NULL || strlen(k->help) < 8 || k->unit == NULL) {
		fprintf(stderr, "\n  %s: no help text or unit", path);
		(*missing)++;
	}
}

static void test_every_row_has_help(void)
{
	int missing = 0;

	CU_ASSERT(walk(ema_config_top_keys, "", check_help, &missing) > 50);
	CU_ASSERT(walk(ema_config_hw_keys, "", check_help, &missing) > 20);
	CU_ASSERT(walk(ema_config_model_keys, "", check_help, &missing) > 5);
	CU_ASSERT_EQUAL(missing, 0);
}

struct rows {
	const char *text;
	int missing;
};

/* Each key path is the first cell of exactly one row of its section. */
static void check_row(const struct ema_config_key *k, const char *path, void *arg)
{
	struct rows *r = arg;
	char cell[560];
	const char *at;

	(void)k;
	snprintf(cell, sizeof cell, "\n| `%s` |", path);
	at = strstr(r->text, cell);
	if (at == NULL) {
		fprintf(stderr, "\n  %s: no row in the reference", path);
		r->missing++;
	}
}

/* The text of one "## " section, NUL-terminated in place of the next. */
static char *section(char *text, const char *title)
{
	char *s = strstr(text, title), *next;

	if (s == NULL)
		return NULL;
	next = strstr(s + 1, "\n## ");
	if (next != NULL)
		next[1] = '\0';
	return s;
}

static int count_rows(const char *s)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, "\n| `")) != NULL; p++)
		n++;
	return n;
}

static void test_one_row_per_key(void)
{
	size_t len;
	char *text = reference_text(&len), *copy;
	struct rows r = { NULL, 0 };
	int keys;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	copy = strdup(text);
	/* sections are cut from the end so that each cut keeps the others */
	r.text = section(copy, "\n## Model\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.text);
	keys = walk(ema_config_model_keys, "", check_row, &r);
	CU_ASSERT_EQUAL(count_rows(r.text), keys);
	r.text = section(copy, "\n## Hardware profile\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.text);
	keys = walk(ema_config_hw_keys, "", check_row, &r);
	CU_ASSERT_EQUAL(count_rows(r.text), keys);
	r.text = section(copy, "\n## Scenario\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.text);
	keys = walk(ema_config_top_keys, "", check_row, &r);
	CU_ASSERT_EQUAL(count_rows(r.text), keys);
	CU_ASSERT_EQUAL(r.missing, 0);
	/* hand-checked rows: a range, a default, a nested default, a unit */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "| `serving.watermark` | number | [0, 0.5] | `0.01` | share of KV pages |"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "| `tenants[i].workload.prompt.mean` | number | (0, 1e7] | `1024` | tokens |"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "| `tenants[i].workload.output.mean` | number | (0, 1e7] | `256` | tokens |"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "| `tenants[i].name` | string | 1..63 bytes | `\"t0\"` for i = 0, `\"t1\"` for 1, ... |"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "| `page_mib` | number | power of two in [0.0625, 1024] | `2` | MiB |"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "| `n_gpus` | integer | 1..72 | required | `2` | GPUs |"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "| `pull_share_under_load` | number | (0, 1] | `1` | `0.938316` | share |"));
	/* the embedded default scenario's departures from the built-in values */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "- `gpu_mem_cap_gib`: `19` (built-in: `0`)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "- `tenants`: 2 elements (built-in: 0)\n"));
	free(copy);
	free(text);
}

/* doc/keys.md is committed generated text: any table change must be
 * followed by `make keys-doc`, or this fails. */
static void test_committed_reference_is_current(void)
{
	char path[4096], *want, *got = NULL;
	size_t len, got_len = 0;
	FILE *f;

	want = reference_text(&len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	snprintf(path, sizeof path, "%s/doc/keys.md", ema_test_srcdir());
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	got = malloc(len + 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	got_len = fread(got, 1, len + 1, f);
	fclose(f);
	if (got_len != len || memcmp(got, want, len) != 0)
		fprintf(stderr, "\n  %s differs from the key tables: run `make keys-doc` and commit it\n",
			path);
	CU_ASSERT_EQUAL(got_len, len);
	CU_ASSERT(got_len == len && memcmp(got, want, len) == 0);
	free(got);
	free(want);
}

static void test_write_failure(void)
{
	FILE *f = fopen("/dev/full", "w");
	struct ema_error err = { 0 };

	if (f == NULL)
		return; /* no /dev/full here: nothing to test */
	CU_ASSERT_EQUAL(ema_config_write_reference(f, &err), EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "write failed"));
	fclose(f);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "every key has a help text and a unit", test_every_row_has_help },
		{ "the reference has one row per key path", test_one_row_per_key },
		{ "doc/keys.md is what the tables generate", test_committed_reference_is_current },
		{ "a failed write is reported", test_write_failure },
		{ NULL, NULL }
	};

	/* the policies' own knobs, policy.NAME.KEY, as the program and
	 * tools/gen_keys register them */
	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	return ema_test_run("keys", cases);
}
