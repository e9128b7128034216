/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  Queue administration and operator actions on jobs.
 *
 * These are cold paths: their statements run once in a while, so they are
 * executed without a kept plan (SPI_execute_with_args), still with every
 * value passed as a parameter.  The operator actions on single jobs (cancel,
 * replay) use kept plans because applications call them too.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/plancache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_create_queue);
PG_FUNCTION_INFO_V1(jq_plans_reset_sql);
PG_FUNCTION_INFO_V1(jq_alter_queue);
PG_FUNCTION_INFO_V1(jq_drop_queue);
PG_FUNCTION_INFO_V1(jq_pause_queue);
PG_FUNCTION_INFO_V1(jq_resume_queue);
PG_FUNCTION_INFO_V1(jq_cancel);
PG_FUNCTION_INFO_V1(jq_cancel_in_queue);
PG_FUNCTION_INFO_V1(jq_retry);
PG_FUNCTION_INFO_V1(jq_retry_in_queue);
PG_FUNCTION_INFO_V1(jq_retry_dead);
PG_FUNCTION_INFO_V1(jq_explain_claim);

/* The name of the role the caller acts as, for the replay history. */
static Datum
jq_caller_name(void)
{
	/* not GetUserId(): inside SECURITY DEFINER that is the extension owner */
	return CStringGetTextDatum(GetUserNameFromId(GetOuterUserId(), false));
}

/*
 * The rate limit arguments (1.2) at argno and argno + 1, when the SQL
 * definition has them.  In jq_create_queue NULL means none; in
 * jq_alter_queue NULL leaves a setting unchanged, and 0 removes the limit
 * (rate_limit) or restores the default bucket size (rate_burst): *clear
 * says so.
 */
static void
jq_arg_rate(FunctionCallInfo fcinfo, int argno, bool allow_zero,
			Datum *values, char *nulls, bool *clear_rate, bool *clear_burst)
{
	*clear_rate = *clear_burst = false;
	nulls[0] = nulls[1] = JQ_ISNULL;
	values[0] = values[1] = (Datum) 0;
	if (PG_NARGS() > argno && !PG_ARGISNULL(argno))
	{
		float8		rate = PG_GETARG_FLOAT8(argno);

		if (allow_zero && rate == 0)
			*clear_rate = true;
		else if (isnan(rate) || rate <= 0 || rate > 1000000)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rate_limit must be greater than 0 and at most 1000000"),
					 errdetail("The value given was %g.", rate),
					 allow_zero ? errhint("Use rate_limit => 0 to remove the limit.") : 0));
		else
		{
			values[0] = Float8GetDatum(rate);
			nulls[0] = JQ_NOTNULL;
		}
	}
	if (PG_NARGS() > argno + 1 && !PG_ARGISNULL(argno + 1))
	{
		int32		burst = PG_GETARG_INT32(argno + 1);

		if (allow_zero && burst == 0)
			*clear_burst = true;
		else if (burst < 1 || burst > 1000000)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rate_burst must be between 1 and 1000000"),
					 errdetail("The value given was %d.", burst)));
		else
		{
			values[1] = Int32GetDatum(burst);
			nulls[1] = JQ_NOTNULL;
		}
	}
}

/*
 * jq_create_queue(queue_name, max_attempts, lease_duration, max_runtime,
 *				   backoff_base, backoff_max, retention, notify_finished,
 *				   group_concurrency, group_ordered, fairness, priority_aging,
 *				   rate_limit, rate_burst, group_rate_limit, group_rate_burst,
 *				   max_wait, max_pending, group_max_pending,
 *				   fair_share_half_life) returns void
 *
 * Creating a queue that exists changes nothing and says so in a NOTICE, so
 * that deployments may call it at every start.  The arguments after
 * retention exist since 1.2; an older SQL definition does not pass them.
 */
