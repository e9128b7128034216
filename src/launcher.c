/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The jobqueue launcher: a bounded pool of workers for every database
 *	  that has the extension.
 *
 * Registered at start-up when jobqueue is in shared_preload_libraries, the
 * launcher connects to no database.  It keeps the registry (shmem.c): every
 * jobqueue.launcher_interval, and when woken by the DDL hook, it reads the
 * shared catalog pg_database and enters each database that allows
 * connections, is not a template and is listed in jobqueue.databases
 * (empty: all); entries of databases that are gone are freed.  A new entry
 * does not know whether its database has the extension (the launcher cannot
 * read pg_extension of other databases): it gets one visit, which finds
 * out.  From then on the DDL hook keeps that knowledge current (CREATE and
 * DROP EXTENSION jobqueue, CREATE DATABASE), so a database without the
 * extension never gets a process again.
 *
 * At most jobqueue.max_workers workers run at once, autovacuum-style: the
 * launcher starts a worker for the database that has been due the longest
 * (entries whose next_visit has passed).  A worker stays in its database
 * while no other database waits; when one does and every slot is taken, the
 * launcher asks the worker that has been serving the longest to yield after
 * its current pass.  The worker sets its database's next visit when it
 * leaves: within jobqueue.reap_interval when jobs changed there (a backend
 * set the entry's activity flag) or a lease expires by then, else at the
 * earliest lease expiry, at most jobqueue.idle_visit_interval later.
 *
 * The workers are dynamic workers with BGW_NEVER_RESTART and the launcher
 * as their supervisor (bgw_notify_pid): the launcher notices one that died
 * before attaching and frees its slot.  After a crash of any process the
 * postmaster resets shared memory; the launcher starts again with an empty
 * registry and rebuilds it.
 *
 * When no background worker slot is free (max_worker_processes), the
 * launcher logs a WARNING naming the database, once until it could be
 * served again, and jq_worker_status() says so in that database.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/bgworker_internals.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/* A database the launcher wants a worker in */
typedef struct JqDatabase
{
	Oid			oid;
	char		name[NAMEDATALEN];
} JqDatabase;

/* launcher-local: the handle of the worker started for each pool slot */
static BackgroundWorkerHandle **handles = NULL;
/* launcher-local: a lack of background worker slots was logged */
static bool start_failed_logged = false;
/* launcher-local: databases the full registry was logged for (hashed) */
#define JQ_LOGGED_BUCKETS 1024
static bool unregistered_logged[JQ_LOGGED_BUCKETS];

/* false when the postmaster refused to register the launcher */
bool		jq_launcher_registered = false;

/*
 * Register the launcher.  Called from _PG_init while shared_preload_libraries
 * is processed.  The postmaster only logs a refusal (too many background
 * workers for max_worker_processes); tell the administrator what it means
 * for jobqueue, and remember it for jq_worker_status() (backends inherit
 * the flag from the postmaster).
 */
void
jq_launcher_register(void)
{
	BackgroundWorker bgw;
	slist_iter	iter;
	int			before = 0;
	int			after = 0;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 5;
	strlcpy(bgw.bgw_library_name, "jobqueue", BGW_MAXLEN);
	strlcpy(bgw.bgw_function_name, "jq_launcher_main", BGW_MAXLEN);
	strlcpy(bgw.bgw_name, "jobqueue launcher", BGW_MAXLEN);
	strlcpy(bgw.bgw_type, "jobqueue launcher", BGW_MAXLEN);
	bgw.bgw_main_arg = (Datum) 0;
	bgw.bgw_notify_pid = 0;

	slist_foreach(iter, &BackgroundWorkerList)
		before++;
	RegisterBackgroundWorker(&bgw);
	slist_foreach(iter, &BackgroundWorkerList)
		after++;

	jq_launcher_registered = after > before;
	if (!jq_launcher_registered)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not register the jobqueue launcher"),
				 errdetail("max_worker_processes (%d) leaves no background worker slot for it; expired leases will not be reaped by the server.",
						   max_worker_processes),
				 errhint("Increase max_worker_processes by at least 1 + jobqueue.max_workers (%d) and restart the server, or call jq_reap() and jq_purge() from a scheduler.",
						 jq_max_workers)));
}

/*
 * The databases that should have a worker: they allow connections, are not
 * templates, are valid (not half-dropped) and pass jobqueue.databases.  A
 * heap scan of the shared catalog pg_database, in a transaction of its own;
 * the list is allocated in cxt.
 */
