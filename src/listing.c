/*-------------------------------------------------------------------------
 *
 * listing.c
 *	  What operators list without rights on the tables: jq_jobs (a queue's
 *	  jobs, newest first, in pages) and jq_schedules (every schedule with
 *	  its next run).
 *
 * Both run as the extension's owner and decide for themselves which
 * columns the caller may see.  The payload of a job (and of a schedule),
 * its result, progress and error history, which the handlers' messages
 * and stack traces fill with the data of the job, are shown only to a
 * role that may read jobs' data anyway: one that may call jq_claim (the
 * worker rights) or jq_retry (the admin rights), or read the column
 * jobqueue.jobs.payload itself.  Anyone else (the monitor rights) gets
 * NULL there, and everything else.  The caller is the outer user, the one
 * who called the SECURITY DEFINER function, not its owner.
 *
 * The statements are planned at each call, with the caller's values, not
 * kept in plans.c: they are not on any hot path, and the best way to a
 * queue's newest jobs depends on the queue (the primary key from the
 * newest job down, when the queue has most of the table; the queue's own
 * index entries, when it is one of many).  A generic plan would have to
 * choose one for all queues.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/htup_details.h"
#include "miscadmin.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jq_jobs);
PG_FUNCTION_INFO_V1(jq_schedules);

/* The largest page of jq_jobs: a screenful, not an export. */
#define JQ_JOBS_MAX_PAGE	10000

/*
 * Whether role ROLE (an oid) may see jobs' payloads, results, progress
 * and error histories: it may call jq_claim (the worker rights) or
 * jq_retry (the admin rights), or read the column jobs.payload itself.
 */
#define JQ_MAY_READ_SQL(ROLE) \
	"(pg_catalog.has_function_privilege(" ROLE ", " \
	"   'jobqueue.jq_claim(text, integer, text, interval)', 'EXECUTE') " \
	" OR pg_catalog.has_function_privilege(" ROLE ", " \
	"   'jobqueue.jq_retry(bigint, timestamp with time zone)', 'EXECUTE') " \
	" OR pg_catalog.has_column_privilege(" ROLE ", 'jobqueue.jobs', 'payload', 'SELECT'))"

/*
 * The order of jq_jobs: the unfinished jobs first, newest (highest id)
 * first; then the finished ones (succeeded, dead, cancelled), most recently
 * finished first, ties by id.  A page is read from the indexes the other
 * statements keep anyway: the unfinished parts from the partial index of
 * their status (a page costs the queue's backlog in that status, as
 * queue_stats does), each finished status from its range of
 * jobs_status_idx (status, queue, finished_at), which the purge and
 * jq_retry_dead read too (a page costs its own rows and the others
 * finished at the instant of its last one, which are sorted by id; one of a
 * rare error code may cost the queue's dead jobs).  No index exists for
 * jq_jobs alone: every write of a job would pay for it.
 *
 * The cursor is the last row of the previous page: $4 its id, $8 its
 * finished_at when it was finished (NULL: it was unfinished, and the next
 * page goes on with the unfinished jobs of lower ids, then every finished
 * one).
 */

/*
 * The filters of every part: the status gate (GATE, a test of the
 * parameters only, so a one-time filter), the group and the error code.
 */
#define JQ_JOBS_FILTERS_SQL(GATE) \
	" AND " GATE \
	" AND ($5 IS NULL OR j.group_key OPERATOR(pg_catalog.=) $5) " \
	" AND ($6 IS NULL OR j.last_error_code OPERATOR(pg_catalog.=) $6) "

/*
 * A part of unfinished jobs in the statuses STATUSES: the ids first, which
 * the index of their status holds (an index-only scan when no group or
 * error code is asked for) but in another order (the claim order, the
 * lease expiry), then only the rows of the page.
 *
 * The queue is given as a range of one value, and the order as (queue,
 * id), on purpose: with an equality the queue would be a constant of the
 * order, and the primary key, read backwards from the newest job, would
 * serve "ORDER BY id DESC" too.  The planner, assuming a queue's jobs in
 * one status spread evenly over the ids, then takes it and walks every
 * newer job of the table before the first row.
 */
#define JQ_JOBS_UNFINISHED_PART_SQL(STATUSES, GATE) \
	"(SELECT j.* FROM jobqueue.jobs j WHERE j.id OPERATOR(pg_catalog.=) ANY (ARRAY(" \
	" SELECT j.id FROM jobqueue.jobs j " \
	" WHERE j.queue_name OPERATOR(pg_catalog.>=) $1 " \
	"   AND j.queue_name OPERATOR(pg_catalog.<=) $1 AND j.status " STATUSES \
	"   AND $8 IS NULL AND ($4 IS NULL OR j.id OPERATOR(pg_catalog.<) $4) " \
	JQ_JOBS_FILTERS_SQL(GATE) \
	" ORDER BY j.queue_name DESC, j.id DESC LIMIT $3)))"

