/*-------------------------------------------------------------------------
 *
 * results.c
 *	  Results and progress of jobs, and reading one job: jq_progress,
 *	  jq_job, and the size check of results (jobqueue.max_result_size).
 *
 * A result is stored by jq_complete / jq_complete_many (lifecycle.c) in
 * the same statement that completes the job, so it exists exactly when
 * the completion does: a fenced completion stores nothing.  Progress is
 * written by the current lease holder only, under the fencing rule of
 * jq_heartbeat; it does not extend the lease (jq_heartbeat does that).
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_progress);
PG_FUNCTION_INFO_V1(jq_progress_in_queue);
PG_FUNCTION_INFO_V1(jq_job);
PG_FUNCTION_INFO_V1(jq_job_in_queue);

int			jq_max_result_size = 1024 * 1024;

/* Define jobqueue.max_result_size.  Called from _PG_init. */
void
jq_results_guc_init(void)
{
	DefineCustomIntVariable("jobqueue.max_result_size",
							"Largest accepted job result, progress or error detail.",
							"Measured on the jsonb value, before compression.",
							&jq_max_result_size,
							1024 * 1024, 1, 1024 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}

/*
 * Raise an error (54000) if the jsonb value, a result, progress or error
 * detail (what names it), is larger than jobqueue.max_result_size.
 */
void
jq_check_result(Datum value, const char *what)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(value);
	Size		size;

	if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
		size = toast_raw_datum_size(value) - VARHDRSZ;
	else
		size = VARSIZE_ANY_EXHDR(v);

	if (size > (Size) jq_max_result_size)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("job %s is too large", what),
				 errdetail("The %s has %zu bytes; jobqueue.max_result_size is %d bytes.",
						   what, size, jq_max_result_size),
				 errhint("Store large data in a table of its own and put its key in the %s.",
						 what)));
}

/*
 * jq_progress(id, token, progress) returns boolean
 * jq_progress(queue_name, id, token, progress) returns boolean
 *
 * Replaces the progress of a job the caller holds.  True when the caller
 * held the current, unexpired lease; false (and nothing changed)
 * otherwise (also: queue-first, a job of another queue).  The lease is not
 * extended.
 */
static Datum
jq_progress_call(FunctionCallInfo fcinfo, bool queue_first)
{
	int			off = queue_first ? 1 : 0;
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	Datum		values[5];
	char		nulls[5] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	bool		done;

	values[0] = Int64GetDatum(jq_arg_int8(fcinfo, off, "job id"));
	values[1] = Int64GetDatum(jq_arg_int8(fcinfo, off + 1, "token"));
	values[2] = jq_arg_required(fcinfo, off + 2, "progress");
	jq_check_result(values[2], "progress");
	values[3] = TimestampTzGetDatum(GetCurrentTimestamp());

	jq_spi_connect();
	values[4] = jq_call_queue(call_queue, DatumGetInt64(values[0]), &nulls[4]);
	jq_execute(JQ_PLAN_PROGRESS, values, nulls, SPI_OK_UPDATE_RETURNING);
	done = (jq_note_outcome(JQ_TR_PROGRESS, 0, NULL, NULL, NULL) == 1);
	jq_spi_finish();

	PG_RETURN_BOOL(done);
}

Datum
jq_progress(PG_FUNCTION_ARGS)
{
	return jq_progress_call(fcinfo, false);
}

Datum
jq_progress_in_queue(PG_FUNCTION_ARGS)
{
	return jq_progress_call(fcinfo, true);
}

/*
 * jq_job(id) returns table(id, queue_name, status, attempt, max_attempts,
 *		priority, result, progress, last_error_code, errors, created_at,
 *		available_at, started_at, finished_at, waiting_for)
 * jq_job(queue_name, id) returns the same table
 *
 * One row, or none for an unknown id (queue-first: for a job of another
 * queue; an unknown queue is an error).  waiting_for: the dependencies that
 * have not succeeded (NULL when there are none): what a waiting job waits
 * for, or what a job cancelled because of a dependency still lacks.
 */
/* The column of jq_job() that lists the dependencies not yet met */
#define JQ_JOB_DEPENDENCIES_COL 15

static Datum
jq_job_call(FunctionCallInfo fcinfo, bool queue_first)
{
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	Datum		values[2];
	char		nulls[2] = {JQ_NOTNULL, JQ_NOTNULL};
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;

	values[0] = Int64GetDatum(jq_arg_int8(fcinfo, queue_first ? 1 : 0, "job id"));
	tupstore = jq_srf_init(fcinfo, &tupdesc);

	jq_spi_connect();
	values[1] = jq_call_queue(call_queue, DatumGetInt64(values[0]), &nulls[1]);
	jq_execute(JQ_PLAN_JOB, values, nulls, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		Datum	   *row = palloc(sizeof(Datum) * SPI_tuptable->tupdesc->natts);
		bool	   *rownulls = palloc(sizeof(bool) * SPI_tuptable->tupdesc->natts);

		/* a definition from before 1.4 has the first 15 columns */
		if (SPI_tuptable->tupdesc->natts != tupdesc->natts &&
			tupdesc->natts != 15)
			elog(ERROR, "jobqueue statement \"%s\" returns %d columns, jq_job %d",
				 jq_plan_name(JQ_PLAN_JOB), SPI_tuptable->tupdesc->natts,
				 tupdesc->natts);
		heap_deform_tuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
						  row, rownulls);
		/* on Citus the list is read apart (JQ_PLAN_JOB's dist_sql) */
		if (jq_distributed_mode() && !rownulls[JQ_JOB_DEPENDENCIES_COL - 1])
			row[JQ_JOB_DEPENDENCIES_COL - 1] = jq_job_dependencies(row[0], row[1]);
		tuplestore_putvalues(tupstore, tupdesc, row, rownulls);
	}
	jq_spi_finish();

	return (Datum) 0;
}

Datum
jq_job(PG_FUNCTION_ARGS)
{
	return jq_job_call(fcinfo, false);
}

Datum
jq_job_in_queue(PG_FUNCTION_ARGS)
{
	return jq_job_call(fcinfo, true);
}
