/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Shared state of the launcher and the worker pool.
 *
 * Exists only when jobqueue is in shared_preload_libraries.  It holds
 *	  - the registry: one entry per database the launcher looks after (at
 *		most jobqueue.max_databases), with whether it has the extension, when
 *		it is next due for a visit, what each worker task did there, and the
 *		DDL hold;
 *	  - the pool: jobqueue.max_workers slots, each naming the database its
 *		worker serves, with the table of queues that committed transactions
 *		marked as having new work for that worker to announce;
 *	  - the launcher's pid and latch.
 *
 * Locking:
 *	  jq_shared->lock (LWLock, tranche "jobqueue") protects everything except
 *	  the marks and an entry's activity flag.  It is only ever held for a few
 *	  instructions: no catalog access, no ereport above DEBUG, no I/O and no
 *	  other lock while holding it, except that a pool slot's marks_lock may
 *	  be taken inside it.
 *	  JqPoolSlot->marks_lock (one LWLock per slot, same tranche) protects the
 *	  slot's marks.  The slot's dboid, state, pid and latch are written with
 *	  both locks held, so either lock is enough to read them: committing
 *	  backends take only the marks lock of their database's slot, so the
 *	  cost of a commit does not depend on the number of databases.
 *	  JqDatabaseEntry->activity is an atomic flag: backends set it when a
 *	  transaction that changed jobs commits, the worker resets it when a
 *	  pass starts.
 *	  jq_shared->queues_generation is an atomic counter: a backend adds one
 *	  when a transaction that changed jobqueue.queues commits, backends
 *	  read it to check their cache of queue settings (queuecache.c).
 *	  Latches of other processes are set after releasing the locks, with the
 *	  pointer read under them (a latch lives in PGPROC, so a stale pointer can
 *	  only wake a process that ignores it).
 *
 * Who writes what:
 *	  entries: the launcher allocates and frees them, sets next_visit
 *		when it starts a worker, and sets unwanted; the DDL hook sets
 *		extension, stop_requested and hold_until (and may allocate an
 *		entry); the worker sets extension, next_visit, the task statistics
 *		and the ticks.
 *	  pool slots: the launcher takes a slot for a database and registers
 *		its worker; the worker attaches (pid, latch, state) and frees the
 *		slot in its before_shmem_exit callback; the launcher frees the slot
 *		of a worker that died before attaching, and sets yield_requested.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

/* The shared state; NULL in a backend where the library was not preloaded. */
JqShared   *jq_shared = NULL;

/* This backend's registry entry, found once and checked at each use */
static int	my_entry_index = -1;

/* Size of the shared state, requested by jobqueue.c */
Size
jq_workers_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(JqShared));

	size = add_size(size, MAXALIGN(mul_size(jq_max_databases,
											sizeof(JqDatabaseEntry))));
	size = add_size(size, mul_size(jq_max_workers, sizeof(JqPoolSlot)));
	return size;
}

/* Number of locks in the tranche: the main lock and one per pool slot */
int
jq_workers_lock_count(void)
{
	return 1 + jq_max_workers;
}

/*
 * Create or attach to the shared state; called by jobqueue.c's
 * shmem_startup_hook with AddinShmemInitLock held.  Runs in the postmaster
 * at start-up and after a crash (then everything starts empty), and in each
 * backend under EXEC_BACKEND.
 */
void
jq_workers_shmem_init(void)
{
	bool		found;
	char	   *base;

	base = ShmemInitStruct(JQ_SHMEM_NAME, jq_workers_shmem_size(), &found);
	jq_shared = (JqShared *) base;
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche(JQ_SHMEM_NAME);
		int			i;

		/* shared memory is at the same address in every process */
		memset(base, 0, jq_workers_shmem_size());
		jq_shared->entries = (JqDatabaseEntry *) (base + MAXALIGN(sizeof(JqShared)));
		jq_shared->workers = (JqPoolSlot *)
			((char *) jq_shared->entries +
			 MAXALIGN(mul_size(jq_max_databases, sizeof(JqDatabaseEntry))));
		jq_shared->lock = &locks[0].lock;
		jq_shared->nentries = jq_max_databases;
		jq_shared->nworkers = jq_max_workers;
		jq_shared->rescan_requested = true;
		pg_atomic_init_u64(&jq_shared->queues_generation, 0);
		for (i = 0; i < jq_max_databases; i++)
		{
			jq_shared->entries[i].worker = -1;
			pg_atomic_init_u32(&jq_shared->entries[i].activity, 0);
		}
		for (i = 0; i < jq_max_workers; i++)
		{
			jq_shared->workers[i].marks_lock = &locks[1 + i].lock;
			jq_shared->workers[i].entry = -1;
		}
	}
}

