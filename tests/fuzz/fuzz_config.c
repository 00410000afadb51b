/* fuzz_config.c: libFuzzer harness of scenario loading (ema_config_load),
 * the file and the --set overrides together. The input is split at NUL
 * bytes: the first part is the scenario file (empty: the embedded
 * default), each further part one "key.path=value" override (at most 8).
 * Beyond the error contract it checks what `ema run` relies on when it
 * writes config.json: the effective configuration of a loaded scenario
 * loads again, and writes the same text again. */
#include "config.h"
#include "fuzz_common.h"

#define MAX_SETS 8

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *slurp(const char *path, size_t *n);

/* Relative paths in a scenario are read from its folder: ours, holding
 * the small hardware profile that tests/data/config/with_paths.json names.
 * (Those of --set are read from the working folder, left as it is: the
 * corpus folders on the command line are relative to it.) */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char src[1024], dst[600];
	const char *dir = getenv("EMA_SRCDIR");
	size_t n;
	char *text;

	snprintf(src, sizeof src, "%s/tests/data/config/hw_small.json",
		 dir != NULL ? dir : EMA_SRCDIR);
	text = slurp(src, &n);
	if (text != NULL) {
		ema_fuzz_write(dst, sizeof dst, "hw_small.json", text, n);
		free(text);
	}
	return 0;
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)len + 1)) == NULL) {
		fclose(f);
		return NULL;
	}
	*n = fread(buf, 1, (size_t)len, f);
	buf[*n] = '\0';
	fclose(f);
	return buf;
}

/* The effective configuration as `ema run` writes it, into `name`. */
static char *write_effective(const struct ema_config *cfg, const char *name,
			     char *path, size_t size, size_t *n)
{
	struct ema_error err = {0};
	FILE *f;
	int rc;

	snprintf(path, size, "%s/%s", ema_fuzz_dir(), name);
	f = fopen(path, "wb");
	if (f == NULL) {
		perror(path);
		abort();
	}
	rc = ema_config_write_json(cfg, f, &err);
	if (fclose(f) != 0 || rc != EMA_OK)
		ema_fuzz_fail("cannot write the effective configuration: %s", err.msg);
	return slurp(path, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ema_config cfg, again;
	char path[600], eff_path[600], eff2_path[600];
	const char *sets[MAX_SETS];
	struct ema_error err = {0};
	char *buf = malloc(size + 1), *text1, *text2;
	size_t n_sets = 0, n1, n2, head;
	int rc;

	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	head = strlen(buf);
	/* buf[i] is the NUL before each override */
	for (size_t i = head; i < size && n_sets < MAX_SETS; i += 1 + strlen(buf + i + 1))
		sets[n_sets++] = buf + i + 1;
	if (head > 0)
		ema_fuzz_write(path, sizeof path, "scenario.json", buf, head);
	rc = ema_config_load(&cfg, head > 0 ? path : NULL, sets, (int)n_sets, &err);
	ema_fuzz_check_status(rc, &err, NULL);
	if (rc != EMA_OK) {
		free(buf);
		return 0;
	}

	text1 = write_effective(&cfg, "effective.json", eff_path, sizeof eff_path, &n1);
	rc = ema_config_load(&again, eff_path, NULL, 0, &err);
	if (rc != EMA_OK)
		ema_fuzz_fail("the effective configuration does not load again: %s", err.msg);
	text2 = write_effective(&again, "effective.json", eff2_path, sizeof eff2_path, &n2);
	if (text1 == NULL || text2 == NULL || n1 != n2 || memcmp(text1, text2, n1) != 0)
		ema_fuzz_fail("the effective configuration changes when loaded again:\n%s\n---\n%s",
			      text1 ? text1 : "(none)", text2 ? text2 : "(none)");
	free(text1);
	free(text2);
	free(buf);
	return 0;
}
