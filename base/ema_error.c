/* ema_error.c: filling the error record; kept tiny because every layer
 * links it. */
#include "ema_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_text.h"

size_t ema_error_escape(char *dst, size_t n, const char *src)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t k = 0, left = strlen(src);

	if (n == 0)
		return 0;
	while (left > 0) {
		size_t len = ema_utf8_len(p, left);
		char esc[8];
		const char *out = esc;
		size_t m;

		if (*p == '\n')
			out = "\\n";
		else if (*p == '\t')
			out = "\\t";
		else if (*p == '\r')
			out = "\\r";
		else if (*p < 0x20 || *p == 0x7f || len == 0 ||
			 (len == 2 && p[0] == 0xc2 && p[1] <= 0x9f))
			snprintf(esc, sizeof esc, "\\x%02x", *p); /* then the next byte */
		else
			out = NULL;
		if (out == NULL) {
			m = len;
			out = (const char *)p;
		} else {
			m = strlen(out);
			len = 1;
		}
		if (k + m >= n)
			break;
		memcpy(dst + k, out, m);
		k += m;
		p += len;
		left -= len;
	}
	dst[k] = '\0';
	return k;
}

/* The message as the user sees it: whatever it quotes from a file or a
 * command line (a trace row, a path, a --set value) cannot move the
 * cursor, change colours or split the line. */
static void escape_in_place(char *msg, size_t size)
{
	char tmp[EMA_ERROR_MSG_MAX];

	for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			goto escape;
	return;
escape:
	ema_error_escape(tmp, sizeof tmp, msg);
	snprintf(msg, size, "%s", tmp);
}

int ema_error_set(struct ema_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	escape_in_place(err->msg, sizeof err->msg);
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
	escape_in_place(err->msg, sizeof err->msg);
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