/*
 * The registry entry of database dboid, or NULL.  The caller holds the
 * lock (shared is enough).
 */
JqDatabaseEntry *
jq_entry_find(Oid dboid)
{
	int			i;

	Assert(jq_shared != NULL);
	for (i = 0; i < jq_shared->nentries; i++)
	{
		if (jq_shared->entries[i].dboid == dboid)
			return &jq_shared->entries[i];
	}
	return NULL;
}

/*
 * The registry entry of database dboid, allocated (extension unknown, due
 * now) if there is none yet; NULL when the registry is full.  The caller
 * holds the lock exclusively.
 */
JqDatabaseEntry *
jq_entry_get(Oid dboid)
{
	JqDatabaseEntry *entry = jq_entry_find(dboid);
	int			i;

	if (entry != NULL)
		return entry;
	for (i = 0; i < jq_shared->nentries; i++)
	{
		entry = &jq_shared->entries[i];
		if (entry->dboid == InvalidOid)
		{
			/* the atomic stays initialized; only reset it */
			memset(&entry->tasks, 0, sizeof(entry->tasks));
			entry->dboid = dboid;
			entry->extension = JQ_EXT_UNKNOWN;
			entry->worker = -1;
			entry->next_visit = 0;
			entry->hold_until = 0;
			entry->stop_requested = false;
			entry->unwanted = false;
			entry->unserved = false;
			entry->started_at = 0;
			entry->last_tick = 0;
			pg_atomic_write_u32(&entry->activity, 0);
			return entry;
		}
	}
	jq_shared->registry_full = true;
	return NULL;
}

/*
 * The entry of the current database, or NULL.  Found once under the lock,
 * then read without it: an entry only changes database when it is freed
 * and reused, which the dboid check below notices.
 */
JqDatabaseEntry *
jq_my_entry(void)
{
	JqDatabaseEntry *entry;

	if (jq_shared == NULL || !OidIsValid(MyDatabaseId))
		return NULL;
	if (my_entry_index >= 0 &&
		jq_shared->entries[my_entry_index].dboid == MyDatabaseId)
		return &jq_shared->entries[my_entry_index];

	LWLockAcquire(jq_shared->lock, LW_SHARED);
	entry = jq_entry_find(MyDatabaseId);
	my_entry_index = entry != NULL ? (int) (entry - jq_shared->entries) : -1;
	LWLockRelease(jq_shared->lock);
	return entry;
}

/*
 * Free pool slot slot: no database, no process.  The caller holds the main
 * lock exclusively and has detached the slot from its registry entry.
 */
void
jq_pool_slot_clear(JqPoolSlot *slot)
{
	LWLockAcquire(slot->marks_lock, LW_EXCLUSIVE);
	slot->entry = -1;
	slot->dboid = InvalidOid;
	slot->state = JQ_WORKER_NONE;
	slot->pid = 0;
	slot->latch = NULL;
	slot->yield_requested = false;
	slot->nmarks = 0;
	slot->marks_overflow = false;
	slot->nfinished = 0;
	slot->finished_reserved = 0;
	LWLockRelease(slot->marks_lock);
}

/*
 * The pool slot serving database dboid through entry, with its marks lock
 * held, or NULL (nothing held).
 */
static JqPoolSlot *
jq_lock_serving_slot(JqDatabaseEntry *entry, Oid dboid)
{
	int			w = entry->worker;
	JqPoolSlot *slot;

	if (w < 0 || w >= jq_shared->nworkers)
		return NULL;
	slot = &jq_shared->workers[w];
	LWLockAcquire(slot->marks_lock, LW_EXCLUSIVE);
	if (slot->dboid == dboid && slot->state == JQ_WORKER_RUNNING &&
		slot->pid != 0)
		return slot;
	LWLockRelease(slot->marks_lock);
	return NULL;
}

/*
 * Is a worker serving the current database now, past its start-up checks?
 * Backends use this to choose between a mark in shared memory and NOTIFY.
 */
bool
jq_worker_running(Oid dboid)
{
	JqDatabaseEntry *entry;
	JqPoolSlot *slot;

	Assert(dboid == MyDatabaseId);
	entry = jq_my_entry();
	if (entry == NULL)
		return false;
	slot = jq_lock_serving_slot(entry, dboid);
	if (slot == NULL)
		return false;
	LWLockRelease(slot->marks_lock);
	return true;
}

/* Set in a transaction that changed jobs; acted on at its commit */
static bool activity_pending = false;
static bool activity_callback_registered = false;

/*
 * At commit, when the changes are visible: set the database's activity flag
 * (and wake the launcher if no worker is in the database).  Set any earlier,
 * a worker's pass could reset the flag and take its snapshot before the
 * commit, and miss both.  Must not fail: one atomic write and a latch.
 */
