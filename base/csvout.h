/* csvout.h: a buffered writer for large CSV files (requests.csv has one
 * row per request and policy) whose numbers come out as exactly the text
 * printf gives for %.Nf (N = 0..9) and %.6g, without printf's cost: fixed
 * notation is rounded from the double's exact binary value with integer
 * arithmetic (ties to even, as glibc does), and what that fast path does
 * not cover (very large or tiny magnitudes, NaN, infinities) goes
 * through snprintf. */
#ifndef EMA_CSVOUT_H
#define EMA_CSVOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EMA_CSVOUT_BUF 65536

struct ema_csvout {
	FILE *f;
	size_t n;
	int error;             /* a write failed: fwrite's short count */
	char buf[EMA_CSVOUT_BUF];
};

/* The text of printf("%.*f", decimals, v) into buf (at least
 * EMA_FMT_MAX bytes, NUL-terminated); returns its length. decimals 0..9. */
#define EMA_FMT_MAX 352
int ema_fmt_fixed(char *buf, double v, int decimals);
/* The text of printf("%.6g", v). */
int ema_fmt_g6(char *buf, double v);

void ema_csvout_init(struct ema_csvout *o, FILE *f);
/* Writes what is buffered to the FILE; returns 0, or EMA_ERR_IO (then
 * every later call is a no-op and the error stays). */
int ema_csvout_flush(struct ema_csvout *o);

void ema_csvout_put(struct ema_csvout *o, const char *s, size_t n);
static inline void ema_csvout_str(struct ema_csvout *o, const char *s)
{
	size_t n = 0;

	while (s[n] != '\0')
		n++;
	ema_csvout_put(o, s, n);
}
static inline void ema_csvout_char(struct ema_csvout *o, char c)
{
	if (o->n == EMA_CSVOUT_BUF)
		ema_csvout_flush(o);
	o->buf[o->n++] = c;
}
/* printf("%lld") */
void ema_csvout_int(struct ema_csvout *o, long long v);

/* A row written in place, without a bounds check per number: room for n
 * bytes (at most EMA_CSVOUT_BUF; the buffer is flushed when it has
 * less), the ema_put_* writers below, each returning the end of its
 * text, then ema_csvout_wrote with the end of the row. */
char *ema_csvout_reserve(struct ema_csvout *o, size_t n);
static inline void ema_csvout_wrote(struct ema_csvout *o, const char *end)
{
	o->n = (size_t)(end - o->buf);
}
/* ema_csvout_int's text: at most EMA_PUT_INT_MAX bytes */
#define EMA_PUT_INT_MAX 20
char *ema_put_int(char *p, long long v);
/* ema_csvout_ms's text for ns >= 0: at most EMA_PUT_MS_MAX bytes */
#define EMA_PUT_MS_MAX 32
char *ema_put_ms(char *p, int64_t ns);
/* ema_csvout_fixed's text: at most EMA_FMT_MAX bytes */
char *ema_put_fixed(char *p, double v, int decimals);
/* printf("%.*f", decimals, v) */
void ema_csvout_fixed(struct ema_csvout *o, double v, int decimals);
/* printf("%.6g", v) */
void ema_csvout_g6(struct ema_csvout *o, double v);
/* printf("%.6f", (double)ns * 1e-6): a time in ns as milliseconds, the
 * most common number of requests.csv. The double is within 2.3e-16 of
 * its value ns / 10^6, whose six decimals are then the digits of ns
 * itself (for ns below 10^15, 11.6 days; beyond, and below 0, through
 * ema_csvout_fixed). */
void ema_csvout_ms(struct ema_csvout *o, int64_t ns);

#endif
