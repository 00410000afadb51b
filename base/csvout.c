/* csvout.c: printf's text for %.Nf and %.6g at a fraction of its cost
 * (printf of doubles was a seventh of an 8-tenant trace replay), and a
 * plain output buffer. A double is m x 2^e exactly; v x 10^N is then
 * m x 10^N x 2^e, which fits in 128 bits for every value a CSV of ema
 * holds, and is rounded to an integer half to even, which is what glibc
 * does with the exact value in the default rounding mode. */
#include "csvout.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "ema_error.h"

__extension__ typedef unsigned __int128 u128;

static const uint64_t pow10_u64[] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL,
};

/* "00" .. "99": integers are written two digits at a time. */
static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* u in decimal, ending just before `end`; returns where it starts. Four
 * digits per 64-bit division (by a constant: a multiplication), two per
 * 32-bit one after. */
static inline char *dec_before(char *end, uint64_t u)
{
	while (u >= 10000) {
		uint32_t r = (uint32_t)(u % 10000);

		u /= 10000;
		end -= 4;
		memcpy(end, digit_pairs + 2 * (r / 100), 2);
		memcpy(end + 2, digit_pairs + 2 * (r % 100), 2);
	}
	{
		uint32_t v = (uint32_t)u;

		if (v >= 100) {
			end -= 2;
			memcpy(end, digit_pairs + 2 * (v % 100), 2);
			v /= 100;
		}
		if (v >= 10) {
			end -= 2;
			memcpy(end, digit_pairs + 2 * v, 2);
		} else {
			*--end = (char)('0' + (int)v);
		}
	}
	return end;
}

static const uint64_t pow10_all[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
	10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
	100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL,
};

/* Decimal digits of u: from its bit length (log10(2) ~ 1233 / 4096, an
 * estimate one short at most), and one comparison. */
static inline int n_digits(uint64_t u)
{
	int bits = 64 - __builtin_clzll(u | 1);
	int d = (bits * 1233) >> 12;

	/* (u | 1 for 0, which has one digit; 10^d is even for d >= 1) */
	return d + 1 - ((u | 1) < pow10_all[d]);
}

/* round(|v| x 10^p), p = 0..9, half to even; false where it would not
 * fit (|v| >= 2^97 or so: such values go through snprintf). */
static bool scaled_round(double v, int p, u128 *out)
{
	uint64_t bits, frac;
	int exp, e;
	u128 m;

	memcpy(&bits, &v, sizeof bits);
	exp = (int)((bits >> 52) & 0x7ff);
	frac = bits & ((1ULL << 52) - 1);
	if (exp == 0) {
		m = frac;
		e = -1074;
	} else {
		m = frac | (1ULL << 52);
		e = exp - 1075;
	}
	m *= pow10_u64[p];        /* < 2^53 x 2^30 */
	if (e >= 0) {
		if (e > 127 - 83)
			return false;
		*out = m << e;
		return true;
	}
	if (-e >= 100) {
		/* m x 10^p < 2^83 <= 2^(-e - 1): below half, rounds to 0 */
		*out = 0;
		return true;
	}
	{
		int s = -e;
		u128 q = m >> s;
		u128 r = m & (((u128)1 << s) - 1);
		u128 half = (u128)1 << (s - 1);

		if (r > half || (r == half && (q & 1)))
			q++;
		*out = q;
	}
	return true;
}

/* q as decimal digits with a point before the last p (at least one digit
 * before it), after an optional '-'. */
static int put_scaled(char *buf, bool neg, u128 q, int p)
{
	char tmp[64], *end = tmp + sizeof tmp, *d = end;
	int n, len = 0;

	/* 128-bit division is a library call: digits of 64 bits at a time */
	while (q > UINT64_MAX) {
		*--d = (char)('0' + (int)(q % 10));
		q /= 10;
	}
	d = dec_before(d, (uint64_t)q);
	n = (int)(end - d);
	while (n < p + 1) {
		*--d = '0';
		n++;
	}
	if (neg)
		buf[len++] = '-';
	memcpy(buf + len, d, (size_t)(n - p));
	len += n - p;
	if (p > 0) {
		buf[len++] = '.';
		memcpy(buf + len, end - p, (size_t)p);
		len += p;
	}
	buf[len] = '\0';
	return len;
}