/* A part of finished jobs in status STATUS, after the cursor when it is one */
#define JQ_JOBS_FINISHED_PART_SQL(STATUS) \
	"(SELECT j.* FROM jobqueue.jobs j " \
	" WHERE j.queue_name OPERATOR(pg_catalog.=) $1 " \
	"   AND j.status OPERATOR(pg_catalog.=) '" STATUS "' " \
	"   AND ($8 IS NULL OR j.finished_at OPERATOR(pg_catalog.<=) $8) " \
	"   AND ($8 IS NULL OR $4 IS NULL OR j.finished_at OPERATOR(pg_catalog.<) $8 " \
	"        OR j.id OPERATOR(pg_catalog.<) $4) " \
	JQ_JOBS_FILTERS_SQL("($2 IS NULL OR $2 OPERATOR(pg_catalog.=) '" STATUS "')") \
	" ORDER BY j.finished_at DESC, j.id DESC LIMIT $3)"

/* The columns of jq_jobs, from the rows l and the caller's rights r */
#define JQ_JOBS_COLUMNS_SQL \
	"SELECT l.id, l.queue_name, l.status, l.priority, " \
	"  NULLIF(l.group_key, ''), l.attempt_count, l.max_attempts, " \
	"  l.created_at, l.available_at, l.started_at, l.finished_at, " \
	"  l.lease_owner, l.lease_expires_at, l.last_error_code, " \
	"  CASE WHEN r.may_read THEN l.errors OPERATOR(pg_catalog.->) -1 " \
	"    OPERATOR(pg_catalog.->>) 'message' END, " \
	"  CASE WHEN r.may_read THEN l.payload END, " \
	"  CASE WHEN r.may_read THEN l.result END, " \
	"  CASE WHEN r.may_read THEN l.progress END, " \
	"  CASE WHEN r.may_read THEN l.errors END " \
	"FROM l CROSS JOIN r "

/*
 * $1 queue, $2 status (text, NULL: any), $3 max jobs, $4 and $8 the cursor,
 * $5 group key, $6 last error code, $7 the caller's role.
 */
static const char jobs_sql[] =
"WITH l AS ("
JQ_JOBS_UNFINISHED_PART_SQL("OPERATOR(pg_catalog.=) 'pending'",
							"($2 IS NULL OR $2 OPERATOR(pg_catalog.=) 'pending')")
" UNION ALL "
JQ_JOBS_UNFINISHED_PART_SQL("OPERATOR(pg_catalog.=) 'running'",
							"($2 IS NULL OR $2 OPERATOR(pg_catalog.=) 'running')")
" UNION ALL "
JQ_JOBS_UNFINISHED_PART_SQL("OPERATOR(pg_catalog.=) 'waiting'",
							"($2 IS NULL OR $2 OPERATOR(pg_catalog.=) 'waiting')")
" UNION ALL " JQ_JOBS_FINISHED_PART_SQL("succeeded")
" UNION ALL " JQ_JOBS_FINISHED_PART_SQL("dead")
" UNION ALL " JQ_JOBS_FINISHED_PART_SQL("cancelled")
"), r AS (SELECT " JQ_MAY_READ_SQL("$7") " AS may_read) "
JQ_JOBS_COLUMNS_SQL
"ORDER BY l.status OPERATOR(pg_catalog.>) 'running', "
"  CASE WHEN l.status OPERATOR(pg_catalog.>) 'running' THEN l.finished_at END DESC, "
"  l.id DESC LIMIT $3";

/* $1 queue, $2 job id, $3 the caller's role.  The row of one job. */
static const char job_sql[] =
"WITH l AS (SELECT j.* FROM jobqueue.jobs j "
"           WHERE j.queue_name OPERATOR(pg_catalog.=) $1 AND j.id OPERATOR(pg_catalog.=) $2), "
"r AS (SELECT " JQ_MAY_READ_SQL("$3") " AS may_read) "
JQ_JOBS_COLUMNS_SQL;

/*
 * $1 the caller's role.  Every schedule, by name; the payload only for a
 * role that may read jobs' payloads.
 */
static const char schedules_sql[] =
"SELECT s.schedule_name, s.queue_name, s.cron, s.timezone, s.enabled, "
"  s.catch_up, s.priority, s.next_run_at, s.last_run_at, s.last_job_id, "
"  s.created_at, CASE WHEN " JQ_MAY_READ_SQL("$1") " THEN s.payload END "
"FROM jobqueue.schedules s ORDER BY s.schedule_name";

static void jq_copy_rows(Tuplestorestate *tupstore, TupleDesc tupdesc,
						 const char *fn);

/*
 * jq_jobs(queue_name, status, max_jobs, before_id, group_key, error_code,
 * before_finished_at, job_id) returns setof (id, queue_name, status, priority,
 * group_key, attempt, max_attempts, created_at, available_at, started_at,
 * finished_at, lease_owner, lease_expires_at, last_error_code,
 * last_error_message, payload, result, progress, errors)
 *
 * Up to max_jobs jobs of a queue in the order of jobs_sql, after the job
 * before_id (whose finished_at, if it was finished, is before_finished_at;
 * NULL: from the start), optionally only those in one status, of one
 * group, or whose last error has one code.  The next page starts after the
 * last row of this one.  With job_id, only that job's row (if it is one of
 * the queue's; the other filters do not apply).
 */
