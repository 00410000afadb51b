/* test_sweep.c: tests of the pieces of `ema sweep` a user cannot see one
 * by one: SHA-256 against the FIPS 180-4 examples (the hash a point keeps
 * of its configuration, which `sha256sum -c` must accept), the statistics
 * over seeds computed by hand (an interval that stays above zero), and the
 * order of the points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"
#include "test_main.h"

static void test_sha256(void)
{
	char hex[EMA_SHA256_HEX];
	struct ema_sha256 s;
	char *million = malloc(1000000);
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

	ema_sha256_of("", 0, hex);
	CU_ASSERT_STRING_EQUAL(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ema_sha256_of("abc", 3, hex);
	CU_ASSERT_STRING_EQUAL(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* 56 bytes: the length no longer fits the first block */
	ema_sha256_of(two, strlen(two), hex);
	CU_ASSERT_STRING_EQUAL(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* a million 'a', fed in uneven pieces */
	CU_ASSERT_PTR_NOT_NULL_FATAL(million);
	memset(million, 'a', 1000000);
	ema_sha256_init(&s);
	for (size_t off = 0, step = 1; off < 1000000; off += step, step = step * 3 % 1000 + 1)
		ema_sha256_update(&s, million + off, off + step > 1000000 ? 1000000 - off : step);
	ema_sha256_hex(&s, hex);
	CU_ASSERT_STRING_EQUAL(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-6 * fabs(b) + 1e-12;
}

static void test_stats(void)
{
	struct ema_sweep_stat st;
	const double e = exp(1.0);
	/* ln: 0, 1, 2: mean 1, sd 1; t(0.975, 2) = 4.302653 */
	double v[3] = { 1, e, e * e };
	double half = 4.30265272974946 / sqrt(3.0);

	CU_ASSERT_EQUAL(ema_sweep_stat(v, 3, &st), 3);
	CU_ASSERT(near(st.mean, (1 + e + e * e) / 3));
	CU_ASSERT(near(st.gmean, e));
	CU_ASSERT(near(st.lo, exp(1 - half)));
	CU_ASSERT(near(st.hi, exp(1 + half)));
	/* the interval of the issue: a wide spread over 3 seeds stays > 0 */
	{
		double w[3] = { 100, 200, 1200 };

		ema_sweep_stat(w, 3, &st);
		CU_ASSERT(st.lo > 0);
		CU_ASSERT(st.mean - 4.30265272974946 * st.sd / sqrt(3.0) < 0); /* the old one */
		CU_ASSERT(st.lo < st.gmean && st.gmean < st.hi);
	}
	/* a zero: the t interval of the mean, cut at 0; no geometric mean */
	{
		double w[3] = { 0, 2, 4 };

		ema_sweep_stat(w, 3, &st);
		CU_ASSERT(near(st.mean, 2));
		CU_ASSERT(near(st.sd, 2));
		CU_ASSERT(isnan(st.gmean));
		CU_ASSERT_EQUAL(st.lo, 0);
		CU_ASSERT(near(st.hi, 2 + 4.30265272974946 * 2 / sqrt(3.0)));
	}
	/* negative values: not cut (the metric's range includes them) */
	{
		double w[2] = { -1, 1 };

		ema_sweep_stat(w, 2, &st);
		CU_ASSERT(near(st.lo, -12.7062047361747));
	}
	/* a seed that measured nothing is left out */
	{
		double w[3] = { NAN, 2, 8 };

		CU_ASSERT_EQUAL(ema_sweep_stat(w, 3, &st), 2);
		CU_ASSERT(near(st.gmean, 4));
		CU_ASSERT(near(st.mean, 5));
	}
	/* one seed: a value, no spread, no interval */
	{
		double w[1] = { 7 };

		CU_ASSERT_EQUAL(ema_sweep_stat(w, 1, &st), 1);
		CU_ASSERT(near(st.mean, 7));
		CU_ASSERT(isnan(st.sd) && isnan(st.lo) && isnan(st.hi));
	}
	CU_ASSERT_EQUAL(ema_sweep_stat(NULL, 0, &st), 0);
	CU_ASSERT(isnan(st.mean));
}

static void test_points(void)
{
	struct ema_sweep *s = calloc(1, sizeof *s);
	struct ema_error err = {0};
	char sets[EMA_SWEEP_MAX_KEYS][512], name[32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("seed=1,2", &s->keys[0], &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a.b=x,y,z", &s->keys[1], &err), EMA_OK);
	s->n_keys = 2;
	CU_ASSERT_EQUAL(ema_sweep_layout(s, &err), EMA_OK);
	CU_ASSERT_EQUAL(s->n_points, 6);
	CU_ASSERT_EQUAL(s->seed_key, 0);
	/* the last key varies fastest */
	ema_sweep_point_sets(s, 4, sets);
	CU_ASSERT_STRING_EQUAL(sets[0], "seed=2");
	CU_ASSERT_STRING_EQUAL(sets[1], "a.b=y");
	ema_sweep_point_name(4, name);
	CU_ASSERT_STRING_EQUAL(name, "point-004");
	ema_sweep_point_name(1234, name);
	CU_ASSERT_STRING_EQUAL(name, "point-1234");
	/* mistakes */
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("seed", &s->keys[2], &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "--vary seed: expected KEY=V1,V2,...");
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=1,,2", &s->keys[2], &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=\"x\"", &s->keys[2], &err), EMA_ERR_INPUT);
	/* a value travels in sweep.csv, sweep.json and messages: a carriage
	 * return (which would end a CSV row), a tab, an escape sequence or a
	 * byte that is not UTF-8 has no place in it, nor in a key */
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=1\r,2", &s->keys[2], &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "control characters"));
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=1\t2", &s->keys[2], &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=\x1b[31m", &s->keys[2], &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NULL(strchr(err.msg, '\x1b'));
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=\xff", &s->keys[2], &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a\rb=1", &s->keys[2], &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=caf\xc3\xa9", &s->keys[2], &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=1,2", &s->keys[2], &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_sweep_parse_vary("a=3", &s->keys[3], &err), EMA_OK);
	s->n_keys = 4;
	CU_ASSERT_EQUAL(ema_sweep_layout(s, &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "--vary a: the key is varied twice");
	ema_sweep_free(s);
	free(s);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"SHA-256: the FIPS 180-4 examples", test_sha256},
		{"statistics over seeds by hand", test_stats},
		{"points: order, names, mistakes", test_points},
		{NULL, NULL},
	};

	return ema_test_run("sweep", cases);
}