static const double pow10_dbl[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9 };

/* q / 10^p and its remainder, by a constant for the usual p (a division
 * by a variable costs tens of cycles). */
static inline uint64_t split_pow10(uint64_t q, int p, uint64_t *rem)
{
	uint64_t ip;

	switch (p) {
	case 4: ip = q / 10000u; break;
	case 6: ip = q / 1000000u; break;
	default: ip = q / pow10_u64[p]; break;
	}
	*rem = q - ip * pow10_u64[p];
	return ip;
}

/* The text of a fixed-point number q x 10^-p (an optional '-', at least
 * one digit before the point), as put_scaled writes it, for q of 64 bits. */
static int put_fixed_u64(char *buf, bool neg, uint64_t q, int p)
{
	uint64_t frac, ip = split_pow10(q, p, &frac);
	int ilen = n_digits(ip), len = (neg ? 1 : 0) + ilen;
	char *d;

	if (neg)
		buf[0] = '-';
	dec_before(buf + len, ip);
	if (p > 0) {
		buf[len++] = '.';
		uint32_t f = (uint32_t)frac;  /* < 10^9 */
		int k = p;

		d = buf + len + p;
		for (; k >= 2; k -= 2) {
			d -= 2;
			memcpy(d, digit_pairs + 2 * (f % 100), 2);
			f /= 100;
		}
		if (k == 1)
			*--d = (char)('0' + (int)f);
		len += p;
	}
	buf[len] = '\0';
	return len;
}

int ema_fmt_fixed(char *buf, double v, int decimals)
{
	u128 q;

	/* The common case without 128-bit arithmetic: x, |v| x 10^p rounded
	 * once, is within 2^-11 of the exact product while it is below 2^42
	 * (its ulp at most 2^-10); unless its fraction is within 2^-8 of a
	 * half, the nearest integer to x is the nearest to the exact value,
	 * the one printf prints (a tie needs the exact value: below). */
	if (decimals >= 0 && decimals <= 9 && isfinite(v)) {
		double x = fabs(v) * pow10_dbl[decimals];

		if (x < 0x1p42) {
			double f = floor(x), fr = x - f;

			if (fr < 0.5 - 0x1p-8 || fr > 0.5 + 0x1p-8)
				return put_fixed_u64(buf, signbit(v) != 0,
						     (uint64_t)f + (fr > 0.5 ? 1u : 0u), decimals);
		}
	}

	if (decimals < 0 || decimals > 9 || !isfinite(v) || !scaled_round(v, decimals, &q))
		return snprintf(buf, EMA_FMT_MAX, "%.*f", decimals, v);
	return put_scaled(buf, signbit(v) != 0, q, decimals);
}

int ema_fmt_g6(char *buf, double v)
{
	double a = fabs(v);
	int x, p, len;
	u128 q;

	if (!isfinite(v) || a < 1e-4 || a >= 1e6) {
		/* zero, e-style and the rest: printf's own */
		if (v == 0)
			return snprintf(buf, EMA_FMT_MAX, "%s", signbit(v) ? "-0" : "0");
		return snprintf(buf, EMA_FMT_MAX, "%.6g", v);
	}
	/* X, the exponent of v rounded to 6 digits, decides the style; the
	 * estimate from log10 is checked against the rounded digits */
	x = (int)floor(log10(a));
	for (;;) {
		p = 5 - x;
		if (x < -4 || x >= 6 || p > 9 || !scaled_round(a, p, &q))
			return snprintf(buf, EMA_FMT_MAX, "%.6g", v);
		if (q >= 1000000)
			x++;
		else if (q < 100000)
			x--;
		else
			break;
	}
	len = put_scaled(buf, signbit(v) != 0, q, p);
	if (p > 0) {
		/* %g drops trailing zeros of the fraction, and a bare point */
		while (buf[len - 1] == '0')
			buf[--len] = '\0';
		if (buf[len - 1] == '.')
			buf[--len] = '\0';
	}
	return len;
}

void ema_csvout_init(struct ema_csvout *o, FILE *f)
{
	o->f = f;
	o->n = 0;
	o->error = 0;
}