static List *
jq_launcher_databases(MemoryContext cxt)
{
	List	   *result = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, "scanning pg_database");
	(void) GetTransactionSnapshot();

	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		JqDatabase *d;
		MemoryContext oldcontext;

		/* -2: dropped half-way, see database_is_invalid_form() */
		if (!db->datallowconn || db->datistemplate || db->datconnlimit == -2)
			continue;
		if (!jq_database_wanted(NameStr(db->datname)))
			continue;

		oldcontext = MemoryContextSwitchTo(cxt);
		d = palloc(sizeof(JqDatabase));
		d->oid = db->oid;
		strlcpy(d->name, NameStr(db->datname), NAMEDATALEN);
		result = lappend(result, d);
		MemoryContextSwitchTo(oldcontext);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);

	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return result;
}

static bool
jq_launcher_wants(List *databases, Oid dboid)
{
	ListCell   *lc;

	foreach(lc, databases)
	{
		if (((JqDatabase *) lfirst(lc))->oid == dboid)
			return true;
	}
	return false;
}

static const char *
jq_launcher_db_name(List *databases, Oid dboid)
{
	ListCell   *lc;

	foreach(lc, databases)
	{
		JqDatabase *d = (JqDatabase *) lfirst(lc);

		if (d->oid == dboid)
			return d->name;
	}
	return "?";
}

/*
 * Bring the registry in line with the wanted databases: enter new ones,
 * stop the workers of those no longer wanted and free their entries.  A
 * database that finds no free entry is logged once.
 */
static void
jq_launcher_sync_registry(List *databases)
{
	ListCell   *lc;
	List	   *unregistered = NIL;
	int			i;
	List	   *to_wake = NIL;

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	jq_shared->registry_full = false;
	foreach(lc, databases)
	{
		JqDatabase *d = (JqDatabase *) lfirst(lc);

		if (jq_entry_get(d->oid) == NULL)
			unregistered = lappend(unregistered, d);
	}
	for (i = 0; i < jq_shared->nentries; i++)
	{
		JqDatabaseEntry *entry = &jq_shared->entries[i];

		if (entry->dboid == InvalidOid)
			continue;
		if (jq_launcher_wants(databases, entry->dboid))
		{
			/* wanted again (the pool back on): served as before */
			entry->unwanted = false;
			continue;
		}
		if (entry->worker >= 0)
		{
			JqPoolSlot *slot = &jq_shared->workers[entry->worker];

			entry->unwanted = true;
			if (slot->latch != NULL)
				to_wake = lappend(to_wake, slot->latch);
		}
		else if (entry->hold_until <= GetCurrentTimestamp())
			entry->dboid = InvalidOid;
	}
	LWLockRelease(jq_shared->lock);

	foreach(lc, to_wake)
		SetLatch((Latch *) lfirst(lc));

	foreach(lc, unregistered)
	{
		JqDatabase *d = (JqDatabase *) lfirst(lc);

		if (!unregistered_logged[d->oid % JQ_LOGGED_BUCKETS])
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("jobqueue cannot serve database \"%s\"", d->name),
					 errdetail("jobqueue.max_databases (%d) databases are registered already.",
							   jq_max_databases),
					 errhint("Increase jobqueue.max_databases and restart the server, or list the databases that use jobqueue in jobqueue.databases.")));
		unregistered_logged[d->oid % JQ_LOGGED_BUCKETS] = true;
	}
	list_free(unregistered);
	list_free(to_wake);
}

/*
 * Register a worker for entry e in pool slot w.  Returns false (and frees
 * the slot) when no background worker slot is free.
 */
