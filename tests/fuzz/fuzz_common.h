/* fuzz_common.h: what the libFuzzer harnesses of tests/fuzz/ share. The
 * readers take paths, so each input is written to a file in a private
 * folder; and every reader owes its caller the same contract on bad input
 * (README, "Bad user input"): EMA_ERR_INPUT with a message, nothing else.
 * A broken contract aborts, which libFuzzer reports as a crash. */
#ifndef EMA_FUZZ_COMMON_H
#define EMA_FUZZ_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ema_error.h"

static char ema_fuzz_dir_buf[512];

/* This process's folder for input files, made on first use under $TMPDIR
 * (make fuzz points it into build-fuzz/, so a crashed run leaves nothing
 * in /tmp). */
static const char *ema_fuzz_dir(void)
{
	if (ema_fuzz_dir_buf[0] == '\0') {
		const char *t = getenv("TMPDIR");

		snprintf(ema_fuzz_dir_buf, sizeof ema_fuzz_dir_buf, "%s/ema-fuzz.XXXXXX",
			 t != NULL && t[0] != '\0' ? t : "/tmp");
		if (mkdtemp(ema_fuzz_dir_buf) == NULL) {
			perror("ema fuzz: mkdtemp");
			abort();
		}
	}
	return ema_fuzz_dir_buf;
}

/* Writes n bytes to NAME in the folder; path receives its full name. */
static void ema_fuzz_write(char *path, size_t size, const char *name,
			   const void *data, size_t n)
{
	FILE *f;

	snprintf(path, size, "%s/%s", ema_fuzz_dir(), name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		abort();
	}
}

__attribute__((format(printf, 1, 2), noreturn))
static void ema_fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\nema fuzz: contract broken: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* rc from a reader of user input: success, or an input error whose
 * message starts with `prefix` (the file named, when known; NULL: any
 * non-empty message). */
static void ema_fuzz_check_status(int rc, const struct ema_error *err, const char *prefix)
{
	if (rc == EMA_OK)
		return;
	if (rc != EMA_ERR_INPUT)
		ema_fuzz_fail("status %d (%s), expected EMA_OK or EMA_ERR_INPUT: %s",
			      rc, ema_status_str(rc), err->msg);
	if (err->code != rc || err->msg[0] == '\0')
		ema_fuzz_fail("input error without a message (code %d)", err->code);
	if (prefix != NULL && strncmp(err->msg, prefix, strlen(prefix)) != 0)
		ema_fuzz_fail("message does not name %s: %s", prefix, err->msg);
}

#endif