static void
jq_activity_xact_callback(XactEvent event, void *arg)
{
	JqDatabaseEntry *entry;

	if (!activity_pending)
		return;
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	activity_pending = false;
	if (event != XACT_EVENT_COMMIT)
		return;

	entry = jq_my_entry();
	if (entry == NULL || pg_atomic_read_u32(&entry->activity) != 0)
		return;
	pg_atomic_write_u32(&entry->activity, 1);
	/* no worker here now: the launcher decides when one comes */
	if (entry->worker < 0)
	{
		Latch	   *latch = jq_shared->launcher_latch;

		if (latch != NULL)
			SetLatch(latch);
	}
}

/*
 * Note that this transaction changes jobs in the current database (a claim
 * leases some, an enqueue adds some): once it commits, the database is due
 * for a pass of a worker within jobqueue.reap_interval.
 */
void
jq_note_activity(void)
{
	if (jq_shared == NULL)
		return;
	if (!activity_callback_registered)
	{
		RegisterXactCallback(jq_activity_xact_callback, NULL);
		activity_callback_registered = true;
	}
	activity_pending = true;
}

/*
 * Mark the nnames queues in names as having new work in the current
 * database and wake its worker.  Called at commit: must not raise an error
 * (and does not allocate).  When the table of marks is full the slot
 * remembers an overflow and the worker announces every queue.  When no
 * worker serves the database any more the marks are dropped: the
 * notification is only a hint, and the next worker announces what became
 * ready.
 */
void
jq_mark_queues(Oid dboid, const char *const *names, int nnames)
{
	JqDatabaseEntry *entry;
	JqPoolSlot *slot;
	Latch	   *latch;
	int			n;

	if (jq_shared == NULL || nnames == 0)
		return;
	entry = jq_my_entry();
	if (entry == NULL)
		return;
	slot = jq_lock_serving_slot(entry, dboid);
	if (slot == NULL)
		return;

	for (n = 0; n < nnames && !slot->marks_overflow; n++)
	{
		const char *name = names[n];
		bool		found = false;
		int			i;

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
	LWLockRelease(slot->marks_lock);

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

/*
 * Reserve room for n finished-job marks in the table of the worker serving
 * database dboid (the current one), at pre-commit.  Returns the pool slot,
 * or -1 when no worker serves it or the table has no room: the caller then
 * sends the notifications itself.
 */
int
jq_reserve_finished(Oid dboid, int n)
{
	JqDatabaseEntry *entry;
	JqPoolSlot *slot;
	int			result = -1;

	if (jq_shared == NULL)
		return -1;
	entry = jq_my_entry();
	if (entry == NULL)
		return -1;
	slot = jq_lock_serving_slot(entry, dboid);
	if (slot == NULL)
		return -1;
	if (slot->nfinished + slot->finished_reserved + n <= JQ_MAX_FINISHED_MARKS)
	{
		slot->finished_reserved += n;
		result = (int) (slot - jq_shared->workers);
	}
	LWLockRelease(slot->marks_lock);
	return result;
}

/* Give back a reservation of jq_reserve_finished (abort).  Never fails. */
void
jq_unreserve_finished(int slot_index, Oid dboid, int n)
{
	JqPoolSlot *slot;

	if (jq_shared == NULL || slot_index < 0 || slot_index >= jq_shared->nworkers)
		return;
	slot = &jq_shared->workers[slot_index];
	LWLockAcquire(slot->marks_lock, LW_EXCLUSIVE);
	if (slot->dboid == dboid && slot->finished_reserved >= n)
		slot->finished_reserved -= n;
	LWLockRelease(slot->marks_lock);
}

/*
 * Write the n marks reserved by jq_reserve_finished into the worker's
 * table and wake it.  Called at commit: must not fail, and does not
 * allocate.  If the slot serves another database by now (its worker left),
 * the marks are dropped.
 */
void
jq_mark_finished(int slot_index, Oid dboid, const JqFinishedMark *marks, int n)
{
	JqPoolSlot *slot;
	Latch	   *latch = NULL;

	if (jq_shared == NULL || slot_index < 0 || slot_index >= jq_shared->nworkers)
		return;
	slot = &jq_shared->workers[slot_index];
	LWLockAcquire(slot->marks_lock, LW_EXCLUSIVE);
	if (slot->dboid == dboid && slot->finished_reserved >= n &&
		slot->nfinished + n <= JQ_MAX_FINISHED_MARKS)
	{
		memcpy(&slot->finished[slot->nfinished], marks, sizeof(JqFinishedMark) * n);
		slot->nfinished += n;
		slot->finished_reserved -= n;
		latch = slot->latch;
	}
	LWLockRelease(slot->marks_lock);
	if (latch != NULL)
		SetLatch(latch);
}
