/* readfile.h: the one whole-file reader: a user's file (config, profile,
 * trace) read in one go into a NUL-terminated buffer, with the mistakes a
 * user makes (missing, a folder, unreadable, too large) reported as
 * "path: what was expected", exit status 2. */
#ifndef EMA_READFILE_H
#define EMA_READFILE_H

#include <stddef.h>

#include "ema_error.h"

/* Reads all of path (a FIFO too: one pass) into *buf (caller frees) of
 * *len bytes plus a NUL. `what` names the file in messages ("a trace
 * file"); max_bytes > 0 refuses larger files and stops reading an endless
 * one there ("path: more than N MiB: expected WHAT of at most that ...").
 * Returns EMA_OK, EMA_ERR_INPUT or EMA_ERR_NOMEM. */
int ema_read_file(const char *path, const char *what, size_t max_bytes, char **buf,
		  size_t *len, struct ema_error *err);
/* The same, the message of a file past the limit ending with limit_hint
 * (how to raise it), when not NULL. */
int ema_read_file_limit(const char *path, const char *what, size_t max_bytes,
			const char *limit_hint, char **buf, size_t *len, struct ema_error *err);

#endif
