/*-------------------------------------------------------------------------
 *
 * controls.c
 *	  The controls of what a queue admits and when a job may start:
 *	  debounce, deadlines (start_by, max_wait) and their arguments, the
 *	  queue policy arguments of the controls, and the enqueue of a job that
 *	  has any of them.
 *
 * A debounced enqueue is one INSERT ... ON CONFLICT DO UPDATE whose arbiter
 * is jobs_debounce_key_idx (one pending, never claimed job per queue and
 * key).  Against a concurrent claim of the job it would replace: the claim
 * holds the row lock (FOR UPDATE SKIP LOCKED, then its UPDATE), the upsert
 * waits for it, finds the row changed (no longer in the index) and starts
 * the insertion again, which then inserts a new job; or the upsert holds
 * the lock first and the claim skips the row until the producer commits,
 * then claims the new version.  Either way the newest payload runs.
 *
 * A job's deadline (start_by) is computed here, in C, from the time the job
 * becomes available and the queue's max_wait, and passed to the INSERT.
 *
 * The enqueue of a job without any control, in a queue without any, does
 * not come here: the plain statements of lifecycle.c serve it.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/* The largest declared cost of a job, in seconds of worker time */
#define JQ_MAX_COST 1e9

/*
 * The controls arguments of jq_enqueue (single: debounce_key, debounce,
 * debounce_max_wait, start_by, cost from argno on) or of jq_enqueue_many
 * (start_by, cost from argno on), checked into *c.  An older SQL
 * definition without these arguments passes none.
 */
void
jq_arg_enqueue_controls(FunctionCallInfo fcinfo, int argno, bool single,
						JqEnqueueControls *c)
{
	int			start_by_argno = single ? argno + 3 : argno;
	bool		isnull;

	memset(c, 0, sizeof(*c));
	if (single && PG_NARGS() > argno + 2)
	{
		if (!PG_ARGISNULL(argno))
			c->debounce_key = jq_arg_nonempty_text(fcinfo, argno, "debounce_key",
												   JQ_DEBOUNCE_KEY_MAXLEN);
		c->debounce = jq_arg_interval(fcinfo, argno + 1, "debounce", true, true);
		c->debounce_max_wait = jq_arg_interval(fcinfo, argno + 2,
											   "debounce_max_wait", true, false);
		if (c->debounce_key == NULL &&
			(c->debounce != NULL || c->debounce_max_wait != NULL))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("debounce and debounce_max_wait require a debounce_key"),
					 errhint("Pass debounce_key => the key whose newest job is to run.")));
	}
	if (PG_NARGS() > start_by_argno + 1)
	{
		Datum		d = jq_arg_timestamptz(fcinfo, start_by_argno, "start_by", &isnull);

		if (!isnull)
		{
			c->has_start_by = true;
			c->start_by = DatumGetTimestampTz(d);
		}
		if (!PG_ARGISNULL(start_by_argno + 1))
		{
			float8		cost = PG_GETARG_FLOAT8(start_by_argno + 1);

			if (isnan(cost) || cost <= 0 || cost > JQ_MAX_COST)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("cost must be greater than 0 and at most %g", JQ_MAX_COST),
						 errdetail("The value given was %g.", cost)));
			c->has_cost = true;
			c->cost = cost;
		}
	}
}

/* Does the job have any control of its own? */
bool
jq_controls_given(const JqEnqueueControls *c)
{
	return c->debounce_key != NULL || c->has_start_by || c->has_cost;
}

/* Does the queue (its cached settings) put a control on every enqueue? */
bool
jq_queue_controls_enqueue(const JqQueueSettings *settings)
{
	return settings->has_max_wait || settings->max_pending > 0 ||
		settings->group_max_pending > 0;
}

/* timestamp ts + interval iv */
static TimestampTz
jq_timestamp_plus(TimestampTz ts, const Interval *iv)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(ts),
												   PointerGetDatum(iv)));
}

