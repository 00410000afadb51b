/* test_csvout.c: base/csvout's numbers are printf's text, byte for byte:
 * %.Nf for N = 0..9 and %.6g against snprintf on millions of values
 * (random bit patterns over the whole range, the milliseconds ema writes,
 * exact halves where rounding goes to even, the edges of %g's styles,
 * zeros, subnormals, NaN and infinities), and the buffer writes what it
 * was given even past its size, and reports a full disk. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csvout.h"
#include "sortd.h"
#include "ema_error.h"
#include "test_main.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static long mismatches;

/* One value in every format; the first few mismatches are printed. */
static void check(double v)
{
	char want[512], got[EMA_FMT_MAX];
	int n;

	for (int d = 0; d <= 9; d++) {
		snprintf(want, sizeof want, "%.*f", d, v);
		n = ema_fmt_fixed(got, v, d);
		if (strcmp(want, got) != 0 || n != (int)strlen(want)) {
			if (mismatches++ < 10)
				fprintf(stderr, "\n%%.%df of %a: printf '%s', ema '%s'", d, v, want, got);
		}
	}
	snprintf(want, sizeof want, "%.6g", v);
	n = ema_fmt_g6(got, v);
	if (strcmp(want, got) != 0 || n != (int)strlen(want)) {
		if (mismatches++ < 10)
			fprintf(stderr, "\n%%.6g of %a: printf '%s', ema '%s'", v, want, got);
	}
}

static void test_random_bits(void)
{
	mismatches = 0;
	for (int i = 0; i < 30000; i++) {
		uint64_t b = next();
		double v;

		memcpy(&v, &b, sizeof v);
		check(v);
	}
	CU_ASSERT_EQUAL(mismatches, 0);
}

/* Magnitudes a CSV holds: 1e-7 .. 1e12, uniform in log scale, both signs. */
static void test_random_magnitudes(void)
{
	mismatches = 0;
	for (int i = 0; i < 30000; i++) {
		double u = (double)(next() >> 11) / 9007199254740992.0;
		double v = pow(10.0, -7.0 + 19.0 * u);

		check(next() & 1 ? v : -v);
	}
	CU_ASSERT_EQUAL(mismatches, 0);
}

/* What requests.csv writes: ns x 1e-6 and its quotients, ns up to days. */
static void test_milliseconds(void)
{
	mismatches = 0;
	for (int i = 0; i < 30000; i++) {
		int64_t ns = (int64_t)(next() % 400000000000000ULL);
		double ms = (double)ns * 1e-6;

		check(ms);
		check(ms / (double)(1 + next() % 2000));
		check((double)(ns % 1000000000) * 1e-6);
	}
	CU_ASSERT_EQUAL(mismatches, 0);
}

/* Exact binary halves at every decimal place: printf rounds them to even. */
static void test_halves(void)
{
	mismatches = 0;
	for (int k = 0; k < 4096; k++)
		for (int j = 1; j <= 30; j++) {
			double v = ldexp((double)(2 * k + 1), -j);

			check(v);
			check(-v);
			check(v + 1000.0);
		}
	/* x.5 at the last place of each precision, 0.5 .. 0.0000000005 */
	for (int d = 0; d <= 9; d++)
		for (int k = 0; k < 2000; k++) {
			double v = ((double)k + 0.5) / pow(10.0, d);

			check(v);
			check(nextafter(v, 0));
			check(nextafter(v, 1e9));
		}
	CU_ASSERT_EQUAL(mismatches, 0);
}

static void test_edges(void)
{
	static const double v[] = {
		0.0, 1.0, 9.5, 10.0, 99.5, 0.05, 0.005, 0.0005, 1e-4, 9.99995e-5, 1e-5,
		0.000099999949, 0.00009999995, 999999.4, 999999.5, 999999.6, 99999.95,
		99999.949999, 1e6, 1e15, 1e22, 1e23, 123456789012345678.0, 9007199254740993.0,
		1.5e300, DBL_MAX, DBL_MIN, DBL_MIN / 3, 4.9e-324, 1e-320, 0.1, 0.2, 0.3,
		2.675, 1.005, 1.0000005, 0.0000005, 0.00000049999999999, 0.0000015,
		158456325028528675187087900672.0, /* 2^97 */ 316912650057057350374175801344.0,
	};

	mismatches = 0;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		check(v[i]);
		check(-v[i]);
	}
	check(NAN);
	check(-NAN);
	check(INFINITY);
	check(-INFINITY);
	CU_ASSERT_EQUAL(mismatches, 0);
}

