/* test_example_policy.c: the worked example of policies/policy.h (a policy
 * with two knobs of its own, tests/example_policy.c) plugs in as the
 * header says: registered beside the shipped policies, its knobs are
 * parsed under policy.greedy, checked, overridden with --set, written to
 * the effective configuration, and reach its hooks; it runs and borrows
 * no more than its knob allows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "engine_priv.h"
#include "policy.h"
#include "test_main.h"

#include "mock_platform.h"

extern const struct ema_policy_ops ema_policy_greedy;

static const struct ema_policy_ops *table[32];

static void register_all(void)
{
	int n = 0;

	for (; ema_policy_table[n] != NULL; n++)
		table[n] = ema_policy_table[n];
	table[n++] = &ema_policy_greedy;
	table[n] = NULL;
	CU_ASSERT_EQUAL_FATAL(ema_engine_register_policies(table), EMA_OK);
}

static void test_knobs_parsed_and_written(void)
{
	static const char *const sets[] = { "policies=static,greedy", "policy.greedy.max_pages=7" };
	struct ema_config *cfg = calloc(1, sizeof *cfg);
	struct ema_error err = { 0 };
	const int *max_pages;
	char *json = NULL;
	size_t len = 0;
	FILE *f;

	register_all();
	CU_ASSERT_EQUAL_FATAL(ema_config_load(cfg, NULL, sets, 2, &err), EMA_OK);
	max_pages = ema_config_policy_knobs(cfg, "greedy");
	CU_ASSERT_PTR_NOT_NULL_FATAL(max_pages);
	CU_ASSERT_EQUAL(*max_pages, 7);
	f = open_memstream(&json, &len);
	CU_ASSERT_EQUAL(ema_config_write_json(cfg, f, &err), EMA_OK);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"greedy\": {"));
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"max_pages\": 7"));
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"spare\": 0.1"));
	free(json);
	free(cfg);
}

static void test_knob_errors(void)
{
	static const char *const out_of_range[] = { "policy.greedy.spare=2" };
	static const char *const unknown[] = { "policy.greedy.colour=1" };
	struct ema_config *cfg = calloc(1, sizeof *cfg);
	struct ema_error err = { 0 };

	register_all();
	CU_ASSERT_EQUAL(ema_config_load(cfg, NULL, out_of_range, 1, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "policy.greedy.spare"));
	CU_ASSERT_EQUAL(ema_config_load(cfg, NULL, unknown, 1, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "colour"));
	free(cfg);
}

/* Two tenants, tenant 0 overloaded: it borrows, at most max_pages from
 * GPU 1, and every request finishes. */
static void test_runs_within_its_knob(void)
{
	static const char *const sets[] = { "policies=greedy", "policy.greedy.max_pages=5" };
	struct ema_config *cfg = calloc(1, sizeof *cfg);
	struct ema_config *tiny = calloc(1, sizeof *tiny);
	struct ema_error err = { 0 };
	struct ema_request_spec r0[30], r1[2] = { spec(0, 16, 2), spec(10, 16, 2) };
	struct ema_workload w[2] = { { r0, 30, 30 }, { r1, 2, 2 } };
	struct ema_engine e;
	struct mock *m;

	register_all();
	CU_ASSERT_EQUAL_FATAL(ema_config_load(cfg, NULL, sets, 2, &err), EMA_OK);
	tiny_config(tiny, 2, (489 + 20) * 4.0 / 1024);
	tiny->policy = cfg->policy;   /* the parsed knobs, greedy's included */
	for (int i = 0; i < 30; i++)
		r0[i] = spec(i * 10, 64, 60);
	m = mock_new(tiny);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, tiny, &ema_policy_greedy, &m->base, w, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_engine_run(&e, &err), EMA_OK);
	CU_ASSERT(e.tenants[0].stats.borrowed_peak_pages > 0);
	CU_ASSERT(e.tenants[0].stats.borrowed_peak_pages <= 5);
	CU_ASSERT_EQUAL(e.tenants[0].n_done, 30);
	CU_ASSERT_EQUAL(e.tenants[1].n_done, 2);
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
	free(cfg);
	free(tiny);
}

static char *slurp(const char *rel)
{
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof path, "%s/%s", ema_test_srcdir(), rel);
	f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* The header's worked example is this file's code, line for line (tabs
 * as 8 spaces, comments as //): what the docs show is what compiles. */
static void test_header_shows_this_code(void)
{
	char *hdr = slurp("policies/policy.h"), *src = slurp("tests/example_policy.c");
	const char *code, *line;
	char want[512], got[512];
	const char *h;

	CU_ASSERT_PTR_NOT_NULL_FATAL(hdr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(src);
	code = strstr(src, "struct greedy_knobs {");
	h = strstr(hdr, " *     struct greedy_knobs {");
	CU_ASSERT_PTR_NOT_NULL_FATAL(code);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	for (line = code; *line; ) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		size_t k = 0;

		/* the source line as the header writes it */
		if (n == 0) {
			snprintf(want, sizeof want, " *");
		} else {
			k = (size_t)snprintf(want, sizeof want, " *     ");
			for (size_t i = 0; i < n && k + 9 < sizeof want; i++) {
				if (line[i] == '\t') {
					memcpy(want + k, "        ", 8);
					k += 8;
				} else if (line[i] == '/' && i + 1 < n && line[i + 1] == '*') {
					want[k++] = '/';
					want[k++] = '/';
					i++;
				} else if (line[i] == ' ' && i + 2 < n && line[i + 1] == '*' &&
					   line[i + 2] == '/' && i + 3 == n) {
					break;
				} else {
					want[k++] = line[i];
				}
			}
			want[k] = '\0';
		}
		{
			const char *hend = strchr(h, '\n');
			size_t hn = hend ? (size_t)(hend - h) : strlen(h);

			snprintf(got, sizeof got, "%.*s", (int)hn, h);
			h = hend ? hend + 1 : h + hn;
		}
		CU_ASSERT_STRING_EQUAL(got, want);
		if (strcmp(got, want) != 0)
			break;
		if (end == NULL || end[1] == '\0')
			break;
		line = end + 1;
	}
	free(hdr);
	free(src);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"its knobs are parsed, set and written", test_knobs_parsed_and_written},
		{"its knobs are checked", test_knob_errors},
		{"it runs and borrows within its knob", test_runs_within_its_knob},
		{"policy.h shows exactly this code", test_header_shows_this_code},
		{NULL, NULL},
	};
	return ema_test_run("example policy", cases);
}
