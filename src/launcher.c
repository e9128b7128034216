/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The jobqueue launcher: one background worker per database.
 *
 * Registered at start-up when jobqueue is in shared_preload_libraries, the
 * launcher connects to no database: it reads the shared catalog pg_database
 * and keeps a per-database worker (worker.c) running in every database that
 * allows connections, is not a template, and is listed in
 * jobqueue.databases (empty: all).  It cannot see pg_extension of other
 * databases, so each worker checks for the extension itself and, if it is
 * absent, exits and tells the launcher through its slot; the launcher tries
 * again jobqueue.launcher_interval later (at once after CREATE EXTENSION
 * jobqueue, which wakes it, see utility.c).
 *
 * The per-database workers are dynamic workers with BGW_NEVER_RESTART and
 * the launcher as their supervisor: it is told when one stops
 * (bgw_notify_pid) and starts it again after JQ_WORKER_RESTART_DELAY if it
 * did not exit on purpose.  Letting the postmaster restart them instead
 * would restart, in a loop, a worker whose database was dropped, and a new
 * launcher (after a crash of the old one) could not stop it.  The launcher
 * itself has a bgw_restart_time, and after a crash of any process the
 * postmaster resets shared memory, restarts the launcher and the launcher
 * restarts every worker.
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

/* launcher-local: the handle of the worker started for each slot */
static BackgroundWorkerHandle **handles = NULL;
/* launcher-local: slots for which a lack of free worker slots was logged */
static bool *start_failed_logged = NULL;

/*
 * Register the launcher.  Called from _PG_init while shared_preload_libraries
 * is processed.
 */
void
jq_launcher_register(void)
{
	BackgroundWorker bgw;

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
	RegisterBackgroundWorker(&bgw);
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

static JqDatabase *
jq_launcher_find_db(List *databases, Oid dboid)
{
	ListCell   *lc;

	foreach(lc, databases)
	{
		JqDatabase *d = (JqDatabase *) lfirst(lc);

		if (d->oid == dboid)
			return d;
	}
	return NULL;
}

/*
 * Register a worker for the database of slot i.  On failure (no free
 * background worker slot) the launcher tries again at the next scan.
 */
static void
jq_launcher_start_worker(int i, JqDatabase *db, TimestampTz now)
{
	JqWorkerSlot *slot = &jq_shared->slots[i];
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher restarts it */
	strlcpy(bgw.bgw_library_name, "jobqueue", BGW_MAXLEN);
	strlcpy(bgw.bgw_function_name, "jq_worker_main", BGW_MAXLEN);
	snprintf(bgw.bgw_name, BGW_MAXLEN, "jobqueue worker for database %s",
			 db->name);
	strlcpy(bgw.bgw_type, "jobqueue worker", BGW_MAXLEN);
	bgw.bgw_main_arg = ObjectIdGetDatum(db->oid);
	bgw.bgw_notify_pid = MyProcPid;

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	slot->state = JQ_WORKER_STARTING;
	slot->stop_requested = false;
	LWLockRelease(jq_shared->lock);

	if (RegisterDynamicBackgroundWorker(&bgw, &handles[i]))
	{
		start_failed_logged[i] = false;
		return;
	}

	handles[i] = NULL;
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	slot->state = JQ_WORKER_NONE;
	slot->next_start = TimestampTzPlusMilliseconds(now, jq_launcher_interval);
	LWLockRelease(jq_shared->lock);
	if (!start_failed_logged[i])
	{
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start a jobqueue worker for database \"%s\"",
						db->name),
				 errdetail("Every background worker slot is in use."),
				 errhint("Increase max_worker_processes, or call jq_reap() from a scheduler in this database.")));
		start_failed_logged[i] = true;
	}
}

/*
 * Bring the slots in line with the wanted databases: notice workers that
 * stopped, start the ones that are due, stop those no longer wanted and
 * free their slots.  Returns how long to sleep (ms) until something is due.
 */
static long
jq_launcher_reconcile(List *databases, TimestampTz now)
{
	TimestampTz wake = TimestampTzPlusMilliseconds(now, jq_launcher_interval);
	int			i;

	/* claim a slot for each wanted database */
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	if (jq_worker_enabled)
	{
		ListCell   *lc;

		foreach(lc, databases)
		{
			JqDatabase *d = (JqDatabase *) lfirst(lc);

			/* when all are taken, the warning below comes at start time */
			(void) jq_slot_get(d->oid);
		}
	}
	LWLockRelease(jq_shared->lock);

	for (i = 0; i < jq_shared->nslots; i++)
	{
		JqWorkerSlot *slot = &jq_shared->slots[i];
		JqDatabase *db;
		pid_t		pid;
		Latch	   *latch = NULL;
		bool		start = false;

		/* a worker we started is gone: was it on purpose? */
		if (handles[i] != NULL &&
			GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED)
		{
			pfree(handles[i]);
			handles[i] = NULL;
			LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
			if (slot->pid == 0 && slot->state == JQ_WORKER_STARTING)
			{
				/* died before it attached (e.g. could not connect) */
				slot->state = JQ_WORKER_EXITED;
				slot->next_start = TimestampTzPlusMilliseconds(now,
															   JQ_WORKER_RESTART_DELAY);
			}
			LWLockRelease(jq_shared->lock);
		}

		LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
		if (slot->dboid == InvalidOid)
		{
			LWLockRelease(jq_shared->lock);
			continue;
		}
		db = jq_worker_enabled ? jq_launcher_find_db(databases, slot->dboid) : NULL;
		if (db == NULL)
		{
			/* not wanted (any more): stop the worker, then free the slot */
			if (slot->pid != 0)
			{
				slot->stop_requested = true;
				latch = slot->latch;
			}
			else if (handles[i] == NULL && slot->hold_until <= now)
				slot->dboid = InvalidOid;
		}
		else if (slot->pid == 0 && handles[i] == NULL &&
				 slot->state != JQ_WORKER_STARTING)
		{
			TimestampTz due = Max(slot->next_start, slot->hold_until);

			if (due <= now)
				start = true;
			else if (due < wake)
				wake = due;
		}
		LWLockRelease(jq_shared->lock);

		if (latch != NULL)
			SetLatch(latch);
		if (start)
			jq_launcher_start_worker(i, db, now);
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
									 sizeof(BackgroundWorkerHandle *) * jq_shared->nslots);
	start_failed_logged = MemoryContextAllocZero(TopMemoryContext,
												 sizeof(bool) * jq_shared->nslots);

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	jq_shared->launcher_pid = MyProcPid;
	jq_shared->launcher_latch = MyLatch;
	/*
	 * Workers a previous launcher registered but that never attached: this
	 * launcher has no handle for them.  Forget them; should one attach late
	 * next to a new one, the second to attach leaves.
	 */
	for (i = 0; i < jq_shared->nslots; i++)
	{
		if (jq_shared->slots[i].pid == 0 &&
			jq_shared->slots[i].state == JQ_WORKER_STARTING)
			jq_shared->slots[i].state = JQ_WORKER_NONE;
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
			next_scan = TimestampTzPlusMilliseconds(now, jq_launcher_interval);
		}

		timeout = jq_launcher_reconcile(databases, now);
		timeout = Min(timeout, (long) Max(0, (next_scan - now + 999) / 1000));

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
