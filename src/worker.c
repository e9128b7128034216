/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  A jobqueue worker: serves one database for the launcher's pool; its
 *	  GUCs, jq_worker_status() and jq_worker_tasks().
 *
 * The launcher (launcher.c) starts a worker for a database that is due,
 * in a free slot of the pool.  The worker attaches to its slot, connects,
 * pins its settings, checks that the extension is installed (leaves,
 * recording that it is not, otherwise), and then loops:
 *
 *	- when woken by a committing producer: one short transaction sends a
 *	  NOTIFY for every queue marked in its slot (see wakeup.c);
 *	- when due, a pass: each task of worker_tasks.c whose interval has
 *	  passed runs unit by unit, one short transaction per unit;
 *	- after a pass, if the launcher asked it to yield (another database
 *	  waits for a slot), it leaves, setting when its database is due again.
 *
 * Nothing (no transaction, no snapshot) is held between units, so the
 * worker never holds back vacuum.  Each unit first takes a share lock on
 * the extension object and its tables without waiting (see jq_work_begin):
 * a user's DDL never waits for the worker, nor fails because of it.  An
 * error in a task is logged, recorded against the task, and the task is
 * retried with a backoff that doubles up to a minute.
 *
 * Commits are asynchronous (synchronous_commit = off in this process): a
 * reap or purge lost in a crash is simply done again, and a notification is
 * only a hint.  That keeps the worker from waiting on WAL flushes.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "mb/pg_wchar.h"
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
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(jq_worker_status);
PG_FUNCTION_INFO_V1(jq_worker_tasks_status);

/* GUCs */
bool		jq_worker_enabled = true;
char	   *jq_worker_databases = NULL;
int			jq_launcher_interval = 10000;	/* ms */
int			jq_reap_interval = 1000;	/* ms */
int			jq_purge_interval = 10000;	/* ms */
int			jq_idle_visit_interval = 60000; /* ms */
int			jq_reap_batch_size = 1000;
int			jq_purge_batch_size = 10000;
int			jq_max_workers = 2;
int			jq_max_databases = 512;

/* Longest delay of a task that keeps failing, in ms */
#define JQ_TASK_MAX_BACKOFF 60000

/* State of the running worker process */
static int	worker_index = -1;	/* our pool slot */
static Oid	worker_dboid = InvalidOid;
static JqPoolSlot *worker_slot = NULL;
static JqDatabaseEntry *worker_entry = NULL;
static MemoryContext pass_cxt = NULL;
/* Did jobs change between the start of the previous pass and this one's? */
static bool pass_after_activity = false;
/*
 * When each task last started, and the end of its backoff after failures
 * (worker-local).  A task is due at the later of its start plus its
 * interval, read afresh so that a reload takes effect at once, and the end
 * of its backoff.
 */
