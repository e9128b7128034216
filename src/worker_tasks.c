/*-------------------------------------------------------------------------
 *
 * worker_tasks.c
 *	  The tasks a jobqueue worker runs in its database, and their table.
 *
 * The worker (worker.c) owns the loop, the transactions, signals and error
 * capture; a task only does one unit of work inside the transaction the
 * worker opened (SPI connected, snapshot pushed) and says whether another
 * unit is due at once.  The contract of a task:
 *	  - one unit is one short transaction: a bounded batch (reap_batch,
 *		purge_batch), never "everything";
 *	  - no state is kept between units, except what the table below passes
 *		along in one pass (the queues to announce);
 *	  - it raises errors freely: the worker records them against the task,
 *		in jq_worker_tasks(), and retries the task later with a backoff;
 *	  - every statement comes from the statement table (plans.c).
 *
 * A task may also have a next_due function (see JqWorkerTask): the schedule
 * task (schedules.c) is due at the next slot of any schedule, so the worker
 * sleeps until then instead of polling for it.
 *
 * Adding a task: write its unit function here (or in a file of its own),
 * add a JqTaskId in jobqueue.h and a line to jq_worker_tasks[] below; its
 * statistics appear in jq_worker_tasks() by themselves.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "commands/async.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/*
 * The announce task reports queues whose delayed or backed-off jobs became
 * ready in (jq_ready_checked_until, now]; the worker seeds it when it
 * attaches.
 */
TimestampTz jq_ready_checked_until = 0;

/* Earliest lease expiry seen by the last reap unit, 0 if none is running */
static TimestampTz next_lease_expiry = 0;

/*
 * The queues this worker announced during its visit, each with the time
 * just before its NOTIFY committed: every job of the queue ready by then was
 * covered by that notification (it wakes the queue, not a job).  Kept in
 * TopMemoryContext for the life of the worker; one entry per queue.
 */
typedef struct JqAnnounced
{
	TimestampTz at;
	char		queue_name[FLEXIBLE_ARRAY_MEMBER];
} JqAnnounced;

static List *announced = NIL;

static JqAnnounced *
jq_announced_find(const char *queue_name)
{
	ListCell   *lc;

	foreach(lc, announced)
	{
		JqAnnounced *a = (JqAnnounced *) lfirst(lc);

		if (strcmp(a->queue_name, queue_name) == 0)
			return a;
	}
	return NULL;
}

/* Remember that queue_name was announced at time at. */
void
jq_note_announced(const char *queue_name, TimestampTz at)
{
	JqAnnounced *a = jq_announced_find(queue_name);

	if (a == NULL)
	{
		MemoryContext oldcontext = MemoryContextSwitchTo(TopMemoryContext);

		a = palloc(offsetof(JqAnnounced, queue_name) + strlen(queue_name) + 1);
		strcpy(a->queue_name, queue_name);
		announced = lappend(announced, a);
		MemoryContextSwitchTo(oldcontext);
	}
	a->at = at;
}

/* Add a copy of name (in cxt) to list unless it is there. */
static List *
jq_add_name(List *list, const char *name, MemoryContext cxt)
{
	ListCell   *lc;
	MemoryContext oldcontext;

	foreach(lc, list)
	{
		if (strcmp((char *) lfirst(lc), name) == 0)
			return list;
	}
	oldcontext = MemoryContextSwitchTo(cxt);
	list = lappend(list, pstrdup(name));
	MemoryContextSwitchTo(oldcontext);
	return list;
}

/*
 * On Citus (jq_distributed_mode()) every task works on the queues whose
 * shard this node holds, one statement on the shard per queue: the reap
 * (jq_reap_queues_batch) with the expiry of deadlines (jq_expire_local)
 * and the dependents left to the node (jq_resolve_deferred_local), the
 * announce (JQ_PLAN_READY_QUEUE) and the purge (jq_purge_local_batch).
 * The statements of one server would run on every shard, FOR UPDATE across
 * shards, which Citus refuses.  The repair of group counters in the reap
 * task, likewise, runs queue by queue (jq_groups_repair_local).
 */

static void
jq_groups_repair_one(void *queue_name)
{
	(void) jq_groups_repair((const char *) queue_name);
}

/*
 * jq_groups_repair(queue_name) in a subtransaction: an error (a groups
 * table changed by hand, a statement the cluster refuses) is a WARNING,
 * and the repair is tried again at the next pass, rather than taking back
 * the reaps of the unit it ends and failing every pass after.
 */
static void
jq_groups_repair_guarded(const char *queue_name)
{
	ErrorData  *edata;

	if (jq_run_subxact(jq_groups_repair_one, (void *) queue_name, false, &edata))
		return;
	if (queue_name != NULL)
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not repair the group counters of queue \"%s\": %s",
						queue_name, edata->message),
				 errdetail("The worker tries again at its next pass.")));
	else
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not repair the group counters: %s", edata->message),
				 errdetail("The worker tries again at its next pass.")));
	FreeErrorData(edata);
}

