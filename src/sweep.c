/* sweep.c: `ema sweep --vary KEY=V1,V2,... [--vary ...] [--config FILE]
 * [--set KEY=VALUE ...] [--out DIR] [--no-plots] [--quiet]`. Every point of
 * the cartesian product of the --vary lists runs like `ema run` with those
 * values added as --set overrides (so every error is the same as
 * `ema run`'s), in DIR/point-NNN/, and DIR/sweep.csv gathers the summary
 * rows of all points with one leading column per swept key. Like a run,
 * the folder appears complete or not at all. */
#include "sweep.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ema_build.h"
#include "experiment.h"
#include "plots.h"

#define SWEEP_MAX_KEYS 8
#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_SETS 256
#define SWEEP_MAX_POINTS 4096

struct sweep_key {
	char name[256];
	int n;
	char values[SWEEP_MAX_VALUES][128];
};

static int parse_vary(const char *arg, struct sweep_key *k, struct ema_error *err)
{
	const char *eq = strchr(arg, '=');
	const char *p;

	if (eq == NULL || eq == arg || eq[1] == '\0')
		return ema_error_set(err, EMA_ERR_INPUT, "--vary %s: expected KEY=V1,V2,...", arg);
	snprintf(k->name, sizeof k->name, "%.*s", (int)(eq - arg), arg);
	k->n = 0;
	for (p = eq + 1; *p != '\0';) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (len == 0 || len >= sizeof k->values[0])
			return ema_error_set(err, EMA_ERR_INPUT,
					     "--vary %s: expected non-empty values of at most %zu characters",
					     arg, sizeof k->values[0] - 1);
		if (k->n == SWEEP_MAX_VALUES)
			return ema_error_set(err, EMA_ERR_INPUT, "--vary %s: at most %d values",
					     arg, SWEEP_MAX_VALUES);
		snprintf(k->values[k->n++], sizeof k->values[0], "%.*s", (int)len, p);
		p += len + (c ? 1 : 0);
	}
	for (const char *q = k->name; *q; q++)
		if (*q == ',' || *q == '"' || *q == '\n')
			return ema_error_set(err, EMA_ERR_INPUT,
					     "--vary %s: a key cannot hold commas or quotes", arg);
	return EMA_OK;
}

/* Appends a point's summary rows to the sweep CSV, each prefixed with the
 * point's values (and the header once, prefixed with the keys). A value
 * with a comma is quoted. */
static int append_summary(FILE *out, const struct ema_experiment *x, bool header,
			  const struct sweep_key *keys, int n_keys, const int *idx, long point)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char *line, *save = NULL;
	bool first = true;

	if (m == NULL)
		return EMA_ERR_NOMEM;
	ema_experiment_write_summary_csv(x, m);
	fclose(m);
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (first) {
			first = false;
			if (header) {
				for (int k = 0; k < n_keys; k++)
					fprintf(out, "%s,", keys[k].name);
				fprintf(out, "point,%s\n", line);
			}
			continue;
		}
		for (int k = 0; k < n_keys; k++) {
			const char *v = keys[k].values[idx[k]];

			if (strchr(v, ',') != NULL)
				fprintf(out, "\"%s\",", v);
			else
				fprintf(out, "%s,", v);
		}
		fprintf(out, "%ld,%s\n", point, line);
	}
	free(buf);
	return ferror(out) ? EMA_ERR_IO : EMA_OK;
}

