/*-------------------------------------------------------------------------
 *
 * schedules.c
 *	  Recurring schedules: jq_schedule(), jq_unschedule(),
 *	  jq_run_schedules() and the worker's "schedule" task.
 *
 * A schedule (table jobqueue.schedules) enqueues one job per slot of its
 * cron expression (cron.c) into its queue.  next_run_at is the first slot
 * not yet handled.  The scheduler -- the background worker, or
 * jq_run_schedules() called by an external timer -- handles due slots in
 * batches, each in one transaction:
 *
 *	1. lock the due schedules (FOR UPDATE SKIP LOCKED: two schedulers never
 *	   handle one schedule at once; jq_schedule() waits for them);
 *	2. compute, in C, the slots to enqueue (see jq_schedule_slots) and the
 *	   next slot after now;
 *	3. insert the jobs, each with the idempotency key
 *	   "jq_schedule:<schedule>:<slot in UTC>", ON CONFLICT DO NOTHING;
 *	4. move next_run_at past now.
 *
 * Steps 3 and 4 commit together or not at all, so a crash (kill -9, an
 * immediate shutdown) either loses both -- and the slot is handled again
 * after the restart -- or neither.  The idempotency key covers the one case
 * where next_run_at can move back to a slot already enqueued: jq_schedule()
 * with a new cron racing the scheduler sets next_run_at from its own start
 * time (an unchanged cron keeps next_run_at, see jq_schedule()).  So
 * a slot is enqueued at most once as long as its job is not purged, and at
 * least once unless catch_up skips it.
 *
 * The job's payload is the schedule's payload with two keys added:
 * "jq_schedule" (the schedule's name) and "jq_slot" (the slot, ISO 8601 in
 * UTC); the same two make up its idempotency key.
 *
 * Catch-up: a slot is handled on time when it is the only one due and less
 * than JQ_SCHEDULE_GRACE late; it is then enqueued whatever catch_up says.
 * Otherwise (the scheduler was down or delayed) 'all' enqueues every due
 * slot (at most the JQ_CATCH_UP_MAX most recent), 'latest' the most recent
 * one, 'none' none.
 *
 * Nothing here calls user code: the statements are in plans.c, the cron
 * engine is C, and the payload is built with jsonb_concat.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_unschedule);
PG_FUNCTION_INFO_V1(jq_run_schedules);

/* schedules handled in one transaction */
#define JQ_SCHEDULE_BATCH	200
/* 'all' enqueues at most this many missed slots of a schedule at once */
#define JQ_CATCH_UP_MAX		1000
/* a slot handled later than this counts as missed */
#define JQ_SCHEDULE_GRACE	(60 * USECS_PER_SEC)
#define JQ_SCHEDULE_NAME_MAXLEN 128

/* when the worker's schedule task is next due; 0: at once */
static TimestampTz schedules_next_due = 0;

/* A schedule read by JQ_PLAN_SCHEDULES_DUE, copied out of SPI memory */
typedef struct JqDueSchedule
{
	char	   *name;
	char	   *queue_name;
	char	   *cron;
	char	   *timezone;
	Datum		payload;
	int32		priority;
	char	   *catch_up;
	TimestampTz next_run_at;
} JqDueSchedule;

/* Check a schedule name: the rules of queue names. */
static char *
jq_arg_schedule_name(FunctionCallInfo fcinfo, int argno)
{
	text	   *t;
	char	   *name;
	int			len;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("schedule name must not be null")));
	t = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(t);
	name = VARDATA_ANY(t);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("schedule name must not be empty")));
	for (int i = 0; i < len && i <= JQ_SCHEDULE_NAME_MAXLEN; i++)
	{
		char		c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') ||
			  c == '_' || c == '-' || c == '.' || c == ':'))
		{
			int			shown = pg_mbcharcliplen(name, len, JQ_SCHEDULE_NAME_MAXLEN);

			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("invalid schedule name \"%.*s%s\"", shown, name,
							shown < len ? "..." : ""),
					 errdetail("Schedule names consist of letters, digits and the characters \"_\", \"-\", \".\" and \":\".")));
		}
	}
	if (len > JQ_SCHEDULE_NAME_MAXLEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("schedule name is too long"),
				 errdetail("Schedule names have at most %d characters.",
						   JQ_SCHEDULE_NAME_MAXLEN)));
	return text_to_cstring(t);
}

