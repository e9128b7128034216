/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The per-database background worker, its GUCs and jq_worker_status().
 *
 * The launcher starts one worker per database (see launcher.c).  The worker
 * attaches to its database's slot in shared memory, connects, checks that
 * the extension is installed (exits quietly, telling the launcher, if it is
 * not), and then loops:
 *
 *	- when woken by a committing producer: one short transaction sends a
 *	  NOTIFY for every queue marked in its slot (see wakeup.c);
 *	- every jobqueue.reap_interval (a "tick"):
 *		reap expired leases with jq_reap_batch(), jobqueue.reap_batch jobs
 *		per transaction, until a batch comes back short;
 *		announce queues whose delayed or backed-off jobs became ready since
 *		the last tick (and those reaping made ready at once);
 *		purge finished jobs past their queue's retention with
 *		jq_purge_batch(), jobqueue.purge_batch jobs per transaction.
 *
 * Every unit of work is its own transaction; nothing (no transaction, no
 * snapshot) is held between them, so the worker never holds back vacuum.
 * Each transaction first takes a share lock on the extension object, the
 * lock DROP EXTENSION takes exclusively: a drop waits for the current batch,
 * and the next batch sees the extension gone and the worker exits quietly.
 * An error in a tick is logged, recorded in the slot, and the work is
 * retried at the next tick.
 *
 * Commits are asynchronous (synchronous_commit = off in this process): a
 * reap or purge lost in a crash is simply done again, and a notification is
 * only a hint.  That keeps the worker from waiting on WAL flushes.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(jq_worker_status);

/* GUCs */
bool		jq_worker_enabled = true;
char	   *jq_worker_databases = NULL;
int			jq_launcher_interval = 10000;	/* ms */
int			jq_reap_interval = 1000;	/* ms */
int			jq_reap_batch_size = 1000;
int			jq_purge_batch_size = 10000;

/* State of the running worker process */
static Oid	worker_dboid = InvalidOid;
static JqWorkerSlot *worker_slot = NULL;
static MemoryContext tick_cxt = NULL;
static TimestampTz ready_checked_until = 0;

static bool
jq_check_databases(char **newval, void **extra, GucSource source)
{
	char	   *rawstring = pstrdup(*newval);
	List	   *names;
	bool		ok = SplitGUCList(rawstring, ',', &names);

	if (!ok)
		GUC_check_errdetail("List syntax is invalid.");
	list_free(names);
	pfree(rawstring);
	return ok;
}

/*
 * Define the GUCs of the launcher and the workers.  They are defined in
 * every process that loads the library, preloaded or not, so that
 * postgresql.conf may set them and SHOW shows them.
 */
