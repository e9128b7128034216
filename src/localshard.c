/*-------------------------------------------------------------------------
 *
 * localshard.c
 *	  On Citus, a queue's statements run against its shards on this node.
 *
 * Citus plans every statement on a distributed table for the shard it
 * routes to: it plans the statement, writes the shard's query as text, and
 * on the node that holds the shard parses and plans that text again.  On
 * that node this was three quarters of the time of a claim and of a
 * completion.  A statement marked with the parameter naming its queue
 * (plans.c, queue_param) touches that queue's rows only, of jobqueue.jobs
 * and the tables colocated with it, and reads the reference table queues.
 * When the queue's shard of jobs is placed on this node, such a statement
 * runs here against the shards themselves: the same text, every table of
 * jobqueue that Citus manages replaced by its shard on this node (the
 * colocated shard of the same hash range; the one shard of a reference
 * table), prepared once per shard with a kept generic plan, as on one
 * server (the worker's statements, which may name every queue, with a
 * plan per call: jq_plan_local_custom).  Everywhere else (another node, one server) jq_local_shard_plan
 * returns NULL and the statement's own plan runs.
 *
 * Shard moves: Citus blocks the writes to a shard during a move (all of
 * it with block_writes, its end with logical replication) by taking its
 * lock on the metadata of the shard's colocated shards in ExclusiveLock,
 * on every node, and every write of its executor takes that lock in
 * ShareLock.  So does this file, before it looks where the shard is
 * placed, and keeps it to the end of the transaction: a move cannot end
 * between the check and the statement, and once it has ended, the check
 * (on the latest catalog, after the lock) finds the placement gone and the
 * statement goes through Citus.  The lock names the colocation group and
 * the shard's index in it, read with the shard's other metadata and read
 * again after any change of jobs's metadata (a relation cache callback).
 *
 * Within a transaction the statement runs in this backend, as Citus's
 * local execution of the same shard would, and tells Citus so the way its
 * local executor does (functions of citus.so, found once per backend):
 * local execution is then required for the rest of the transaction, so
 * Citus runs its later statements on this node's shards here too and they
 * see what this one wrote; and a write asks for two-phase commit, so that
 * writes Citus then sends to other nodes in the same transaction (the
 * dependents of a finished job) commit with this node's or not at all.
 * Where Citus has already reached this node's shards over a connection in
 * the transaction (local execution disabled), or local execution is off,
 * this path is not taken.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

/*
 * Citus's record of local execution in the transaction (its
 * local_executor.h, LocalExecutionStatus): required, optional, disabled
 */
#define JQ_CITUS_LOCAL_EXECUTION_REQUIRED 0
#define JQ_CITUS_LOCAL_EXECUTION_DISABLED 2

/*
 * Citus's lock on the metadata of a hash-distributed shard and the shards
 * colocated with it: an advisory lock tag of its own class, naming the
 * shard's index and the colocation group (Citus's resource_lock.h,
 * SET_LOCKTAG_COLOCATED_SHARDS_METADATA_RESOURCE)
 */
#define JQ_CITUS_COLOCATED_SHARDS_METADATA_LOCK_CLASS 8

/* The shards of one shard of jobs on this node, and the plans against them */
typedef struct JqLocalShard
{
	int64		shardid;		/* hash key: the shard of jobqueue.jobs */
	bool		usable;			/* every table has its shard here */
	uint32		colocation_id;	/* for the lock (jq_lock_shard) */
	uint32		shard_index;
	List	   *tables;			/* of char *: "jobqueue.name", ... */
	List	   *shards;			/* ... and the shard's qualified name */
	SPIPlanPtr	plans[JQ_NUM_PLANS];
} JqLocalShard;

static HTAB *local_shards = NULL;
static uint64 local_shards_generation = 0;
static uint64 local_shards_epoch = 0;	/* the epoch the table was built in */

/* Bumped at every change of jobs's metadata (its shards, their placements) */
static uint64 metadata_epoch = 1;