static bool
jq_launcher_start_worker(int w, int e, const char *dbname)
{
	JqPoolSlot *slot = &jq_shared->workers[w];
	JqDatabaseEntry *entry = &jq_shared->entries[e];
	BackgroundWorker bgw;
	Oid			dboid;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher supervises */
	strlcpy(bgw.bgw_library_name, "jobqueue", BGW_MAXLEN);
	strlcpy(bgw.bgw_function_name, "jq_worker_main", BGW_MAXLEN);
	snprintf(bgw.bgw_name, BGW_MAXLEN, "jobqueue worker for database %s",
			 dbname);
	strlcpy(bgw.bgw_type, "jobqueue worker", BGW_MAXLEN);
	bgw.bgw_main_arg = Int32GetDatum(w);
	bgw.bgw_notify_pid = MyProcPid;

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	dboid = entry->dboid;
	jq_pool_slot_clear(slot);
	LWLockAcquire(slot->marks_lock, LW_EXCLUSIVE);
	slot->entry = e;
	slot->dboid = dboid;
	slot->state = JQ_WORKER_STARTING;
	LWLockRelease(slot->marks_lock);
	entry->worker = w;
	LWLockRelease(jq_shared->lock);
	memcpy(bgw.bgw_extra, &dboid, sizeof(Oid));

	if (RegisterDynamicBackgroundWorker(&bgw, &handles[w]))
	{
		LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
		entry->unserved = false;
		LWLockRelease(jq_shared->lock);
		start_failed_logged = false;
		return true;
	}

	handles[w] = NULL;
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	jq_pool_slot_clear(slot);
	entry->worker = -1;
	entry->unserved = true;
	LWLockRelease(jq_shared->lock);
	if (!start_failed_logged)
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start a jobqueue worker for database \"%s\"",
						dbname),
				 errdetail("Every background worker slot is in use."),
				 errhint("Increase max_worker_processes, or call jq_reap() from a scheduler in this database.")));
	start_failed_logged = true;
	return false;
}

/*
 * Free the slot of a worker that stopped before attaching (it could not
 * connect, or was terminated while starting); a worker that attached frees
 * its slot itself.
 */
static void
jq_launcher_collect(TimestampTz now)
{
	int			w;

	for (w = 0; w < jq_shared->nworkers; w++)
	{
		JqPoolSlot *slot = &jq_shared->workers[w];
		pid_t		pid;

		if (handles[w] == NULL ||
			GetBackgroundWorkerPid(handles[w], &pid) != BGWH_STOPPED)
			continue;
		pfree(handles[w]);
		handles[w] = NULL;

		LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
		if (slot->pid == 0 && slot->state == JQ_WORKER_STARTING)
		{
			if (slot->entry >= 0)
			{
				JqDatabaseEntry *entry = &jq_shared->entries[slot->entry];

				entry->worker = -1;
				entry->next_visit = TimestampTzPlusMilliseconds(now,
																JQ_WORKER_RESTART_DELAY);
			}
			jq_pool_slot_clear(slot);
		}
		LWLockRelease(jq_shared->lock);
	}
}

/*
 * When the database of entry is due for a visit: at its next_visit, or
 * within jobqueue.reap_interval of its last visit when jobs changed there
 * since (a backend set the activity flag), but never while DDL holds it.
 */
static TimestampTz
jq_entry_due(JqDatabaseEntry *entry)
{
	TimestampTz due = entry->next_visit;

	if (pg_atomic_read_u32(&entry->activity) != 0)
		due = Min(due, TimestampTzPlusMilliseconds(entry->started_at,
												   jq_reap_interval));
	return Max(due, entry->hold_until);
}

/*
 * Start workers for the databases that are due, longest due first, while
 * pool slots are free; when some are due and none is free, ask the workers
 * that have served the longest to yield.  Returns how long to sleep (ms)
 * until the next visit is due.
 */
