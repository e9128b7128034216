/*-------------------------------------------------------------------------
 *
 * dependencies.c
 *	  Jobs that wait for other jobs: enqueueing them, releasing them when
 *	  their dependencies succeed, cancelling them when one fails, and the
 *	  check of jq_retry.
 *
 * A job enqueued with depends_on gets one row in jobqueue.job_dependencies
 * per dependency that has not succeeded yet, and the number of those rows
 * in its dependencies_left.  While that is above zero its status is
 * 'waiting', so it is not in the claim index (WHERE status = 'pending') and
 * the claim never reads it.
 *
 * Every statement that finishes a job returns has_dependents from the
 * job's row (see JQ_OUTCOME_SQL); jq_note_outcome then calls
 * jq_dependencies_resolve() (outcome.c) in the same transaction:
 *	  - succeeded: its rows of job_dependencies are deleted in bounded
 *		batches and counted off each dependent's dependencies_left under
 *		the dependent's row lock; a dependent that reaches zero becomes
 *		pending (and its queue's listeners are woken);
 *	  - dead or cancelled: its waiting dependents are cancelled with error
 *		code DEPENDENCY_FAILED and a history entry naming it, then theirs,
 *		level by level (each level a new statement, so a new snapshot).
 *
 * Races with an enqueue.  The enqueue reads each dependency's newest
 * committed version, locked FOR KEY SHARE (as a foreign key check would):
 * that lock conflicts with DELETE only, so the dependency cannot disappear
 * before the enqueue commits (purging skips it; a completion in a queue
 * that keeps no history keeps it instead of deleting it), while its
 * holder's heartbeat, completion and failure, claims, reaps, cancels and
 * replays -- all UPDATEs of non-key columns, claims and reaps locking FOR
 * NO KEY UPDATE -- never wait for the producer's transaction, however long
 * it stays open.
 *
 * A dependency may therefore finish while the producer's transaction is
 * open; its finishing statement cannot see the new rows of
 * job_dependencies.  So when the producer commits, a deferred constraint
 * trigger on job_dependencies (jq_dependencies_settle) settles the
 * dependencies once per transaction, in one statement: it locks them in id
 * order (FOR NO KEY UPDATE), sets has_dependents, and resolves those that
 * have succeeded, died or been cancelled meanwhile exactly as their
 * finishing statement would have.  The lock makes the two sides meet:
 * a finishing statement under way commits before the check reads the
 * status; a later one waits for the producer's commit -- the commit only,
 * not the transaction -- and then reads has_dependents from the row and
 * finds the committed rows.  Each row of job_dependencies is counted off
 * by the statement that deletes it, and a waiting job is cancelled only
 * while it is waiting, so a dependent is released or cancelled exactly
 * once whichever side resolves it.  A job that the producer's own
 * transaction finishes after making others wait for it is resolved at once
 * (outcome.c remembers the dependencies of the transaction).
 *
 * A schema from before 1.4 has no such trigger: the enqueue then locks the
 * dependencies until it commits and sets has_dependents at once, as 1.3
 * did (JQ_PLAN_DEPENDENCIES_LOCK).
 *
 * On Citus, job_dependencies is distributed by queue_name, the queue of
 * depends_on, so a finishing job finds the rows of its dependents on its
 * own shard; the dependents are updated on theirs (outcome.c).  The
 * enqueue finds each dependency's queue (its own queue first, every shard
 * only for the others), locks them queue by queue as on a schema before
 * 1.4 -- a producer's open transaction holds up their completion there --
 * and writes each queue's rows on its shard; the check at commit does
 * nothing.  Reading a job's dependencies (jq_job, jq_retry) reads every
 * shard.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "utils/rel.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_dependencies_settle);

/* The deferred trigger of job_dependencies (1.4) */
#define JQ_SETTLE_TRIGGER "job_dependencies_settle"

/*
 * Is the dependencies' check at commit installed (version 1.4)?  The
 * trigger list of job_dependencies comes from the relation cache, which
 * DDL on the table invalidates.
 */
static bool
jq_dependencies_settled_at_commit(void)
{
	Oid			nsp = get_namespace_oid("jobqueue", true);
	Oid			relid;
	Relation	rel;
	bool		found = false;

	if (!OidIsValid(nsp))
		return false;
	relid = get_relname_relid("job_dependencies", nsp);
	if (!OidIsValid(relid))
		return false;
	rel = relation_open(relid, AccessShareLock);
	if (rel->trigdesc != NULL)
	{
		int			i;

		for (i = 0; i < rel->trigdesc->numtriggers; i++)
		{
			if (strcmp(rel->trigdesc->triggers[i].tgname, JQ_SETTLE_TRIGGER) == 0)
			{
				found = true;
				break;
			}
		}
	}
	relation_close(rel, AccessShareLock);
	return found;
}