/* On Citus: the repair of each queue whose shard this node holds */
static void
jq_groups_repair_local(void)
{
	List	   *queues = jq_local_queues(false);
	ListCell   *lc;

	foreach(lc, queues)
		jq_groups_repair_guarded((const char *) lfirst(lc));
}

/* jq_dependencies_resolve_deferred of one queue, for a subtransaction */
typedef struct JqDeferredUnit
{
	const char *queue_name;
	int			max_jobs;
	int			n;
} JqDeferredUnit;

static void
jq_resolve_deferred_one(void *arg)
{
	JqDeferredUnit *u = (JqDeferredUnit *) arg;

	u->n = jq_dependencies_resolve_deferred(u->queue_name, u->max_jobs);
}

/*
 * On Citus: the dependents that calls of the node's queues left to it
 * (jq_dependencies_resolve_deferred), queue by queue, up to max_jobs
 * finished jobs in all; each queue in a subtransaction, whose error is a
 * WARNING and is tried again at the next pass.  Returns how many were
 * looked at.
 */
static int64
jq_resolve_deferred_local(int max_jobs)
{
	List	   *queues = jq_local_queues(false);
	ListCell   *lc;
	int64		n = 0;

	foreach(lc, queues)
	{
		JqDeferredUnit u = {(const char *) lfirst(lc), max_jobs - (int) n, 0};
		ErrorData  *edata;

		if (n >= max_jobs)
			break;
		if (jq_run_subxact(jq_resolve_deferred_one, &u, false, &edata))
		{
			n += u.n;
			continue;
		}
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not resolve the deferred dependents of queue \"%s\": %s",
						u.queue_name, edata->message),
				 errdetail("The worker tries again at its next pass.")));
		FreeErrorData(edata);
	}
	return n;
}

/*
 * On Citus: the jobs past their start_by of the queues whose shard this
 * node holds, queue by queue, up to max_jobs in all
 */
static int64
jq_expire_local(int max_jobs, TimestampTz now)
{
	List	   *queues = jq_local_queues(false);
	ListCell   *lc;
	int64		n = 0;

	foreach(lc, queues)
	{
		if (n >= max_jobs)
			break;
		n += jq_expire_batch((const char *) lfirst(lc), max_jobs - (int) n, now);
	}
	return n;
}

/*
 * Reap: one batch of expired leases, and one of jobs past their start_by
 * (cancelled as EXPIRED, their dependents with them).  Queues in which
 * jobs became ready at once are added to *ready for the announce task.
 * The last unit also corrects the group counters that disagree with the
 * jobs (jq_groups_repair: after a restore without triggers, work done with
 * session_replication_role = replica), in a subtransaction whose error
 * does not undo the reaps (jq_groups_repair_guarded).  The last unit also
 * looks up when the next lease expires, so that the worker knows when this
 * database is due again -- unless the database is busy (jobs changed since
 * the previous pass began): the lookup would walk the lease index's entries
 * of every job finished since the last vacuum, and its answer would only
 * matter once the activity stops.  The expiry is then "now", which brings
 * the worker back soon (jq_worker_next_visit), never a stale time; the
 * first pass after the activity stopped looks it up.
 */
static int64
jq_task_reap(TimestampTz now, List **ready, MemoryContext cxt, bool *more)
{
	int64		n;
	int64		expired;

	if (jq_distributed_mode())
	{
		/* the node's own queues; back at the next interval to look again */
		n = jq_reap_queues_batch(jq_local_queues(false), jq_reap_batch_size, ready,
								 cxt, more);
		expired = jq_expire_local(jq_reap_batch_size, now);
		if (expired >= jq_reap_batch_size)
			*more = true;
		if (jq_resolve_deferred_local(jq_reap_batch_size) >= jq_reap_batch_size)
			*more = true;
		if (!*more && jq_ordering_installed())
			jq_groups_repair_local();
		next_lease_expiry = now;
		return n + expired;
	}
	n = jq_reap_batch(jq_reap_batch_size, ready, cxt);
	/* jobs past their deadline (controls.c), in the same short unit */
	expired = jq_expire_batch(NULL, jq_reap_batch_size, now);

	*more = n >= jq_reap_batch_size || expired >= jq_reap_batch_size;
	n += expired;
	if (*more)
		return n;
	/* the group counters, where something went around the triggers */
	if (jq_ordering_installed())
		jq_groups_repair_guarded(NULL);
	if (jq_worker_database_busy())
		next_lease_expiry = now;
	else
	{
		bool		isnull;
		Datum		d;

		jq_execute(JQ_PLAN_NEXT_LEASE_EXPIRY, NULL, NULL, SPI_OK_SELECT);
		d = jq_result_nullable(0, 1, &isnull);
		next_lease_expiry = isnull ? 0 : DatumGetTimestampTz(d);
	}
	return n;
}

