/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  Reaping expired leases and purging finished jobs.
 *
 * The batch routines run inside the caller's transaction and need an open
 * SPI connection.  jq_reap() and jq_purge() call them once from SQL; the
 * background worker calls them in a loop, one short transaction per batch,
 * so that no transaction ever holds a large number of rows locked and
 * vacuum is never held back for long.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_reap);
PG_FUNCTION_INFO_V1(jq_purge);

/*
 * Reap up to max_jobs running jobs whose lease has expired (database clock):
 * each goes back to pending with backoff, or to dead when it has used all
 * its attempts; LEASE_EXPIRED is appended to its error history.  Rows that
 * another transaction has locked (a worker completing just now) are skipped
 * and left for the next batch.
 *
 * Returns the number of jobs reaped.  When woken_queues is not NULL, the
 * name of each queue that got a job ready at once is appended to it, once;
 * the list and its strings are allocated in result_cxt, which must outlive
 * the SPI connection.
 */
int64
jq_reap_batch(int max_jobs, List **woken_queues, MemoryContext result_cxt)
{
	Datum		values[3];
	uint64		reaped;
	uint64		i;

	values[0] = Int32GetDatum(max_jobs);
	values[1] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[2] = Int32GetDatum(jq_error_history);

	jq_execute(JQ_PLAN_REAP, values, NULL, SPI_OK_UPDATE_RETURNING);
	reaped = SPI_processed;

	if (jq_counting())
	{
		for (i = 0; i < reaped; i++)
		{
			char	   *queue_name = SPI_getvalue(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, 1);

			jq_count(queue_name, JQ_CTR_LEASES_EXPIRED, 1);
			jq_count(queue_name, jq_result_bool(i, 3) ?
					 JQ_CTR_DEAD_LETTERED : JQ_CTR_RETRIES_SCHEDULED, 1);
		}
	}

	if (woken_queues != NULL)
	{
		for (i = 0; i < reaped; i++)
		{
			char	   *queue_name;
			ListCell   *lc;
			bool		seen = false;

			if (!jq_result_bool(i, 2))
				continue;
			queue_name = SPI_getvalue(SPI_tuptable->vals[i],
									  SPI_tuptable->tupdesc, 1);
			foreach(lc, *woken_queues)
			{
				if (strcmp((char *) lfirst(lc), queue_name) == 0)
				{
					seen = true;
					break;
				}
			}
			if (!seen)
			{
				MemoryContext oldcontext = MemoryContextSwitchTo(result_cxt);

				*woken_queues = lappend(*woken_queues, pstrdup(queue_name));
				MemoryContextSwitchTo(oldcontext);
			}
		}
	}
	return (int64) reaped;
}

/*
 * Delete up to max_jobs succeeded or cancelled jobs of queue_name that
 * finished longer ago than older_than (NULL: the queue's retention).
 * Returns the number deleted; a missing queue deletes nothing.
 */
int64
jq_purge_batch(const char *queue_name, Interval *older_than, int max_jobs)
{
	Datum		values[4];
	char		nulls[4] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};

	values[0] = CStringGetTextDatum(queue_name);
	values[1] = PointerGetDatum(older_than);
	if (older_than == NULL)
		nulls[1] = JQ_ISNULL;
	values[2] = Int32GetDatum(max_jobs);
	values[3] = TimestampTzGetDatum(GetCurrentTimestamp());

	jq_execute(JQ_PLAN_PURGE, values, nulls, SPI_OK_DELETE);
	jq_count(queue_name, JQ_CTR_PURGED, (int64) SPI_processed);
	return (int64) SPI_processed;
}

/*
 * jq_reap(max_jobs) returns bigint
 *
 * One reaping batch, for installations that run without the background
 * worker (call it from a scheduler).  Queues that got ready work are woken.
 */
Datum
jq_reap(PG_FUNCTION_ARGS)
{
	int32		max_jobs = jq_arg_positive_int4(fcinfo, 0, "max_jobs");
	List	   *woken = NIL;
	ListCell   *lc;
	int64		reaped;
	MemoryContext cxt = CurrentMemoryContext;

	jq_spi_connect();
	reaped = jq_reap_batch(max_jobs, &woken, cxt);
	jq_spi_finish();

	foreach(lc, woken)
		jq_wakeup_queue((char *) lfirst(lc));

	PG_RETURN_INT64(reaped);
}

/*
 * jq_purge(queue_name, older_than, max_jobs) returns bigint
 *
 * One purge batch for one queue.
 */
Datum
jq_purge(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Interval   *older_than = jq_arg_interval(fcinfo, 1, "older_than", true, true);
	int32		max_jobs = jq_arg_positive_int4(fcinfo, 2, "max_jobs");
	int64		purged;

	jq_spi_connect();
	jq_require_queue(queue_name);
	purged = jq_purge_batch(queue_name, older_than, max_jobs);
	jq_spi_finish();

	PG_RETURN_INT64(purged);
}
