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

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_reap);
PG_FUNCTION_INFO_V1(jq_purge);

/*
 * Jobs this backend could not reap (an error caused by the row, such as a
 * backoff that overflows a timestamp).  They are left out of its later
 * batches, so that one bad row does not make every batch fail and fall back
 * to one job at a time, and each is reported once.  Another session, or
 * the worker after a restart, tries them again.  Kept in TopMemoryContext.
 */
#define JQ_REAP_MAX_SKIPPED 1000
static int64 *reap_skipped = NULL;
static int	reap_nskipped = 0;

/* The ids to leave out, as an int8[] datum in the current memory context. */
static Datum
jq_reap_skipped_array(void)
{
	Datum	   *elems = palloc(sizeof(Datum) * (reap_nskipped + 1));
	int			i;

	for (i = 0; i < reap_nskipped; i++)
		elems[i] = Int64GetDatum(reap_skipped[i]);
	return PointerGetDatum(construct_array(elems, reap_nskipped, INT8OID,
										   sizeof(int64), FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

static void
jq_reap_skip(int64 id)
{
	if (reap_skipped == NULL)
		reap_skipped = MemoryContextAlloc(TopMemoryContext,
										  sizeof(int64) * JQ_REAP_MAX_SKIPPED);
	if (reap_nskipped < JQ_REAP_MAX_SKIPPED)
		reap_skipped[reap_nskipped++] = id;
}

/*
 * Reap up to max_jobs running jobs whose lease has expired (database clock):
 * each goes back to pending with backoff, or to dead when it has used all
 * its attempts; LEASE_EXPIRED is appended to its error history.  Rows that
 * another transaction has locked (a worker completing just now) are skipped
 * and left for the next batch.
 *
 * The batch runs in a subtransaction.  When it fails because of the data
 * (a row whose backoff overflows, say: an error of class 22, 23 or 54), the
 * expired jobs are reaped one at a time, each in a subtransaction of its
 * own, and those that fail are skipped with a WARNING naming the job; any
 * other error (cancel, read-only transaction, serialization) is raised.
 *
 * Returns the number of jobs reaped.  When woken_queues is not NULL, the
 * name of each queue that got a job ready at once is appended to it, once;
 * the list and its strings are allocated in result_cxt, which must outlive
 * the SPI connection.  Otherwise the listeners of those queues are woken.
 */
int64
jq_reap_batch(int max_jobs, List **woken_queues, MemoryContext result_cxt)
{
	Datum		values[4];
	ErrorData  *edata;
	int64	   *ids;
	uint64		nids;
	uint64		reaped = 0;
	uint64		i;

	values[0] = Int32GetDatum(max_jobs);
	values[1] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[2] = Int32GetDatum(jq_error_history);
	values[3] = jq_reap_skipped_array();

	if (jq_execute_subxact(JQ_PLAN_REAP, values, NULL,
						   SPI_OK_UPDATE_RETURNING, &edata))
		return (int64) jq_note_outcome(JQ_TR_REAP, 0, woken_queues,
									   result_cxt, NULL);
	FreeErrorData(edata);

	/* one job at a time: first the ids the batch would have taken */
	values[2] = values[3];
	jq_execute(JQ_PLAN_REAP_CANDIDATES, values, NULL, SPI_OK_SELECT);
	nids = SPI_processed;
	ids = palloc(sizeof(int64) * (nids + 1));
	for (i = 0; i < nids; i++)
		ids[i] = DatumGetInt64(jq_result(i, 1));

	values[2] = Int32GetDatum(jq_error_history);
	for (i = 0; i < nids; i++)
	{
		values[0] = Int64GetDatum(ids[i]);
		if (jq_execute_subxact(JQ_PLAN_REAP_ONE, values, NULL,
							   SPI_OK_UPDATE_RETURNING, &edata))
		{
			reaped += jq_note_outcome(JQ_TR_REAP, 0, woken_queues,
									  result_cxt, NULL);
			continue;
		}
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not reap job %lld: %s",
						(long long) ids[i], edata->message),
				 errdetail("The job was left as it is; this session skips it from now on.")));
		FreeErrorData(edata);
		jq_reap_skip(ids[i]);
	}
	return (int64) reaped;
}