/*
 * The deadline of a job that becomes available at available_at: the
 * explicit start_by, which must not come before it, else available_at +
 * the queue's max_wait; *isnull when neither.
 */
static TimestampTz
jq_job_start_by(const JqEnqueueControls *c, const JqQueueSettings *settings,
				TimestampTz available_at, bool *isnull)
{
	*isnull = false;
	if (c->has_start_by)
	{
		if (c->start_by < available_at)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("start_by must not be earlier than the time the job becomes available"),
					 errdetail("The job becomes available at %s, start_by is %s.",
							   timestamptz_to_str(available_at),
							   timestamptz_to_str(c->start_by))));
		return c->start_by;
	}
	if (settings->has_max_wait)
		return jq_timestamp_plus(available_at, &settings->max_wait);
	*isnull = true;
	return 0;
}

/*
 * Enqueue one job with controls (the job's own, or its queue's) and note
 * its outcome.  values and nulls are laid out as JQ_PLAN_ENQUEUE_GROUPED's
 * ($1 queue, $2 payload, $3 priority, $4 run_at, $5 max_attempts, $6
 * idempotency key, $7 now, $8 group key).  Must be called while connected
 * to SPI.  Returns the job's id: a new job's, the one that holds the
 * idempotency key, or the pending job of the debounce key that the call
 * replaced.
 */
int64
jq_enqueue_controlled(const char *queue_name, const JqEnqueueControls *c,
					  Datum *values, char *nulls)
{
	const JqQueueSettings *settings;
	Datum		cvalues[11];
	char		cnulls[11];
	TimestampTz now = DatumGetTimestampTz(values[6]);
	TimestampTz available_at;
	TimestampTz start_by;
	bool		start_by_null;
	int64		job_id;

	settings = jq_enqueue_settings(queue_name);
	if (jq_queue_admits(settings))
	{
		Datum		key = values[7];

		jq_admit_jobs(queue_name, settings, 1, &key, nulls[7] == JQ_ISNULL ? 0 : 1,
					  c->debounce_key);
	}
	memcpy(cvalues, values, 8 * sizeof(Datum));
	memcpy(cnulls, nulls, 8);
	available_at = nulls[3] == JQ_ISNULL ? now : DatumGetTimestampTz(values[3]);
	if (c->debounce_key != NULL)
	{
		/*
		 * the quiet period, from the call on (or from run_at); no bound is
		 * infinity, which also marks the job as debounced and never claimed
		 */
		TimestampTz until = DT_NOEND;

		if (c->debounce != NULL)
			available_at = jq_timestamp_plus(available_at, c->debounce);
		if (c->debounce_max_wait != NULL)
		{
			until = jq_timestamp_plus(now, c->debounce_max_wait);
			if (available_at > until)
				available_at = until;
		}
		cvalues[3] = TimestampTzGetDatum(available_at);
		cnulls[3] = JQ_NOTNULL;
		/* $6: the debounce key instead of an idempotency key */
		cvalues[5] = PointerGetDatum(c->debounce_key);
		cnulls[5] = JQ_NOTNULL;
		cvalues[10] = TimestampTzGetDatum(until);
		cnulls[10] = JQ_NOTNULL;
	}
	start_by = jq_job_start_by(c, settings, available_at, &start_by_null);
	cvalues[8] = TimestampTzGetDatum(start_by);
	cnulls[8] = start_by_null ? JQ_ISNULL : JQ_NOTNULL;
	cvalues[9] = Float8GetDatum(c->cost);
	cnulls[9] = c->has_cost ? JQ_NOTNULL : JQ_ISNULL;

	if (c->debounce_key != NULL)
	{
		jq_execute(JQ_PLAN_ENQUEUE_DEBOUNCED, cvalues, cnulls,
				   SPI_OK_INSERT_RETURNING);
		if (SPI_processed == 0)
		{
			Datum		rvalues[2];

			/* a cancelled or expired job held the key: it gives it up, then again */
			rvalues[0] = values[0];
			rvalues[1] = PointerGetDatum(c->debounce_key);
			jq_execute(JQ_PLAN_DEBOUNCE_RELEASE, rvalues, NULL, SPI_OK_UPDATE);
			if (SPI_processed == 0)
				jq_raise_unknown_queue(queue_name);
			jq_execute(JQ_PLAN_ENQUEUE_DEBOUNCED, cvalues, cnulls,
					   SPI_OK_INSERT_RETURNING);
			if (SPI_processed == 0)
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not enqueue job: its debounce key was taken concurrently"),
						 errhint("Retry the transaction.")));
		}
		job_id = DatumGetInt64(jq_result(0, JQ_OUTCOME_ID));
		if (jq_result_bool(0, JQ_OUTCOME_NCOLS + 2))
			(void) jq_note_outcome(JQ_TR_ENQUEUE, 0, NULL, NULL, NULL);
		else
		{
			/* replaced: a wake-up if it is ready now, counted as debounced */
			if (jq_result_bool(0, JQ_OUTCOME_WAKE))
				jq_wakeup_queue(queue_name);
			jq_count(queue_name, JQ_CTR_DEBOUNCED, 1);
		}
		return job_id;
	}

	jq_enqueue_defaults(settings, cvalues, cnulls);
	cvalues[10] = BoolGetDatum(settings->notify);
	cnulls[10] = JQ_NOTNULL;
	jq_execute(cnulls[5] == JQ_ISNULL ? JQ_PLAN_ENQUEUE_CONTROLLED :
			   JQ_PLAN_ENQUEUE_CONTROLLED_KEYED, cvalues, cnulls,
			   SPI_OK_INSERT_RETURNING);
	if (SPI_processed == 1)
	{
		job_id = DatumGetInt64(jq_result(0, JQ_OUTCOME_ID));
		(void) jq_note_outcome(JQ_TR_ENQUEUE, 0, NULL, NULL, NULL);
		return job_id;
	}
	/* no row back: the key is held */
	return jq_job_with_key(values[0], values[5]);
}