void
jq_worker_guc_init(void)
{
	DefineCustomBoolVariable("jobqueue.worker_enabled",
							 "Runs the jobqueue background workers.",
							 "Needs jobqueue in shared_preload_libraries.  "
							 "When off, call jq_reap() and jq_purge() from a scheduler.",
							 &jq_worker_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("jobqueue.databases",
							   "Databases in which jobqueue workers run.",
							   "A comma-separated list of database names; "
							   "empty means every database that has the extension.",
							   &jq_worker_databases,
							   "",
							   PGC_SIGHUP, GUC_LIST_INPUT,
							   jq_check_databases, NULL, NULL);

	DefineCustomIntVariable("jobqueue.launcher_interval",
							"Time between two scans of the databases by the jobqueue launcher.",
							"A database where the extension is created gets its worker within this time.",
							&jq_launcher_interval,
							10000, 100, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("jobqueue.reap_interval",
							"Time between two passes of a jobqueue worker over its database.",
							"Each pass reaps expired leases, announces jobs that became ready and purges old jobs.",
							&jq_reap_interval,
							1000, 10, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("jobqueue.reap_batch",
							"Largest number of expired leases a jobqueue worker reaps in one transaction.",
							NULL,
							&jq_reap_batch_size,
							1000, 1, 1000000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("jobqueue.purge_batch",
							"Largest number of finished jobs a jobqueue worker purges in one transaction.",
							NULL,
							&jq_purge_batch_size,
							10000, 1, 1000000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
}

/*
 * Does jobqueue.databases let a worker run in database dbname?
 */
bool
jq_database_wanted(const char *dbname)
{
	char	   *rawstring;
	List	   *names;
	ListCell   *lc;
	bool		wanted = false;

	if (jq_worker_databases == NULL || jq_worker_databases[0] == '\0')
		return true;
	rawstring = pstrdup(jq_worker_databases);
	if (!SplitGUCList(rawstring, ',', &names))
	{
		/* the check hook lets no such value in */
		pfree(rawstring);
		return false;
	}
	foreach(lc, names)
	{
		if (strcmp((char *) lfirst(lc), dbname) == 0)
		{
			wanted = true;
			break;
		}
	}
	list_free(names);
	pfree(rawstring);
	return wanted;
}

/*
 * Record state in our slot and exit.  proc_exit runs jq_worker_detach.
 */
static void
jq_worker_exit(JqWorkerState state)
{
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	worker_slot->state = state;
	if (state == JQ_WORKER_NO_EXTENSION)
		worker_slot->next_start = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															  jq_launcher_interval);
	LWLockRelease(jq_shared->lock);
	proc_exit(0);
}

/*
 * before_shmem_exit callback: leave the slot.  A worker that did not say
 * why it leaves (an error, pg_terminate_backend) is restarted by the
 * launcher after a short delay.
 */
static void
jq_worker_detach(int code, Datum arg)
{
	if (worker_slot == NULL)
		return;
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	if (worker_slot->pid == MyProcPid && worker_slot->dboid == worker_dboid)
	{
		worker_slot->pid = 0;
		worker_slot->latch = NULL;
		if (worker_slot->state == JQ_WORKER_STARTING ||
			worker_slot->state == JQ_WORKER_RUNNING)
		{
			worker_slot->state = JQ_WORKER_EXITED;
			worker_slot->next_start =
				TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											JQ_WORKER_RESTART_DELAY);
		}
	}
	LWLockRelease(jq_shared->lock);
	jq_launcher_wake(false);
}

/*
 * Take our database's slot.  Returns false when this worker is not wanted:
 * no slot (the launcher gave the database up), another worker is attached,
 * or DDL on the database asked workers to stay away.
 */
static bool
jq_worker_attach(Oid dboid)
{
	JqWorkerSlot *slot;
	bool		ok = false;

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	slot = jq_slot_find(dboid);
	if (slot != NULL && slot->pid == 0)
	{
		if (slot->stop_requested ||
			slot->hold_until > GetCurrentTimestamp())
		{
			if (slot->state == JQ_WORKER_STARTING)
				slot->state = JQ_WORKER_STOPPED;
		}
		else
		{
			slot->pid = MyProcPid;
			slot->latch = MyLatch;
			slot->state = JQ_WORKER_STARTING;
			slot->started_at = GetCurrentTimestamp();
			slot->reaped = slot->purged = slot->notified = 0;
			worker_slot = slot;
			ok = true;
		}
	}
	LWLockRelease(jq_shared->lock);
	return ok;
}

/* Must the worker exit now (stop requested, or turned off)? */
static bool
jq_worker_should_stop(void)
{
	bool		stop;

	if (!jq_worker_enabled)
		return true;
	LWLockAcquire(jq_shared->lock, LW_SHARED);
	stop = worker_slot->stop_requested;
	LWLockRelease(jq_shared->lock);
	return stop;
}

static void
jq_worker_check_stop(void)
{
	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	if (jq_worker_should_stop())
		jq_worker_exit(JQ_WORKER_STOPPED);
}

/*
 * Start a unit of work: a transaction, the extension locked against DROP
 * EXTENSION, a snapshot taken after that lock, and an SPI connection.
 * Returns false, with no transaction open, if the extension is not
 * installed.
 */
static bool
jq_work_begin(const char *activity)
{
	Oid			extoid;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, activity);

	extoid = get_extension_oid("jobqueue", true);
	if (OidIsValid(extoid))
	{
		/* waits while a DROP EXTENSION runs; then look again */
		LockDatabaseObject(ExtensionRelationId, extoid, 0, AccessShareLock);
		if (get_extension_oid("jobqueue", true) != extoid)
			extoid = InvalidOid;
	}
	if (!OidIsValid(extoid))
	{
		CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);
		return false;
	}

	jq_spi_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	return true;
}

static void
jq_work_end(void)
{
	jq_spi_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* Add name to list (of C strings in tick_cxt) unless it is there. */
static List *
jq_add_name(List *list, const char *name)
{
	ListCell   *lc;
	MemoryContext oldcontext;

	foreach(lc, list)
	{
		if (strcmp((char *) lfirst(lc), name) == 0)
			return list;
	}
	oldcontext = MemoryContextSwitchTo(tick_cxt);
	list = lappend(list, pstrdup(name));
	MemoryContextSwitchTo(oldcontext);
	return list;
}

/* One transaction that sends a NOTIFY for each queue in names. */
static void
jq_send_notifications(List *names)
{
	ListCell   *lc;

	if (names == NIL)
		return;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, "sending jobqueue notifications");
	foreach(lc, names)
		Async_Notify(JQ_NOTIFY_CHANNEL, (char *) lfirst(lc));
	CommitTransactionCommand();
#if PG_VERSION_NUM < 150000
	/* before 15, listeners are signalled here, not at commit */
	ProcessCompletedNotifies();
#endif
	pgstat_report_activity(STATE_IDLE, NULL);

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	worker_slot->notified += list_length(names);
	LWLockRelease(jq_shared->lock);
}

/*
 * Take the queues that committed transactions marked, and announce them.
 * After an overflow of the table of marks, every queue with notifications
 * on (and not paused) is announced.
 */
static void
jq_announce_marked(void)
{
	List	   *names = NIL;
	bool		overflow;
	int			i;

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	overflow = worker_slot->marks_overflow;
	if (worker_slot->nmarks == 0 && !overflow)
	{
		LWLockRelease(jq_shared->lock);
		return;
	}
	/* no allocation under the lock: copy to the stack first */
	{
		int			n = worker_slot->nmarks;
		char		marks[JQ_MAX_MARKS][JQ_QUEUE_NAME_MAXLEN + 1];

		memcpy(marks, worker_slot->marks, sizeof(marks));
		worker_slot->nmarks = 0;
		worker_slot->marks_overflow = false;
		LWLockRelease(jq_shared->lock);

		for (i = 0; i < n; i++)
			names = jq_add_name(names, marks[i]);
	}

	if (overflow)
	{
		if (!jq_work_begin("listing jobqueue queues"))
			jq_worker_exit(JQ_WORKER_NO_EXTENSION);
		jq_execute(JQ_PLAN_NOTIFY_QUEUES, NULL, NULL, SPI_OK_SELECT);
		for (i = 0; i < SPI_processed; i++)
			names = jq_add_name(names, jq_result_name(i, 1));
		jq_work_end();
	}
	jq_send_notifications(names);
}

/*
 * One pass over the database: reap, announce, purge.  now is the time the
 * tick started.
 */
static void
jq_worker_tick(TimestampTz now)
{
	List	   *ready = NIL;
	List	   *queues = NIL;
	ListCell   *lc;
	int64		n;
	Datum		values[2];
	uint64		i;

	/* expired leases, one short transaction per batch */
	do
	{
		if (!jq_work_begin("reaping expired jobqueue leases"))
			jq_worker_exit(JQ_WORKER_NO_EXTENSION);
		n = jq_reap_batch(jq_reap_batch_size, &ready, tick_cxt);
		jq_work_end();

		LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
		worker_slot->reaped += n;
		LWLockRelease(jq_shared->lock);

		/* between batches: stay responsive to signals and to producers */
		jq_worker_check_stop();
		jq_announce_marked();
	} while (n >= jq_reap_batch_size);

	/* queues whose delayed or backed-off jobs became ready */
	if (!jq_work_begin("looking for ready jobqueue jobs"))
		jq_worker_exit(JQ_WORKER_NO_EXTENSION);
	values[0] = TimestampTzGetDatum(ready_checked_until);
	values[1] = TimestampTzGetDatum(now);
	jq_execute(JQ_PLAN_READY_QUEUES, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < SPI_processed; i++)
		ready = jq_add_name(ready, jq_result_name(i, 1));
	/* and the list of queues for the purge */
	jq_execute(JQ_PLAN_QUEUE_NAMES, NULL, NULL, SPI_OK_SELECT);
	for (i = 0; i < SPI_processed; i++)
		queues = jq_add_name(queues, jq_result_name(i, 1));
	jq_work_end();
	ready_checked_until = now;
	jq_send_notifications(ready);

	/* finished jobs past retention, per queue, one batch per transaction */
	foreach(lc, queues)
	{
		do
		{
			if (!jq_work_begin("purging finished jobqueue jobs"))
				jq_worker_exit(JQ_WORKER_NO_EXTENSION);
			n = jq_purge_batch((char *) lfirst(lc), NULL, jq_purge_batch_size);
			jq_work_end();

			LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
			worker_slot->purged += n;
			LWLockRelease(jq_shared->lock);

			jq_worker_check_stop();
			jq_announce_marked();
		} while (n >= jq_purge_batch_size);
	}

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	worker_slot->last_tick = now;
	LWLockRelease(jq_shared->lock);
	pgstat_report_stat(true);
}

/*
 * Log the error being handled, remember it in the slot, and get back to a
 * clean state outside any transaction.
 */
static void
jq_worker_recover(MemoryContext loop_cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(loop_cxt);
	edata = CopyErrorData();
	EmitErrorReport();
	FlushErrorState();
	AbortCurrentTransaction();
	pgstat_report_activity(STATE_IDLE, NULL);

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	strlcpy(worker_slot->last_error,
			edata->message ? edata->message : "unknown error",
			JQ_LAST_ERROR_LEN);
	worker_slot->last_error_at = GetCurrentTimestamp();
	LWLockRelease(jq_shared->lock);
	FreeErrorData(edata);
}

/*
 * Entry point of a per-database worker; main_arg is the database's OID.
 */
void
jq_worker_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	MemoryContext loop_cxt;
	volatile TimestampTz tick_started = 0;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	if (jq_shared == NULL)
		proc_exit(0);
	worker_dboid = dboid;
	before_shmem_exit(jq_worker_detach, (Datum) 0);
	if (!jq_worker_attach(dboid))
		proc_exit(0);

	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	SetConfigOption("application_name", "jobqueue worker",
					PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	/* generic plans of small statements, run every tick: never worth JIT */
	SetConfigOption("jit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	if (IsBinaryUpgrade)
		jq_worker_exit(JQ_WORKER_STOPPED);

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "jobqueue worker",
									 ALLOCSET_DEFAULT_SIZES);
	tick_cxt = AllocSetContextCreate(loop_cxt, "jobqueue worker tick",
									 ALLOCSET_DEFAULT_SIZES);

	/* is the extension here at all? */
	if (!jq_work_begin("checking for the jobqueue extension"))
		jq_worker_exit(JQ_WORKER_NO_EXTENSION);
	jq_work_end();

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	worker_slot->state = JQ_WORKER_RUNNING;
	/* announce what became ready while no worker ran, if one ran before */
	ready_checked_until = worker_slot->last_tick != 0 ?
		worker_slot->last_tick : worker_slot->started_at;
	LWLockRelease(jq_shared->lock);

	ereport(DEBUG1,
			(errmsg_internal("jobqueue worker started in database %u", dboid)));

	for (;;)
	{
		TimestampTz now;
		TimestampTz next_tick;
		long		timeout;

		MemoryContextSwitchTo(loop_cxt);
		jq_worker_check_stop();

		now = GetCurrentTimestamp();
		PG_TRY();
		{
			MemoryContextReset(tick_cxt);
			jq_announce_marked();
			/* jq_reap_interval is read afresh: a reload takes effect here */
			if (tick_started == 0 ||
				now >= TimestampTzPlusMilliseconds(tick_started,
												   jq_reap_interval))
			{
				/* set first: after an error, retry at the next tick */
				tick_started = now;
				if (!RecoveryInProgress())
					jq_worker_tick(now);
			}
		}
		PG_CATCH();
		{
			jq_worker_recover(loop_cxt);
		}
		PG_END_TRY();

		next_tick = TimestampTzPlusMilliseconds(tick_started, jq_reap_interval);
		now = GetCurrentTimestamp();
		timeout = now >= next_tick ? 0 :
			(long) ((next_tick - now + 999) / 1000);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * jq_worker_status() returns record
 *
 * The background worker of the current database: whether one is configured
 * and attached, its pid, start, last tick and what it did since it started.
 * Without shared_preload_libraries: configured = false, the rest NULL.
 */
Datum
jq_worker_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[11];
	bool		nulls[11];
	const char *state;
	bool		configured;
	JqWorkerSlot slot;
	bool		have_slot = false;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	memset(nulls, true, sizeof(nulls));

	if (jq_shared == NULL)
	{
		configured = false;
		state = "not preloaded";
	}
	else if (!jq_worker_enabled)
	{
		configured = false;
		state = "disabled";
	}
	else if (!jq_database_wanted(get_database_name(MyDatabaseId)))
	{
		configured = false;
		state = "excluded";
	}
	else
	{
		JqWorkerSlot *s;

		configured = true;
		LWLockAcquire(jq_shared->lock, LW_SHARED);
		s = jq_slot_find(MyDatabaseId);
		if (s != NULL)
		{
			/* only the fixed part; the marks do not interest us */
			memcpy(&slot, s, offsetof(JqWorkerSlot, nmarks));
			have_slot = true;
		}
		LWLockRelease(jq_shared->lock);

		if (!have_slot)
			state = "waiting for the launcher";
		else
		{
			switch (slot.state)
			{
				case JQ_WORKER_NONE:
					state = "waiting for the launcher";
					break;
				case JQ_WORKER_STARTING:
					state = "starting";
					break;
				case JQ_WORKER_RUNNING:
					state = "running";
					break;
				case JQ_WORKER_NO_EXTENSION:
					state = "no extension";
					break;
				case JQ_WORKER_STOPPED:
					state = "stopped";
					break;
				case JQ_WORKER_EXITED:
				default:
					state = "restarting";
					break;
			}
		}
	}

	values[0] = BoolGetDatum(configured);
	nulls[0] = false;
	values[2] = CStringGetTextDatum(state);
	nulls[2] = false;
	if (configured)
	{
		bool		attached = have_slot && slot.pid != 0 &&
			slot.state == JQ_WORKER_RUNNING;

		values[1] = BoolGetDatum(attached);
		nulls[1] = false;
		if (have_slot && slot.pid != 0)
		{
			values[3] = Int32GetDatum(slot.pid);
			nulls[3] = false;
			values[4] = TimestampTzGetDatum(slot.started_at);
			nulls[4] = false;
			values[6] = Int64GetDatum((int64) slot.reaped);
			values[7] = Int64GetDatum((int64) slot.purged);
			values[8] = Int64GetDatum((int64) slot.notified);
			nulls[6] = nulls[7] = nulls[8] = false;
		}
		if (have_slot && slot.last_tick != 0)
		{
			values[5] = TimestampTzGetDatum(slot.last_tick);
			nulls[5] = false;
		}
		if (have_slot && slot.last_error_at != 0)
		{
			values[9] = CStringGetTextDatum(slot.last_error);
			nulls[9] = false;
			values[10] = TimestampTzGetDatum(slot.last_error_at);
			nulls[10] = false;
		}
	}

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
