/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Shared state of the launcher and the per-database workers.
 *
 * Exists only when jobqueue is in shared_preload_libraries.  It holds one
 * slot per database that the launcher looks after (at most
 * max_worker_processes of them), the launcher's pid and latch, and in each
 * slot the table of queues that committed transactions marked as having new
 * work for that database's worker to announce.
 *
 * Locking: one LWLock (tranche "jobqueue") protects all of it.  It is only
 * ever held for a few instructions: no catalog access, no ereport above
 * DEBUG, no I/O and no other lock while holding it.  Setting another
 * process's latch happens after the lock is released, with the latch
 * pointer read under it (a latch lives in the PGPROC array, so a stale
 * pointer wakes at worst a process that does not care).
 *
 * Who writes what:
 *	  dboid, next_start	the launcher (allocation, start schedule); the DDL
 *						hook may allocate a slot to hold a database
 *	  state, pid, latch	the worker attaching and detaching; the launcher
 *						when it registers a worker or sees it gone
 *	  stop_requested,	the DDL hook and the launcher (stop a worker);
 *	  hold_until		the DDL hook (no new worker while it runs)
 *	  counters, ticks	the worker
 *	  marks				committing backends add, the worker takes
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"


/* The shared state; NULL in a backend where the library was not preloaded. */
JqShared   *jq_shared = NULL;

/* Size of the shared state, requested by jobqueue.c */
Size
jq_workers_shmem_size(void)
{
	return add_size(offsetof(JqShared, slots),
					mul_size(max_worker_processes, sizeof(JqWorkerSlot)));
}

/*
 * Create or attach to the shared state; called by jobqueue.c's
 * shmem_startup_hook with AddinShmemInitLock held.  Runs in the postmaster
 * at start-up and after a crash (then everything is reset), and in each
 * backend under EXEC_BACKEND.
 */
void
jq_workers_shmem_init(void)
{
	bool		found;

	jq_shared = ShmemInitStruct(JQ_SHMEM_NAME, jq_workers_shmem_size(), &found);
	if (!found)
	{
		memset(jq_shared, 0, jq_workers_shmem_size());
		jq_shared->lock = &(GetNamedLWLockTranche(JQ_SHMEM_NAME))->lock;
		jq_shared->nslots = max_worker_processes;
	}
}

/*
 * The slot of database dboid, or NULL.  The caller holds the lock (shared
 * is enough).
 */
JqWorkerSlot *
jq_slot_find(Oid dboid)
{
	int			i;

	Assert(jq_shared != NULL);
	for (i = 0; i < jq_shared->nslots; i++)
	{
		if (jq_shared->slots[i].dboid == dboid)
			return &jq_shared->slots[i];
	}
	return NULL;
}

/*
 * The slot of database dboid, allocated (and reset) if there is none yet;
 * NULL when every slot is taken.  The caller holds the lock exclusively.
 */
JqWorkerSlot *
jq_slot_get(Oid dboid)
{
	JqWorkerSlot *slot = jq_slot_find(dboid);
	int			i;

	if (slot != NULL)
		return slot;
	for (i = 0; i < jq_shared->nslots; i++)
	{
		slot = &jq_shared->slots[i];
		if (slot->dboid == InvalidOid)
		{
			memset(slot, 0, sizeof(JqWorkerSlot));
			slot->dboid = dboid;
			slot->state = JQ_WORKER_NONE;
			return slot;
		}
	}
	return NULL;
}

/*
 * Is a worker attached to dboid and past its start-up checks?  Committing
 * backends use this to choose between a mark in shared memory and NOTIFY.
 */
bool
jq_worker_running(Oid dboid)
{
	JqWorkerSlot *slot;
	bool		running = false;

	if (jq_shared == NULL)
		return false;
	LWLockAcquire(jq_shared->lock, LW_SHARED);
	slot = jq_slot_find(dboid);
	if (slot != NULL && slot->state == JQ_WORKER_RUNNING && slot->pid != 0)
		running = true;
	LWLockRelease(jq_shared->lock);
	return running;
}

/*
 * Mark the nnames queues in names as having new work in database dboid
 * and wake its worker.  Called at commit: must not raise an error (and does
 * not allocate).  When the table of marks is full the slot remembers an overflow
 * and the worker announces every queue.  With no slot (the database lost
 * its worker since the enqueue) the marks are dropped: the notification is
 * only a hint, and a worker that starts later announces what became ready.
 */
void
jq_mark_queues(Oid dboid, const char *const *names, int nnames)
{
	JqWorkerSlot *slot;
	Latch	   *latch = NULL;
	int			n;

	if (jq_shared == NULL || nnames == 0)
		return;

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	slot = jq_slot_find(dboid);
	if (slot != NULL)
	{
		for (n = 0; n < nnames; n++)
		{
			const char *name = names[n];
			bool		found = false;
			int			i;

			if (slot->marks_overflow)
				break;
			for (i = 0; i < slot->nmarks; i++)
			{
				if (strcmp(slot->marks[i], name) == 0)
				{
					found = true;
					break;
				}
			}
			if (found)
				continue;
			if (slot->nmarks >= JQ_MAX_MARKS)
				slot->marks_overflow = true;
			else
				strlcpy(slot->marks[slot->nmarks++], name,
						JQ_QUEUE_NAME_MAXLEN + 1);
		}
		latch = slot->latch;
	}
	LWLockRelease(jq_shared->lock);

	if (latch != NULL)
		SetLatch(latch);
}

/* Wake the launcher, if there is one. */
void
jq_launcher_wake(bool rescan)
{
	Latch	   *latch;

	if (jq_shared == NULL)
		return;
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	if (rescan)
		jq_shared->rescan_requested = true;
	latch = jq_shared->launcher_latch;
	LWLockRelease(jq_shared->lock);
	if (latch != NULL)
		SetLatch(latch);
}