int ema_csvout_flush(struct ema_csvout *o)
{
	if (o->n > 0 && !o->error && fwrite(o->buf, 1, o->n, o->f) != o->n)
		o->error = EMA_ERR_IO;
	o->n = 0;
	return o->error;
}

void ema_csvout_put(struct ema_csvout *o, const char *s, size_t n)
{
	if (o->n + n > EMA_CSVOUT_BUF) {
		ema_csvout_flush(o);
		if (n > EMA_CSVOUT_BUF) {
			if (!o->error && fwrite(s, 1, n, o->f) != n)
				o->error = EMA_ERR_IO;
			return;
		}
	}
	memcpy(o->buf + o->n, s, n);
	o->n += n;
}

/* Room for n more bytes in the buffer (flushed when it has less): the
 * number writers below format in place, with no copy. */
static inline char *room(struct ema_csvout *o, size_t n)
{
	if (o->n + n > EMA_CSVOUT_BUF)
		ema_csvout_flush(o);
	return o->buf + o->n;
}

char *ema_csvout_reserve(struct ema_csvout *o, size_t n)
{
	return room(o, n);
}

char *ema_put_int(char *p, long long v)
{
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	int len = n_digits(u) + (v < 0);

	if (v < 0)
		*p = '-';
	dec_before(p + len, u);
	return p + len;
}

char *ema_put_ms(char *p, int64_t ns)
{
	uint64_t whole;
	uint32_t frac, hi, lo;
	int len;

	if (ns < 0 || ns >= 1000000000000000LL) {
		/* (below 2^63 ns: under 9.3e12 ms, 27 characters at most) */
		char tmp[EMA_FMT_MAX];
		int n = ema_fmt_fixed(tmp, (double)ns * 1e-6, 6);

		memcpy(p, tmp, (size_t)n);
		return p + n;
	}
	/* (see ema_csvout_ms) */
	whole = (uint64_t)ns / 1000000u;
	frac = (uint32_t)((uint64_t)ns - whole * 1000000u);
	len = n_digits(whole);
	dec_before(p + len, whole);
	p += len;
	*p = '.';
	hi = frac / 10000u;
	lo = frac - hi * 10000u;
	memcpy(p + 1, digit_pairs + 2 * hi, 2);
	memcpy(p + 3, digit_pairs + 2 * (lo / 100u), 2);
	memcpy(p + 5, digit_pairs + 2 * (lo % 100u), 2);
	return p + 7;
}

char *ema_put_fixed(char *p, double v, int decimals)
{
	return p + ema_fmt_fixed(p, v, decimals);
}

void ema_csvout_int(struct ema_csvout *o, long long v)
{
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	char *p = room(o, 24);
	int len = n_digits(u) + (v < 0);

	if (v < 0)
		*p = '-';
	dec_before(p + len, u);
	o->n += (size_t)len;
}

void ema_csvout_fixed(struct ema_csvout *o, double v, int decimals)
{
	/* (with its NUL, which the next write covers) */
	o->n += (size_t)ema_fmt_fixed(room(o, EMA_FMT_MAX), v, decimals);
}

void ema_csvout_g6(struct ema_csvout *o, double v)
{
	char tmp[EMA_FMT_MAX];

	ema_csvout_put(o, tmp, (size_t)ema_fmt_g6(tmp, v));
}

void ema_csvout_ms(struct ema_csvout *o, int64_t ns)
{
	uint64_t frac, whole;
	char *p, *end;
	int len;

	/* (double)ns x 1e-6 has two roundings, a relative error below
	 * 2.3e-16, so under 2.3e-7 from ns / 10^6 while ns < 10^15: the
	 * nearest six-decimal number, what printf prints, is ns / 10^6 */
	if (ns < 0 || ns >= 1000000000000000LL) {
		ema_csvout_fixed(o, (double)ns * 1e-6, 6);
		return;
	}
	frac = (uint64_t)ns % 1000000u;
	whole = (uint64_t)ns / 1000000u;
	len = n_digits(whole) + 7;
	p = room(o, 32);
	end = p + len;
	for (int i = 0; i < 3; i++) {
		end -= 2;
		memcpy(end, digit_pairs + 2 * (frac % 100), 2);
		frac /= 100;
	}
	*--end = '.';
	dec_before(end, whole);
	o->n += (size_t)len;
}