int ema_sweep_main(int argc, char **argv, struct ema_error *err)
{
	static struct sweep_key keys[SWEEP_MAX_KEYS];
	const char *config = NULL, *out = NULL;
	const char *sets[SWEEP_MAX_SETS + SWEEP_MAX_KEYS];
	static char point_sets[SWEEP_MAX_KEYS][512];
	int n_keys = 0, n_sets = 0, idx[SWEEP_MAX_KEYS] = {0};
	bool plots = true, quiet = false;
	long points = 1;
	char tmp[EMA_PATH_MAX + 64], path[EMA_PATH_MAX + 128], outbuf[EMA_PATH_MAX];
	FILE *csv = NULL;
	struct stat st;
	int rc = EMA_OK;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--vary") == 0 && v != NULL) {
			if (n_keys == SWEEP_MAX_KEYS)
				return ema_error_set(err, EMA_ERR_INPUT, "--vary: at most %d keys",
						     SWEEP_MAX_KEYS);
			rc = parse_vary(v, &keys[n_keys++], err);
			if (rc != EMA_OK)
				return rc;
			i++;
		} else if (strcmp(a, "--set") == 0 && v != NULL && strchr(v, '=') != NULL) {
			if (n_sets == SWEEP_MAX_SETS)
				return ema_error_set(err, EMA_ERR_INPUT, "--set: at most %d", SWEEP_MAX_SETS);
			sets[n_sets++] = v;
			i++;
		} else if (strcmp(a, "--config") == 0 && v != NULL) {
			config = v;
			i++;
		} else if (strcmp(a, "--out") == 0 && v != NULL) {
			out = v;
			i++;
		} else if (strcmp(a, "--no-plots") == 0) {
			plots = false;
		} else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
			quiet = true;
		} else {
			return ema_error_set(err, EMA_ERR_INPUT,
					     "sweep: %s: expected --vary KEY=V1,V2,..., --config FILE, "
					     "--set KEY=VALUE, --out DIR, --no-plots or --quiet", a);
		}
	}
	if (n_keys == 0)
		return ema_error_set(err, EMA_ERR_INPUT, "sweep: expected at least one --vary KEY=V1,V2,...");
	for (int k = 0; k < n_keys; k++) {
		points *= keys[k].n;
		if (points > SWEEP_MAX_POINTS)
			return ema_error_set(err, EMA_ERR_INPUT, "sweep: more than %d points",
					     SWEEP_MAX_POINTS);
	}
	if (out == NULL) {
		mkdir("runs", 0777);
		snprintf(outbuf, sizeof outbuf, "runs/sweep");
		for (int k = 2; stat(outbuf, &st) == 0 && k < 100000; k++)
			snprintf(outbuf, sizeof outbuf, "runs/sweep-%d", k);
		out = outbuf;
	} else if (stat(out, &st) == 0) {
		return ema_error_set(err, EMA_ERR_INPUT, "--out %s: already exists (nothing was run)", out);
	}
	/* Every point's configuration is checked before anything runs, so a
	 * bad value fails at once with the --set it came from. */
	for (long pt = 0; pt < points; pt++) {
		struct ema_config *cfg = malloc(sizeof *cfg);
		long r = pt;

		if (cfg == NULL)
			return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		for (int k = n_keys - 1; k >= 0; k--) {
			idx[k] = (int)(r % keys[k].n);
			r /= keys[k].n;
			snprintf(point_sets[k], sizeof point_sets[k], "%s=%s", keys[k].name,
				 keys[k].values[idx[k]]);
			sets[n_sets + k] = point_sets[k];
		}
		rc = ema_config_load(cfg, config, sets, n_sets + n_keys, err);
		free(cfg);
		if (rc != EMA_OK)
			return rc;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)getpid());
	if (mkdir(tmp, 0777) != 0)
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
	snprintf(path, sizeof path, "%s/sweep.csv", tmp);
	csv = fopen(path, "w");
	if (csv == NULL) {
		rc = ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
		goto fail;
	}
	for (long pt = 0; pt < points && rc == EMA_OK; pt++) {
		struct ema_experiment *x = calloc(1, sizeof *x);
		long r = pt;
		size_t clen = 0;

		if (x == NULL) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
			break;
		}
		for (int k = n_keys - 1; k >= 0; k--) {
			idx[k] = (int)(r % keys[k].n);
			r /= keys[k].n;
			snprintf(point_sets[k], sizeof point_sets[k], "%s=%s", keys[k].name,
				 keys[k].values[idx[k]]);
			sets[n_sets + k] = point_sets[k];
		}
		if (!quiet) {
			fprintf(stderr, "ema: sweep point %ld/%ld:", pt + 1, points);
			for (int k = 0; k < n_keys; k++)
				fprintf(stderr, " %s", point_sets[k]);
			fputc('\n', stderr);
		}
		x->quiet = true;
		clen += (size_t)snprintf(x->command, sizeof x->command, "ema sweep point %ld:", pt);
		for (int k = 0; k < n_keys && clen < sizeof x->command; k++)
			clen += (size_t)snprintf(x->command + clen, sizeof x->command - clen,
						 " --set %s", point_sets[k]);
		rc = ema_config_load(&x->cfg, config, sets, n_sets + n_keys, err);
		if (rc == EMA_OK)
			rc = ema_experiment_run(x, err);
		if (rc == EMA_OK) {
			snprintf(path, sizeof path, "%s/point-%03ld", tmp, pt);
			rc = ema_experiment_write(x, path, plots, err);
		}
		if (rc == EMA_OK)
			rc = append_summary(csv, x, pt == 0, keys, n_keys, idx, pt);
		ema_experiment_free(x);
		free(x);
	}
	if (csv != NULL && fclose(csv) != 0 && rc == EMA_OK)
		rc = ema_error_set(err, EMA_ERR_IO, "%s/sweep.csv: write failed", tmp);
	csv = NULL;
	if (rc != EMA_OK)
		goto fail;
	/* load curves against the swept value: one key, numeric values */
	if (plots && n_keys == 1) {
		bool numeric = true;

		for (int v = 0; v < keys[0].n && numeric; v++) {
			char *end;

			strtod(keys[0].values[v], &end);
			numeric = *end == '\0';
		}
		if (numeric) {
			int rendered = 0;

			rc = ema_plots_render_sweep(tmp, EMA_GNUPLOT, keys[0].name, &rendered, err);
			if (rc != EMA_OK)
				goto fail;
		}
	}
	if (rename(tmp, out) != 0) {
		rc = ema_error_set(err, EMA_ERR_IO, "%s: cannot rename to %s: %s", tmp, out,
				   strerror(errno));
		goto fail;
	}
	printf("sweep: %ld points, results in %s/ (sweep.csv, point-NNN/)\n", points, out);
	return EMA_OK;
fail:
	if (csv != NULL)
		fclose(csv);
	ema_remove_tree(tmp);
	return rc;
}