static int
jq_int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/* The elements of bigint array a, copied to *ids (palloc'd); their number */
static int
jq_int64_array_copy(Datum a, int64 **ids)
{
	ArrayType  *arr = DatumGetArrayTypeP(a);
	Datum	   *elems;
	int			n;
	int			i;

	deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &elems, NULL, &n);
	*ids = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < n; i++)
		(*ids)[i] = DatumGetInt64(elems[i]);
	return n;
}

/* By id */
static int
jq_job_ref_id_cmp(const void *a, const void *b)
{
	return jq_int64_cmp(&((const JqJobRef *) a)->id, &((const JqJobRef *) b)->id);
}

static void
jq_raise_unknown_dependency(int64 id)
{
	ereport(ERROR,
			(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
			 errmsg("job %lld does not exist", (long long) id),
			 errdetail("A job can only depend on existing jobs.")));
}

/*
 * Citus: the queue of each of the n dependencies ids[] (sorted, distinct;
 * depends_on is the same as a bigint[]), read in queue first; those
 * elsewhere in the queues where they most likely are (jq_queues_of_ids),
 * then in every queue, then on every shard (a job of no queue).  An
 * unknown one is an error.  Returns them by queue, then id.
 */
static JqJobRef *
jq_dependencies_find(Datum depends_on, const int64 *ids, int n, Datum queue)
{
	JqJobRef   *deps = palloc0(sizeof(JqJobRef) * Max(n, 1));
	JqJobRef   *d = deps;
	Datum		values[2];
	char		nulls[2] = {JQ_NOTNULL, JQ_NOTNULL};
	uint64		found;
	uint64		i;
	int			k;

	values[0] = depends_on;
	values[1] = queue;
	jq_execute(JQ_PLAN_DEPENDENCIES_FIND, values, nulls, SPI_OK_SELECT);
	/* the queues on the nodes that drew the ids, every queue, every shard */
	for (int pass = 0; pass < 2 && SPI_processed < (uint64) n; pass++)
	{
		values[1] = jq_queues_of_ids(ids, pass == 0 ? n : 0);
		jq_execute_multi_shard(JQ_PLAN_DEPENDENCIES_FIND_IN, values, NULL);
	}
	if (SPI_processed < (uint64) n)
	{
		nulls[1] = JQ_ISNULL;
		jq_execute_multi_shard(JQ_PLAN_DEPENDENCIES_FIND, values, nulls);
	}
	found = SPI_processed;
	for (i = 0; i < found; i++)
	{
		d[i].queue = jq_result_name(i, 1);
		d[i].id = DatumGetInt64(jq_result(i, 2));
	}
	qsort(d, found, sizeof(JqJobRef), jq_job_ref_id_cmp);
	for (k = 0, i = 0; k < n; k++)
	{
		if (i < found && d[i].id == ids[k])
			i++;
		else
			jq_raise_unknown_dependency(ids[k]);
	}
	qsort(d, n, sizeof(JqJobRef), jq_job_ref_cmp);
	return deps;
}

/*
 * Citus: lock the n dependencies deps[] (by queue, then id) queue by
 * queue with plan ($1 ids, $2 their queue; returns each one's id and
 * status in id order, SPI result rc), and set their statuses: NULL for
 * one that is gone.
 */
static void
jq_dependencies_lock_each_queue(JqJobRef *deps, int n, JqPlanId plan, int rc)
{
	int			from;

	for (from = 0; from < n;)
	{
		int			to = jq_job_ref_run(deps, from, n);
		Datum		values[2];
		uint64		r = 0;
		int			i;

		values[0] = jq_job_ref_ids(deps, from, to);
		values[1] = CStringGetTextDatum(deps[from].queue);
		jq_execute(plan, values, NULL, rc);
		for (i = from; i < to; i++)
		{
			deps[i].status = NULL;
			if (r < SPI_processed && DatumGetInt64(jq_result(r, 1)) == deps[i].id)
				deps[i].status = jq_result_name(r++, 2);
		}
		from = to;
	}
}