Datum
jq_create_queue(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Oid			argtypes[10] = {TEXTOID, INT4OID, INTERVALOID, INTERVALOID,
	INTERVALOID, INTERVALOID, INTERVALOID, BOOLOID, FLOAT8OID, INT4OID};
	Datum		values[10];
	char		nulls[10];
	bool		clear_rate,
				clear_burst;

	memset(nulls, JQ_NOTNULL, sizeof(nulls));
	values[0] = CStringGetTextDatum(queue_name);
	values[1] = Int32GetDatum(jq_arg_positive_int4(fcinfo, 1, "max_attempts"));
	values[2] = PointerGetDatum(jq_arg_interval(fcinfo, 2, "lease_duration", false, false));
	values[3] = PointerGetDatum(jq_arg_interval(fcinfo, 3, "max_runtime", false, false));
	values[4] = PointerGetDatum(jq_arg_interval(fcinfo, 4, "backoff_base", false, false));
	values[5] = PointerGetDatum(jq_arg_interval(fcinfo, 5, "backoff_max", false, false));
	/* retention zero: the queue's jobs are deleted when they succeed */
	values[6] = PointerGetDatum(jq_arg_interval(fcinfo, 6, "retention", false, true));
	values[7] = BoolGetDatum(false);
	if (PG_NARGS() > 7)
		values[7] = jq_arg_required(fcinfo, 7, "notify_finished");
	jq_arg_rate(fcinfo, 12, false, &values[8], &nulls[8], &clear_rate, &clear_burst);

	jq_spi_connect();
	jq_queues_changed();
	jq_execute_once("create queue", "INSERT INTO jobqueue.queues "
					"  (queue_name, max_attempts, lease_duration, max_runtime, "
					"   backoff_base, backoff_max, retention, notify_finished, "
					"   rate_limit, rate_burst) "
					"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
					"ON CONFLICT (queue_name) DO NOTHING",
					10, argtypes, values, nulls, SPI_OK_INSERT);
	if (SPI_processed == 0)
		ereport(NOTICE,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("queue \"%s\" already exists, skipping", queue_name),
				 errdetail("Its settings were not changed; use jobqueue.jq_alter_queue to change them.")));
	else
	{
		jq_ordering_set_policy(fcinfo, 8, queue_name, false);	/* ordering.c */
		jq_controls_set_policy(fcinfo, 14, queue_name, false);	/* controls.c */
	}
	jq_spi_finish();

	PG_RETURN_VOID();
}

/*
 * jq_alter_queue(queue_name, max_attempts, lease_duration, max_runtime,
 *				  backoff_base, backoff_max, retention, notify,
 *				  notify_finished, group_concurrency, group_ordered, fairness,
 *				  priority_aging, rate_limit, rate_burst, group_rate_limit,
 *				  group_rate_burst, max_wait, max_pending, group_max_pending,
 *				  fair_share_half_life) returns void
 *
 * NULL leaves a setting unchanged.  New settings apply to later claims,
 * failures and purges; running leases keep their expiry.
 */
