/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  The "queue has new work" hint.
 *
 * Workers may LISTEN on channel "jobqueue" to hear, by queue name, that a
 * queue has new ready work.  This is only a hint: it is sent after commit,
 * may be coalesced, and is lost if no one listens.  The jobs table is the
 * truth, and a worker that polls jq_claim finds every job without it.
 *
 * Two ways to send it:
 *
 * - When this database's background worker is running, the transaction only
 *	 remembers the queue names.  At commit (XACT_EVENT_COMMIT, when the new
 *	 jobs are already visible to others) a callback marks the queues in
 *	 shared memory and sets the worker's latch; the worker then sends one
 *	 NOTIFY per marked queue from a short transaction of its own.  This takes
 *	 NOTIFY off the producers' commit path: a transaction that issued NOTIFY
 *	 holds a cluster-wide lock from pre-commit until its commit record is
 *	 flushed, which serializes all such commits.  Abort (or rollback of the
 *	 subtransaction that enqueued) sends nothing; a prepared transaction
 *	 sends nothing either (it cannot NOTIFY at all, and its jobs are found by
 *	 polling or by the worker's next announcement of the queue).
 *
 * - Otherwise (library not preloaded, worker disabled, or not yet running
 *	 in this database) the transaction calls Async_Notify, as pg_notify
 *	 would: the notification is delivered at commit.
 *
 * Finished jobs of queues with notify_finished are announced the same way
 * on channel "jobqueue_finished", with payload "<id> <status>": one
 * notification per job, which listeners wait for, so it must not be
 * coalesced into "some queue".  The worker's table for them is bounded
 * (JQ_MAX_FINISHED_MARKS per pool slot), so the room is reserved at
 * XACT_EVENT_PRE_COMMIT, when the transaction can still NOTIFY: if it does
 * not fit, the session sends the notifications itself (Async_Notify), as
 * without a worker.  At commit the reserved entries are written; at abort
 * the reservation is given back.  A worker that leaves the database
 * between a reservation and the commit takes those notifications with it:
 * listeners should wait with a timeout and look at jq_job again.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/xact.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "utils/memutils.h"

/* A queue to mark at commit, and the subtransaction level that asked. */
typedef struct JqPendingWake
{
	int			nest_level;
	char		queue_name[FLEXIBLE_ARRAY_MEMBER];
} JqPendingWake;

/* Pending marks of the current transaction, in TopTransactionContext. */
static List *pending_wakes = NIL;
static bool callbacks_registered = false;

/* A finished job to announce at commit, and the subtransaction level */
typedef struct JqPendingFinished
{
	int			nest_level;
	JqFinishedMark mark;
} JqPendingFinished;

/* Finished jobs of the current transaction, in TopTransactionContext */
static List *pending_finished = NIL;
/* Reserved at pre-commit: the pool slot, how many, and the marks */
static int	finished_slot = -1;
static int	finished_nreserved = 0;
static JqFinishedMark *finished_marks = NULL;

static void jq_register_callbacks(void);

/*
 * At pre-commit: reserve room for the finished jobs in the worker's table,
 * or NOTIFY them from this session if there is no room (or no worker).
 */
static void
jq_finished_pre_commit(void)
{
	int			n = list_length(pending_finished);
	int			slot;
	ListCell   *lc;
	int			i = 0;

	if (n == 0)
		return;
	slot = jq_reserve_finished(MyDatabaseId, n);
	if (slot < 0)
	{
		foreach(lc, pending_finished)
		{
			JqPendingFinished *f = (JqPendingFinished *) lfirst(lc);

			Async_Notify(JQ_FINISHED_CHANNEL,
						 psprintf(INT64_FORMAT " %s", f->mark.id, f->mark.status));
		}
		pending_finished = NIL;
		return;
	}
	finished_marks = MemoryContextAlloc(TopTransactionContext,
										sizeof(JqFinishedMark) * n);
	foreach(lc, pending_finished)
		finished_marks[i++] = ((JqPendingFinished *) lfirst(lc))->mark;
	finished_slot = slot;
	finished_nreserved = n;
}

static void
jq_wakeup_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			jq_finished_pre_commit();
			break;
		case XACT_EVENT_COMMIT:
			if (finished_nreserved > 0)
				jq_mark_finished(finished_slot, MyDatabaseId, finished_marks,
								 finished_nreserved);
			finished_nreserved = 0;
			finished_slot = -1;
			finished_marks = NULL;
			pending_finished = NIL;
			{
				/* no allocation here: an error after commit would PANIC */
				const char *names[16];
				int			n = 0;
				ListCell   *lc;

				foreach(lc, pending_wakes)
				{
					names[n++] = ((JqPendingWake *) lfirst(lc))->queue_name;
					if (n == lengthof(names))
					{
						jq_mark_queues(MyDatabaseId, names, n);
						n = 0;
					}
				}
				jq_mark_queues(MyDatabaseId, names, n);
			}
			pending_wakes = NIL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_ABORT:
			if (finished_nreserved > 0)
				jq_unreserve_finished(finished_slot, MyDatabaseId,
									  finished_nreserved);
			finished_nreserved = 0;
			finished_slot = -1;
			finished_marks = NULL;
			pending_finished = NIL;
			pending_wakes = NIL;
			break;
		default:
			break;
	}
}