/*
 * Citus: JQ_PLAN_DEPENDENCIES_LOCK's result, taken queue by queue (each
 * queue's dependencies locked in id order on its shard).  Fills values[]
 * and nulls[] at the places of JQ_PLAN_ENQUEUE_DEPENDENT's $8 (the
 * dependencies that have not succeeded), $9 and $10 (the first that is
 * dead or cancelled, its status) and $12 (the queues of $8).  Returns the
 * dependencies by queue, then id.
 */
static JqJobRef *
jq_dependencies_lock_distributed(ArrayType *depends_on, Datum queue,
								 Datum *values, char *nulls, int *ndeps)
{
	int64	   *ids;
	int			n = jq_int64_array_copy(PointerGetDatum(depends_on), &ids);
	JqJobRef   *deps = jq_dependencies_find(PointerGetDatum(depends_on), ids, n, queue);
	JqJobRef   *waits = palloc(sizeof(JqJobRef) * Max(n, 1));
	JqJobRef   *failed = NULL;
	Datum	   *wait_ids = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *wait_queues = palloc(sizeof(Datum) * Max(n, 1));
	int			nwaits = 0;
	int			i;

	jq_dependencies_lock_each_queue(deps, n, JQ_PLAN_DEPENDENCIES_LOCK_IN,
									SPI_OK_UPDATE_RETURNING);
	for (i = 0; i < n; i++)
	{
		/* deleted since it was found */
		if (deps[i].status == NULL)
			jq_raise_unknown_dependency(deps[i].id);
		if (strcmp(deps[i].status, "succeeded") == 0)
			continue;
		waits[nwaits++] = deps[i];
		if ((strcmp(deps[i].status, "dead") == 0 ||
			 strcmp(deps[i].status, "cancelled") == 0) &&
			(failed == NULL || deps[i].id < failed->id))
			failed = &deps[i];
	}
	qsort(waits, nwaits, sizeof(JqJobRef), jq_job_ref_id_cmp);
	for (i = 0; i < nwaits; i++)
	{
		wait_ids[i] = Int64GetDatum(waits[i].id);
		wait_queues[i] = CStringGetTextDatum(waits[i].queue);
	}
	values[7] = PointerGetDatum(construct_array(wait_ids, nwaits, INT8OID, sizeof(int64),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[11] = PointerGetDatum(construct_array(wait_queues, nwaits, TEXTOID, -1,
												 false, TYPALIGN_INT));
	nulls[7] = nulls[11] = JQ_NOTNULL;
	if (failed != NULL)
	{
		values[8] = Int64GetDatum(failed->id);
		values[9] = CStringGetTextDatum(failed->status);
		nulls[8] = nulls[9] = JQ_NOTNULL;
	}
	else
		nulls[8] = nulls[9] = JQ_ISNULL;
	*ndeps = n;
	return deps;
}

/*
 * Citus: the rows of job_dependencies of the n_jobs new jobs job_ids[] of
 * queue, one statement per row (JQ_PLAN_DEPENDENCY_ADD), on the shards of
 * the dependencies that have not succeeded (deps[])
 */
static void
jq_dependencies_add_distributed(const JqJobRef *deps, int ndeps,
								Datum *job_ids, int n_jobs, Datum queue)
{
	int			i;
	int			k;

	for (i = 0; i < ndeps; i++)
	{
		Datum		values[4];

		if (strcmp(deps[i].status, "succeeded") == 0)
			continue;
		values[0] = CStringGetTextDatum(deps[i].queue);
		values[1] = Int64GetDatum(deps[i].id);
		values[3] = queue;
		for (k = 0; k < n_jobs; k++)
		{
			values[2] = job_ids[k];
			jq_execute(JQ_PLAN_DEPENDENCY_ADD, values, NULL, SPI_OK_INSERT);
			CHECK_FOR_INTERRUPTS();
		}
	}
}

/*
 * depends_on argument argno: a one-dimensional bigint array without NULLs,
 * returned sorted and without duplicates.
 */
ArrayType *
jq_arg_depends_on(FunctionCallInfo fcinfo, int argno)
{
	ArrayType  *arr = jq_arg_array(fcinfo, argno, "depends_on", INT8OID);
	Datum	   *elems;
	int			nelems;
	int64	   *ids;
	int			n = 0;
	int			i;

	deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &elems, NULL, &nelems);
	ids = palloc(sizeof(int64) * Max(nelems, 1));
	for (i = 0; i < nelems; i++)
		ids[i] = DatumGetInt64(elems[i]);
	qsort(ids, nelems, sizeof(int64), jq_int64_cmp);
	for (i = 0; i < nelems; i++)
	{
		if (n == 0 || ids[n - 1] != ids[i])
			elems[n++] = Int64GetDatum(ids[i]);
	}
	return construct_array(elems, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
						   TYPALIGN_DOUBLE);
}

/*
 * Citus: JQ_PLAN_ENQUEUE_DEPENDENT of one job (payload, group_keys NULL or
 * its key) as JQ_PLAN_ENQUEUE_DEPENDENT_ONE, with the queue's settings
 * read here; ins and ins_nulls are JQ_PLAN_ENQUEUE_DEPENDENT's parameters.
 */
static void
jq_enqueue_one_distributed(const char *queue_name, Datum payload,
						   ArrayType *group_keys, const Datum *ins,
						   const char *ins_nulls)
{
	const JqQueueSettings *settings = jq_queue_settings(queue_name);
	Datum		values[13];
	char		nulls[13];
	Datum		delete_on_success;
	int			i;

	if (!settings->exists)
		jq_raise_unknown_queue(queue_name);
	for (i = 0; i < 10; i++)
	{
		values[i] = ins[i];
		nulls[i] = ins_nulls[i];
	}
	values[1] = payload;
	nulls[1] = JQ_NOTNULL;
	if (nulls[4] == JQ_ISNULL)
	{
		values[4] = Int32GetDatum(settings->max_attempts);
		nulls[4] = JQ_NOTNULL;
	}
	nulls[10] = JQ_ISNULL;
	if (group_keys != NULL)
	{
		bool		isnull;
		int			idx = 1;

		values[10] = array_get_element(PointerGetDatum(group_keys), 1, &idx,
									   -1, -1, false, TYPALIGN_INT, &isnull);
		if (!isnull)
			nulls[10] = JQ_NOTNULL;
	}
	if (nulls[10] == JQ_ISNULL && settings->group_policy)
	{
		values[10] = CStringGetTextDatum("");
		nulls[10] = JQ_NOTNULL;
	}
	values[11] = BoolGetDatum(settings->notify);
	nulls[11] = JQ_NOTNULL;
	jq_completion_queues(&values[12], &delete_on_success);
	nulls[12] = JQ_NOTNULL;
	jq_execute(JQ_PLAN_ENQUEUE_DEPENDENT_ONE, values, nulls, SPI_OK_INSERT_RETURNING);
}

/*
 * Enqueue jobs that depend on the jobs of depends_on (sorted, distinct),
 * for jq_enqueue (payloads NULL: the one payload is values[1]; returns the
 * job's id) and jq_enqueue_many (each job's id goes to tupstore; returns
 * 0).  values and nulls are laid out as jq_enqueue's statement
 * parameters: queue, payload, priority, run_at, max_attempts, key, now;
 * group_keys is NULL or has one group key (or NULL) per payload.
 *
 * An unknown dependency is an error (23503, as a foreign key would say);
 * a dependency that succeeded is satisfied; if one is dead or cancelled,
 * the jobs are created cancelled, as if it had failed later.
 */
int64
jq_enqueue_dependent(FunctionCallInfo fcinfo, Datum *values, char *nulls,
					 ArrayType *payloads, ArrayType *depends_on,
					 ArrayType *group_keys,
					 Tuplestorestate *tupstore, TupleDesc tupdesc)
{
	char	   *queue_name = text_to_cstring(DatumGetTextPP(values[0]));
	Datum		lock_values[1];
	Datum		ins[12];
	char		ins_nulls[12];
	bool		isnull;
	Datum		d;
	int64		job_id = 0;
	uint64		i;
	bool		distributed;
	bool		settle;
	bool		one;
	JqJobRef   *deps = NULL;
	int			ndeps = 0;

	one = (payloads == NULL);
	if (payloads == NULL)
		payloads = construct_array(&values[1], 1, JSONBOID, -1, false,
								   TYPALIGN_INT);

	jq_spi_connect();
	distributed = jq_distributed_mode();
	settle = !distributed && jq_dependencies_settled_at_commit();
	jq_check_aged_priority(TextDatumGetCString(values[0]), DatumGetInt32(values[2]));

	memset(ins_nulls, JQ_NOTNULL, sizeof(ins_nulls));
	for (i = 0; i < 7; i++)
	{
		ins[i] = values[i];
		ins_nulls[i] = nulls[i];
	}
	ins[1] = PointerGetDatum(payloads);
	ins_nulls[1] = JQ_NOTNULL;
	ins[10] = PointerGetDatum(group_keys);
	if (group_keys == NULL)
		ins_nulls[10] = JQ_ISNULL;

	if (distributed)
		deps = jq_dependencies_lock_distributed(depends_on, values[0], ins,
												ins_nulls, &ndeps);
	else
	{
		lock_values[0] = PointerGetDatum(depends_on);
		jq_execute(settle ? JQ_PLAN_DEPENDENCIES_READ : JQ_PLAN_DEPENDENCIES_LOCK,
				   lock_values, NULL, SPI_OK_SELECT);
		d = jq_result_nullable(0, 1, &isnull);
		if (!isnull)
			jq_raise_unknown_dependency(DatumGetInt64(d));
		/* the results stay in SPI memory until SPI_finish */
		ins[7] = jq_result(0, 2);
		ins[8] = jq_result_nullable(0, 3, &isnull);
		if (isnull)
			ins_nulls[8] = ins_nulls[9] = JQ_ISNULL;
		else
			ins[9] = jq_result(0, 4);
		ins[11] = jq_result(0, 5);
	}

	if (distributed && one)
		jq_enqueue_one_distributed(queue_name, values[1], group_keys, ins, ins_nulls);
	else
		jq_execute(JQ_PLAN_ENQUEUE_DEPENDENT, ins, ins_nulls, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		Datum	   *job_ids = palloc(sizeof(Datum) * SPI_processed);
		uint64		njobs = SPI_processed;

		for (i = 0; i < njobs; i++)
			job_ids[i] = jq_result(i, JQ_OUTCOME_ID);

		if (settle)
		{
			/* the dependencies the new jobs wait for, settled at commit */
			ArrayType  *waits = DatumGetArrayTypeP(ins[7]);
			Datum	   *elems;
			int			nelems;

			deconstruct_array(waits, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
							  TYPALIGN_DOUBLE, &elems, NULL, &nelems);
			jq_dependencies_note_waiting(elems, nelems);
		}
		job_id = DatumGetInt64(jq_result(0, JQ_OUTCOME_ID));
		if (tupstore != NULL)
		{
			for (i = 0; i < SPI_processed; i++)
			{
				Datum		id = jq_result(i, JQ_OUTCOME_ID);
				bool		id_null = false;

				tuplestore_putvalues(tupstore, tupdesc, &id, &id_null);
			}
		}
		(void) jq_note_outcome(JQ_TR_ENQUEUE, 0, NULL, NULL, NULL);
		/* also for jobs cancelled at once: jq_retry looks at their rows */
		if (distributed)
			jq_dependencies_add_distributed(deps, ndeps, job_ids, (int) njobs,
											values[0]);
	}
	else
	{
		jq_require_queue(queue_name);
		/* an empty payload array, or a key the queue holds (as jq_enqueue) */
		if (tupstore == NULL)
		{
			if (nulls[5] == JQ_ISNULL)
				jq_raise_unknown_queue(queue_name);
			job_id = jq_job_with_key(values[0], values[5]);
		}
	}
	jq_spi_finish();
	return job_id;
}

/*
 * jq_dependencies_settle() returns trigger
 *
 * The deferred constraint trigger AFTER INSERT on jobqueue.job_dependencies,
 * FOR EACH ROW: at the commit of a transaction that made jobs wait, settle
 * their dependencies (see the header): the first row of the transaction
 * settles every dependency the transaction remembered, in one statement;
 * the others find theirs settled.  A dependency that no longer exists
 * (deleted by hand, or not restored yet) is left alone, as the rows naming
 * it always were.
 */
Datum
jq_dependencies_settle(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	tupdesc;
	Datum		dep;
	bool		isnull;
	int			attno;
	int64	   *ids;
	int			n;
	Datum		values[1];
	Datum	   *elems;
	int64	   *succeeded;
	int64	   *failed;
	int			nsucceeded;
	int			nfailed;
	int			i;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("jq_dependencies_settle() must be called as a trigger")));
	if (!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("jq_dependencies_settle() must be an AFTER INSERT ... FOR EACH ROW trigger")));

	tupdesc = trigdata->tg_relation->rd_att;
	attno = SPI_fnumber(tupdesc, "depends_on");
	if (attno <= 0)
		elog(ERROR, "jq_dependencies_settle() fired on a table without depends_on");
	dep = SPI_getbinval(trigdata->tg_trigtuple, tupdesc, attno, &isnull);
	if (isnull)
		return PointerGetDatum(NULL);

	n = jq_dependencies_take_unsettled(DatumGetInt64(dep), &ids);
	if (n == 0)
		return PointerGetDatum(NULL);
	jq_spi_connect();
	/* on Citus the enqueue locked and marked the dependencies (see header) */
	if (jq_distributed_mode())
	{
		jq_spi_finish();
		return PointerGetDatum(NULL);
	}

	elems = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
		elems[i] = Int64GetDatum(ids[i]);
	values[0] = PointerGetDatum(construct_array(elems, n, INT8OID, sizeof(int64),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	jq_execute(JQ_PLAN_DEPENDENCIES_SETTLE, values, NULL, SPI_OK_SELECT);
	nsucceeded = jq_int64_array_copy(jq_result(0, 1), &succeeded);
	nfailed = jq_int64_array_copy(jq_result(0, 2), &failed);
	if (nsucceeded > 0 || nfailed > 0)
		jq_dependencies_resolve(succeeded, nsucceeded, failed, nfailed,
								NULL, NULL);
	jq_spi_finish();

	return PointerGetDatum(NULL);
}

/*
 * Before jq_retry replays job_id of queue (queue_null: no such job): raise
 * an error (55000) if one of its dependencies that have not succeeded is
 * dead, cancelled or gone, and lock the others so that none of them
 * finishes before the replay commits.  A replayed job with dependencies
 * left waits for them again.  Must be called while connected to SPI.
 */
void
jq_retry_check_dependencies(int64 job_id, Datum queue, bool queue_null)
{
	Datum		values[2];
	int64		dep = 0;
	char	   *status = NULL;
	bool		refused = false;

	values[0] = Int64GetDatum(job_id);
	if (!jq_distributed_mode())
	{
		jq_execute(JQ_PLAN_RETRY_DEPENDENCIES, values, NULL, SPI_OK_SELECT);
		if (SPI_processed > 0)
		{
			refused = true;
			dep = DatumGetInt64(jq_result(0, 1));
			status = jq_result_name(0, 2);
		}
	}
	else if (!queue_null)
	{
		/* the rows are on every shard; the dependencies locked per queue */
		JqJobRef   *deps;
		int			n;
		int			i;

		values[1] = queue;
		jq_execute_multi_shard(JQ_PLAN_JOB_DEPENDENCIES, values, NULL);
		n = (int) SPI_processed;
		deps = palloc0(sizeof(JqJobRef) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			deps[i].queue = jq_result_name(i, 1);
			deps[i].id = DatumGetInt64(jq_result(i, 2));
		}
		qsort(deps, n, sizeof(JqJobRef), jq_job_ref_cmp);
		jq_dependencies_lock_each_queue(deps, n, JQ_PLAN_DEPENDENCIES_SHARE_IN,
										SPI_OK_SELECT);
		qsort(deps, n, sizeof(JqJobRef), jq_job_ref_id_cmp);
		for (i = 0; i < n && !refused; i++)
		{
			if (deps[i].status == NULL ||
				strcmp(deps[i].status, "dead") == 0 ||
				strcmp(deps[i].status, "cancelled") == 0)
			{
				refused = true;
				dep = deps[i].id;
				status = deps[i].status;
			}
		}
	}
	if (refused)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot replay job %lld: it depends on job %lld, which is %s",
						(long long) job_id, (long long) dep,
						status != NULL ? status : "deleted"),
				 errhint("Replay job %lld first, or enqueue a new job.",
						 (long long) dep)));
}

/*
 * Citus: jq_job's list of what job_id of queue waits for, read from every
 * shard (JQ_PLAN_JOB's distributed form gives an empty array when there
 * is something to read).  Connected to SPI; SPI's result is left to the
 * caller's next statement.
 */
Datum
jq_job_dependencies(Datum job_id, Datum queue)
{
	Datum		values[2];
	Datum	   *elems;
	uint64		i;

	values[0] = job_id;
	values[1] = queue;
	jq_execute_multi_shard(JQ_PLAN_JOB_DEPENDENCIES, values, NULL);
	elems = palloc(sizeof(Datum) * Max(SPI_processed, 1));
	for (i = 0; i < SPI_processed; i++)
		elems[i] = jq_result(i, 2);
	return PointerGetDatum(construct_array(elems, (int) SPI_processed, INT8OID,
										   sizeof(int64), FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}