Datum
jq_alter_queue(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Oid			argtypes[13] = {TEXTOID, INT4OID, INTERVALOID, INTERVALOID,
	INTERVALOID, INTERVALOID, INTERVALOID, BOOLOID, BOOLOID, FLOAT8OID, INT4OID,
	BOOLOID, BOOLOID};
	static const char *const interval_names[] = {
		"lease_duration", "max_runtime", "backoff_base", "backoff_max", "retention"
	};
	Datum		values[13];
	char		nulls[13];
	bool		clear_rate,
				clear_burst;
	int			i;

	memset(nulls, JQ_NOTNULL, sizeof(nulls));
	values[0] = CStringGetTextDatum(queue_name);
	if (PG_ARGISNULL(1))
		nulls[1] = JQ_ISNULL;
	else
		values[1] = Int32GetDatum(jq_arg_positive_int4(fcinfo, 1, "max_attempts"));
	for (i = 2; i <= 6; i++)
	{
		/* retention zero: the queue's jobs are deleted when they succeed */
		Interval   *iv = jq_arg_interval(fcinfo, i, interval_names[i - 2], true,
										 i == 6);

		values[i] = PointerGetDatum(iv);
		if (iv == NULL)
			nulls[i] = JQ_ISNULL;
	}
	if (PG_ARGISNULL(7))
		nulls[7] = JQ_ISNULL;
	else
		values[7] = PG_GETARG_DATUM(7);
	/* notify_finished and later: arguments since 1.2 */
	if (PG_NARGS() <= 8 || PG_ARGISNULL(8))
		nulls[8] = JQ_ISNULL;
	else
		values[8] = PG_GETARG_DATUM(8);
	jq_arg_rate(fcinfo, 13, true, &values[9], &nulls[9], &clear_rate, &clear_burst);
	values[11] = BoolGetDatum(clear_rate);
	values[12] = BoolGetDatum(clear_burst);

	jq_spi_connect();
	jq_queues_changed();
	jq_execute_once("alter queue", "UPDATE jobqueue.queues q SET "
					"  max_attempts = COALESCE($2, q.max_attempts), "
					"  lease_duration = COALESCE($3, q.lease_duration), "
					"  max_runtime = COALESCE($4, q.max_runtime), "
					"  backoff_base = COALESCE($5, q.backoff_base), "
					"  backoff_max = COALESCE($6, q.backoff_max), "
					"  retention = COALESCE($7, q.retention), "
					"  notify = COALESCE($8, q.notify), "
					"  notify_finished = COALESCE($9, q.notify_finished), "
					"  rate_limit = CASE WHEN $12 THEN NULL ELSE COALESCE($10, q.rate_limit) END, "
					"  rate_burst = CASE WHEN $12 OR $13 THEN NULL ELSE COALESCE($11, q.rate_burst) END "
					"WHERE q.queue_name = $1",
					13, argtypes, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed == 0)
		jq_raise_unknown_queue(queue_name);
	jq_ordering_set_policy(fcinfo, 9, queue_name, true);	/* ordering.c */
	jq_controls_set_policy(fcinfo, 15, queue_name, true);	/* controls.c */
	jq_spi_finish();
	/* this session sees its change at once; others within a second */
	jq_rate_forget(queue_name);

	PG_RETURN_VOID();
}

/*
 * jq_drop_queue(queue_name, force) returns void
 *
 * Refuses while the queue has jobs, unless force, which deletes them.  There
 * is no foreign key from jobs to queues, so we lock out concurrent enqueues
 * (which take ROW EXCLUSIVE on jobs) while we look and delete: otherwise a
 * job could be inserted for a queue that is being dropped.
 */
