/*-------------------------------------------------------------------------
 *
 * utility.c
 *	  Keeping the workers out of the way of DDL on their database.
 *
 * DROP DATABASE, ALTER DATABASE ... RENAME, ALTER DATABASE ... SET
 * TABLESPACE and CREATE DATABASE ... TEMPLATE fail if another session is
 * connected to the database concerned (they wait up to 5 seconds for it to
 * go).  Before PostgreSQL 18 that includes background workers, so a
 * ProcessUtility hook asks our worker of that database to exit before the
 * command runs, and holds the launcher off the database until the
 * transaction ends (at commit a dropped database is gone from pg_database,
 * so no worker is started for it; otherwise the worker comes back at once).
 * This is the approach of the TimescaleDB loader, made lighter.
 *
 * The hook also wakes the launcher when CREATE EXTENSION jobqueue commits,
 * so a new installation gets its worker at once instead of within
 * jobqueue.launcher_interval.
 *
 * Installed only when the library is preloaded (there are no workers
 * otherwise).
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include <signal.h>

#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/timestamp.h"

/* How long a worker is held off a database if the hold is never released */
#define JQ_HOLD_MS				60000
/* How long the hook waits for the worker to exit */
#define JQ_STOP_WAIT_MS			5000

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Databases this transaction holds; released at its end (TopMemoryContext) */
static List *held_databases = NIL;
static bool wake_launcher_at_commit = false;
static bool callback_registered = false;

/*
 * Release the holds at the end of the transaction, whatever its outcome,
 * and let the launcher look again.
 */
static void
jq_utility_xact_callback(XactEvent event, void *arg)
{
	bool		wake = false;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			break;
		default:
			return;
	}

	if (held_databases != NIL)
	{
		ListCell   *lc;

		LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
		foreach(lc, held_databases)
		{
			JqWorkerSlot *slot = jq_slot_find(lfirst_oid(lc));

			if (slot != NULL)
			{
				slot->hold_until = 0;
				slot->stop_requested = false;
			}
		}
		LWLockRelease(jq_shared->lock);
		list_free(held_databases);
		held_databases = NIL;
		wake = true;
	}

	if (wake_launcher_at_commit && event == XACT_EVENT_COMMIT)
	{
		JqWorkerSlot *slot;

		LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
		slot = jq_slot_find(MyDatabaseId);
		if (slot != NULL && slot->pid == 0)
			slot->next_start = 0;
		LWLockRelease(jq_shared->lock);
		wake = true;
	}
	wake_launcher_at_commit = false;

	if (wake)
		jq_launcher_wake(true);
}

static void
jq_utility_register_callback(void)
{
	if (!callback_registered)
	{
		RegisterXactCallback(jq_utility_xact_callback, NULL);
		callback_registered = true;
	}
}

/*
 * Ask the worker of database dbname (if it has one) to exit, keep the
 * launcher from starting another until this transaction ends, and wait a
 * little for the worker to go.
 */
static void
jq_hold_database(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);
	JqWorkerSlot *slot;
	Latch	   *latch = NULL;
	bool		held = false;
	int			waited = 0;
	MemoryContext oldcontext;

	if (!OidIsValid(dboid))
		return;
	/*
	 * Only for the owner (or a superuser), who may run the command: nobody
	 * else can make the worker of somebody's database step aside.
	 */
#if PG_VERSION_NUM >= 160000
	if (!object_ownercheck(DatabaseRelationId, dboid, GetUserId()))
		return;
#else
	if (!pg_database_ownercheck(dboid, GetUserId()))
		return;
#endif

	jq_utility_register_callback();

	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	/* also without a worker now: one might be starting */
	slot = jq_slot_get(dboid);
	if (slot != NULL)
	{
		slot->hold_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   JQ_HOLD_MS);
		slot->stop_requested = true;
		latch = slot->latch;
		held = true;
	}
	LWLockRelease(jq_shared->lock);

	if (!held)
		return;

	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	held_databases = lappend_oid(held_databases, dboid);
	MemoryContextSwitchTo(oldcontext);

	if (latch != NULL)
		SetLatch(latch);

	/*
	 * Wait for it to go.  A worker between two units of work leaves at once;
	 * one stuck in a lock wait (say behind a long DROP EXTENSION) does not
	 * look at its latch, so after half the wait it gets SIGTERM.  The
	 * command itself then waits 5 s more for any session to leave.
	 */
	while (waited < JQ_STOP_WAIT_MS)
	{
		pid_t		pid = 0;

		LWLockAcquire(jq_shared->lock, LW_SHARED);
		slot = jq_slot_find(dboid);
		if (slot != NULL)
			pid = slot->pid;
		LWLockRelease(jq_shared->lock);
		if (pid == 0)
			break;
		if (waited == JQ_STOP_WAIT_MS / 2)
			(void) kill(pid, SIGTERM);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		waited += 10;
	}
}

/* The TEMPLATE option of CREATE DATABASE, or NULL */
static const char *
jq_createdb_template(CreatedbStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "template") == 0 && def->arg != NULL)
			return defGetString(def);
	}
	return NULL;
}

static bool
jq_alterdb_moves(AlterDatabaseStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		if (strcmp(((DefElem *) lfirst(lc))->defname, "tablespace") == 0)
			return true;
	}
	return false;
}

static void
jq_process_utility(PlannedStmt *pstmt, const char *queryString,
#if PG_VERSION_NUM >= 140000
				   bool readOnlyTree,
#endif
				   ProcessUtilityContext context, ParamListInfo params,
				   QueryEnvironment *queryEnv, DestReceiver *dest,
				   QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	const char *dbname = NULL;

	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			dbname = ((DropdbStmt *) parsetree)->dbname;
			break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
				dbname = ((RenameStmt *) parsetree)->subname;
			break;
		case T_AlterDatabaseStmt:
			if (jq_alterdb_moves((AlterDatabaseStmt *) parsetree))
				dbname = ((AlterDatabaseStmt *) parsetree)->dbname;
			break;
		case T_CreatedbStmt:
			dbname = jq_createdb_template((CreatedbStmt *) parsetree);
			break;
		case T_CreateExtensionStmt:
			if (strcmp(((CreateExtensionStmt *) parsetree)->extname,
					   "jobqueue") == 0)
			{
				jq_utility_register_callback();
				wake_launcher_at_commit = true;
			}
			break;
		default:
			break;
	}

	if (dbname != NULL)
		jq_hold_database(dbname);

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString,
#if PG_VERSION_NUM >= 140000
							readOnlyTree,
#endif
							context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString,
#if PG_VERSION_NUM >= 140000
								readOnlyTree,
#endif
								context, params, queryEnv, dest, qc);
}

void
jq_utility_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = jq_process_utility;
}