/*
 * The controls of a batch (jq_enqueue_many): the admission of its jobs
 * under the queue's limits (all or none), then the deadline and the
 * declared cost of every job, as parameters $7 and $8 of
 * JQ_PLAN_ENQUEUE_MANY_CONTROLLED, whose first six are those of
 * JQ_PLAN_ENQUEUE_MANY_GROUPED.
 */
void
jq_enqueue_many_controls(const char *queue_name, const JqEnqueueControls *c,
						 TimestampTz available_at, Datum *values, char *nulls)
{
	const JqQueueSettings *settings = jq_queue_settings(queue_name);
	bool		start_by_null;

	if (!settings->exists)
		jq_raise_unknown_queue(queue_name);
	if (jq_queue_admits(settings))
	{
		ArrayType  *payloads = DatumGetArrayTypeP(values[1]);
		int			njobs = ArrayGetNItems(ARR_NDIM(payloads), ARR_DIMS(payloads));
		Datum	   *keys = NULL;
		bool	   *keynulls;
		int			nkeys = 0;

		if (nulls[5] == JQ_NOTNULL)
		{
			Datum	   *all;
			int			i;

			deconstruct_array(DatumGetArrayTypeP(values[5]), TEXTOID, -1, false,
							  TYPALIGN_INT, &all, &keynulls, &nkeys);
			keys = palloc(sizeof(Datum) * (nkeys + 1));
			njobs = nkeys;
			nkeys = 0;
			for (i = 0; i < njobs; i++)
				if (!keynulls[i])
					keys[nkeys++] = all[i];
		}
		jq_admit_jobs(queue_name, settings, njobs, keys, nkeys, NULL);
	}
	values[6] = TimestampTzGetDatum(jq_job_start_by(c, settings, available_at,
													&start_by_null));
	nulls[6] = start_by_null ? JQ_ISNULL : JQ_NOTNULL;
	values[7] = Float8GetDatum(c->cost);
	nulls[7] = c->has_cost ? JQ_NOTNULL : JQ_ISNULL;
}