Datum
jq_drop_queue(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	bool		force;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int64		njobs;
	int			guc_nestlevel = 0;

	force = DatumGetBool(jq_arg_required(fcinfo, 1, "force"));
	values[0] = CStringGetTextDatum(queue_name);

	jq_spi_connect();
	if (jq_distributed_mode())
	{
		/*
		 * Citus writes the reference table queues below only after reads
		 * of every shard over one connection per node; for this call only
		 * (AtEOXact_GUC below)
		 */
		guc_nestlevel = NewGUCNestLevel();
		(void) set_config_option("citus.multi_shard_modify_mode", "sequential",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
	}
	jq_execute_once("lock jobs", "LOCK TABLE jobqueue.jobs IN SHARE ROW EXCLUSIVE MODE",
					0, NULL, NULL, NULL, SPI_OK_UTILITY);
	jq_execute_once("lock queue", "SELECT FROM jobqueue.queues q WHERE q.queue_name = $1 FOR UPDATE",
					1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		jq_raise_unknown_queue(queue_name);

	jq_execute_once("count jobs", "SELECT pg_catalog.count(*) FROM jobqueue.jobs j "
					"WHERE j.queue_name = $1",
					1, argtypes, values, NULL, SPI_OK_SELECT);
	njobs = DatumGetInt64(jq_result(0, 1));
	if (njobs > 0 && !force)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("queue \"%s\" still has jobs", queue_name),
				 errdetail_plural("The queue has %lld job.",
								  "The queue has %lld jobs.",
								  njobs, (long long) njobs),
				 errhint("Use force => true to delete its jobs with it.")));

	/*
	 * Jobs of other queues must not wait for jobs that vanish.  On Citus
	 * the rows naming the queue's jobs as dependencies are on its shard;
	 * those naming them as waiting, on every shard.
	 */
	if (!jq_distributed_mode())
		jq_execute_once("find dependents", "SELECT d.job_id, d.depends_on "
						"FROM jobqueue.job_dependencies d "
						"JOIN jobqueue.jobs j ON j.id = d.depends_on "
						"JOIN jobqueue.jobs w ON w.id = d.job_id "
						"WHERE j.queue_name = $1 AND w.queue_name <> $1 LIMIT 1",
						1, argtypes, values, NULL, SPI_OK_SELECT);
	else
		jq_execute_once("find dependents in other queues",
						"SELECT d.job_id, d.depends_on FROM jobqueue.job_dependencies d "
						"WHERE d.queue_name = $1 AND d.job_queue <> $1 "
						"ORDER BY d.job_id, d.depends_on LIMIT 1",
						1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("jobs of other queues depend on jobs of queue \"%s\"", queue_name),
				 errdetail("Job %lld depends on job %lld.",
						   (long long) DatumGetInt64(jq_result(0, 1)),
						   (long long) DatumGetInt64(jq_result(0, 2))),
				 errhint("Cancel the dependent jobs first.")));
	if (!jq_distributed_mode())
		jq_execute_once("drop dependencies", "DELETE FROM jobqueue.job_dependencies d "
						"USING jobqueue.jobs j WHERE j.id = d.job_id AND j.queue_name = $1",
						1, argtypes, values, NULL, SPI_OK_DELETE);
	else
		jq_execute_once("drop dependencies of queue", "DELETE FROM jobqueue.job_dependencies d "
						"WHERE d.job_queue = $1",
						1, argtypes, values, NULL, SPI_OK_DELETE);
	jq_execute_once("drop jobs", "DELETE FROM jobqueue.jobs j WHERE j.queue_name = $1",
					1, argtypes, values, NULL, SPI_OK_DELETE);
	jq_queues_changed();
	jq_execute_once("drop queue", "DELETE FROM jobqueue.queues q WHERE q.queue_name = $1",
					1, argtypes, values, NULL, SPI_OK_DELETE);
	if (jq_ordering_installed())
		jq_execute_once("drop groups", "DELETE FROM jobqueue.groups gr WHERE gr.queue_name = $1",
						1, argtypes, values, NULL, SPI_OK_DELETE);
	if (guc_nestlevel > 0)
		AtEOXact_GUC(true, guc_nestlevel);
	jq_spi_finish();

	PG_RETURN_VOID();
}