/* The buffer: everything written in order across flushes, integers as
 * %lld, and a write error kept and reported. */
static void test_buffer(void)
{
	char path[4400];
	struct ema_csvout *o = malloc(sizeof *o);
	FILE *f, *g;
	char *want, *got;
	size_t wn = 0, cap = 4 << 20, gn;
	int fd;

	snprintf(path, sizeof path, "%s/ema_test_csvout.XXXXXX", ema_test_tmp());
	fd = mkstemp(path);

	CU_ASSERT_FATAL(fd >= 0 && o != NULL);
	f = fdopen(fd, "w");
	want = malloc(cap);
	got = malloc(cap);
	CU_ASSERT_FATAL(f != NULL && want != NULL && got != NULL);
	ema_csvout_init(o, f);
	for (int i = 0; i < 100000; i++) {
		long long k = (long long)(next() % 2000000001ULL) - 1000000000LL;
		double v = (double)(int64_t)(next() % 100000000000ULL) * 1e-6;

		/* every digit count and its edges, both signs */
		static const long long edges[] = {
			0, 9, 10, 99, 100, 999, 1000, 9999, 10000, 99999, 100000,
			999999999, 1000000000, 9999999999LL, 10000000000LL,
			999999999999999999LL, 1000000000000000000LL, INT64_MAX, -1, -9, -10,
			-10000, -999999999999999999LL, INT64_MIN + 1,
		};

		if (i == 5)
			k = INT64_MIN;
		if (i >= 10 && i < 10 + (int)(sizeof edges / sizeof edges[0]))
			k = edges[i - 10];
		ema_csvout_str(o, "static,t0,");
		ema_csvout_int(o, k);
		ema_csvout_char(o, ',');
		ema_csvout_fixed(o, v, 6);
		ema_csvout_char(o, ',');
		ema_csvout_g6(o, v);
		ema_csvout_put(o, "\n", 1);
		wn += (size_t)snprintf(want + wn, cap - wn, "static,t0,%lld,%.6f,%.6g\n", k, v, v);
	}
	CU_ASSERT_EQUAL(ema_csvout_flush(o), 0);
	fclose(f);
	g = fopen(path, "rb");
	CU_ASSERT_FATAL(g != NULL);
	gn = fread(got, 1, cap, g);
	fclose(g);
	unlink(path);
	CU_ASSERT_EQUAL(gn, wn);
	CU_ASSERT(gn == wn && memcmp(got, want, wn) == 0);

	f = fopen("/dev/full", "w");
	if (f != NULL) {
		setvbuf(f, NULL, _IONBF, 0);
		ema_csvout_init(o, f);
		for (int i = 0; i < 20000; i++)
			ema_csvout_str(o, "a row that does not fit on a full disk\n");
		CU_ASSERT_EQUAL(ema_csvout_flush(o), EMA_ERR_IO);
		CU_ASSERT_EQUAL(o->error, EMA_ERR_IO);
		fclose(f);
	}
	free(want);
	free(got);
	free(o);
}

/* ema_csvout_ms and ema_put_ms are printf("%.6f", ns * 1e-6): over the
 * whole range of the fast path (ns below 10^15, where it must be exact),
 * at its edges and past them (where it hands over to the double);
 * ema_put_int is printf("%lld") beside them. */
