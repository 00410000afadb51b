/* simtime.c: the message of simulated time's limit (simtime.h). */
#include "simtime.h"

#include <stdarg.h>
#include <stdio.h>

int ema_time_error(struct ema_error *err, const char *fmt, ...)
{
	char what[EMA_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return ema_error_set(err, EMA_ERR_INPUT,
			     "simulated time would pass " EMA_TIME_MAX_TEXT
			     " (2^62 ns, the limit of its clock): %s", what);
}

const char *ema_time_text(char *buf, size_t size, double ns)
{
	double s = ns / 1e9;

	if (!(s < 86400))
		snprintf(buf, size, s < 30 * 86400.0 ? "%.3g days" : "%.3g years",
			 s < 30 * 86400.0 ? s / 86400 : ema_time_years(ns));
	else
		snprintf(buf, size, "%.3g s", s);
	return buf;
}