static void
jq_wakeup_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	switch (event)
	{
		case SUBXACT_EVENT_COMMIT_SUB:
			foreach(lc, pending_wakes)
			{
				JqPendingWake *w = (JqPendingWake *) lfirst(lc);

				if (w->nest_level >= level)
					w->nest_level = level - 1;
			}
			foreach(lc, pending_finished)
			{
				JqPendingFinished *f = (JqPendingFinished *) lfirst(lc);

				if (f->nest_level >= level)
					f->nest_level = level - 1;
			}
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			foreach(lc, pending_wakes)
			{
				JqPendingWake *w = (JqPendingWake *) lfirst(lc);

				if (w->nest_level >= level)
					pending_wakes = foreach_delete_current(pending_wakes, lc);
			}
			foreach(lc, pending_finished)
			{
				JqPendingFinished *f = (JqPendingFinished *) lfirst(lc);

				if (f->nest_level >= level)
					pending_finished = foreach_delete_current(pending_finished, lc);
			}
			break;
		default:
			break;
	}
}

/*
 * Ask for a wake-up of queue_name's listeners once the current transaction
 * commits.  Nothing is sent if it aborts.
 */
void
jq_wakeup_queue(const char *queue_name)
{
	int			level = GetCurrentTransactionNestLevel();
	JqPendingWake *w;
	ListCell   *lc;
	MemoryContext oldcontext;

	/* the database is due for a pass of its worker soon */
	jq_note_activity();
	if (!jq_worker_running(MyDatabaseId))
	{
		Async_Notify(JQ_NOTIFY_CHANNEL, queue_name);
		return;
	}

	jq_register_callbacks();

	foreach(lc, pending_wakes)
	{
		w = (JqPendingWake *) lfirst(lc);
		if (strcmp(w->queue_name, queue_name) == 0)
		{
			/* already asked; keep the outermost level that asked */
			if (w->nest_level > level)
				w->nest_level = level;
			return;
		}
	}

	oldcontext = MemoryContextSwitchTo(TopTransactionContext);
	w = palloc(offsetof(JqPendingWake, queue_name) + strlen(queue_name) + 1);
	w->nest_level = level;
	strcpy(w->queue_name, queue_name);
	pending_wakes = lappend(pending_wakes, w);
	MemoryContextSwitchTo(oldcontext);
}

static void
jq_register_callbacks(void)
{
	if (!callbacks_registered)
	{
		RegisterXactCallback(jq_wakeup_xact_callback, NULL);
		RegisterSubXactCallback(jq_wakeup_subxact_callback, NULL);
		callbacks_registered = true;
	}
}

/*
 * Announce on channel jobqueue_finished, once the current transaction
 * commits, that job job_id finished with status (succeeded, dead,
 * cancelled).  Nothing is sent if it aborts.
 */
void
jq_wakeup_finished(int64 job_id, const char *status)
{
	JqPendingFinished *f;
	MemoryContext oldcontext;

	if (!jq_worker_running(MyDatabaseId))
	{
		Async_Notify(JQ_FINISHED_CHANNEL,
					 psprintf(INT64_FORMAT " %s", job_id, status));
		return;
	}
	jq_register_callbacks();
	oldcontext = MemoryContextSwitchTo(TopTransactionContext);
	f = palloc0(sizeof(JqPendingFinished));
	f->nest_level = GetCurrentTransactionNestLevel();
	f->mark.id = job_id;
	strlcpy(f->mark.status, status, JQ_STATUS_MAXLEN);
	pending_finished = lappend(pending_finished, f);
	MemoryContextSwitchTo(oldcontext);
}