static long
jq_launcher_schedule(List *databases, TimestampTz now)
{
	TimestampTz wake = TimestampTzPlusMilliseconds(now, jq_launcher_interval);

	for (;;)
	{
		int			best = -1;
		int			free_slot = -1;
		int			waiting = 0;
		int			i;

		LWLockAcquire(jq_shared->lock, LW_SHARED);
		for (i = 0; i < jq_shared->nentries; i++)
		{
			JqDatabaseEntry *entry = &jq_shared->entries[i];
			TimestampTz due;

			if (entry->dboid == InvalidOid || entry->worker >= 0 ||
				entry->extension == JQ_EXT_ABSENT || entry->stop_requested ||
				entry->unwanted)
				continue;
			due = jq_entry_due(entry);
			if (due > now)
			{
				if (due < wake)
					wake = due;
				continue;
			}
			waiting++;
			/* databases never looked at first, then the longest due */
			if (best < 0 ||
				(entry->extension == JQ_EXT_UNKNOWN &&
				 jq_shared->entries[best].extension != JQ_EXT_UNKNOWN) ||
				(entry->extension == jq_shared->entries[best].extension &&
				 due < jq_entry_due(&jq_shared->entries[best])))
				best = i;
		}
		for (i = 0; i < jq_shared->nworkers && free_slot < 0; i++)
		{
			if (jq_shared->workers[i].state == JQ_WORKER_NONE &&
				handles[i] == NULL)
				free_slot = i;
		}
		LWLockRelease(jq_shared->lock);

		if (best < 0)
			break;
		if (free_slot >= 0)
		{
			if (!jq_launcher_start_worker(free_slot, best,
										  jq_launcher_db_name(databases,
															  jq_shared->entries[best].dboid)))
			{
				/* no background worker slot: try again in a while */
				wake = Min(wake, TimestampTzPlusMilliseconds(now, JQ_WORKER_RESTART_DELAY));
				LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
				jq_shared->entries[best].next_visit =
					TimestampTzPlusMilliseconds(now, JQ_WORKER_RESTART_DELAY);
				LWLockRelease(jq_shared->lock);
			}
			continue;
		}

		/* every slot is busy: the longest-serving workers make room */
		{
			List	   *latches = NIL;
			ListCell   *lc;
			int			yielding = 0;

			LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
			for (i = 0; i < jq_shared->nworkers; i++)
				if (jq_shared->workers[i].yield_requested)
					yielding++;
			while (yielding < waiting)
			{
				int			oldest = -1;

				for (i = 0; i < jq_shared->nworkers; i++)
				{
					JqPoolSlot *slot = &jq_shared->workers[i];

					if (slot->state != JQ_WORKER_RUNNING || slot->yield_requested)
						continue;
					if (oldest < 0 ||
						slot->started_at < jq_shared->workers[oldest].started_at)
						oldest = i;
				}
				if (oldest < 0)
					break;
				jq_shared->workers[oldest].yield_requested = true;
				if (jq_shared->workers[oldest].latch != NULL)
					latches = lappend(latches, jq_shared->workers[oldest].latch);
				yielding++;
			}
			LWLockRelease(jq_shared->lock);
			foreach(lc, latches)
				SetLatch((Latch *) lfirst(lc));
			list_free(latches);
		}
		break;
	}

	return (long) Max(0, (wake - now + 999) / 1000);
}

/* before_shmem_exit callback: the launcher is gone */
static void
jq_launcher_detach(int code, Datum arg)
{
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	if (jq_shared->launcher_pid == MyProcPid)
	{
		jq_shared->launcher_pid = 0;
		jq_shared->launcher_latch = NULL;
	}
	LWLockRelease(jq_shared->lock);
}

/*
 * Entry point of the launcher.
 */
void
jq_launcher_main(Datum main_arg)
{
	MemoryContext scan_cxt;
	List	   *databases = NIL;
	TimestampTz next_scan = 0;
	int			i;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	if (jq_shared == NULL || IsBinaryUpgrade)
		proc_exit(0);

	handles = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(BackgroundWorkerHandle *) * jq_shared->nworkers);

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	jq_shared->launcher_pid = MyProcPid;
	jq_shared->launcher_latch = MyLatch;

	/*
	 * Workers a previous launcher registered but that never attached: this
	 * launcher has no handle for them.  Free their slots; should one attach
	 * late, it finds its slot taken by another database and leaves.
	 */
	for (i = 0; i < jq_shared->nworkers; i++)
	{
		JqPoolSlot *slot = &jq_shared->workers[i];

		if (slot->pid == 0 && slot->state == JQ_WORKER_STARTING)
		{
			if (slot->entry >= 0)
				jq_shared->entries[slot->entry].worker = -1;
			jq_pool_slot_clear(slot);
		}
	}
	LWLockRelease(jq_shared->lock);
	before_shmem_exit(jq_launcher_detach, (Datum) 0);

	/* no database: only shared catalogs are readable */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	SetConfigOption("application_name", "jobqueue launcher",
					PGC_SUSET, PGC_S_OVERRIDE);

	scan_cxt = AllocSetContextCreate(TopMemoryContext, "jobqueue launcher",
									 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		TimestampTz now;
		bool		rescan = false;
		long		timeout;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			rescan = true;
		}

		LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
		if (jq_shared->rescan_requested)
		{
			jq_shared->rescan_requested = false;
			rescan = true;
		}
		LWLockRelease(jq_shared->lock);

		now = GetCurrentTimestamp();
		if (rescan || now >= next_scan)
		{
			MemoryContextReset(scan_cxt);
			databases = NIL;
			if (jq_worker_enabled)
				databases = jq_launcher_databases(scan_cxt);
			jq_launcher_sync_registry(databases);
			next_scan = TimestampTzPlusMilliseconds(now, jq_launcher_interval);
		}

		jq_launcher_collect(now);
		timeout = jq_worker_enabled ? jq_launcher_schedule(databases, now) : jq_launcher_interval;
		timeout = Min(timeout, (long) Max(0, (next_scan - now + 999) / 1000));

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
