/* rows.c: requests.csv's rows formatted while the engine runs (rows.h).
 * A request's row reads only what is final once it is (its times,
 * lengths and preemptions); the engine publishes, per tenant, how many
 * of its first requests are (ema_engine_requests_final, a release store
 * after their last write), and this thread formats those rows in order
 * into memory, polling while there is nothing new. The bytes are those
 * of formatting every row after the run: ema_rows_format does both. */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ema_error.h"
#include "rows.h"

static void put_ms(struct ema_csvout *o, int64_t ns)
{
	if (ns >= 0)
		ema_csvout_ms(o, ns);
}

/* The row field by field, for names too long for rows_format_in_place. */
static void rows_format_fields(struct ema_csvout *o, const char *policy, const char *tenant,
			       const struct ema_request_record *r)
{
	bool done = r->finish_ns >= 0;

	ema_csvout_str(o, policy);
	ema_csvout_char(o, ',');
	ema_csvout_str(o, tenant);
	ema_csvout_char(o, ',');
	ema_csvout_int(o, r->id);
	ema_csvout_char(o, ',');
	put_ms(o, r->arrival_ns);
	ema_csvout_char(o, ',');
	put_ms(o, r->first_token_ns);
	ema_csvout_char(o, ',');
	put_ms(o, r->finish_ns);
	ema_csvout_char(o, ',');
	ema_csvout_int(o, r->prompt_tokens);
	ema_csvout_char(o, ',');
	ema_csvout_int(o, r->output_tokens);
	ema_csvout_char(o, ',');
	ema_csvout_int(o, r->preemptions);
	ema_csvout_char(o, ',');
	if (r->first_token_ns >= 0)
		put_ms(o, r->first_token_ns - r->arrival_ns);
	ema_csvout_char(o, ',');
	if (done && r->output_tokens > 1)
		ema_csvout_fixed(o, (double)(r->finish_ns - r->first_token_ns) * 1e-6 /
				 (r->output_tokens - 1), 6);
	ema_csvout_char(o, ',');
	if (done)
		put_ms(o, r->finish_ns - r->arrival_ns);
	ema_csvout_str(o, r->dropped ? ",1\n" : ",0\n");
}

/* Beyond the two names: 6 times, 4 integers, one fixed-point number and
 * the separators. */
#define ROW_ROOM (6 * EMA_PUT_MS_MAX + 4 * EMA_PUT_INT_MAX + EMA_FMT_MAX + 16)

/* rows_format_fields's text, written in place with one bounds check: the
 * largest file of a run folder, and a tenth of an 8-tenant replay's
 * instructions when its numbers were written one call at a time. */
void ema_rows_format(struct ema_csvout *o, const char *policy, const char *tenant,
		     const struct ema_request_record *r)
{
	size_t lp = strlen(policy), lt = strlen(tenant);
	bool done = r->finish_ns >= 0;
	char *p;

	if (lp + lt + ROW_ROOM > EMA_CSVOUT_BUF) {
		rows_format_fields(o, policy, tenant, r);
		return;
	}
	p = ema_csvout_reserve(o, lp + lt + ROW_ROOM);
	memcpy(p, policy, lp);
	p += lp;
	*p++ = ',';
	memcpy(p, tenant, lt);
	p += lt;
	*p++ = ',';
	p = ema_put_int(p, r->id);
	*p++ = ',';
	if (r->arrival_ns >= 0)
		p = ema_put_ms(p, r->arrival_ns);
	*p++ = ',';
	if (r->first_token_ns >= 0)
		p = ema_put_ms(p, r->first_token_ns);
	*p++ = ',';
	if (r->finish_ns >= 0)
		p = ema_put_ms(p, r->finish_ns);
	*p++ = ',';
	p = ema_put_int(p, r->prompt_tokens);
	*p++ = ',';
	p = ema_put_int(p, r->output_tokens);
	*p++ = ',';
	p = ema_put_int(p, r->preemptions);
	*p++ = ',';
	if (r->first_token_ns >= 0 && r->first_token_ns - r->arrival_ns >= 0)
		p = ema_put_ms(p, r->first_token_ns - r->arrival_ns);
	*p++ = ',';
	if (done && r->output_tokens > 1)
		p = ema_put_fixed(p, (double)(r->finish_ns - r->first_token_ns) * 1e-6 /
				  (r->output_tokens - 1), 6);
	*p++ = ',';
	if (done && r->finish_ns - r->arrival_ns >= 0)
		p = ema_put_ms(p, r->finish_ns - r->arrival_ns);
	memcpy(p, r->dropped ? ",1\n" : ",0\n", 3);
	ema_csvout_wrote(o, p + 3);
}

