/* readfile.c: read a user's file whole, with user-facing errors. */
#include "readfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int ema_read_file(const char *path, const char *what, size_t max_bytes, char **buf,
		  size_t *len, struct ema_error *err)
{
	return ema_read_file_limit(path, what, max_bytes, NULL, buf, len, err);
}

int ema_read_file_limit(const char *path, const char *what, size_t max_bytes,
			const char *limit_hint, char **buf, size_t *len, struct ema_error *err)
{
	FILE *f;
	char *b = NULL, *nb;
	size_t cap = 0, n = 0, got;
	struct stat st;
	int rc = EMA_OK;

	*buf = NULL;
	*len = 0;
	f = fopen(path, "rb");
	if (f == NULL)
		return ema_error_at(err, path, 0, "cannot open: %s", strerror(errno));
	/* fopen opens a folder on Linux; reading it fails with EISDIR, which
	 * would pass for an I/O fault rather than the user's mistake */
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = ema_error_at(err, path, 0, "expected %s, got a folder", what);
		goto out;
	}
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 1 << 16;
			/* enough to see the limit passed, never twice the limit */
			if (max_bytes > 0 && cap > max_bytes + 65536)
				cap = max_bytes + 65536;
			nb = realloc(b, cap + 1);
			if (nb == NULL) {
				rc = ema_error_set(err, EMA_ERR_NOMEM, "%s: out of memory reading the file",
						   path);
				goto out;
			}
			b = nb;
		}
		got = fread(b + n, 1, cap - n, f);
		n += got;
		if (max_bytes > 0 && n > max_bytes) {
			/* /dev/zero, a pipe never closed: read until a limit, not
			 * until the memory is gone */
			rc = ema_error_at(err, path, 0, "more than %zu MiB: expected %s of at most "
					  "that (an endless stream, such as /dev/zero or a pipe "
					  "never closed?)%s%s", max_bytes >> 20, what,
					  limit_hint ? "; " : "", limit_hint ? limit_hint : "");
			goto out;
		}
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		/* the user's file, unreadable: an input error like a missing one */
		rc = ema_error_at(err, path, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	b = NULL;
out:
	free(b);
	fclose(f);
	return rc;
}