/*
 * The deadline and cost of a job enqueued with depends_on (dependencies.c
 * inserted it): set on its row, in the same transaction.  A waiting job
 * gets no deadline from the queue's max_wait, only an explicit start_by.
 */
void
jq_dependent_controls(const char *queue_name, int64 job_id,
					  const JqEnqueueControls *c)
{
	Oid			argtypes[4] = {TEXTOID, INT8OID, TIMESTAMPTZOID, FLOAT8OID};
	Datum		values[4];
	char		nulls[4] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};

	if (!c->has_start_by && !c->has_cost)
		return;
	values[0] = CStringGetTextDatum(queue_name);
	values[1] = Int64GetDatum(job_id);
	values[2] = TimestampTzGetDatum(c->start_by);
	nulls[2] = c->has_start_by ? JQ_NOTNULL : JQ_ISNULL;
	values[3] = Float8GetDatum(c->cost);
	nulls[3] = c->has_cost ? JQ_NOTNULL : JQ_ISNULL;
	jq_execute_once("dependent controls",
					"UPDATE jobqueue.jobs j SET start_by = $3, cost = $4 "
					"WHERE j.queue_name = $1 AND j.id = $2",
					4, argtypes, values, nulls, SPI_OK_UPDATE);
}

/*
 * An int policy argument of the controls: at least 1; in jq_alter_queue 0
 * removes the limit (stored as 0 here, NULL in the row).
 */
static void
jq_arg_limit(FunctionCallInfo fcinfo, int argno, const char *what, bool alter,
			 Datum *value, char *null)
{
	int32		v;

	*null = JQ_ISNULL;
	*value = (Datum) 0;
	if (PG_ARGISNULL(argno))
		return;
	v = PG_GETARG_INT32(argno);
	if (v < 1 && !(alter && v == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at least 1", what),
				 errdetail("The value given was %d.", v),
				 alter ? errhint("Pass 0 to remove the limit, NULL to leave it unchanged.") : 0));
	*value = Int32GetDatum(v);
	*null = JQ_NOTNULL;
}

/*
 * The controls' policy arguments of jq_create_queue (alter = false) and
 * jq_alter_queue (alter = true), from argno on: group_rate_limit,
 * group_rate_burst, max_wait, max_pending, group_max_pending,
 * fair_share_half_life.  Sets them on queue_name's row, which the caller
 * has just created or changed.  In jq_alter_queue NULL leaves a setting
 * unchanged and 0 (an interval of zero for max_wait) removes it; a
 * group_rate_burst of 0 restores the default burst.  An old SQL definition
 * without these arguments changes nothing.
 */