/* A slot as ISO 8601 text in UTC, whatever the session's settings. */
static char *
jq_slot_text(TimestampTz slot)
{
	struct pg_tm tm;
	fsec_t		fsec;

	if (timestamp2tm(slot, NULL, &tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02dZ",
					tm.tm_year, tm.tm_mon, tm.tm_mday,
					tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/*
 * The slots of a schedule to enqueue now.  first is its next_run_at (due:
 * first <= now).  Writes the slots, ascending, to slots[] (room for
 * JQ_CATCH_UP_MAX) and returns how many; *next is the first slot after now
 * (DT_NOEND: none).
 *
 * Long downtimes are not walked slot by slot from first: windows before now
 * that double in length are probed until one holds more than
 * JQ_CATCH_UP_MAX slots or reaches back to first, so the work is bounded
 * by about 2 * JQ_CATCH_UP_MAX slots per window probed.
 */
static int
jq_schedule_slots(const JqCron *cron, pg_tz *tz, const char *catch_up,
				  TimestampTz first, TimestampTz now, TimestampTz *slots,
				  TimestampTz *next)
{
	TimestampTz start = first;
	bool		skipped = false;
	int64		total = 0;
	TimestampTz t;
	TimestampTz ring[JQ_CATCH_UP_MAX];
	int			n = 0;

	for (int64 w = USECS_PER_SEC; now - w > first; w *= 2)
	{
		TimestampTz s = jq_cron_next_time(cron, tz, now - w);
		int			count = 0;

		for (t = s; t <= now && count <= JQ_CATCH_UP_MAX; count++)
			t = jq_cron_next_time(cron, tz, t);
		if (count > JQ_CATCH_UP_MAX)
		{
			start = s;
			skipped = true;
			break;
		}
		if (w > PG_INT64_MAX / 4)
			break;
	}

	for (t = start; t <= now; total++)
	{
		ring[total % JQ_CATCH_UP_MAX] = t;
		t = jq_cron_next_time(cron, tz, t);
	}
	*next = t;
	if (total == 0)
		return 0;				/* a hand-edited next_run_at off the slots */

	if (total == 1 && !skipped && now - ring[0] <= JQ_SCHEDULE_GRACE)
	{
		slots[0] = ring[0];
		return 1;
	}
	if (strcmp(catch_up, "all") == 0)
	{
		int64		from = Max(total - JQ_CATCH_UP_MAX, 0);

		for (int64 i = from; i < total; i++)
			slots[n++] = ring[i % JQ_CATCH_UP_MAX];
		return n;
	}
	if (strcmp(catch_up, "latest") == 0)
	{
		slots[0] = ring[(total - 1) % JQ_CATCH_UP_MAX];
		return 1;
	}
	return 0;					/* none */
}

/*
 * Handle one batch of due schedules at time now, in the caller's
 * transaction and SPI connection.  Returns the number of jobs enqueued;
 * *more is set when the batch was full.
 */
static int64
jq_schedules_batch(TimestampTz now, bool *more)
{
	Datum		values[5];
	JqDueSchedule *due;
	int			ndue;
	TimestampTz *slots = palloc(sizeof(TimestampTz) * JQ_CATCH_UP_MAX);
	/* the arrays of the enqueue and the advance */
	Datum	   *q_queues,
			   *q_payloads,
			   *q_priorities,
			   *q_keys;
	int			nq = 0,
				maxq = 64;
	Datum	   *a_names,
			   *a_next,
			   *a_last;
	bool	   *a_next_null,
			   *a_last_null;
	char	  **last_keys;
	int64		enqueued = 0;
	int			dims[1];
	int			lbs[1] = {1};

	values[0] = TimestampTzGetDatum(now);
	values[1] = Int32GetDatum(JQ_SCHEDULE_BATCH);
	jq_execute(JQ_PLAN_SCHEDULES_DUE, values, NULL, SPI_OK_SELECT);
	ndue = (int) SPI_processed;
	*more = ndue >= JQ_SCHEDULE_BATCH;
	if (ndue == 0)
		return 0;

	due = palloc(sizeof(JqDueSchedule) * ndue);
	for (int i = 0; i < ndue; i++)
	{
		due[i].name = jq_result_cstring(i, 1);
		due[i].queue_name = jq_result_cstring(i, 2);
		due[i].cron = jq_result_cstring(i, 3);
		due[i].timezone = jq_result_cstring(i, 4);
		due[i].payload = PointerGetDatum(PG_DETOAST_DATUM_COPY(jq_result(i, 5)));
		due[i].priority = DatumGetInt32(jq_result(i, 6));
		due[i].catch_up = jq_result_cstring(i, 7);
		due[i].next_run_at = DatumGetTimestampTz(jq_result(i, 8));
	}

	q_queues = palloc(sizeof(Datum) * maxq);
	q_payloads = palloc(sizeof(Datum) * maxq);
	q_priorities = palloc(sizeof(Datum) * maxq);
	q_keys = palloc(sizeof(Datum) * maxq);
	a_names = palloc(sizeof(Datum) * ndue);
	a_next = palloc(sizeof(Datum) * ndue);
	a_last = palloc(sizeof(Datum) * ndue);
	a_next_null = palloc0(sizeof(bool) * ndue);
	a_last_null = palloc0(sizeof(bool) * ndue);
	last_keys = palloc0(sizeof(char *) * ndue);

	for (int i = 0; i < ndue; i++)
	{
		JqCron		cron;
		char	   *reason;
		pg_tz	   *tz;
		TimestampTz next = DT_NOEND;
		int			nslots = 0;

		CHECK_FOR_INTERRUPTS();
		a_names[i] = CStringGetTextDatum(due[i].name);
		a_last_null[i] = true;
		tz = due[i].timezone[0] != '\0' ? pg_tzset(due[i].timezone) : NULL;
		if (!jq_cron_try_parse(due[i].cron, &cron, &reason) || tz == NULL)
		{
			/* only a hand-written UPDATE stores these: stop, and say so */
			ereport(WARNING,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schedule \"%s\" is stopped: %s", due[i].name,
							tz == NULL ? "its time zone is not recognized" :
							"its cron expression is invalid"),
					 reason ? errdetail("The expression is invalid %s.", reason) : 0,
					 errhint("Replace it with jobqueue.jq_schedule().")));
		}
		else
			nslots = jq_schedule_slots(&cron, tz, due[i].catch_up,
									   due[i].next_run_at, now, slots, &next);

		a_next[i] = TimestampTzGetDatum(next);
		a_next_null[i] = next == DT_NOEND || !IS_VALID_TIMESTAMP(next);
		for (int k = 0; k < nslots; k++)
		{
			char	   *slot = jq_slot_text(slots[k]);
			char	   *extra;

			if (nq == maxq)
			{
				maxq *= 2;
				q_queues = repalloc(q_queues, sizeof(Datum) * maxq);
				q_payloads = repalloc(q_payloads, sizeof(Datum) * maxq);
				q_priorities = repalloc(q_priorities, sizeof(Datum) * maxq);
				q_keys = repalloc(q_keys, sizeof(Datum) * maxq);
			}
			/* names are letters, digits and _-.: -- nothing to escape */
			extra = psprintf("{\"jq_schedule\": \"%s\", \"jq_slot\": \"%s\"}",
							 due[i].name, slot);
			q_queues[nq] = CStringGetTextDatum(due[i].queue_name);
			q_payloads[nq] = DirectFunctionCall2(jsonb_concat, due[i].payload,
												 DirectFunctionCall1(jsonb_in,
																	 CStringGetDatum(extra)));
			q_priorities[nq] = Int32GetDatum(due[i].priority);
			last_keys[i] = psprintf("jq_schedule:%s:%s", due[i].name, slot);
			q_keys[nq] = CStringGetTextDatum(last_keys[i]);
			nq++;
		}
		if (nslots > 0)
		{
			a_last[i] = TimestampTzGetDatum(slots[nslots - 1]);
			a_last_null[i] = false;
		}
	}

	if (nq > 0)
	{
		dims[0] = nq;
		values[0] = PointerGetDatum(construct_array(q_queues, nq, TEXTOID, -1, false, TYPALIGN_INT));
		values[1] = PointerGetDatum(construct_array(q_payloads, nq, JSONBOID, -1, false, TYPALIGN_INT));
		values[2] = PointerGetDatum(construct_array(q_priorities, nq, INT4OID, 4, true, TYPALIGN_INT));
		values[3] = PointerGetDatum(construct_array(q_keys, nq, TEXTOID, -1, false, TYPALIGN_INT));
		values[4] = TimestampTzGetDatum(now);
		/*
		 * Runs are not refused, but the admission bounds of their queues
		 * recount (controls.c), taken first as producers take them
		 */
		for (int k = 0; k < nq; k++)
		{
			char	   *qname = TextDatumGetCString(q_queues[k]);
			const JqQueueSettings *settings = jq_queue_settings(qname);

			if (settings->exists && jq_queue_admits(settings))
				jq_admission_forget(qname);
		}
		jq_execute(JQ_PLAN_SCHEDULE_ENQUEUE, values, NULL, SPI_OK_INSERT_RETURNING);
		enqueued = (int64) jq_note_outcome(JQ_TR_ENQUEUE, 0, NULL, NULL, NULL);
	}

	/* the advance: last_job_id is left to a lookup by key when needed */
	dims[0] = ndue;
	values[0] = PointerGetDatum(construct_array(a_names, ndue, TEXTOID, -1, false, TYPALIGN_INT));
	values[1] = PointerGetDatum(construct_md_array(a_next, a_next_null, 1, dims, lbs,
												   TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL,
												   TYPALIGN_DOUBLE));
	values[2] = PointerGetDatum(construct_md_array(a_last, a_last_null, 1, dims, lbs,
												   TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL,
												   TYPALIGN_DOUBLE));
	{
		/* the id of each schedule's last job, found by its key */
		Datum	   *ids = palloc(sizeof(Datum) * ndue);
		bool	   *ids_null = palloc(sizeof(bool) * ndue);

		for (int i = 0; i < ndue; i++)
			ids_null[i] = true;
		for (uint64 r = 0; nq > 0 && r < SPI_processed; r++)
		{
			char	   *key = jq_result_cstring(r, JQ_OUTCOME_NCOLS + 2);

			for (int i = 0; i < ndue; i++)
			{
				if (last_keys[i] != NULL && strcmp(key, last_keys[i]) == 0)
				{
					ids[i] = jq_result(r, JQ_OUTCOME_ID);
					ids_null[i] = false;
					break;
				}
			}
		}
		values[3] = PointerGetDatum(construct_md_array(ids, ids_null, 1, dims, lbs,
													   INT8OID, 8, FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
	}
	jq_execute(JQ_PLAN_SCHEDULE_ADVANCE, values, NULL, SPI_OK_UPDATE);
	return enqueued;
}

/*
 * The worker's schedule task: one batch of due schedules.  The last unit
 * looks up when the next slot of any schedule is due, which makes the task
 * (and the database, when the worker leaves) due then.  A table that DDL
 * holds is left alone until the next pass.
 */
/*
 * Does this node fire schedules?  On a Citus cluster only the coordinator
 * (group 0) does: schedules is a reference table, and a worker node firing
 * it too would enqueue every slot once per node before the idempotency key
 * refused the copies.  Everywhere else (no Citus) the answer is yes.
 */
static bool
jq_schedules_fire_here(void)
{
	int			ret;
	bool		isnull;
	Datum		d;

	if (!OidIsValid(get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE)))
		return true;
	ret = SPI_execute("SELECT l.groupid OPERATOR(pg_catalog.=) 0 FROM pg_catalog.pg_dist_local_group l",
					  true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_local_group: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		return true;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull || DatumGetBool(d);
}

int64
jq_task_schedule(TimestampTz now, List **ready, MemoryContext cxt, bool *more)
{
	Oid			nspoid = get_namespace_oid("jobqueue", true);
	Oid			relid = OidIsValid(nspoid) ? get_relname_relid("schedules", nspoid) : InvalidOid;
	int64		n;

	*more = false;
	/*
	 * an extension not yet updated to 1.2 has no schedules; a Citus worker
	 * node leaves them to the coordinator
	 */
	if (!OidIsValid(relid) || !jq_schedules_fire_here())
	{
		schedules_next_due = DT_NOEND;
		return 0;
	}
	if (!ConditionalLockRelationOid(relid, RowExclusiveLock))
	{
		schedules_next_due = TimestampTzPlusMilliseconds(now, jq_reap_interval);
		return 0;
	}
	n = jq_schedules_batch(now, more);
	if (!*more)
	{
		bool		isnull;
		Datum		d;

		jq_execute(JQ_PLAN_SCHEDULES_NEXT, NULL, NULL, SPI_OK_SELECT);
		d = jq_result_nullable(0, 1, &isnull);
		schedules_next_due = isnull ? DT_NOEND : DatumGetTimestampTz(d);
	}
	return n;
}

/* When the schedule task is due next: the earliest slot it saw coming. */
TimestampTz
jq_schedules_next_due(void)
{
	return schedules_next_due;
}

/*
 * jq_schedule(schedule_name, queue_name, cron, payload, timezone, priority,
 *			   catch_up, enabled) returns timestamptz
 *
 * Creates or replaces a schedule; returns its next run time (NULL when
 * disabled).  Replacing keeps last_run_at and last_job_id.
 *
 * A declaration identical to the schedule (every argument the same) writes
 * nothing: next_run_at stays where it is, so the slots that came due while
 * no scheduler ran (a redeploy, a server or worker down) are still handled
 * as catch_up says.  A changed declaration with the same cron, time zone
 * and enabled also keeps next_run_at: the due slots are handled with the
 * new payload, priority, queue and catch_up.  A new cron or time zone, or
 * a schedule enabled again, starts from the first slot after now (the due
 * slots of the old expression are dropped).  A scheduler's pass holds the
 * row, so jq_schedule waits for it and then compares with what the pass
 * left (ON CONFLICT locks the newest row version).
 */
Datum
jq_schedule_call(PG_FUNCTION_ARGS)
{
	char	   *name = jq_arg_schedule_name(fcinfo, 0);
	char	   *queue_name = jq_arg_queue_name(fcinfo, 1);
	char	   *cron_text;
	char	   *tz_name;
	char	   *catch_up;
	JqCron		cron;
	pg_tz	   *tz;
	Jsonb	   *payload;
	bool		enabled;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next;
	Oid			argtypes[9] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID,
	INT4OID, BOOLOID, TEXTOID, TIMESTAMPTZOID};
	Datum		values[9];
	char		nulls[9];

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cron must not be null")));
	for (int i = 3; i <= 7; i++)
	{
		static const char *const what[] = {"payload", "timezone", "priority",
		"catch_up", "enabled"};

		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not be null", what[i - 3])));
	}
	cron_text = text_to_cstring(PG_GETARG_TEXT_PP(2));
	jq_cron_parse(cron_text, &cron);

	payload = PG_GETARG_JSONB_P(3);
	jq_check_payload(PG_GETARG_DATUM(3));
	if (!JB_ROOT_IS_OBJECT(payload) || JB_ROOT_IS_SCALAR(payload))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the payload of a schedule must be a JSON object"),
				 errdetail("The keys \"jq_schedule\" and \"jq_slot\" are added to it for each job.")));

	tz_name = text_to_cstring(PG_GETARG_TEXT_PP(4));
	tz = jq_cron_timezone(tz_name);

	catch_up = text_to_cstring(PG_GETARG_TEXT_PP(6));
	if (strcmp(catch_up, "latest") != 0 && strcmp(catch_up, "all") != 0 &&
		strcmp(catch_up, "none") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid catch_up \"%s\"",
						strlen(catch_up) <= 64 ? catch_up :
						psprintf("%.*s...", pg_mbcliplen(catch_up, strlen(catch_up), 64), catch_up)),
				 errhint("Use 'latest', 'all' or 'none'.")));
	enabled = PG_GETARG_BOOL(7);

	next = jq_cron_next_time(&cron, tz, now);
	if (next == DT_NOEND || !IS_VALID_TIMESTAMP(next))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cron expression \"%s\" never fires", cron_text),
				 errdetail("No slot was found within 400 years.")));

	memset(nulls, JQ_NOTNULL, sizeof(nulls));
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(queue_name);
	values[2] = CStringGetTextDatum(cron_text);
	values[3] = CStringGetTextDatum(tz_name);
	values[4] = PointerGetDatum(payload);
	values[5] = PG_GETARG_DATUM(5);
	values[6] = BoolGetDatum(enabled);
	values[7] = CStringGetTextDatum(catch_up);
	values[8] = TimestampTzGetDatum(next);
	if (!enabled)
		nulls[8] = JQ_ISNULL;

	jq_spi_connect();
	(void) jq_require_queue(queue_name);
	jq_execute_once("schedule",
					"INSERT INTO jobqueue.schedules AS s "
					"  (schedule_name, queue_name, cron, timezone, payload, priority, "
					"   enabled, catch_up, next_run_at) "
					"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
					"ON CONFLICT (schedule_name) DO UPDATE SET "
					"  queue_name = EXCLUDED.queue_name, cron = EXCLUDED.cron, "
					"  timezone = EXCLUDED.timezone, payload = EXCLUDED.payload, "
					"  priority = EXCLUDED.priority, enabled = EXCLUDED.enabled, "
					"  catch_up = EXCLUDED.catch_up, "
					"  traceparent = EXCLUDED.traceparent, tracestate = EXCLUDED.tracestate, "
					"  next_run_at = CASE WHEN s.enabled AND EXCLUDED.enabled "
					"      AND s.next_run_at IS NOT NULL AND s.cron = EXCLUDED.cron "
					"      AND s.timezone = EXCLUDED.timezone "
					"    THEN s.next_run_at ELSE EXCLUDED.next_run_at END "
					"WHERE (s.queue_name, s.cron, s.timezone, s.payload, s.priority, "
					"       s.enabled, s.catch_up, s.traceparent, s.tracestate) "
					"  IS DISTINCT FROM (EXCLUDED.queue_name, EXCLUDED.cron, EXCLUDED.timezone, "
					"       EXCLUDED.payload, EXCLUDED.priority, EXCLUDED.enabled, "
					"       EXCLUDED.catch_up, EXCLUDED.traceparent, EXCLUDED.tracestate) "
					"RETURNING s.next_run_at",
					9, argtypes, values, nulls, SPI_OK_INSERT_RETURNING);
	if (SPI_processed == 0)
	{
		/* identical: the row, locked by the INSERT, is what it was */
		jq_execute_once("schedule next run",
						"SELECT s.next_run_at FROM jobqueue.schedules s "
						"WHERE s.schedule_name = $1",
						1, argtypes, values, nulls, SPI_OK_SELECT);
	}
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = jq_result_nullable(0, 1, &isnull);

		enabled = !isnull;
		if (!isnull)
			next = DatumGetTimestampTz(d);
	}
	jq_spi_finish();

	/* the worker should look at the schedules soon */
	jq_note_activity();

	if (!enabled)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(next);
}

