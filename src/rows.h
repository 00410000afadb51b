/* rows.h: requests.csv's rows of one policy run, formatted by a thread of
 * their own while the engine runs (the rows of the requests it has
 * finished), so that the largest file of a run folder is ready when the
 * run ends instead of being formatted after it. Used only where an
 * experiment asks for it (rows_beside): by default the engine streams the
 * records to temporary files and frees the requests (experiment.c), which
 * this thread, reading the engine's records while it runs, cannot share;
 * the rows are then formatted from those files after the runs. */
#ifndef EMA_ROWS_H
#define EMA_ROWS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "csvout.h"
#include "ema_limits.h"
#include "engine.h"

/* Rows kept in memory at most, per run, by default (about 100 bytes
 * each): a longer run formats its rows after the run instead, as without
 * a thread, so that its memory stays what the run itself needs. */
#define EMA_ROWS_MAX 1000000
/* (No longer a default: memory bounded by the requests in flight comes
 * first.) Cores online for the rows to be formatted beside a run by default:
 * on this project's shared 2-core machine, with other work running, the
 * thread slowed the 8-tenant replay by about 10% (medians of 15
 * alternating runs: 0.731 s against 0.651 s without it), although alone
 * it saved 50 ms of the 0.63 s. */
#define EMA_ROWS_MIN_CPUS 4

struct ema_rows {
	const struct ema_engine *engine;
	int64_t max_rows;
	const char *policy;
	const char *tenant[EMA_MAX_TENANTS];
	int n_tenants;
	/* each tenant's rows so far, in request order, in memory */
	char *text[EMA_MAX_TENANTS];
	size_t len[EMA_MAX_TENANTS];
	pthread_t thread;
	bool started;   /* the thread runs (or ran): ema_rows_finish joins it */
	bool ready;     /* every row is formatted, in text[] */
	int stop;       /* (atomic) the engine's run is over */
};

/* One row of requests.csv, the text both ways of writing the file give. */
void ema_rows_format(struct ema_csvout *o, const char *policy, const char *tenant,
		     const struct ema_request_record *r);

/* Starts formatting the rows of e's requests as they finish (e runs in
 * the calling thread meanwhile); tenant names are read, not copied.
 * False where no thread can be made: the rows are then formatted at
 * write time (ema_rows_ready stays false), as they are for a run of
 * more than max_rows requests (0: EMA_ROWS_MAX), whose rows would not
 * be kept in memory. */
bool ema_rows_start(struct ema_rows *rs, const struct ema_engine *e, const char *policy,
		    const char *const *tenant, int n_tenants, int64_t max_rows);
/* After the engine's run (or its failure): the thread formats what is
 * left and ends. */
void ema_rows_finish(struct ema_rows *rs);
/* Every row was formatted (none failed for memory). */
bool ema_rows_ready(const struct ema_rows *rs);
/* The rows, tenant by tenant, into f. EMA_OK or EMA_ERR_IO. */
int ema_rows_write(const struct ema_rows *rs, FILE *f);
void ema_rows_free(struct ema_rows *rs);

#endif