void
jq_controls_set_policy(FunctionCallInfo fcinfo, int argno,
					   const char *queue_name, bool alter)
{
	Oid			argtypes[7] = {TEXTOID, FLOAT8OID, INT4OID, INTERVALOID, INT4OID,
	INT4OID, INTERVALOID};
	Datum		values[7];
	char		nulls[7];
	bool		given = false;
	int			i;

	if (PG_NARGS() < argno + 6)
		return;
	for (i = 0; i < 6; i++)
		if (!PG_ARGISNULL(argno + i))
			given = true;
	if (!given && alter)
		return;
	values[0] = CStringGetTextDatum(queue_name);
	nulls[0] = JQ_NOTNULL;

	/* group_rate_limit: as rate_limit; alter: 0 removes it */
	nulls[1] = JQ_ISNULL;
	values[1] = (Datum) 0;
	if (!PG_ARGISNULL(argno))
	{
		float8		rate = PG_GETARG_FLOAT8(argno);

		if (!(alter && rate == 0) &&
			(isnan(rate) || rate <= 0 || rate > 1000000))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("group_rate_limit must be greater than 0 and at most 1000000"),
					 errdetail("The value given was %g.", rate),
					 alter ? errhint("Use group_rate_limit => 0 to remove the limit.") : 0));
		values[1] = Float8GetDatum(rate);
		nulls[1] = JQ_NOTNULL;
	}

	/* group_rate_burst: 1 to 1000000; alter: 0 restores the default */
	nulls[2] = JQ_ISNULL;
	values[2] = (Datum) 0;
	if (!PG_ARGISNULL(argno + 1))
	{
		int32		burst = PG_GETARG_INT32(argno + 1);

		if (!(alter && burst == 0) && (burst < 1 || burst > 1000000))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("group_rate_burst must be between 1 and 1000000"),
					 errdetail("The value given was %d.", burst)));
		values[2] = Int32GetDatum(burst);
		nulls[2] = JQ_NOTNULL;
	}

	/* max_wait: positive; alter: zero removes it */
	{
		Interval   *iv = jq_arg_interval(fcinfo, argno + 2, "max_wait", true, alter);

		values[3] = PointerGetDatum(iv);
		nulls[3] = iv == NULL ? JQ_ISNULL : JQ_NOTNULL;
	}
	jq_arg_limit(fcinfo, argno + 3, "max_pending", alter, &values[4], &nulls[4]);
	jq_arg_limit(fcinfo, argno + 4, "group_max_pending", alter, &values[5], &nulls[5]);

	/* fair_share_half_life: positive, never NULL in the row */
	if (PG_ARGISNULL(argno + 5))
	{
		if (!alter)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("fair_share_half_life must not be null")));
		values[6] = (Datum) 0;
		nulls[6] = JQ_ISNULL;
	}
	else
	{
		values[6] = PointerGetDatum(jq_arg_interval(fcinfo, argno + 5,
													"fair_share_half_life",
													false, false));
		nulls[6] = JQ_NOTNULL;
	}

	jq_execute_once("set queue controls",
					"UPDATE jobqueue.queues q SET "
					"  group_rate_limit = CASE WHEN $2 = 0 THEN NULL "
					"                          ELSE COALESCE($2, q.group_rate_limit) END, "
					"  group_rate_burst = CASE WHEN $2 = 0 OR $3 = 0 THEN NULL "
					"                          ELSE COALESCE($3, q.group_rate_burst) END, "
					"  max_wait = CASE WHEN $4 = interval '0' THEN NULL "
					"                  ELSE COALESCE($4, q.max_wait) END, "
					"  max_pending = CASE WHEN $5 = 0 THEN NULL "
					"                     ELSE COALESCE($5, q.max_pending) END, "
					"  group_max_pending = CASE WHEN $6 = 0 THEN NULL "
					"                           ELSE COALESCE($6, q.group_max_pending) END, "
					"  fair_share_half_life = COALESCE($7, q.fair_share_half_life) "
					"WHERE q.queue_name = $1",
					7, argtypes, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed == 0)
		jq_raise_unknown_queue(queue_name);
	/* a new half-life: the groups' fair-share keys are counted in it */
	if (alter && nulls[6] == JQ_NOTNULL)
	{
		nulls[1] = JQ_ISNULL;
		jq_execute(JQ_PLAN_GROUPS_REKEY, values, nulls, SPI_OK_UPDATE);
	}
}

/*
 * Cancel up to max_jobs pending jobs whose start_by has passed (at now, the
 * database clock), of queue_name or (NULL) of every queue, with
 * last_error_code EXPIRED, and note the outcome: counted as expired, their
 * dependents cancelled as for any cancelled dependency (outcome.c), their
 * ends announced where the queue has notify_finished.  Jobs another
 * transaction has locked (a claim taking them just now) are skipped.  A
 * job that was claimed before its deadline is running and is not touched:
 * the deadline is on the start of an attempt.  Returns the number expired.
 */
