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
 * The hook also keeps the launcher's registry current: when CREATE
 * EXTENSION jobqueue commits, the database is marked as having the
 * extension and served at once; when DROP EXTENSION jobqueue commits, it is
 * never visited again; when CREATE DATABASE commits, the launcher looks at
 * the new database (a copy of a template may have the extension).
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
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/* How long a worker is held off a database if the hold is never released */
#define JQ_HOLD_MS				60000
/* How long the hook waits for the worker to leave */
#define JQ_STOP_WAIT_MS			5000
/* After this long, a worker still in the database gets SIGTERM */
#define JQ_STOP_SIGTERM_MS		500

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Databases this transaction holds; released at its end (TopMemoryContext) */
static List *held_databases = NIL;
/* What this transaction did to the extension in its database */
static enum
{
	JQ_EXT_DDL_NONE,
	JQ_EXT_DDL_CREATED,
	JQ_EXT_DDL_DROPPED
}			extension_ddl = JQ_EXT_DDL_NONE;
static bool database_created = false;
static bool callback_registered = false;

/*
 * At the end of the transaction, whatever its outcome: release the holds.
 * At commit: record in the registry that this database has (or no longer
 * has) the extension, so the launcher serves it at once (or never visits
 * it again), and have the launcher look for a database just created.
 */
static void
jq_utility_xact_callback(XactEvent event, void *arg)
{
	bool		wake = false;
	bool		rescan = false;

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
			JqDatabaseEntry *entry = jq_entry_find(lfirst_oid(lc));

			if (entry != NULL)
			{
				entry->hold_until = 0;
				entry->stop_requested = false;
			}
		}
		LWLockRelease(jq_shared->lock);
		list_free(held_databases);
		held_databases = NIL;
		wake = rescan = true;
	}

	if (event == XACT_EVENT_COMMIT && extension_ddl != JQ_EXT_DDL_NONE &&
		jq_worker_enabled)
	{
		JqDatabaseEntry *entry;

		LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
		/* a database the launcher has not entered yet gets an entry now */
		entry = jq_entry_get(MyDatabaseId);
		if (entry != NULL)
		{
			if (extension_ddl == JQ_EXT_DDL_CREATED)
			{
				entry->extension = JQ_EXT_PRESENT;
				entry->next_visit = 0;
			}
			else
				entry->extension = JQ_EXT_ABSENT;
		}
		LWLockRelease(jq_shared->lock);
		wake = true;
	}
	if (event == XACT_EVENT_COMMIT && database_created)
		wake = rescan = true;
	extension_ddl = JQ_EXT_DDL_NONE;
	database_created = false;

	if (wake)
		jq_launcher_wake(rescan);
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
 * The pid of the worker connected to the database of entry (one that is
 * only starting leaves by itself, seeing stop_requested), or 0.  The caller
 * holds the lock.
 */
static pid_t
jq_entry_worker_pid(JqDatabaseEntry *entry)
{
	if (entry == NULL || entry->worker < 0)
		return 0;
	return jq_shared->workers[entry->worker].pid;
}

/*
 * Ask the worker in database dbname (if there is one) to leave, keep the
 * launcher from sending another until this transaction ends, and wait for
 * the worker to go: DROP DATABASE and the like fail while any session is
 * connected.
 */
static void
jq_hold_database(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);
	JqDatabaseEntry *entry;
	Latch	   *latch = NULL;
	bool		held = false;
	int			waited = 0;
	bool		signalled = false;
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
	entry = jq_entry_get(dboid);
	if (entry != NULL)
	{
		entry->hold_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														JQ_HOLD_MS);
		entry->stop_requested = true;
		if (entry->worker >= 0)
			latch = jq_shared->workers[entry->worker].latch;
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
	 * one in the middle of a long batch gets SIGTERM after a moment (its
	 * transaction rolls back; the work is done again later).
	 */
	while (waited < JQ_STOP_WAIT_MS)
	{
		pid_t		pid;

		LWLockAcquire(jq_shared->lock, LW_SHARED);
		pid = jq_entry_worker_pid(jq_entry_find(dboid));
		LWLockRelease(jq_shared->lock);
		if (pid == 0)
			break;
		if (waited >= JQ_STOP_SIGTERM_MS && !signalled)
		{
			(void) kill(pid, SIGTERM);
			signalled = true;
		}

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 5, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		waited += 5;
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

/*
 * A prepared transaction may have created the extension in this database:
 * Citus creates it on the worker nodes so, committing with two-phase commit
 * (COMMIT PREPARED, in a session of its own), and the commit callback of
 * the CREATE EXTENSION saw only its PREPARE.  When the registry does not
 * list the extension here yet and it exists now, serve the database at
 * once, as that callback does.
 */
static void
jq_utility_after_commit_prepared(void)
{
	JqDatabaseEntry *entry;
	bool		listed;

	if (!jq_worker_enabled)
		return;
	LWLockAcquire(jq_shared->lock, LW_SHARED);
	entry = jq_entry_find(MyDatabaseId);
	listed = entry != NULL && entry->extension == JQ_EXT_PRESENT;
	LWLockRelease(jq_shared->lock);
	if (listed)
		return;
	InvalidateCatalogSnapshot();
	if (!OidIsValid(get_extension_oid("jobqueue", true)))
		return;
	LWLockAcquire(jq_shared->lock, LW_EXCLUSIVE);
	entry = jq_entry_get(MyDatabaseId);
	if (entry != NULL)
	{
		entry->extension = JQ_EXT_PRESENT;
		entry->next_visit = 0;
	}
	LWLockRelease(jq_shared->lock);
	jq_launcher_wake(false);
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
	bool		commit_prepared = false;

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
			jq_utility_register_callback();
			database_created = true;
			break;
		case T_CreateExtensionStmt:
			if (strcmp(((CreateExtensionStmt *) parsetree)->extname,
					   "jobqueue") == 0)
			{
				jq_utility_register_callback();
				extension_ddl = JQ_EXT_DDL_CREATED;
			}
			break;
		case T_DropStmt:
			{
				DropStmt   *drop = (DropStmt *) parsetree;
				ListCell   *lc;

				if (drop->removeType != OBJECT_EXTENSION)
					break;
				foreach(lc, drop->objects)
				{
					if (strcmp(strVal(lfirst(lc)), "jobqueue") == 0)
					{
						jq_utility_register_callback();
						extension_ddl = JQ_EXT_DDL_DROPPED;
					}
				}
			}
			break;
		case T_TransactionStmt:
			commit_prepared = (((TransactionStmt *) parsetree)->kind ==
							   TRANS_STMT_COMMIT_PREPARED);
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

	/* its changes of jobqueue.queues, if any, are visible now */
	if (commit_prepared)
	{
		jq_queues_changed_elsewhere();
		jq_utility_after_commit_prepared();
	}
}

void
jq_utility_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = jq_process_utility;
}