/* Set a queue's paused flag; returns the queue's notify setting. */
static bool
jq_set_paused(FunctionCallInfo fcinfo, bool paused)
{
	bool		notify;

	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Oid			argtypes[2] = {TEXTOID, BOOLOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(queue_name);
	values[1] = BoolGetDatum(paused);

	jq_spi_connect();
	jq_execute_once("set paused", "UPDATE jobqueue.queues q SET paused = $2 WHERE q.queue_name = $1 "
					"RETURNING q.notify",
					2, argtypes, values, NULL, SPI_OK_UPDATE_RETURNING);
	if (SPI_processed == 0)
		jq_raise_unknown_queue(queue_name);
	notify = jq_result_bool(0, 1);
	/* claims read paused from their cache of queue settings */
	jq_queues_changed();
	jq_spi_finish();
	return notify;
}

/* jq_pause_queue(queue_name): claims of a paused queue return no rows */
Datum
jq_pause_queue(PG_FUNCTION_ARGS)
{
	(void) jq_set_paused(fcinfo, true);
	PG_RETURN_VOID();
}

/* jq_resume_queue(queue_name) */
Datum
jq_resume_queue(PG_FUNCTION_ARGS)
{
	if (jq_set_paused(fcinfo, false))
		jq_wakeup_queue(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	PG_RETURN_VOID();
}

/*
 * jq_cancel(id) returns boolean
 * jq_cancel(queue_name, id) returns boolean
 *
 * A pending or running job becomes cancelled.  A running worker is not
 * interrupted, but its later complete, fail and heartbeat are fenced.
 * False when the job has finished, does not exist or (queue-first) is of
 * another queue.
 */
static Datum
jq_cancel_call(FunctionCallInfo fcinfo, bool queue_first)
{
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	Datum		values[3];
	char		nulls[3] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	bool		cancelled;

	values[0] = Int64GetDatum(jq_arg_int8(fcinfo, queue_first ? 1 : 0, "job id"));
	values[1] = TimestampTzGetDatum(GetCurrentTimestamp());

	jq_spi_connect();
	values[2] = jq_call_queue(call_queue, DatumGetInt64(values[0]), &nulls[2]);
	jq_execute(JQ_PLAN_CANCEL, values, nulls, SPI_OK_UPDATE_RETURNING);
	cancelled = (jq_note_outcome(JQ_TR_CANCEL, 0, NULL, NULL, NULL) == 1);
	jq_spi_finish();

	PG_RETURN_BOOL(cancelled);
}

Datum
jq_cancel(PG_FUNCTION_ARGS)
{
	return jq_cancel_call(fcinfo, false);
}

Datum
jq_cancel_in_queue(PG_FUNCTION_ARGS)
{
	return jq_cancel_call(fcinfo, true);
}

/*
 * jq_retry(id, run_at) returns boolean
 * jq_retry(queue_name, id, run_at) returns boolean
 *
 * Replays a dead or cancelled job: same id, pending again at run_at (default
 * now) with a fresh attempt count.  Its error history is kept and the replay
 * is recorded in it.  False if the job is not dead or cancelled.  A job
 * with dependencies that have not succeeded waits for them again; if one
 * of them is dead or cancelled, the replay is refused (55000).  Queue-first,
 * false for a job of another queue.
 */
static Datum
jq_retry_call(FunctionCallInfo fcinfo, bool queue_first)
{
	int			off = queue_first ? 1 : 0;
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	Datum		values[9];
	char		nulls[9];
	bool		isnull;
	bool		replayed;
	TimestampTz now = GetCurrentTimestamp();

	memset(nulls, JQ_NOTNULL, sizeof(nulls));
	values[0] = Int64GetDatum(jq_arg_int8(fcinfo, off, "job id"));
	values[1] = jq_arg_timestamptz(fcinfo, off + 1, "run_at", &isnull);
	if (isnull)
		nulls[1] = JQ_ISNULL;
	values[2] = TimestampTzGetDatum(now);
	values[3] = jq_caller_name();
	values[4] = Int32GetDatum(jq_error_history);
	jq_trace_session(&values[6], &nulls[6]);
	values[8] = jq_replay_entry(now, values[3]);

	jq_spi_connect();
	values[5] = jq_call_queue(call_queue, DatumGetInt64(values[0]), &nulls[5]);
	/* a replay adds pending work: the queue's admission bounds recount */
	if (nulls[5] == JQ_NOTNULL)
	{
		char	   *queue_name = TextDatumGetCString(values[5]);
		const JqQueueSettings *settings = jq_queue_settings(queue_name);

		if (settings->exists && jq_queue_admits(settings))
			jq_admission_forget(queue_name);
	}
	jq_retry_check_dependencies(DatumGetInt64(values[0]), values[5],
								nulls[5] == JQ_ISNULL);
	jq_execute(JQ_PLAN_RETRY, values, nulls, SPI_OK_UPDATE_RETURNING);
	replayed = (jq_note_outcome(JQ_TR_REPLAY, 0, NULL, NULL, NULL) == 1);
	jq_spi_finish();

	PG_RETURN_BOOL(replayed);
}

Datum
jq_retry(PG_FUNCTION_ARGS)
{
	return jq_retry_call(fcinfo, false);
}

Datum
jq_retry_in_queue(PG_FUNCTION_ARGS)
{
	return jq_retry_call(fcinfo, true);
}

/*
 * jq_retry_dead(queue_name, error_code, max_jobs) returns bigint
 *
 * Replays up to max_jobs dead jobs of a queue, oldest first, optionally only
 * those whose last error code is error_code.  Returns how many.
 */
Datum
jq_retry_dead(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Datum		values[9];
	char		nulls[9];
	uint64		count;
	TimestampTz now = GetCurrentTimestamp();

	memset(nulls, JQ_NOTNULL, sizeof(nulls));
	values[0] = CStringGetTextDatum(queue_name);
	if (PG_ARGISNULL(1))
		nulls[1] = JQ_ISNULL;
	else
		values[1] = PointerGetDatum(jq_arg_nonempty_text(fcinfo, 1, "error code",
														 JQ_ERROR_CODE_MAXLEN));
	values[2] = Int32GetDatum(jq_arg_positive_int4(fcinfo, 2, "max_jobs"));
	values[3] = TimestampTzGetDatum(now);
	values[4] = jq_caller_name();
	values[5] = Int32GetDatum(jq_error_history);
	jq_trace_session(&values[6], &nulls[6]);
	values[8] = jq_replay_entry(now, values[4]);

	jq_spi_connect();
	jq_require_queue(queue_name);
	/* a replay adds pending work: the queue's admission bounds recount */
	if (jq_queue_admits(jq_queue_settings(queue_name)))
		jq_admission_forget(queue_name);
	jq_execute(JQ_PLAN_RETRY_DEAD, values, nulls, SPI_OK_UPDATE_RETURNING);
	count = jq_note_outcome(JQ_TR_REPLAY, 0, NULL, NULL, NULL);
	jq_spi_finish();

	PG_RETURN_INT64((int64) count);
}

/*
 * jq_explain_claim(queue_name, n) returns setof text
 *
 * EXPLAIN (COSTS OFF) of the plan this session's claims of the queue run:
 * the kept generic plan of the statement of the queue's policy (plans.c),
 * prepared now if the session has not claimed yet, and rebuilt first if
 * the plan cache would rebuild it at the next claim.  Nothing is claimed:
 * the plan is only started for EXPLAIN.  n is checked as jq_claim checks
 * it; the generic plan does not depend on it (its $2).  On Citus the plan
 * against the queue's shard, on the queue's node only (localshard.c).
 */
Datum
jq_explain_claim(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	JqPlanId	plan;
	CachedPlan *cplan;
	ExplainState *es;
	ListCell   *lc;
	char	   *line;
	char	   *next;

	(void) jq_arg_positive_int4(fcinfo, 1, "n");
	tupstore = jq_srf_init(fcinfo, &tupdesc);

	jq_spi_connect();
	jq_require_queue(queue_name);
	plan = jq_claim_plan_of(queue_name);
	if (jq_distributed_mode())
	{
		/* on the queue's node the claim keeps a plan against its shard */
		SPIPlanPtr	local = jq_local_shard_plan(plan, CStringGetTextDatum(queue_name));

		if (local == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("jq_explain_claim() is supported on a Citus cluster only on the node of the queue"),
					 errdetail("Elsewhere a claim is planned at each call, with the values of its arguments; there is no kept plan to show."),
					 errhint("Call it outside a transaction block, so that it runs on the queue's node, or connect to jq_queue_node(queue_name).")));
		cplan = SPI_plan_get_cached_plan(local);
	}
	else
		cplan = SPI_plan_get_cached_plan(jq_plan(plan));
	if (cplan == NULL)
		elog(ERROR, "jobqueue statement \"%s\" has no plan", jq_plan_name(plan));

	es = NewExplainState();
	es->costs = false;
	ExplainBeginOutput(es);
	foreach(lc, cplan->stmt_list)
	{
		PlannedStmt *pstmt = lfirst_node(PlannedStmt, lc);

		ExplainOnePlan(pstmt, NULL, es, jq_plan_sql(plan), NULL, NULL, NULL, NULL);
	}
	ExplainEndOutput(es);
	ReleaseCachedPlan(cplan, CurrentResourceOwner);

	/* one row per line, as EXPLAIN returns it */
	for (line = es->str->data; line != NULL && *line != '\0'; line = next)
	{
		Datum		value;
		bool		isnull = false;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		value = CStringGetTextDatum(line);
		tuplestore_putvalues(tupstore, tupdesc, &value, &isnull);
	}
	jq_spi_finish();

	return (Datum) 0;
}

/*
 * jq_plans_reset(): this backend prepares its kept statements again at
 * their next use, for the distributed mode it then reads (called by
 * jq_distribute(), whose session planned them for one server)
 */
Datum
jq_plans_reset_sql(PG_FUNCTION_ARGS)
{
	jq_plans_reset();
	PG_RETURN_VOID();
}