int64
jq_expire_batch(const char *queue_name, int max_jobs, TimestampTz now)
{
	Datum		values[3];

	if (queue_name != NULL)
	{
		values[0] = CStringGetTextDatum(queue_name);
		values[1] = TimestampTzGetDatum(now);
		values[2] = Int32GetDatum(max_jobs);
		jq_execute_queue(JQ_PLAN_EXPIRE_QUEUE, values, NULL, 3, SPI_OK_UPDATE_RETURNING);
	}
	else
	{
		values[0] = TimestampTzGetDatum(now);
		values[1] = Int32GetDatum(max_jobs);
		jq_execute(JQ_PLAN_EXPIRE_DUE, values, NULL, SPI_OK_UPDATE_RETURNING);
	}
	if (SPI_processed == 0)
		return 0;
	return (int64) jq_note_outcome(JQ_TR_EXPIRE, 0, NULL, NULL, NULL);
}

/*
 * Admission of n new jobs into queue_name (group_key NULL) or into one of
 * its groups, whose limit is limit (max_pending or group_max_pending): the
 * row of jobqueue.admission is locked and its bound raised by n (see the
 * table's comment in the upgrade script).  When the bound passes the limit
 * (or the row is new), the unfinished jobs are counted: n more pending
 * jobs than the limit allows is an error, 53400, with the count; else the
 * bound becomes exact again.  With debounce_key, a call that would replace
 * a job of the key adds nothing and is admitted at the limit, except into
 * a group the job is not in yet (the replacement moves it there).  The
 * lock is held to the end of the transaction, so a concurrent producer waits and
 * then sees these jobs.  In REPEATABLE READ, a producer whose snapshot
 * predates another's admission fails with a serialization error (40001)
 * at the row instead.
 */
static void
jq_admit(const char *queue_name, text *group_key, int32 limit, int64 n,
		 text *debounce_key)
{
	Datum		values[3];
	char		nulls[3] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	int64		bound;
	int64		pending;
	int64		running;
	int64		at_most = n;

	values[0] = CStringGetTextDatum(queue_name);
	values[1] = PointerGetDatum(group_key);
	if (group_key == NULL)
		nulls[1] = JQ_ISNULL;
	values[2] = Int64GetDatum(n);
	jq_execute(group_key == NULL ? JQ_PLAN_ADMIT_BUMP_QUEUE : JQ_PLAN_ADMIT_BUMP_GROUP,
			   values, nulls, SPI_OK_UPDATE_RETURNING);
	if (SPI_processed > 0)
	{
		bound = DatumGetInt64(jq_result(0, 1));
		if (bound <= limit)
			return;
	}
	else
	{
		/* a new row (or one a concurrent producer just made): recount */
		jq_execute(JQ_PLAN_ADMIT_ADD, values, nulls, SPI_OK_INSERT_RETURNING);
		bound = DatumGetInt64(jq_result(0, 1));
		if (bound <= limit && !jq_result_bool(0, 2))
			return;
	}

	/* recount: the rows committed before the lock was ours are seen */
	if (group_key == NULL)
		jq_execute(JQ_PLAN_ADMIT_COUNT_QUEUE, values, nulls, SPI_OK_SELECT);
	else
		jq_execute(JQ_PLAN_ADMIT_COUNT_GROUP, values, nulls, SPI_OK_SELECT);
	pending = DatumGetInt64(jq_result(0, 1));
	running = DatumGetInt64(jq_result(0, 2));
	if (pending + n > limit && debounce_key != NULL)
	{
		Datum		dvalues[3];
		char		dnulls[3] = {JQ_NOTNULL, JQ_NOTNULL, nulls[1]};

		dvalues[0] = values[0];
		dvalues[1] = PointerGetDatum(debounce_key);
		dvalues[2] = values[1];
		jq_execute(JQ_PLAN_DEBOUNCE_PENDING, dvalues, dnulls, SPI_OK_SELECT);
		if (SPI_processed > 0)
			n = 0;				/* a replacement within the group: no new job */
	}
	if (pending + n > limit)
	{
		if (group_key == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("queue \"%s\" is full", queue_name),
					 errdetail_plural("The queue has %lld pending job (waiting, pending or scheduled), its max_pending is %d, and %lld more were to be enqueued.",
									  "The queue has %lld pending jobs (waiting, pending or scheduled), its max_pending is %d, and %lld more were to be enqueued.",
									  pending, (long long) pending, limit, (long long) n),
					 errhint("Retry later, or raise the limit with jq_alter_queue(max_pending => ...).")));
		else
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("group \"%s\" of queue \"%s\" is full",
							text_to_cstring(group_key), queue_name),
					 errdetail_plural("The group has %lld pending job (waiting, pending or scheduled), the queue's group_max_pending is %d, and %lld more were to be enqueued.",
									  "The group has %lld pending jobs (waiting, pending or scheduled), the queue's group_max_pending is %d, and %lld more were to be enqueued.",
									  pending, (long long) pending, limit, (long long) n),
					 errhint("Retry later, or raise the limit with jq_alter_queue(group_max_pending => ...).")));
	}
	/*
	 * The bound counts the jobs this call may still make: a replacement
	 * decided above becomes a new job if a claim takes the pending job of
	 * the key before the enqueue's statement runs (claims take no admission
	 * row), and the bound must stay an upper bound.
	 */
	values[2] = Int64GetDatum(pending + running + at_most);
	jq_execute(JQ_PLAN_ADMIT_SET, values, nulls, SPI_OK_UPDATE);
}