Datum
jq_jobs(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Oid			jobs_argtypes[8] = {TEXTOID, TEXTOID, INT4OID, INT8OID, TEXTOID, TEXTOID, OIDOID,
	TIMESTAMPTZOID};
	Datum		values[8];
	char		nulls[8] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL,
	JQ_ISNULL};
	int32		max_jobs;
	text	   *group_key;
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;

	values[0] = CStringGetTextDatum(queue_name);
	/* the status as its label: the enum's OID is not known in advance */
	if (PG_ARGISNULL(1))
	{
		values[1] = (Datum) 0;
		nulls[1] = JQ_ISNULL;
	}
	else
		values[1] = CStringGetTextDatum(DatumGetCString(
											DirectFunctionCall1(enum_out, PG_GETARG_DATUM(1))));
	max_jobs = jq_arg_positive_int4(fcinfo, 2, "max_jobs");
	if (max_jobs > JQ_JOBS_MAX_PAGE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_jobs must be at most %d", JQ_JOBS_MAX_PAGE),
				 errdetail("max_jobs is %d.", max_jobs),
				 errhint("Read further pages with before_id.")));
	values[2] = Int32GetDatum(max_jobs);
	if (PG_ARGISNULL(3))
	{
		values[3] = (Datum) 0;
		nulls[3] = JQ_ISNULL;
	}
	else
		values[3] = PG_GETARG_DATUM(3);
	group_key = jq_arg_group_key(fcinfo, 4);
	values[4] = PointerGetDatum(group_key);
	if (group_key == NULL)
		nulls[4] = JQ_ISNULL;
	if (PG_ARGISNULL(5))
	{
		values[5] = (Datum) 0;
		nulls[5] = JQ_ISNULL;
	}
	else
		values[5] = PointerGetDatum(jq_arg_nonempty_text(fcinfo, 5, "error code",
														 JQ_ERROR_CODE_MAXLEN));
	values[6] = ObjectIdGetDatum(GetOuterUserId());
	values[7] = (Datum) 0;
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
	{
		values[7] = PG_GETARG_DATUM(6);
		nulls[7] = JQ_NOTNULL;
	}

	tupstore = jq_srf_init(fcinfo, &tupdesc);
	jq_spi_connect();
	(void) jq_require_queue(queue_name);
	if (PG_NARGS() > 7 && !PG_ARGISNULL(7))
	{
		/* job_id: that job's row only */
		Oid			job_argtypes[3] = {TEXTOID, INT8OID, OIDOID};
		Datum		job_values[3];

		job_values[0] = values[0];
		job_values[1] = PG_GETARG_DATUM(7);
		job_values[2] = values[6];
		jq_execute_once("job row", job_sql, 3, job_argtypes, job_values, NULL,
						SPI_OK_SELECT);
	}
	else
		jq_execute_once("jobs list", jobs_sql, 8, jobs_argtypes, values, nulls,
						SPI_OK_SELECT);
	jq_copy_rows(tupstore, tupdesc, "jq_jobs");
	jq_spi_finish();

	return (Datum) 0;
}

/*
 * jq_schedules() returns setof (schedule_name, queue_name, cron, timezone,
 * enabled, catch_up, priority, next_run_at, last_run_at, last_job_id,
 * created_at, payload)
 *
 * Every schedule of the database, by name; next_run_at is the next slot
 * not yet handled (NULL: disabled, or the expression fires no more).
 */
Datum
jq_schedules(PG_FUNCTION_ARGS)
{
	Oid			schedules_argtypes[1] = {OIDOID};
	Datum		values[1];
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;

	values[0] = ObjectIdGetDatum(GetOuterUserId());

	tupstore = jq_srf_init(fcinfo, &tupdesc);
	jq_spi_connect();
	jq_execute_once("schedules list", schedules_sql, 1, schedules_argtypes,
					values, NULL, SPI_OK_SELECT);
	jq_copy_rows(tupstore, tupdesc, "jq_schedules");
	jq_spi_finish();

	return (Datum) 0;
}

/*
 * Every row of the statement just run into the result; the tuplestore
 * copies the values out of SPI memory.
 */
static void
jq_copy_rows(Tuplestorestate *tupstore, TupleDesc tupdesc, const char *fn)
{
	Datum	   *row;
	bool	   *rownulls;
	uint64		i;

	if (SPI_tuptable->tupdesc->natts != tupdesc->natts)
		elog(ERROR, "the statement of %s returns %d columns, its result %d",
			 fn, SPI_tuptable->tupdesc->natts, tupdesc->natts);
	row = palloc(sizeof(Datum) * tupdesc->natts);
	rownulls = palloc(sizeof(bool) * tupdesc->natts);
	for (i = 0; i < SPI_processed; i++)
	{
		heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
						  row, rownulls);
		tuplestore_putvalues(tupstore, tupdesc, row, rownulls);
	}
}