static TimestampTz task_started[JQ_NUM_TASKS];
static TimestampTz task_retry_at[JQ_NUM_TASKS];
/* set once the worker knows when its database is due again */
static TimestampTz leave_next_visit = 0;

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

	/*
	 * The floor keeps a misconfigured interval from turning a worker into a
	 * busy loop: a pass costs about a millisecond of CPU on an idle database.
	 */
	DefineCustomIntVariable("jobqueue.reap_interval",
							"Time between two passes of a jobqueue worker over a busy database.",
							"Each pass reaps expired leases and announces jobs that became ready.",
							&jq_reap_interval,
							1000, 100, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("jobqueue.purge_interval",
							"Time between two purges of finished jobs by a jobqueue worker.",
							NULL,
							&jq_purge_interval,
							10000, 100, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("jobqueue.idle_visit_interval",
							"Longest time between two visits of a jobqueue worker to a database.",
							"A database where no job changed and no lease expires is visited this often; "
							"one with activity within jobqueue.reap_interval.",
							&jq_idle_visit_interval,
							60000, 100, INT_MAX / 2,
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

	/* sizes of shared memory: only while preloading, see counters.c */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("jobqueue.max_workers",
							"Number of jobqueue workers that serve the databases at once.",
							"Each takes one of max_worker_processes while it runs; "
							"the launcher takes one more.",
							&jq_max_workers,
							2, 1, 64,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("jobqueue.max_databases",
							"Number of databases the jobqueue launcher can look after.",
							"Databases beyond it are not served, with a warning naming them.",
							&jq_max_databases,
							512, 1, 100000,
							PGC_POSTMASTER, 0,
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
 * Settings of the worker's session, applied over anything the database or a
 * role sets (ALTER DATABASE/ROLE ... SET, which the connection has just
 * applied).  The worker runs as the bootstrap superuser in a database whose
 * owner may be an ordinary role, so nothing that owner controls may change
 * what the worker's statements resolve to or whether they can run:
 *
 *	- search_path: the statements name every table and function with its
 *	  schema, but operators (=, <, ||) are looked up through the path.  With
 *	  pg_catalog first and pg_temp last, a database owner's schema is never
 *	  searched (the SQL functions pin the same path).
 *	- read-only or serializable default transactions, and timeouts, would
 *	  make reaping fail; the worker's transactions are its own and short.
 *	- role: a SET ROLE from the database's settings would make the worker
 *	  act as that role.
 *	- lock_timeout is below deadlock_timeout: when the worker does wait for
 *	  a lock (it takes the table locks conditionally, see jq_work_begin), it
 *	  gives up before the deadlock detector could pick a user's DDL instead.
 *
 * synchronous_commit is off (a lost reap is redone, a notification is only a
 * hint), jit is off (small generic plans run every tick), and the output
 * formats are fixed so that the texts the worker writes (error histories)
 * do not depend on the database's settings.
 */
static void
jq_worker_pin_settings(void)
{
	static const struct
	{
		const char *name;
		const char *value;
	}			pinned[] = {
		{"search_path", "pg_catalog, pg_temp"},
		{"role", "none"},
		{"default_transaction_read_only", "off"},
		{"default_transaction_isolation", "read committed"},
		{"default_transaction_deferrable", "off"},
		{"statement_timeout", "0"},
		{"idle_in_transaction_session_timeout", "0"},
		{"idle_session_timeout", "0"},
#if PG_VERSION_NUM >= 170000
		{"transaction_timeout", "0"},
#endif
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"TimeZone", "UTC"},
		{"application_name", "jobqueue worker"},
		{"synchronous_commit", "off"},
		{"jit", "off"},
	};
	char		lock_timeout[32];

	for (int i = 0; i < lengthof(pinned); i++)
		SetConfigOption(pinned[i].name, pinned[i].value,
						PGC_SUSET, PGC_S_OVERRIDE);
	snprintf(lock_timeout, sizeof(lock_timeout), "%d",
			 Max(DeadlockTimeout / 2, 1));
	SetConfigOption("lock_timeout", lock_timeout, PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * Is this worker's database busy: did jobs change in it (an enqueue or a
 * claim marked it) since the previous pass began?  While they do, the
 * database is due again within jobqueue.reap_interval, whatever its leases
 * (jq_worker_next_visit).
 */
bool
jq_worker_database_busy(void)
{
	return pass_after_activity ||
		(worker_entry != NULL &&
		 pg_atomic_read_u32(&worker_entry->activity) != 0);
}

/*
 * When the database is due again, as the worker leaves it: soon when jobs
 * changed since the pass began or a lease expires soon, else at the
 * earliest lease expiry, at most jobqueue.idle_visit_interval from now.
 */
static TimestampTz
jq_worker_next_visit(TimestampTz now)
{
	TimestampTz soon = TimestampTzPlusMilliseconds(now, jq_reap_interval);
	TimestampTz next = TimestampTzPlusMilliseconds(now, jq_idle_visit_interval);
	TimestampTz lease = jq_next_lease_expiry();

	if (pg_atomic_read_u32(&worker_entry->activity) != 0)
		return soon;
	if (lease != 0 && lease < next)
		next = Max(lease, soon);
	/*
	 * A task that knows when its next work comes (the next schedule slot);
	 * not sooner than a busy database, so that a task that keeps failing
	 * does not bring the pool back at once.
	 */
	for (int t = 0; t < JQ_NUM_TASKS; t++)
	{
		if (jq_worker_tasks[t].next_due != NULL)
			next = Min(next, Max(jq_worker_tasks[t].next_due(), soon));
	}
	return next;
}

/*
 * Leave the pool slot and exit.  extension says what the worker learned
 * about its database.  proc_exit runs jq_worker_detach.
 */
static void
jq_worker_leave(JqExtensionState extension, TimestampTz next_visit)
{
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	worker_entry->extension = extension;
	LWLockRelease(jq_shared->lock);
	leave_next_visit = next_visit;
	proc_exit(0);
}

/*
 * before_shmem_exit callback: free the pool slot and tell the launcher.  A
 * worker that did not say when its database is due again (an error,
 * pg_terminate_backend) has it visited again after a short delay.
 */
static void
jq_worker_detach(int code, Datum arg)
{
	if (worker_slot == NULL)
		return;
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	if (worker_slot->pid == MyProcPid)
	{
		if (worker_entry->dboid == worker_dboid &&
			worker_entry->worker == worker_index)
		{
			worker_entry->worker = -1;
			worker_entry->next_visit = leave_next_visit != 0 ? leave_next_visit :
				TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											JQ_WORKER_RESTART_DELAY);
		}
		jq_pool_slot_clear(worker_slot);
	}
	LWLockRelease(jq_shared->lock);
	jq_launcher_wake(false);
}

/*
 * Take pool slot w, which the launcher prepared for database dboid.
 * Returns false when this worker is not wanted any more: the slot went to
 * another database (a late start after a launcher restart), or DDL on the
 * database asked workers to stay away.
 */
static bool
jq_worker_attach(int w, Oid dboid)
{
	JqPoolSlot *slot = &jq_shared->workers[w];
	bool		ok = false;

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	if (slot->dboid == dboid && slot->pid == 0 &&
		slot->state == JQ_WORKER_STARTING && slot->entry >= 0)
	{
		JqDatabaseEntry *entry = &jq_shared->entries[slot->entry];

		if (entry->dboid == dboid && !entry->stop_requested &&
			!entry->unwanted && entry->hold_until <= GetCurrentTimestamp())
		{
			LWLockAcquire(slot->marks_lock, LW_EXCLUSIVE);
			slot->pid = MyProcPid;
			slot->latch = MyLatch;
			slot->started_at = GetCurrentTimestamp();
			LWLockRelease(slot->marks_lock);
			entry->started_at = slot->started_at;
			worker_slot = slot;
			worker_entry = entry;
			worker_index = w;
			ok = true;
		}
	}
	LWLockRelease(jq_shared->lock);
	return ok;
}

/* Must the worker leave now (DDL asked, or the workers are turned off)? */
static void
jq_worker_check_stop(void)
{
	bool		stop;

	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	LWLockAcquire(jq_shared->lock, LW_SHARED);
	stop = worker_entry->stop_requested || worker_entry->unwanted;
	LWLockRelease(jq_shared->lock);
	if (stop || !jq_worker_enabled)
		jq_worker_leave(JQ_EXT_PRESENT, GetCurrentTimestamp());
}

/*
 * Take lockmode on relation relname of schema jobqueue without waiting.
 * A relation that does not exist counts as locked: the statement that uses
 * it will say what is missing.
 */
static bool
jq_try_lock_relation(Oid nspoid, const char *relname, LOCKMODE lockmode)
{
	Oid			relid = get_relname_relid(relname, nspoid);

	return !OidIsValid(relid) || ConditionalLockRelationOid(relid, lockmode);
}

/*
 * Start a unit of work: a transaction, the extension locked against DROP
 * EXTENSION, the tables locked for the statements, a snapshot taken after
 * those locks, and an SPI connection.
 *
 * The worker never waits for a lock a user's session holds or is waiting
 * for: DDL (TRUNCATE, DROP EXTENSION, ALTER TABLE) must never fail because
 * the worker queued behind it and then held it up.  When a lock is not free
 * at once, the unit ends at once and returns false; the caller skips the
 * rest of the pass and tries again at the next one.  Without the
 * extension, the worker leaves.
 */
static bool
jq_work_begin(const char *activity)
{
	Oid			extoid;
	Oid			nspoid;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, activity);

	extoid = get_extension_oid("jobqueue", true);
	if (OidIsValid(extoid) &&
		!ConditionalLockDatabaseObject(ExtensionRelationId, extoid, 0,
									   AccessShareLock))
		goto busy;
	/* a DROP EXTENSION may have committed before we got the lock */
	if (!OidIsValid(extoid) || get_extension_oid("jobqueue", true) != extoid)
	{
		CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);
		jq_worker_leave(JQ_EXT_ABSENT, 0);
	}
	nspoid = get_namespace_oid("jobqueue", true);
	if (OidIsValid(nspoid) &&
		(!jq_try_lock_relation(nspoid, "queues", AccessShareLock) ||
		 !jq_try_lock_relation(nspoid, "jobs", RowExclusiveLock)))
		goto busy;

	jq_spi_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	/* a jq_distribute() since the last unit: the statements of that mode */
	jq_plans_check_mode();
	return true;

busy:
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	ereport(DEBUG1,
			(errmsg_internal("jobqueue worker: tables locked, pass skipped")));
	return false;
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

/*
 * Take the queues that committed transactions marked and announce them, in
 * one short transaction.  After an overflow of the table of marks, every
 * queue with notifications on (and not paused) is announced.
 */
static void
jq_announce_marked(void)
{
	char		marks[JQ_MAX_MARKS][JQ_QUEUE_NAME_MAXLEN + 1];
	JqFinishedMark finished[JQ_MAX_FINISHED_MARKS];
	int			nmarks;
	int			nfinished;
	bool		overflow;
	int			i;
	uint64		n;
	TimestampTz at;

	/* no allocation under the lock: copy to the stack first */
	LWLockAcquire(worker_slot->marks_lock, LW_EXCLUSIVE);
	nmarks = worker_slot->nmarks;
	overflow = worker_slot->marks_overflow;
	memcpy(marks, worker_slot->marks, sizeof(marks[0]) * nmarks);
	worker_slot->nmarks = 0;
	worker_slot->marks_overflow = false;
	nfinished = worker_slot->nfinished;
	memcpy(finished, worker_slot->finished, sizeof(finished[0]) * nfinished);
	worker_slot->nfinished = 0;
	LWLockRelease(worker_slot->marks_lock);
	if (nmarks == 0 && !overflow && nfinished == 0)
		return;

	if (!jq_work_begin("sending jobqueue notifications"))
	{
		/* announce them all at the next wake-up */
		LWLockAcquire(worker_slot->marks_lock, LW_EXCLUSIVE);
		worker_slot->marks_overflow = true;
		/* finished jobs are put back if there is room, else dropped */
		if (worker_slot->nfinished + worker_slot->finished_reserved + nfinished <=
			JQ_MAX_FINISHED_MARKS)
		{
			memcpy(&worker_slot->finished[worker_slot->nfinished], finished,
				   sizeof(finished[0]) * nfinished);
			worker_slot->nfinished += nfinished;
		}
		LWLockRelease(worker_slot->marks_lock);
		return;
	}
	n = nmarks + nfinished;
	/* every job of these queues committed by now is covered */
	at = GetCurrentTimestamp();
	for (i = 0; i < nmarks; i++)
	{
		Async_Notify(JQ_NOTIFY_CHANNEL, marks[i]);
		jq_note_announced(marks[i], at);
	}
	for (i = 0; i < nfinished; i++)
		Async_Notify(JQ_FINISHED_CHANNEL,
					 psprintf(INT64_FORMAT " %s", finished[i].id, finished[i].status));
	if (overflow)
	{
		jq_execute(JQ_PLAN_NOTIFY_QUEUES, NULL, NULL, SPI_OK_SELECT);
		for (i = 0; i < SPI_processed; i++)
		{
			Async_Notify(JQ_NOTIFY_CHANNEL, jq_result_name(i, 1));
			jq_note_announced(jq_result_name(i, 1), at);
		}
		n += SPI_processed;
	}
	jq_work_end();

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	worker_entry->tasks[JQ_TASK_ANNOUNCE].items += n;
	LWLockRelease(jq_shared->lock);
}

/*
 * Record the error being handled against task t, and get back to a clean
 * state outside any transaction.  The task is retried after its interval,
 * doubled for each consecutive failure up to a minute.
 */
static void
jq_worker_task_failed(int t, MemoryContext loop_cxt, TimestampTz now)
{
	ErrorData  *edata;
	JqTaskStats *stats = &worker_entry->tasks[t];
	int			delay;
	int			len;

	MemoryContextSwitchTo(loop_cxt);
	edata = CopyErrorData();
	EmitErrorReport();
	FlushErrorState();
	AbortCurrentTransaction();
	pgstat_report_activity(STATE_IDLE, NULL);

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	/* cut on a character boundary: the text is shown as it is */
	len = pg_mbcliplen(edata->message ? edata->message : "unknown error",
					   strlen(edata->message ? edata->message : "unknown error"),
					   JQ_LAST_ERROR_LEN - 1);
	memcpy(stats->last_error, edata->message ? edata->message : "unknown error", len);
	stats->last_error[len] = '\0';
	stats->last_error_at = GetCurrentTimestamp();
	if (stats->consecutive_errors < 30)
		stats->consecutive_errors++;
	delay = *jq_worker_tasks[t].interval_ms;
	for (int i = 1; i < stats->consecutive_errors && delay < JQ_TASK_MAX_BACKOFF; i++)
		delay *= 2;
	LWLockRelease(jq_shared->lock);
	task_retry_at[t] = TimestampTzPlusMilliseconds(now, Min(delay, JQ_TASK_MAX_BACKOFF));
	FreeErrorData(edata);
}

static TimestampTz jq_task_due(int t);

/*
 * Run task t unit by unit until it has nothing more to do now.  Returns
 * false when a unit found the tables locked: the pass ends there.
 */
static bool
jq_worker_run_task(int t, TimestampTz now, List **ready,
				   MemoryContext loop_cxt)
{
	const JqWorkerTask *task = &jq_worker_tasks[t];
	volatile int64 items = 0;
	volatile bool busy = false;
	volatile bool failed = false;

	task_started[t] = now;
	PG_TRY();
	{
		bool		more = true;

		while (more)
		{
			if (!jq_work_begin(task->activity))
			{
				busy = true;
				break;
			}
			items = task->run_unit(now, ready, pass_cxt, &more);
			jq_work_end();

			/* counted per unit: a long reap shows its progress */
			LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
			worker_entry->tasks[t].items += items;
			LWLockRelease(jq_shared->lock);

			/* between units: stay responsive to signals and producers */
			jq_worker_check_stop();
			jq_announce_marked();
		}
	}
	PG_CATCH();
	{
		jq_worker_task_failed(t, loop_cxt, now);
		failed = true;
	}
	PG_END_TRY();
	if (failed)
		return true;
	task_retry_at[t] = 0;

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	if (!busy)
	{
		worker_entry->tasks[t].runs++;
		worker_entry->tasks[t].last_run = now;
		worker_entry->tasks[t].consecutive_errors = 0;
	}
	LWLockRelease(jq_shared->lock);
	return !busy;
}

/*
 * One pass: every task that is due runs.  now is the time the pass started.
 */
static void
jq_worker_pass(TimestampTz now, MemoryContext loop_cxt)
{
	List	   *ready = NIL;

	pass_after_activity = pg_atomic_exchange_u32(&worker_entry->activity, 0) != 0;
	for (int t = 0; t < JQ_NUM_TASKS; t++)
	{
		if (now >= jq_task_due(t) &&
			!jq_worker_run_task(t, now, &ready, loop_cxt))
			return;
	}

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	worker_entry->last_tick = now;
	LWLockRelease(jq_shared->lock);
	pgstat_report_stat(true);
}

/*
 * When task t is due: its interval after its last start, or earlier when
 * the task said when its next work comes; never before the end of its
 * backoff after failures.
 */
static TimestampTz
jq_task_due(int t)
{
	TimestampTz due = TimestampTzPlusMilliseconds(task_started[t],
												  *jq_worker_tasks[t].interval_ms);

	if (jq_worker_tasks[t].next_due != NULL)
		due = Min(due, jq_worker_tasks[t].next_due());
	return Max(due, task_retry_at[t]);
}

/* The earliest time a task is due. */
static TimestampTz
jq_worker_next_due(void)
{
	TimestampTz next = jq_task_due(0);

	for (int t = 1; t < JQ_NUM_TASKS; t++)
		next = Min(next, jq_task_due(t));
	return next;
}

/*
 * Entry point of a worker; main_arg is its pool slot, bgw_extra the OID of
 * the database the launcher prepared the slot for.
 */
void
jq_worker_main(Datum main_arg)
{
	int			w = DatumGetInt32(main_arg);
	Oid			dboid;
	MemoryContext loop_cxt;
	bool		yield;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	if (jq_shared == NULL || w < 0 || w >= jq_shared->nworkers)
		proc_exit(0);
	worker_dboid = dboid;
	before_shmem_exit(jq_worker_detach, (Datum) 0);
	if (!jq_worker_attach(w, dboid))
		proc_exit(0);

	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	jq_worker_pin_settings();
	ereport(DEBUG1,
			(errmsg_internal("jobqueue worker attached for database %u", dboid)));

	if (IsBinaryUpgrade || RecoveryInProgress())
		jq_worker_leave(JQ_EXT_UNKNOWN, 0);

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "jobqueue worker",
									 ALLOCSET_DEFAULT_SIZES);
	pass_cxt = AllocSetContextCreate(loop_cxt, "jobqueue worker pass",
									 ALLOCSET_DEFAULT_SIZES);

	/* is the extension here at all?  (leaves if not) */
	if (!jq_work_begin("checking for the jobqueue extension"))
		jq_worker_leave(JQ_EXT_UNKNOWN, 0);
	jq_warn_schema_version();
	jq_work_end();

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	worker_entry->extension = JQ_EXT_PRESENT;
	/* announce what became ready since the last visit */
	jq_ready_checked_until = worker_entry->last_tick != 0 ?
		worker_entry->last_tick : worker_entry->started_at;
	LWLockAcquire(worker_slot->marks_lock, LW_EXCLUSIVE);
	worker_slot->state = JQ_WORKER_RUNNING;
	LWLockRelease(worker_slot->marks_lock);
	LWLockRelease(jq_shared->lock);

	ereport(DEBUG1,
			(errmsg_internal("jobqueue worker started in database %u", dboid)));

	for (;;)
	{
		TimestampTz now;
		TimestampTz next;
		long		timeout;

		MemoryContextSwitchTo(loop_cxt);
		jq_worker_check_stop();

		now = GetCurrentTimestamp();
		MemoryContextReset(pass_cxt);
		PG_TRY();
		{
			jq_announce_marked();
		}
		PG_CATCH();
		{
			jq_worker_task_failed(JQ_TASK_ANNOUNCE, loop_cxt, now);
		}
		PG_END_TRY();
		if (now >= jq_worker_next_due())
			jq_worker_pass(now, loop_cxt);

		/* another database waits for a slot: leave after a complete pass */
		LWLockAcquire(jq_shared->lock, LW_SHARED);
		yield = worker_slot->yield_requested;
		LWLockRelease(jq_shared->lock);
		if (yield)
			jq_worker_leave(JQ_EXT_PRESENT,
							jq_worker_next_visit(GetCurrentTimestamp()));

		next = jq_worker_next_due();
		now = GetCurrentTimestamp();
		timeout = now >= next ? 0 : (long) ((next - now + 999) / 1000);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * Copy this database's registry entry and the state of the worker serving
 * it.  Returns the state text of jq_worker_status(); *configured is false
 * when no worker is meant to serve this database.
 */
static const char *
jq_worker_state(bool *configured, bool *have_entry, JqDatabaseEntry *entry,
				JqPoolSlot *slot)
{
	JqDatabaseEntry *e;
	bool		full;

	*configured = false;
	*have_entry = false;
	if (jq_shared == NULL)
		return "not preloaded";
	if (!jq_launcher_registered)
		return "launcher not registered: raise max_worker_processes";
	if (!jq_worker_enabled)
		return "disabled";
	if (!jq_database_wanted(get_database_name(MyDatabaseId)))
		return "excluded";

	*configured = true;
	/* a standby: the launcher starts when recovery ends (at promotion) */
	if (RecoveryInProgress())
		return "in recovery";
	memset(slot, 0, sizeof(JqPoolSlot));
	LWLockAcquire(jq_shared->lock, LW_SHARED);
	full = jq_shared->registry_full;
	e = jq_entry_find(MyDatabaseId);
	if (e != NULL)
	{
		memcpy(entry, e, sizeof(JqDatabaseEntry));
		*have_entry = true;
		if (e->worker >= 0)
			memcpy(slot, &jq_shared->workers[e->worker],
				   offsetof(JqPoolSlot, nmarks));
	}
	LWLockRelease(jq_shared->lock);

	if (!*have_entry)
		return full ? "not served: raise jobqueue.max_databases" :
			"waiting for the launcher";
	if (entry->worker >= 0)
		return slot->state == JQ_WORKER_RUNNING ? "running" : "starting";
	if (entry->unserved)
		return "waiting for a background worker slot: raise max_worker_processes";
	switch (entry->extension)
	{
		case JQ_EXT_UNKNOWN:
			return "waiting for the launcher";
		case JQ_EXT_ABSENT:
			return "no extension";
		case JQ_EXT_PRESENT:
		default:
			return "between visits";
	}
}

/*
 * jq_worker_status() returns record
 *
 * The background worker of the current database: whether one is
 * configured, whether one is attached now, its pid and start, the last
 * pass, and what the workers did here since the server started.  Without
 * shared_preload_libraries: configured = false, the rest NULL.
 */
Datum
jq_worker_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[11];
	bool		nulls[11];
	bool		configured;
	bool		have_entry;
	JqDatabaseEntry entry;
	JqPoolSlot	slot;
	const char *state;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	memset(nulls, true, sizeof(nulls));
	state = jq_worker_state(&configured, &have_entry, &entry, &slot);

	values[0] = BoolGetDatum(configured);
	nulls[0] = false;
	values[2] = CStringGetTextDatum(state);
	nulls[2] = false;
	if (configured)
	{
		bool		attached = have_entry && entry.worker >= 0 &&
			slot.pid != 0 && slot.state == JQ_WORKER_RUNNING;

		values[1] = BoolGetDatum(attached);
		nulls[1] = false;
		if (attached)
		{
			values[3] = Int32GetDatum(slot.pid);
			nulls[3] = false;
		}
		if (have_entry)
		{
			JqTaskStats *last = NULL;

			if (entry.started_at != 0)
			{
				values[4] = TimestampTzGetDatum(entry.started_at);
				nulls[4] = false;
			}
			if (entry.last_tick != 0)
			{
				values[5] = TimestampTzGetDatum(entry.last_tick);
				nulls[5] = false;
			}
			values[6] = Int64GetDatum((int64) entry.tasks[JQ_TASK_REAP].items);
			values[7] = Int64GetDatum((int64) entry.tasks[JQ_TASK_PURGE].items);
			values[8] = Int64GetDatum((int64) entry.tasks[JQ_TASK_ANNOUNCE].items);
			nulls[6] = nulls[7] = nulls[8] = false;
			for (int t = 0; t < JQ_NUM_TASKS; t++)
			{
				if (entry.tasks[t].last_error_at != 0 &&
					(last == NULL || entry.tasks[t].last_error_at > last->last_error_at))
					last = &entry.tasks[t];
			}
			if (last != NULL)
			{
				values[9] = CStringGetTextDatum(last->last_error);
				nulls[9] = false;
				values[10] = TimestampTzGetDatum(last->last_error_at);
				nulls[10] = false;
			}
		}
	}

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * jq_worker_tasks() returns setof record
 *
 * One row per worker task in the current database: its interval, last
 * complete run, how many runs and items, consecutive failures and the last
 * error.  No rows without shared_preload_libraries, with the workers off,
 * or before the launcher registered the database.
 */
Datum
jq_worker_tasks_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *store = jq_srf_init(fcinfo, &tupdesc);
	JqDatabaseEntry entry;
	bool		found = false;

	if (jq_shared != NULL && jq_worker_enabled)
	{
		JqDatabaseEntry *e;

		LWLockAcquire(jq_shared->lock, LW_SHARED);
		e = jq_entry_find(MyDatabaseId);
		if (e != NULL)
		{
			memcpy(&entry, e, sizeof(JqDatabaseEntry));
			found = true;
		}
		LWLockRelease(jq_shared->lock);
	}
	if (!found)
		return (Datum) 0;

	for (int t = 0; t < JQ_NUM_TASKS; t++)
	{
		JqTaskStats *s = &entry.tasks[t];
		Datum		values[8];
		bool		nulls[8];

		memset(nulls, false, sizeof(nulls));
		values[0] = CStringGetTextDatum(jq_worker_tasks[t].name);
		values[1] = IntervalPGetDatum(DatumGetIntervalP(
			DirectFunctionCall7(make_interval, Int32GetDatum(0), Int32GetDatum(0),
								Int32GetDatum(0), Int32GetDatum(0), Int32GetDatum(0),
								Int32GetDatum(0),
								Float8GetDatum(*jq_worker_tasks[t].interval_ms / 1000.0))));
		values[2] = TimestampTzGetDatum(s->last_run);
		nulls[2] = s->last_run == 0;
		values[3] = Int64GetDatum((int64) s->runs);
		values[4] = Int64GetDatum((int64) s->items);
		values[5] = Int32GetDatum(s->consecutive_errors);
		values[6] = CStringGetTextDatum(s->last_error);
		nulls[6] = s->last_error_at == 0;
		values[7] = TimestampTzGetDatum(s->last_error_at);
		nulls[7] = s->last_error_at == 0;
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
