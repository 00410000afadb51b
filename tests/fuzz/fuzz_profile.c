/* fuzz_profile.c: libFuzzer harness of the hardware-profile and model
 * readers (config/profile.c), which read `ema calibrate` output and user
 * profiles given by path. The input is the JSON file, read as a hardware
 * profile and as a model. Beyond the error contract it checks that a
 * profile that loads, written back as `ema calibrate` writes it, loads
 * again to the same text. */
#include "config.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *write_profile(const struct ema_hw_profile *hw, char *path, size_t size)
{
	char *text = NULL;
	size_t n = 0;
	FILE *mem = open_memstream(&text, &n);

	if (mem == NULL || ema_hw_profile_write_json(hw, mem) != EMA_OK || fclose(mem) != 0)
		ema_fuzz_fail("cannot write the profile");
	ema_fuzz_write(path, size, "written.json", text, n);
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ema_hw_profile hw, again;
	struct ema_model model;
	char path[600], prefix[620], wpath[600];
	struct ema_error err = {0};
	char *t1, *t2;
	int rc;

	ema_fuzz_write(path, sizeof path, "profile.json", data, size);
	snprintf(prefix, sizeof prefix, "%s:", path);

	rc = ema_model_load(&model, path, &err);
	ema_fuzz_check_status(rc, &err, prefix);

	rc = ema_hw_profile_load(&hw, path, &err);
	ema_fuzz_check_status(rc, &err, prefix);
	if (rc != EMA_OK)
		return 0;
	t1 = write_profile(&hw, wpath, sizeof wpath);
	rc = ema_hw_profile_load(&again, wpath, &err);
	if (rc != EMA_OK)
		ema_fuzz_fail("a written profile does not load again: %s", err.msg);
	t2 = write_profile(&again, wpath, sizeof wpath);
	if (strcmp(t1, t2) != 0)
		ema_fuzz_fail("a profile changes when written and read again:\n%s\n---\n%s", t1, t2);
	free(t1);
	free(t2);
	return 0;
}