static void test_csvout_ms(void)
{
	char path[4400];
	struct ema_csvout *o = malloc(sizeof *o);
	static const int64_t edges[] = {
		0, 1, 999999, 1000000, 1000001, 999999999999999LL, 1000000000000000LL,
		1000000000000001LL, INT64_MAX, -1, -1000000, INT64_MIN,
	};
	size_t cap = 16 << 20, wn = 0, gn;
	char *want = malloc(cap), *got = malloc(cap);
	int fd;
	FILE *f;

	snprintf(path, sizeof path, "%s/ema_test_csvout_ms.XXXXXX", ema_test_tmp());
	fd = mkstemp(path);

	CU_ASSERT_FATAL(fd >= 0 && o != NULL && want != NULL && got != NULL);
	f = fdopen(fd, "w");
	CU_ASSERT_FATAL(f != NULL);
	ema_csvout_init(o, f);
	for (int i = 0; i < 200000; i++) {
		int64_t ns;

		if (i < (int)(sizeof edges / sizeof edges[0]))
			ns = edges[i];
		else if (i % 4 == 0)
			ns = (int64_t)(next() % 1000000000000000ULL);     /* the whole fast path */
		else if (i % 4 == 1)
			ns = 1000000000000000LL - 1 - (int64_t)(next() % 1000000000ULL); /* its top */
		else if (i % 4 == 2)
			ns = (int64_t)(next() % 4000000000000ULL);        /* an hour's replay */
		else
			ns = (int64_t)(next() % 100000);                  /* under a millisecond */
		if (i % 3 == 0 || ns < 0) {
			ema_csvout_ms(o, ns);
			ema_csvout_char(o, '\n');
		} else {
			/* the in-place writers, as rows are written, with an
			 * integer between */
			long long v = (long long)next() >> (next() % 64);
			char *p = ema_csvout_reserve(o, EMA_PUT_MS_MAX + EMA_PUT_INT_MAX + 2);

			if (i % 3 == 2)
				v = i % 9 == 2 ? LLONG_MIN : -v;
			p = ema_put_ms(p, ns);
			*p++ = ',';
			p = ema_put_int(p, v);
			*p++ = '\n';
			ema_csvout_wrote(o, p);
			wn += (size_t)snprintf(want + wn, cap - wn, "%.6f,%lld\n", (double)ns * 1e-6, v);
			continue;
		}
		wn += (size_t)snprintf(want + wn, cap - wn, "%.6f\n", (double)ns * 1e-6);
	}
	CU_ASSERT_EQUAL(ema_csvout_flush(o), 0);
	fclose(f);
	f = fopen(path, "rb");
	CU_ASSERT_FATAL(f != NULL);
	gn = fread(got, 1, cap, f);
	fclose(f);
	unlink(path);
	CU_ASSERT_EQUAL(gn, wn);
	CU_ASSERT(gn == wn && memcmp(got, want, wn) == 0);
	free(want);
	free(got);
	free(o);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* base/sortd: the same order as a comparison sort, bit for bit, on
 * random magnitudes of both signs, many equal values, zeros and
 * infinities, and one byte varying (the skipped passes). */
static void test_sort(void)
{
	static double v[20000], w[20000];

	for (int round = 0; round < 6; round++) {
		size_t n = round == 5 ? 1 : 1000 + 3000 * (size_t)round;

		for (size_t i = 0; i < n; i++) {
			uint64_t r = next();

			switch (round) {
			case 0: v[i] = (double)(r % 1000) * 0.25; break;            /* duplicates */
			case 1: v[i] = (r & 1 ? -1.0 : 1.0) * pow(10.0, (double)(r % 600) / 10 - 30); break;
			case 2: v[i] = (double)(int64_t)(r % 1000000) * 1e-6; break;
			case 3: v[i] = 1.0 + (double)(r % 256) * ldexp(1.0, -52); break; /* one byte */
			default: v[i] = i % 3 == 0 ? INFINITY : (i % 3 == 1 ? -INFINITY : 0.0); break;
			}
			w[i] = v[i];
		}
		CU_ASSERT_EQUAL(ema_sort_doubles(v, n), 0);
		qsort(w, n, sizeof w[0], cmp_d);
		CU_ASSERT(memcmp(v, w, n * sizeof v[0]) == 0);
	}
	CU_ASSERT_EQUAL(ema_sort_doubles(v, 0), 0);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "random bit patterns", test_random_bits },
		{ "random magnitudes 1e-7..1e12", test_random_magnitudes },
		{ "milliseconds from nanoseconds", test_milliseconds },
		{ "exact halves round to even", test_halves },
		{ "edges: zeros, %g styles, huge, tiny, NaN", test_edges },
		{ "buffered writing", test_buffer },
		{ "milliseconds from integer nanoseconds", test_csvout_ms },
		{ "sorting doubles", test_sort },
		{ NULL, NULL }
	};

	return ema_test_run("csvout", cases);
}