/* The lookup of a job's queue in this node's shards (jq_local_shard_job_queue) */
static SPIPlanPtr job_queue_plan = NULL;
static uint64 job_queue_plan_epoch = 0;
static uint64 job_queue_plan_generation = 0;

/* Citus's catalog, found once per backend */
static Oid	shard_id_fn = InvalidOid;	/* get_shard_id_for_distribution_column */
static FmgrInfo shard_id_flinfo;
static Oid	jobs_relid = InvalidOid;
static Oid	placement_relid = InvalidOid;
static Oid	placement_shardid_index = InvalidOid;
static AttrNumber placement_shardid_attnum = InvalidAttrNumber;
static AttrNumber placement_groupid_attnum = InvalidAttrNumber;
static Oid	local_group_relid = InvalidOid;

/* Citus's functions for its record of the transaction (see the top) */
static int	(*citus_get_local_execution_status) (void) = NULL;
static void (*citus_set_local_execution_status) (int status) = NULL;
static void (*citus_use_2pc) (void) = NULL;

/* Relation cache callback: a change of jobs's shards or placements */
static void
jq_local_shard_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == jobs_relid)
		metadata_epoch++;
}

/* Find Citus's catalog and function for table jobs; false where one is missing */
static bool
jq_local_shard_init(Oid jobs)
{
	Oid			argtypes[2] = {REGCLASSOID, ANYOID};
	MemoryContext oldcontext;
	FuncExpr   *call;

	jobs_relid = jobs;
	placement_relid = get_relname_relid("pg_dist_placement", PG_CATALOG_NAMESPACE);
	placement_shardid_index = get_relname_relid("pg_dist_placement_shardid_index",
												PG_CATALOG_NAMESPACE);
	local_group_relid = get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
	shard_id_fn = LookupFuncName(list_make2(makeString("pg_catalog"),
											makeString("get_shard_id_for_distribution_column")),
								 2, argtypes, true);
	if (!OidIsValid(jobs_relid) || !OidIsValid(placement_relid) ||
		!OidIsValid(placement_shardid_index) || !OidIsValid(local_group_relid) ||
		!OidIsValid(shard_id_fn))
		return false;
	citus_get_local_execution_status = (int (*) (void))
		load_external_function("$libdir/citus", "GetCurrentLocalExecutionStatus",
							   false, NULL);
	citus_set_local_execution_status = (void (*) (int))
		load_external_function("$libdir/citus", "SetLocalExecutionStatus",
							   false, NULL);
	citus_use_2pc = (void (*) (void))
		load_external_function("$libdir/citus", "Use2PCForCoordinatedTransaction",
							   false, NULL);
	if (citus_get_local_execution_status == NULL ||
		citus_set_local_execution_status == NULL || citus_use_2pc == NULL)
		return false;
	placement_shardid_attnum = get_attnum(placement_relid, "shardid");
	placement_groupid_attnum = get_attnum(placement_relid, "groupid");
	if (placement_shardid_attnum == InvalidAttrNumber ||
		placement_groupid_attnum == InvalidAttrNumber)
		return false;

	/*
	 * The function takes "any" and reads its argument's type from the call
	 * expression: give it one, with the types of the values passed.
	 */
	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	fmgr_info(shard_id_fn, &shard_id_flinfo);
	call = makeFuncExpr(shard_id_fn, INT8OID,
						list_make2(makeNullConst(REGCLASSOID, -1, InvalidOid),
								   makeNullConst(TEXTOID, -1, DEFAULT_COLLATION_OID)),
						InvalidOid, DEFAULT_COLLATION_OID, COERCE_EXPLICIT_CALL);
	fmgr_info_set_expr((Node *) call, &shard_id_flinfo);
	MemoryContextSwitchTo(oldcontext);
	return true;
}

/* The shard of jobqueue.jobs that holds queue's jobs */
static int64
jq_queue_shard(Datum queue)
{
	LOCAL_FCINFO(fcinfo, 2);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, &shard_id_flinfo, 2, DEFAULT_COLLATION_OID,
							 NULL, NULL);
	fcinfo->args[0].value = ObjectIdGetDatum(jobs_relid);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = queue;
	fcinfo->args[1].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	if (fcinfo->isnull)
		return 0;
	return DatumGetInt64(result);
}

