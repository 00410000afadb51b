/* ema_error.c: filling the error record; kept tiny because every layer
 * links it. */
#include "ema_error.h"

#include <stdarg.h>
#include <stdio.h>

int ema_error_set(struct ema_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return code;
}

int ema_error_at(struct ema_error *err, const char *file, long line,
		 const char *fmt, ...)
{
	va_list ap;
	int n;

	if (err == NULL)
		return EMA_ERR_INPUT;
	err->code = EMA_ERR_INPUT;
	if (line > 0)
		n = snprintf(err->msg, sizeof err->msg, "%s:%ld: ", file, line);
	else
		n = snprintf(err->msg, sizeof err->msg, "%s: ", file);
	if (n < 0 || (size_t)n >= sizeof err->msg)
		return EMA_ERR_INPUT;
	va_start(ap, fmt);
	vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
	va_end(ap);
	return EMA_ERR_INPUT;
}

const char *ema_status_str(int code)
{
	switch (code) {
	case EMA_OK: return "ok";
	case EMA_ERR_INPUT: return "bad input";
	case EMA_ERR_NOMEM: return "out of host memory";
	case EMA_ERR_IO: return "i/o error";
	case EMA_ERR_NOSPACE: return "no free page";
	case EMA_ERR_DEVICE: return "device error";
	case EMA_ERR_UNSUPPORTED: return "not supported here";
	case EMA_ERR_INTERNAL: return "internal error";
	case EMA_ERR_CORRUPT: return "data corrupted";
	default: return "unknown error";
	}
}

int ema_status_exit(int code)
{
	if (code == EMA_OK)
		return 0;
	return code == EMA_ERR_INPUT ? 2 : 1;
}