List *
jq_local_queues(bool wake)
{
	List	   *queues = NIL;
	ListCell   *lc;

	jq_execute(JQ_PLAN_LOCAL_QUEUES, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		if (!wake || jq_result_bool(i, 2))
			queues = lappend(queues, jq_result_name(i, 1));
	}
	/* a queue whose shard is moving is served after the move, by its node */
	foreach(lc, queues)
	{
		if (!jq_local_shard_try_lock(CStringGetTextDatum(lfirst(lc))))
			queues = foreach_delete_current(queues, lc);
	}
	return queues;
}

List *
jq_all_queues(void)
{
	List	   *queues = NIL;

	jq_execute(JQ_PLAN_QUEUE_NAMES, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
		queues = lappend(queues, jq_result_name(i, 1));
	return queues;
}

int64
jq_reap_queues_batch(List *queues, int max_jobs, List **woken_queues,
					 MemoryContext result_cxt, bool *more)
{
	Datum		values[8];
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;
	int64		reaped = 0;

	*more = false;
	if (queues == NIL)
		return 0;

	values[0] = Int32GetDatum(max_jobs);
	values[1] = TimestampTzGetDatum(now);
	values[2] = Int32GetDatum(jq_error_history);
	values[3] = jq_reap_skipped_array();
	values[5] = Float8GetDatum(jq_epoch_seconds(now));
	values[6] = Int64GetDatum((int64) (jq_jitter() * (double) PG_INT64_MAX));
	values[7] = jq_attempt_entry(now, CStringGetTextDatum(JQ_LEASE_EXPIRED_CODE),
								 CStringGetTextDatum("lease expired"), false, true,
								 (Datum) 0, true, (Datum) 0, true);
	foreach(lc, queues)
	{
		const char *queue_name = (const char *) lfirst(lc);
		ErrorData  *edata;
		int64		n;

		values[4] = CStringGetTextDatum(queue_name);
		if (!jq_execute_subxact(JQ_PLAN_REAP_QUEUE, values, NULL,
								SPI_OK_UPDATE_RETURNING, &edata))
		{
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("could not reap the expired leases of queue \"%s\": %s",
							queue_name, edata->message),
					 errdetail("They are tried again at the next reap.")));
			FreeErrorData(edata);
			continue;
		}
		n = (int64) jq_note_outcome(JQ_TR_REAP, 0, woken_queues, result_cxt, NULL);
		if (n >= max_jobs)
			*more = true;
		reaped += n;
	}
	return reaped;
}

/* JQ_PLAN_PURGE's parameters, and the number of jobs it deleted */
typedef struct JqPurge
{
	Datum	   *values;
	const char *nulls;
	uint64		purged;
} JqPurge;

/*
 * Run JQ_PLAN_PURGE.  On Citus the rows of job_dependencies that name the
 * jobs it may delete as waiting are on their dependencies' shards: they
 * go first, with a statement on every shard, and only when some of those
 * jobs have any (JQ_PLAN_PURGE_WAITERS).
 */
static void
jq_purge_run(void *arg)
{
	JqPurge    *p = (JqPurge *) arg;

	if (jq_distributed_mode())
	{
		jq_execute(JQ_PLAN_PURGE_WAITERS, p->values, p->nulls,
				   SPI_OK_UPDATE_RETURNING);
		if (SPI_processed > 0)
		{
			Datum	   *ids = palloc(sizeof(Datum) * SPI_processed);
			Datum		drop[2];
			uint64		i;

			for (i = 0; i < SPI_processed; i++)
				ids[i] = jq_result(i, 1);
			drop[0] = p->values[0];
			drop[1] = PointerGetDatum(construct_array(ids, (int) SPI_processed,
													  INT8OID, sizeof(int64),
													  FLOAT8PASSBYVAL,
													  TYPALIGN_DOUBLE));
			jq_execute(JQ_PLAN_DEPENDENCIES_DROP_OF, drop, NULL, SPI_OK_DELETE);
		}
	}
	jq_execute(JQ_PLAN_PURGE, p->values, p->nulls, SPI_OK_DELETE);
	p->purged = SPI_processed;
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
	JqPurge		purge;

	values[0] = CStringGetTextDatum(queue_name);
	values[1] = PointerGetDatum(older_than);
	if (older_than == NULL)
		nulls[1] = JQ_ISNULL;
	values[2] = Int32GetDatum(max_jobs);
	values[3] = TimestampTzGetDatum(GetCurrentTimestamp());

	purge.values = values;
	purge.nulls = nulls;
	jq_purge_run(&purge);
	jq_count(queue_name, JQ_CTR_PURGED, (int64) purge.purged);
	return (int64) purge.purged;
}