/* Byte order of two text datums, for the canonical order of group rows */
static int
jq_text_cmp(const void *a, const void *b)
{
	text	   *ta = DatumGetTextPP(*(const Datum *) a);
	text	   *tb = DatumGetTextPP(*(const Datum *) b);
	int			la = VARSIZE_ANY_EXHDR(ta);
	int			lb = VARSIZE_ANY_EXHDR(tb);
	int			c = memcmp(VARDATA_ANY(ta), VARDATA_ANY(tb), Min(la, lb));

	return c != 0 ? c : (la < lb ? -1 : (la > lb ? 1 : 0));
}

/*
 * The admission of njobs new jobs into queue_name under its limits
 * (settings), in the producer's transaction: the queue's max_pending
 * first, then group_max_pending for each group of the jobs (keys: their
 * group keys, NULL or empty for none, nkeys of them, or NULL when none has
 * a group), in byte order of the keys.  All or nothing: any limit passed
 * fails the call.  debounce_key: the call may replace a job instead.  Does
 * nothing for a queue without limits.
 */
void
jq_admit_jobs(const char *queue_name, const JqQueueSettings *settings,
			  int64 njobs, Datum *keys, int nkeys, text *debounce_key)
{
	int			i;

	if (settings->max_pending > 0)
		jq_admit(queue_name, NULL, settings->max_pending, njobs, debounce_key);
	if (settings->group_max_pending <= 0 || keys == NULL || nkeys == 0)
		return;
	qsort(keys, nkeys, sizeof(Datum), jq_text_cmp);
	for (i = 0; i < nkeys;)
	{
		int			j = i + 1;

		while (j < nkeys && jq_text_cmp(&keys[i], &keys[j]) == 0)
			j++;
		if (VARSIZE_ANY_EXHDR(DatumGetTextPP(keys[i])) > 0)
			jq_admit(queue_name, DatumGetTextPP(keys[i]),
					 settings->group_max_pending, j - i, debounce_key);
		i = j;
	}
}

/* Does the queue have an admission limit? */
bool
jq_queue_admits(const JqQueueSettings *settings)
{
	return settings->max_pending > 0 || settings->group_max_pending > 0;
}

/*
 * Forget the admission bounds of queue_name (a replay or a schedule run
 * adds jobs without them): the next enqueue recounts.  Takes the rows'
 * locks, in the producers' order, before the caller moves any job.
 */
void
jq_admission_forget(const char *queue_name)
{
	Datum		values[1];

	values[0] = CStringGetTextDatum(queue_name);
	jq_execute(JQ_PLAN_ADMIT_FORGET, values, NULL, SPI_OK_DELETE);
}