/*
 * Add queue_name, whose latest job became ready at latest, to *ready unless
 * it was announced since: its jobs were ready when a commit's mark
 * announced the queue.
 */
static void
jq_announce_candidate(const char *queue_name, TimestampTz latest, List **ready,
					  MemoryContext cxt)
{
	JqAnnounced *a = jq_announced_find(queue_name);

	if (a != NULL && a->at >= latest)
		return;
	*ready = jq_add_name(*ready, queue_name, cxt);
}

/*
 * JQ_PLAN_READY_QUEUES on Citus: the node's queues whose listeners are
 * woken, each read on its shard (values: after, up to)
 */
static void
jq_announce_local(Datum *values, List **ready, MemoryContext cxt)
{
	List	   *queues = jq_local_queues(true);
	ListCell   *lc;
	Datum		qvalues[3];

	qvalues[0] = values[0];
	qvalues[1] = values[1];
	foreach(lc, queues)
	{
		const char *queue_name = (const char *) lfirst(lc);
		bool		isnull;
		Datum		latest;

		qvalues[2] = CStringGetTextDatum(queue_name);
		jq_execute(JQ_PLAN_READY_QUEUE, qvalues, NULL, SPI_OK_SELECT);
		latest = jq_result_nullable(0, 1, &isnull);
		if (!isnull)
			jq_announce_candidate(queue_name, DatumGetTimestampTz(latest), ready, cxt);
	}
}

/*
 * Announce: one NOTIFY per queue (with notifications on, not paused) whose
 * delayed or backed-off jobs became ready since the last check, plus the
 * queues reaping made ready.  Notifications are sent when this transaction
 * commits.
 */
static int64
jq_task_announce(TimestampTz now, List **ready, MemoryContext cxt, bool *more)
{
	Datum		values[2];
	ListCell   *lc;
	uint64		i;
	int64		n = 0;

	values[0] = TimestampTzGetDatum(jq_ready_checked_until);
	values[1] = TimestampTzGetDatum(now);
	if (jq_distributed_mode())
		jq_announce_local(values, ready, cxt);
	else
	{
		jq_execute(JQ_PLAN_READY_QUEUES, values, NULL, SPI_OK_SELECT);
		for (i = 0; i < SPI_processed; i++)
			jq_announce_candidate(jq_result_name(i, 1),
								  DatumGetTimestampTz(jq_result(i, 2)),
								  ready, cxt);
	}
	foreach(lc, *ready)
	{
		Async_Notify(JQ_NOTIFY_CHANNEL, (char *) lfirst(lc));
		jq_note_announced((char *) lfirst(lc), now);
		n++;
	}
	*ready = NIL;
	jq_ready_checked_until = now;
	*more = false;
	return n;
}

/*
 * Purge: one batch of finished jobs past their queue's retention, across
 * all queues (on Citus, the node's), oldest first within each queue.
 */
static int64
jq_task_purge(TimestampTz now, List **ready, MemoryContext cxt, bool *more)
{
	Datum		values[2];
	int64		n = 0;
	uint64		i;

	if (jq_distributed_mode())
		return jq_purge_local_batch(jq_purge_batch_size, more);
	values[0] = Int32GetDatum(jq_purge_batch_size);
	values[1] = TimestampTzGetDatum(now);
	jq_execute(JQ_PLAN_PURGE_DUE, values, NULL, SPI_OK_SELECT);
	/* one row per queue: its name and how many of its jobs were deleted */
	for (i = 0; i < SPI_processed; i++)
	{
		int64		count = DatumGetInt64(jq_result(i, 2));

		jq_count(jq_result_name(i, 1),
				 JQ_CTR_PURGED, count);
		n += count;
	}
	*more = n >= jq_purge_batch_size;
	return n;
}

/* The tasks, in the order a pass runs them (see JqTaskId) */
const JqWorkerTask jq_worker_tasks[JQ_NUM_TASKS] = {
	[JQ_TASK_REAP] = {"reap", "reaping expired jobqueue leases",
	&jq_reap_interval, jq_task_reap},
	[JQ_TASK_ANNOUNCE] = {"announce", "announcing ready jobqueue jobs",
	&jq_reap_interval, jq_task_announce},
	[JQ_TASK_PURGE] = {"purge", "purging finished jobqueue jobs",
	&jq_purge_interval, jq_task_purge},
	[JQ_TASK_SCHEDULE] = {"schedule", "enqueuing scheduled jobqueue jobs",
	&jq_reap_interval, jq_task_schedule, jq_schedules_next_due},
};

/* Earliest lease expiry seen by the last pass, 0 if none was running. */
TimestampTz
jq_next_lease_expiry(void)
{
	return next_lease_expiry;
}