/* This node's group in the cluster (pg_dist_local_group), -1 if unknown */
static int32
jq_local_group(void)
{
	Relation	rel = table_open(local_group_relid, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple = systable_getnext(scan);
	int32		group = -1;
	bool		isnull;

	if (HeapTupleIsValid(tuple))
	{
		Datum		d = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);

		if (!isnull)
			group = DatumGetInt32(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return group;
}

/* Has shard shardid a placement on this node (the latest catalog)? */
static bool
jq_shard_is_local(int64 shardid)
{
	int32		group = jq_local_group();
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tuple;
	bool		found = false;

	if (group < 0)
		return false;
	rel = table_open(placement_relid, AccessShareLock);
	ScanKeyInit(&key, placement_shardid_attnum, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(shardid));
	scan = systable_beginscan(rel, placement_shardid_index, true, NULL, 1, &key);
	while (!found && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, placement_groupid_attnum,
									 RelationGetDescr(rel), &isnull);

		found = !isnull && DatumGetInt32(d) == group;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Take Citus's lock on the metadata of entry's shard, as its writes do;
 * with nowait, only if no move holds it (false then)
 */
static bool
jq_lock_shard(JqLocalShard *entry, bool nowait)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, entry->shard_index, entry->colocation_id,
						 JQ_CITUS_COLOCATED_SHARDS_METADATA_LOCK_CLASS);
	return LockAcquire(&tag, ShareLock, false, nowait) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * The colocation group of shard entry->shardid and its index among the
 * shards of its table, in hash order (Citus's shardIndex)
 */
static void
jq_local_shard_lock_tag(JqLocalShard *entry)
{
	static const char *sql =
		"SELECT p.colocationid, "
		"       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_dist_shard o "
		"        WHERE o.logicalrelid OPERATOR(pg_catalog.=) s.logicalrelid "
		"          AND o.shardminvalue::pg_catalog.int4 OPERATOR(pg_catalog.<) "
		"              s.shardminvalue::pg_catalog.int4) "
		"FROM pg_catalog.pg_dist_shard s "
		"  JOIN pg_catalog.pg_dist_partition p "
		"    ON p.logicalrelid OPERATOR(pg_catalog.=) s.logicalrelid "
		"WHERE s.shardid OPERATOR(pg_catalog.=) $1";
	Datum		value = Int64GetDatum(entry->shardid);
	int			rc;

	rc = SPI_execute_with_args(sql, 1, (Oid[]) {INT8OID}, &value, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the metadata of shard " INT64_FORMAT ": %s",
			 entry->shardid, SPI_result_code_string(rc));
	if (SPI_processed != 1)
	{
		entry->usable = false;
		return;
	}
	entry->colocation_id = DatumGetUInt32(jq_result(0, 1));
	entry->shard_index = (uint32) DatumGetInt64(jq_result(0, 2));
}

/*
 * The tables of jobqueue that Citus manages and their shards on this node
 * for shard shardid of jobs (queue: a queue of that shard); usable is
 * false unless every one has its shard here.
 */
static void
jq_local_shard_tables(JqLocalShard *entry, Datum queue)
{
	static const char *sql =
		"SELECT pg_catalog.quote_ident(c.relname::pg_catalog.text), "
		"       pg_catalog.shard_name(c.oid, s.shardid), "
		"       EXISTS (SELECT FROM pg_catalog.pg_dist_placement pl "
		"               WHERE pl.shardid OPERATOR(pg_catalog.=) s.shardid "
		"                 AND pl.groupid OPERATOR(pg_catalog.=) "
		"                   (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l)) "
		"FROM pg_catalog.pg_dist_partition p "
		"  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.logicalrelid "
		"  JOIN pg_catalog.pg_dist_shard s "
		"    ON s.logicalrelid OPERATOR(pg_catalog.=) p.logicalrelid "
		"WHERE c.relnamespace OPERATOR(pg_catalog.=) $1 "
		"  AND (p.partmethod OPERATOR(pg_catalog.=) 'n' "
		"       OR s.shardid OPERATOR(pg_catalog.=) "
		"          pg_catalog.get_shard_id_for_distribution_column(p.logicalrelid, $2))";
	Datum		values[2];
	MemoryContext oldcontext;
	int			rc;

	values[0] = ObjectIdGetDatum(get_rel_namespace(jobs_relid));
	values[1] = queue;
	rc = SPI_execute_with_args(sql, 2, (Oid[]) {OIDOID, TEXTOID}, values, NULL,
							   true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the shards of jobqueue's tables: %s",
			 SPI_result_code_string(rc));
	entry->usable = SPI_processed > 0;
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		char	   *table = jq_result_name(row, 1);
		char	   *shard = jq_result_name(row, 2);

		if (!jq_result_bool(row, 3))
			entry->usable = false;
		oldcontext = MemoryContextSwitchTo(TopMemoryContext);
		entry->tables = lappend(entry->tables, psprintf("jobqueue.%s", table));
		entry->shards = lappend(entry->shards, pstrdup(shard));
		MemoryContextSwitchTo(oldcontext);
	}
}

/* Can c continue an identifier (or a qualified name)? */
static bool
jq_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '_' || c == '$' || c == '.' ||
		c == '"' || IS_HIGHBIT_SET(c);
}

/*
 * sql with every whole name in entry->tables (jobqueue.jobs, not
 * jobqueue.jobs_id_seq) replaced by its shard.  The statements of plans.c
 * name their tables so, schema-qualified, and only in such places.
 */
static char *
jq_local_shard_sql(const char *sql, JqLocalShard *entry)
{
	StringInfoData buf;
	const char *p = sql;

	initStringInfo(&buf);
	while (*p != '\0')
	{
		ListCell   *lt;
		ListCell   *ls;
		bool		replaced = false;

		if (p == sql || !jq_ident_char(p[-1]))
		{
			forboth(lt, entry->tables, ls, entry->shards)
			{
				const char *table = lfirst(lt);
				size_t		len = strlen(table);

				if (strncmp(p, table, len) == 0 && !jq_ident_char(p[len]))
				{
					appendStringInfoString(&buf, lfirst(ls));
					p += len;
					replaced = true;
					break;
				}
			}
		}
		if (!replaced)
			appendStringInfoChar(&buf, *p++);
	}
	return buf.data;
}

/*
 * The entry of shard shardid of jobs, made on first use (queue: its
 * queue).  NULL when the table is out of date inside another kept
 * statement, which may be running one of its plans: it is built again
 * only between statements.
 */
static JqLocalShard *
jq_local_shard_entry(int64 shardid, Datum queue)
{
	JqLocalShard *entry;
	bool		found;

	if (local_shards == NULL || local_shards_generation != jq_plans_generation ||
		local_shards_epoch != metadata_epoch)
	{
		HASHCTL		ctl;

		if (local_shards != NULL && jq_statement_depth > 1)
			return NULL;

		if (local_shards != NULL)
		{
			HASH_SEQ_STATUS status;

			hash_seq_init(&status, local_shards);
			while ((entry = hash_seq_search(&status)) != NULL)
			{
				for (int id = 0; id < JQ_NUM_PLANS; id++)
					if (entry->plans[id] != NULL)
						SPI_freeplan(entry->plans[id]);
				list_free_deep(entry->tables);
				list_free_deep(entry->shards);
			}
			hash_destroy(local_shards);
		}
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(JqLocalShard);
		local_shards = hash_create("jobqueue local shards", 32, &ctl,
								   HASH_ELEM | HASH_BLOBS);
		local_shards_generation = jq_plans_generation;
		local_shards_epoch = metadata_epoch;
	}
	entry = hash_search(local_shards, &shardid, HASH_ENTER, &found);
	if (!found)
	{
		entry->usable = false;
		entry->tables = NIL;
		entry->shards = NIL;
		memset(entry->plans, 0, sizeof(entry->plans));
		PG_TRY();
		{
			jq_local_shard_tables(entry, queue);
			if (entry->usable)
				jq_local_shard_lock_tag(entry);
		}
		PG_CATCH();
		{
			hash_search(local_shards, &shardid, HASH_REMOVE, NULL);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	return entry;
}

/*
 * May statements run against this node's shards: in distributed mode, with
 * Citus's catalog found and its local execution on?
 */
static bool
jq_local_shards_usable(void)
{
	static bool registered = false;
	static bool initialized = false;
	static Oid	initialized_for = InvalidOid;	/* jobs, when last found */
	const char *local_execution;
	Oid			jobs;

	/* on one server: nothing more on the hot path than this test */
	if (!jq_distributed_mode())
		return false;
	jq_plans_check();
	jobs = jq_distributed_jobs();
	if (!OidIsValid(jobs))
		return false;
	if (!registered)
	{
		CacheRegisterRelcacheCallback(jq_local_shard_relcache_callback, (Datum) 0);
		registered = true;
	}
	/* the extension may have been made again since this backend looked */
	if (jobs != initialized_for)
	{
		initialized = jq_local_shard_init(jobs);
		initialized_for = jobs;
		metadata_epoch++;
	}
	if (!initialized)
		return false;
	local_execution = GetConfigOption("citus.enable_local_execution", true, false);
	return local_execution != NULL && strcmp(local_execution, "on") == 0;
}

/*
 * The entry of queue's shard of jobs when every table has its shard on
 * this node, by the catalog as last read; NULL otherwise.  Connected to SPI.
 */
static JqLocalShard *
jq_queue_local_shard(Datum queue)
{
	int64		shardid = jq_queue_shard(queue);
	JqLocalShard *entry;

	if (shardid == 0)
		return NULL;
	entry = jq_local_shard_entry(shardid, queue);
	return entry != NULL && entry->usable ? entry : NULL;
}

/*
 * May this transaction run statements on this node's shards here: has
 * Citus not reached them over a connection in it?
 */
static bool
jq_local_execution_allowed(void)
{
	return citus_get_local_execution_status() != JQ_CITUS_LOCAL_EXECUTION_DISABLED;
}

/*
 * Tell Citus that this transaction runs a statement on this node's shards
 * here, and whether it writes, as its local executor does (see the top)
 */
static void
jq_note_local_execution(bool writes)
{
	citus_set_local_execution_status(JQ_CITUS_LOCAL_EXECUTION_REQUIRED);
	if (writes)
		citus_use_2pc();
}

/*
 * The plan of statement id against the shards on this node of the queue
 * named by its parameter queue (plans.c, queue_param), with the shard
 * locked against a move to the end of the transaction; NULL when the
 * statement is to run as it is (not distributed, the shard elsewhere,
 * local execution off).  Connected to SPI.
 */
SPIPlanPtr
jq_local_shard_plan(JqPlanId id, Datum queue)
{
	JqLocalShard *entry;

	if (!jq_local_shards_usable() || !jq_local_execution_allowed())
		return NULL;
	entry = jq_queue_local_shard(queue);
	if (entry == NULL)
		return NULL;
	(void) jq_lock_shard(entry, false);
	/* a move or split that ended while this waited: read it */
	AcceptInvalidationMessages();
	InvalidateCatalogSnapshot();
	if (!jq_shard_is_local(entry->shardid))
		return NULL;
	/* the shards changed since the lock was named: let Citus route it */
	if (local_shards_epoch != metadata_epoch)
		return NULL;
	if (entry->plans[id] == NULL)
	{
		char	   *sql = jq_local_shard_sql(jq_plan_local_sql(id), entry);

		entry->plans[id] = jq_plan_prepare(id, sql, jq_plan_local_custom(id));
		pfree(sql);
	}
	jq_note_local_execution(!jq_plan_read_only(id));
	return entry->plans[id];
}

/*
 * Take now, if no shard move holds it, the lock that jq_local_shard_plan
 * takes on the shard of queue on this node, to the end of the transaction.
 * False when a move holds it: the background worker, which gives up a lock
 * wait after lock_timeout with an error, leaves the queue to a later pass
 * instead.  True when the queue's statements do not run against a shard
 * here (Citus then takes its own locks).  Connected to SPI.
 */
bool
jq_local_shard_try_lock(Datum queue)
{
	JqLocalShard *entry;

	if (!jq_local_shards_usable())
		return true;
	entry = jq_queue_local_shard(queue);
	return entry == NULL || jq_lock_shard(entry, true);
}

/*
 * The statement that reads the queue of job $1 from the shards of jobs
 * placed on this node, one index probe each (jobs_id_idx); NULL when this
 * node holds none.  Built again after a change of jobs's metadata.
 */
static SPIPlanPtr
jq_local_job_queue_plan(void)
{
	static const char *sql =
		"SELECT pg_catalog.shard_name(s.logicalrelid, s.shardid) "
		"FROM pg_catalog.pg_dist_shard s "
		"  JOIN pg_catalog.pg_dist_placement p "
		"    ON p.shardid OPERATOR(pg_catalog.=) s.shardid "
		"WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1 "
		"  AND p.groupid OPERATOR(pg_catalog.=) "
		"    (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l) "
		"ORDER BY s.shardid";
	Datum		value = ObjectIdGetDatum(jobs_relid);
	StringInfoData buf;
	int			rc;

	if (job_queue_plan_epoch == metadata_epoch &&
		job_queue_plan_generation == jq_plans_generation)
		return job_queue_plan;
	if (job_queue_plan != NULL)
		SPI_freeplan(job_queue_plan);
	job_queue_plan = NULL;
	job_queue_plan_epoch = metadata_epoch;
	job_queue_plan_generation = jq_plans_generation;

	rc = SPI_execute_with_args(sql, 1, (Oid[]) {REGCLASSOID}, &value, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the shards of jobqueue.jobs: %s",
			 SPI_result_code_string(rc));
	if (SPI_processed == 0)
		return NULL;
	initStringInfo(&buf);
	for (uint64 row = 0; row < SPI_processed; row++)
		appendStringInfo(&buf, "%sSELECT j.queue_name FROM %s j WHERE j.id OPERATOR(pg_catalog.=) $1",
						 row > 0 ? " UNION ALL " : "",
						 jq_result_name(row, 1));
	appendStringInfoString(&buf, " LIMIT 1");
	job_queue_plan = SPI_prepare_cursor(buf.data, 1, (Oid[]) {INT8OID},
										CURSOR_OPT_GENERIC_PLAN);
	if (job_queue_plan == NULL)
		elog(ERROR, "SPI_prepare failed for jobqueue statement \"local job queue\": %s",
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(job_queue_plan) != 0)
		elog(ERROR, "SPI_keepplan failed for jobqueue statement \"local job queue\"");
	pfree(buf.data);
	return job_queue_plan;
}

/*
 * The queue of job id, as a text Datum in the caller's memory, when the job
 * is in a shard of jobs placed on this node: a call by id alone then skips
 * the read of every shard.  false when it is not (elsewhere, or no such
 * job) or this is not a node of a cluster.  A job never changes queue, so
 * the name read is right even if the shard moves meanwhile: the statement
 * that follows is routed by it.  Connected to SPI; replaces SPI_tuptable.
 */
bool
jq_local_shard_job_queue(int64 id, Datum *queue)
{
	SPIPlanPtr	plan;
	Datum		value = Int64GetDatum(id);
	int			rc;

	if (!jq_local_shards_usable() || !jq_local_execution_allowed())
		return false;
	plan = jq_local_job_queue_plan();
	if (plan == NULL)
		return false;
	jq_note_local_execution(false);
	rc = SPI_execute_plan(plan, &value, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "jobqueue statement \"local job queue\" failed: %s",
			 SPI_result_code_string(rc));
	if (SPI_processed == 0)
		return false;
	*queue = CStringGetTextDatum(jq_result_name(0, 1));
	return true;
}

/*
 * A number that changes at every change of jobs's shards or placements
 * seen by this backend (for caches of where queues are, queuecache.c)
 */
uint64
jq_local_shard_metadata_epoch(void)
{
	return jq_local_shards_usable() ? metadata_epoch : 0;
}