int64
jq_purge_local_batch(int max_jobs, bool *more)
{
	TimestampTz now = GetCurrentTimestamp();
	List	   *queues = jq_local_queues(false);
	ListCell   *lc;
	int64		purged = 0;

	*more = false;
	foreach(lc, queues)
	{
		const char *queue_name = (const char *) lfirst(lc);
		Datum		values[4];
		char		nulls[4] = {JQ_NOTNULL, JQ_ISNULL, JQ_NOTNULL, JQ_NOTNULL};
		ErrorData  *edata;
		JqPurge		purge = {values, nulls, 0};

		if (purged >= max_jobs)
		{
			*more = true;
			break;
		}
		values[0] = CStringGetTextDatum(queue_name);
		values[1] = TimestampTzGetDatum(now);
		jq_execute(JQ_PLAN_PURGE_DUE_QUEUE, values, NULL, SPI_OK_SELECT);
		if (!jq_result_bool(0, 1))
			continue;

		/* older_than NULL: the queue's retention */
		values[1] = (Datum) 0;
		values[2] = Int32GetDatum(max_jobs - (int) purged);
		values[3] = TimestampTzGetDatum(now);
		if (!jq_run_subxact(jq_purge_run, &purge, true, &edata))
		{
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("could not purge the finished jobs of queue \"%s\": %s",
							queue_name, edata->message),
					 errdetail("The worker tries again at its next pass.")));
			FreeErrorData(edata);
			continue;
		}
		jq_count(queue_name, JQ_CTR_PURGED, (int64) purge.purged);
		purged += (int64) purge.purged;
	}
	if (purged >= max_jobs)
		*more = true;
	return purged;
}

/*
 * jq_reap(max_jobs) returns bigint
 *
 * One reaping batch, for installations that run without the background
 * worker (call it from a scheduler).  Queues that got ready work are woken.
 * Also cancels up to max_jobs jobs past their start_by (counted as
 * expired, not in the result), and on Citus resolves the dependents of up
 * to max_jobs jobs that calls left to the worker (not in the result).
 */
Datum
jq_reap(PG_FUNCTION_ARGS)
{
	int32		max_jobs = jq_arg_positive_int4(fcinfo, 0, "max_jobs");
	int64		reaped;

	/* no list: queues that got ready work are woken at once */
	jq_spi_connect();
	if (!jq_distributed_mode())
	{
		reaped = jq_reap_batch(max_jobs, NULL, NULL);
		/* and the jobs past their deadline, as the worker does (controls.c) */
		(void) jq_expire_batch(NULL, max_jobs, GetCurrentTimestamp());
	}
	else
	{
		/*
		 * On Citus, queue by queue, each statement on the queue's shard, as
		 * the workers of the nodes do for their own queues; and the
		 * dependents that calls left to them
		 */
		List	   *queues = jq_all_queues();
		ListCell   *lc;
		bool		more;
		int64		expired = 0;
		int64		resolved = 0;

		reaped = jq_reap_queues_batch(queues, max_jobs, NULL, NULL, &more);
		foreach(lc, queues)
		{
			const char *queue_name = (const char *) lfirst(lc);

			if (expired < max_jobs)
				expired += jq_expire_batch(queue_name, max_jobs - (int) expired,
										   GetCurrentTimestamp());
			if (resolved < max_jobs)
				resolved += jq_dependencies_resolve_deferred(queue_name,
															 max_jobs - (int) resolved);
		}
	}
	jq_spi_finish();

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
