/* ema_error.h: status codes and the error record that every layer fills,
 * so that a failure deep in a trace reader reaches the user as
 * "file:line: what was expected" and exit status 2. */
#ifndef EMA_ERROR_H
#define EMA_ERROR_H

#include <stddef.h>

/* Negative codes, errno style; 0 is success. */
enum ema_status {
	EMA_OK = 0,
	EMA_ERR_INPUT = -1,       /* bad user input: config, trace, flag (exit 2) */
	EMA_ERR_NOMEM = -2,       /* host allocation failed */
	EMA_ERR_IO = -3,          /* file system error other than bad content */
	EMA_ERR_NOSPACE = -4,     /* no page free where one was asked for */
	EMA_ERR_DEVICE = -5,      /* CUDA or driver call failed */
	EMA_ERR_UNSUPPORTED = -6, /* capability missing here (no GPU, no CUDA) */
	EMA_ERR_INTERNAL = -7,    /* an invariant broke: a bug in ema */
	EMA_ERR_CORRUPT = -8      /* data integrity check failed (hw backend) */
};

#define EMA_ERROR_MSG_MAX 1024

struct ema_error {
	int code;
	char msg[EMA_ERROR_MSG_MAX];
};

/* Records code and message; returns code so that callers can write
 * `return ema_error_set(err, EMA_ERR_NOMEM, "...")`. err may be NULL. */
int ema_error_set(struct ema_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records an input error located in a file: "file:line: message".
 * line <= 0 leaves the line out ("file: message"). Returns EMA_ERR_INPUT. */
int ema_error_at(struct ema_error *err, const char *file, long line,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Copies src into dst (n bytes, NUL included) with what a terminal
 * would act on escaped: \n, \t, \r, and \xNN for other control bytes,
 * DEL, C1 controls and bytes that are not UTF-8. ema_error_set and
 * ema_error_at do it to every message, since messages quote input.
 * Returns the length written (cut short at a whole character). */
size_t ema_error_escape(char *dst, size_t n, const char *src);

/* Short name of a status code, for messages and logs. */
const char *ema_status_str(int code);

/* Process exit status for a code: 0 ok, 2 input error, 1 otherwise. */
int ema_status_exit(int code);

#endif