/*
 * jq_unschedule(schedule_name) returns boolean
 *
 * Deletes a schedule; false when there was none.  Jobs it enqueued stay.
 */
Datum
jq_unschedule(PG_FUNCTION_ARGS)
{
	char	   *name = jq_arg_schedule_name(fcinfo, 0);
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	bool		found;

	values[0] = CStringGetTextDatum(name);
	jq_spi_connect();
	jq_execute_once("unschedule",
					"DELETE FROM jobqueue.schedules s WHERE s.schedule_name = $1",
					1, argtypes, values, NULL, SPI_OK_DELETE);
	found = SPI_processed > 0;
	jq_spi_finish();
	PG_RETURN_BOOL(found);
}

/*
 * jq_run_schedules() returns integer
 *
 * Enqueues the jobs of every due slot, for installations without the
 * background worker (call it from pg_cron or an external timer).  Same
 * rules as the worker; schedules the worker (or another call) is handling
 * at this moment are skipped.  Returns the number of jobs enqueued.
 */
Datum
jq_run_schedules(PG_FUNCTION_ARGS)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		total = 0;
	bool		more = true;
	MemoryContext batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
													"jq_run_schedules",
													ALLOCSET_DEFAULT_SIZES);

	jq_spi_connect();
	while (more)
	{
		MemoryContext old = MemoryContextSwitchTo(batch_cxt);

		CHECK_FOR_INTERRUPTS();
		total += jq_schedules_batch(now, &more);
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch_cxt);
	}
	jq_spi_finish();
	MemoryContextDelete(batch_cxt);
	PG_RETURN_INT32((int32) Min(total, PG_INT32_MAX));
}
