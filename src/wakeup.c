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

static void
jq_wakeup_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
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

	if (pending_wakes == NIL)
		return;
	switch (event)
	{
		case SUBXACT_EVENT_COMMIT_SUB:
			foreach(lc, pending_wakes)
			{
				JqPendingWake *w = (JqPendingWake *) lfirst(lc);

				if (w->nest_level >= level)
					w->nest_level = level - 1;
			}
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			foreach(lc, pending_wakes)
			{
				JqPendingWake *w = (JqPendingWake *) lfirst(lc);

				if (w->nest_level >= level)
					pending_wakes = foreach_delete_current(pending_wakes, lc);
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

	if (!callbacks_registered)
	{
		RegisterXactCallback(jq_wakeup_xact_callback, NULL);
		RegisterSubXactCallback(jq_wakeup_subxact_callback, NULL);
		callbacks_registered = true;
	}

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