/* The thread: each tenant's rows up to what the engine says is final,
 * again and again; once the run is over (stop, an acquire load that makes
 * every write of the run visible), every row left. */
static void *rows_run(void *arg)
{
	struct ema_rows *rs = arg;
	struct ema_csvout *o[EMA_MAX_TENANTS] = { NULL };
	FILE *mem[EMA_MAX_TENANTS] = { NULL };
	int32_t done[EMA_MAX_TENANTS] = { 0 };
	bool ok = true;

	{
		int64_t rows = 0;

		for (int ti = 0; ti < rs->n_tenants; ti++)
			rows += ema_engine_n_requests(rs->engine, ti);
		ok = rows <= rs->max_rows;
	}
	for (int ti = 0; ti < rs->n_tenants && ok; ti++) {
		mem[ti] = open_memstream(&rs->text[ti], &rs->len[ti]);
		o[ti] = malloc(sizeof *o[ti]);
		ok = mem[ti] != NULL && o[ti] != NULL;
		if (ok)
			ema_csvout_init(o[ti], mem[ti]);
	}
	while (ok) {
		bool last = __atomic_load_n(&rs->stop, __ATOMIC_ACQUIRE) != 0, some = false;

		for (int ti = 0; ti < rs->n_tenants; ti++) {
			int32_t n = last ? ema_engine_n_requests(rs->engine, ti) :
					   ema_engine_requests_final(rs->engine, ti);

			for (; done[ti] < n; done[ti]++) {
				struct ema_request_record r;

				ema_engine_request(rs->engine, ti, done[ti], &r);
				ema_rows_format(o[ti], rs->policy, rs->tenant[ti], &r);
				some = true;
			}
		}
		if (last)
			break;
		if (!some) {
			/* a millisecond: a replay finishes hundreds of
			 * requests in that time */
			struct timespec nap = { 0, 1000000 };

			nanosleep(&nap, NULL);
		}
	}
	for (int ti = 0; ti < rs->n_tenants; ti++) {
		if (o[ti] != NULL && mem[ti] != NULL && ema_csvout_flush(o[ti]) != EMA_OK)
			ok = false;
		if (mem[ti] != NULL && fclose(mem[ti]) != 0)
			ok = false;
		free(o[ti]);
	}
	rs->ready = ok;
	return NULL;
}

bool ema_rows_start(struct ema_rows *rs, const struct ema_engine *e, const char *policy,
		    const char *const *tenant, int n_tenants, int64_t max_rows)
{
	sigset_t all, old;

	memset(rs, 0, sizeof *rs);
	rs->engine = e;
	rs->max_rows = max_rows > 0 ? max_rows : EMA_ROWS_MAX;
	rs->policy = policy;
	rs->n_tenants = n_tenants;
	for (int ti = 0; ti < n_tenants; ti++)
		rs->tenant[ti] = tenant[ti];
	/* the signals that remove an unfinished run folder are the main
	 * thread's (outdir.c) */
	sigemptyset(&all);
	sigaddset(&all, SIGINT);
	sigaddset(&all, SIGTERM);
	sigaddset(&all, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rs->started = pthread_create(&rs->thread, NULL, rows_run, rs) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#ifdef SCHED_IDLE
	if (rs->started) {
		/* only on a core nothing else wants: on a shared machine the
		 * thread must not take the engine's core (or another
		 * program's); where it never gets one, the rows left are
		 * formatted while the engine's thread waits for it, as they
		 * would be after the run without it */
		struct sched_param sp = { 0 };

		(void)pthread_setschedparam(rs->thread, SCHED_IDLE, &sp);
	}
#endif
	return rs->started;
}

void ema_rows_finish(struct ema_rows *rs)
{
	if (!rs->started)
		return;
	__atomic_store_n(&rs->stop, 1, __ATOMIC_RELEASE);
	pthread_join(rs->thread, NULL);
	rs->started = false;
}

bool ema_rows_ready(const struct ema_rows *rs)
{
	return rs->ready;
}

int ema_rows_write(const struct ema_rows *rs, FILE *f)
{
	for (int ti = 0; ti < rs->n_tenants; ti++)
		if (rs->len[ti] > 0 && fwrite(rs->text[ti], 1, rs->len[ti], f) != rs->len[ti])
			return EMA_ERR_IO;
	return EMA_OK;
}

void ema_rows_free(struct ema_rows *rs)
{
	ema_rows_finish(rs);
	for (int ti = 0; ti < rs->n_tenants; ti++) {
		free(rs->text[ti]);
		rs->text[ti] = NULL;
		rs->len[ti] = 0;
	}
	rs->ready = false;
}
