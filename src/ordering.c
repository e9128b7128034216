/*-------------------------------------------------------------------------
 *
 * ordering.c
 *	  Ordering and fairness: job groups, per-group concurrency limits,
 *	  strict order per group, round-robin claims and priority aging.
 *
 * A job may carry a group key.  A queue's policy (columns of
 * jobqueue.queues) says what the groups mean to its claims:
 *
 *	group_concurrency	at most this many running jobs per group
 *	group_ordered		a group's jobs run one at a time, in id order; the
 *						next starts when the one before it succeeded or was
 *						cancelled
 *	fairness			'priority' (today's order) or 'round_robin' (claims
 *						rotate over the groups that have ready jobs)
 *	priority_aging		effective priority = priority + one per interval
 *						waited
 *
 * The claim statement is chosen by the policy in the claim pipeline
 * (claim.c); this file has the group keys, the policy arguments of
 * jq_create_queue/jq_alter_queue, the bookkeeping of groups and
 * jq_group_stats.  A policy change takes effect for the claims that start
 * after it commits; a claim already under way finishes under the settings
 * it read, exactly as if it had run a moment before the change.
 *
 * Why the group limits hold (see also src/README.md): jobqueue.groups has
 * one row per (queue, group) with its number of running jobs.  The
 * triggers on jobqueue.jobs (jq_group_count) change that number in the
 * same transaction as every move of a grouped job into or out of running,
 * whatever the statement, so it is exact at every commit and survives
 * crashes like any row.  A claim with a group policy locks the row of each
 * group it takes jobs from (FOR UPDATE SKIP LOCKED) and reads the counter
 * from the locked, newest row version; the claim's own trigger updates
 * add its jobs before it commits and releases the lock.  Two claims
 * therefore never serve one group at the same time, and the second sees
 * the first's jobs in the counter.  A strictly ordered group is only
 * served with a counter of 0 and its oldest unfinished job pending.
 *
 * Strict order needs no counter and no group lock: the group runs only its
 * head, the lowest id among its pending, running and dead jobs.  The
 * ordered claim reads the head in its snapshot and leases it only when it
 * can lock it (FOR UPDATE SKIP LOCKED) and its newest version is still
 * pending and due.  A snapshot that is behind can show a head as pending
 * that was claimed since (the lock or the recheck refuses it) or as running
 * when it finished (the group waits for the next claim), never a later job
 * as the head while an earlier one is unfinished: succeeded and cancelled
 * are final (but for an operator's replay of a cancelled job).
 *
 * Rotation: see claim.c.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "catalog/namespace.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_group_count);
PG_FUNCTION_INFO_V1(jq_group_stats);
PG_FUNCTION_INFO_V1(jq_recount_groups);

/*
 * Does the schema have the ordering columns (version 1.2)?  A new library
 * may serve a database whose ALTER EXTENSION UPDATE has not run yet: it
 * then runs the statements of 1.1.  Catalog cache lookups, current after
 * any DDL.
 */
bool
jq_ordering_installed(void)
{
	Oid			nsp = get_namespace_oid("jobqueue", true);
	Oid			rel;

	if (!OidIsValid(nsp))
		return false;
	rel = get_relname_relid("queues", nsp);
	return OidIsValid(rel) &&
		get_attnum(rel, "group_concurrency") != InvalidAttrNumber;
}

/*
 * The optional group key in argument argno: NULL, or 1 to
 * JQ_GROUP_KEY_MAXLEN bytes.  An absent argument (an old SQL definition of
 * the function) is NULL.
 */
text *
jq_arg_group_key(FunctionCallInfo fcinfo, int argno)
{
	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return NULL;
	return jq_arg_nonempty_text(fcinfo, argno, "group key", JQ_GROUP_KEY_MAXLEN);
}

/*
 * The optional group keys of jq_enqueue_many in argument argno: NULL, or a
 * one-dimensional text array with one element per payload, each NULL (no
 * group) or a valid group key.
 */
ArrayType *
jq_arg_group_keys(FunctionCallInfo fcinfo, int argno, int npayloads)
{
	ArrayType  *keys;
	int			nkeys;
	ArrayIterator it;
	Datum		elem;
	bool		elem_null;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return NULL;
	keys = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_ELEMTYPE(keys) != TEXTOID)
		elog(ERROR, "unexpected element type %u of group keys", ARR_ELEMTYPE(keys));
	if (ARR_NDIM(keys) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("group_keys must be a one-dimensional array"),
				 errdetail("The array has %d dimensions.", ARR_NDIM(keys))));
	nkeys = ArrayGetNItems(ARR_NDIM(keys), ARR_DIMS(keys));
	if (nkeys != npayloads)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("group_keys must have one element per payload"),
				 errdetail("There are %d payloads and %d group keys.",
						   npayloads, nkeys)));

	it = array_create_iterator(keys, 0, NULL);
	while (array_iterate(it, &elem, &elem_null))
	{
		int			len;

		if (elem_null)
			continue;
		len = VARSIZE_ANY_EXHDR(DatumGetPointer(elem));
		if (len == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("group key must not be empty"),
					 errhint("Pass NULL for a job without a group.")));
		jq_check_text_length("group key", len, JQ_GROUP_KEY_MAXLEN);
	}
	array_free_iterator(it);
	return keys;
}

/* Is the job of tuple tup in status?  (An enum: compare the label.) */
static bool
jq_tuple_status(HeapTuple tup, TupleDesc tupdesc, int status_attno,
				const char *status)
{
	char	   *s = SPI_getvalue(tup, tupdesc, status_attno);

	return s != NULL && strcmp(s, status) == 0;
}

/*
 * What an attempt that leaves running costs its group under fair share, in
 * seconds: the job's declared cost, else its run time from its claim
 * (started_at) to now.  0 for a job without a start (never claimed).
 */
static double
jq_attempt_charge(HeapTuple tup, TupleDesc tupdesc)
{
	int			attno;
	bool		isnull;
	Datum		d;
	TimestampTz started;
	TimestampTz now;

	attno = SPI_fnumber(tupdesc, "cost");
	if (attno > 0)
	{
		d = SPI_getbinval(tup, tupdesc, attno, &isnull);
		if (!isnull)
			return DatumGetFloat8(d);
	}
	attno = SPI_fnumber(tupdesc, "started_at");
	if (attno <= 0)
		return 0;
	d = SPI_getbinval(tup, tupdesc, attno, &isnull);
	if (isnull)
		return 0;
	started = DatumGetTimestampTz(d);
	now = GetCurrentTimestamp();
	return now > started ? (double) (now - started) / USECS_PER_SEC : 0;
}

/*
 * Add delta to the running jobs of (queue, group), creating its row, and
 * charge charge seconds to its fair-share usage when the queue has
 * fairness 'fair_share' (decaying what it had, JQ_PLAN_GROUP_ADD).  A
 * move into or out of running is an UPDATE of the row (it exists: its
 * job's insert or its move to pending made or held it), which locks it
 * until the end of the transaction; a job entering a group in a state
 * other than running, or becoming pending, creates the row if there is
 * none and otherwise holds it FOR KEY SHARE, so that the worker's prune of
 * finished groups cannot take it before this transaction ends.
 * Connected to SPI.
 */
static void
jq_group_apply(Datum queue, Datum group, int delta, double charge)
{
	Datum		values[6];

	values[0] = queue;
	values[1] = group;
	values[2] = Int32GetDatum(delta);
	if (delta == 0)
	{
		jq_execute(JQ_PLAN_GROUP_HOLD, values, NULL, SPI_OK_SELECT);
		if (SPI_processed > 0)
			return;
		/* held or made; 0 only after a concurrent insert or prune: again */
		do
		{
			jq_execute(JQ_PLAN_GROUP_CREATE, values, NULL, SPI_OK_SELECT);
			CHECK_FOR_INTERRUPTS();
		} while (DatumGetInt64(jq_result(0, 1)) == 0);
	}
	else
	{
		double		half_life = 3600;

		if (charge > 0)
		{
			char	   *queue_name = TextDatumGetCString(queue);
			const JqQueueSettings *settings = jq_queue_settings(queue_name);

			if (settings->exists && settings->fair_share)
				half_life = settings->half_life_secs;
			else
				charge = 0;
			pfree(queue_name);
		}
		values[3] = Float8GetDatum(charge > 0 ? charge : 0);
		values[4] = Float8GetDatum(jq_epoch_seconds(GetCurrentTimestamp()));
		values[5] = Float8GetDatum(half_life);
		/* the row exists unless the group's first job came in running */
		jq_execute(JQ_PLAN_GROUP_ADD, values, NULL, SPI_OK_UPDATE);
		if (SPI_processed == 0)
			jq_execute(JQ_PLAN_GROUP_COUNT, values, NULL, SPI_OK_INSERT);
	}
}


/*
 * The changes of group counters that the row triggers of the statement
 * under way collected (in TopTransactionContext), applied when it ends.
 *
 * Why: a statement that moves the jobs of several groups (a batch
 * completion, a reap, a claim) would otherwise lock the groups' rows in the
 * order in which it happens to meet the jobs, and two such statements
 * meeting the same groups in opposite orders would deadlock.  Applied
 * after the statement, sorted by (queue, group) byte order, every
 * statement of every backend locks group rows in one and the same order,
 * and a wait for a group row can never close a cycle.  (Claims lock the
 * rows they serve with SKIP LOCKED and never wait for them.)
 */
typedef struct JqGroupDelta
{
	text	   *queue;
	text	   *group;
	int			delta;			/* change of running; 0: the row must exist */
	double		charge;			/* seconds of attempts that left running */
} JqGroupDelta;

static List *jq_group_deltas = NIL;

static int
jq_text_cmp(const text *a, const text *b)
{
	int			la = VARSIZE_ANY_EXHDR(a);
	int			lb = VARSIZE_ANY_EXHDR(b);
	int			c = memcmp(VARDATA_ANY(a), VARDATA_ANY(b), Min(la, lb));

	if (c != 0)
		return c;
	return (la > lb) - (la < lb);
}

static int
jq_group_delta_cmp(const ListCell *a, const ListCell *b)
{
	const JqGroupDelta *x = lfirst(a);
	const JqGroupDelta *y = lfirst(b);
	int			c = jq_text_cmp(x->queue, y->queue);

	return c != 0 ? c : jq_text_cmp(x->group, y->group);
}

/*
 * After each kept statement (spi.c's jq_after_statement_hook): apply the
 * collected changes, merged per group, in (queue, group) order; after a
 * failed statement, forget them (they roll back with it).
 */
static void
jq_group_flush(bool failed)
{
	List	   *deltas;
	ListCell   *lc;
	JqGroupDelta *run = NULL;
	bool		create = false;
	int			sum = 0;
	double		charge = 0;

	if (jq_group_deltas == NIL || jq_statement_depth > 0)
		return;
	deltas = jq_group_deltas;
	jq_group_deltas = NIL;
	if (failed)
		return;					/* the memory goes with the transaction */
	list_sort(deltas, jq_group_delta_cmp);
	jq_spi_connect();
	foreach(lc, deltas)
	{
		JqGroupDelta *d = lfirst(lc);

		if (run != NULL && (jq_text_cmp(run->queue, d->queue) != 0 ||
							jq_text_cmp(run->group, d->group) != 0))
		{
			if (sum != 0 || create || charge > 0)
				jq_group_apply(PointerGetDatum(run->queue),
							   PointerGetDatum(run->group), sum, charge);
			sum = 0;
			charge = 0;
			create = false;
		}
		run = d;
		sum += d->delta;
		charge += d->charge;
		if (d->delta == 0)
			create = true;
	}
	if (run != NULL && (sum != 0 || create || charge > 0))
		jq_group_apply(PointerGetDatum(run->queue), PointerGetDatum(run->group),
					   sum, charge);
	jq_spi_finish();
	foreach(lc, deltas)
	{
		JqGroupDelta *d = lfirst(lc);

		pfree(d->queue);
		pfree(d->group);
	}
	list_free_deep(deltas);
}

/*
 * Change the counter of (queue, group) by delta (0: make sure its row
 * exists): collected for the end of the kept statement under way, or
 * applied at once for any other statement (hand-written SQL, one-off
 * administrative statements).
 */
static void
jq_group_add(Datum queue, Datum group, int delta, double charge)
{
	if (jq_statement_depth > 0)
	{
		MemoryContext oldcontext = MemoryContextSwitchTo(TopTransactionContext);
		JqGroupDelta *d = palloc(sizeof(JqGroupDelta));

		d->queue = DatumGetTextPCopy(queue);
		d->group = DatumGetTextPCopy(group);
		d->delta = delta;
		d->charge = charge;
		jq_group_deltas = lappend(jq_group_deltas, d);
		MemoryContextSwitchTo(oldcontext);
		jq_after_statement_hook = jq_group_flush;
		return;
	}
	jq_spi_connect();
	jq_group_apply(queue, group, delta, charge);
	jq_spi_finish();
}

/*
 * jq_group_count() returns trigger
 *
 * AFTER INSERT, UPDATE OF status, group_key and DELETE, FOR EACH ROW, on
 * jobqueue.jobs, for grouped jobs only (the WHEN clauses of the triggers):
 * adds the change of a group's running jobs to its row in jobqueue.groups,
 * creating the row with the group's first job, and refuses a group key
 * longer than JQ_GROUP_KEY_MAXLEN (the rule of a CHECK constraint, which
 * would cost every update of every job).  Runs in the transaction that
 * moved the job, so the counter commits or rolls back with it.  An update
 * that moves a job to another group (hand-written SQL) moves its count.
 */
Datum
jq_group_count(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	tupdesc;
	HeapTuple	oldtup = NULL;
	HeapTuple	newtup = NULL;
	Datum		old_queue = (Datum) 0;
	Datum		old_group = (Datum) 0;
	Datum		new_queue = (Datum) 0;
	Datum		new_group = (Datum) 0;
	bool		old_grouped = false;
	bool		new_grouped = false;
	bool		old_running = false;
	bool		new_running = false;
	bool		old_pending = false;
	bool		new_pending = false;
	bool		isnull;
	int			status_attno;
	int			queue_attno;
	int			group_attno;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("jq_group_count() must be called as a trigger")));
	if (TRIGGER_FIRED_AFTER(trigdata->tg_event) &&
		TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
	{
		/* the jobs are gone: so are their groups */
		jq_spi_connect();
		jq_execute_once("groups truncated", "DELETE FROM jobqueue.groups",
						0, NULL, NULL, NULL, SPI_OK_DELETE);
		jq_spi_finish();
		return PointerGetDatum(NULL);
	}
	if (!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("jq_group_count() must be an AFTER ... FOR EACH ROW trigger or an AFTER TRUNCATE trigger")));

	tupdesc = trigdata->tg_relation->rd_att;
	status_attno = SPI_fnumber(tupdesc, "status");
	queue_attno = SPI_fnumber(tupdesc, "queue_name");
	group_attno = SPI_fnumber(tupdesc, "group_key");
	if (status_attno <= 0 || queue_attno <= 0 || group_attno <= 0)
		elog(ERROR, "jq_group_count() fired on a table without status, queue_name and group_key");

	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		newtup = trigdata->tg_trigtuple;
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		oldtup = trigdata->tg_trigtuple;
		newtup = trigdata->tg_newtuple;
	}
	else if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		oldtup = trigdata->tg_trigtuple;
	else
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("jq_group_count() must fire on INSERT, UPDATE or DELETE")));

	if (oldtup != NULL)
	{
		old_group = SPI_getbinval(oldtup, tupdesc, group_attno, &isnull);
		old_grouped = !isnull;
		if (old_grouped)
		{
			old_queue = SPI_getbinval(oldtup, tupdesc, queue_attno, &isnull);
			old_running = jq_tuple_status(oldtup, tupdesc, status_attno, "running");
			old_pending = jq_tuple_status(oldtup, tupdesc, status_attno, "pending");
		}
	}
	if (newtup != NULL)
	{
		new_group = SPI_getbinval(newtup, tupdesc, group_attno, &isnull);
		new_grouped = !isnull;
		if (new_grouped)
		{
			/* the stored row's key may be compressed: its raw length */
			jq_check_text_length("group key",
								 (int64) toast_raw_datum_size(new_group) - VARHDRSZ,
								 JQ_GROUP_KEY_MAXLEN);
			new_queue = SPI_getbinval(newtup, tupdesc, queue_attno, &isnull);
			new_running = jq_tuple_status(newtup, tupdesc, status_attno, "running");
			new_pending = jq_tuple_status(newtup, tupdesc, status_attno, "pending");
		}
	}

	/* the same group before and after: only a change of running counts */
	if (old_grouped && new_grouped &&
		datumIsEqual(old_queue, new_queue, false, -1) &&
		datumIsEqual(old_group, new_group, false, -1))
	{
		if (old_running != new_running)
			jq_group_add(new_queue, new_group, new_running ? 1 : -1,
						 old_running ? jq_attempt_charge(oldtup, tupdesc) : 0);
		else if (new_pending && !old_pending)
		{
			/*
			 * A job that becomes claimable (released by its dependencies,
			 * replayed, retried): its group has a row, whatever happened
			 * to the table before (a restore without triggers).
			 */
			jq_group_add(new_queue, new_group, 0, 0);
		}
		return PointerGetDatum(NULL);
	}

	/* a job leaves a group, enters one (an insert creates the row), or both */
	if (!(old_grouped && old_running) && !new_grouped)
		return PointerGetDatum(NULL);
	if (old_grouped && old_running)
		jq_group_add(old_queue, old_group, -1, jq_attempt_charge(oldtup, tupdesc));
	if (new_grouped)
		jq_group_add(new_queue, new_group, new_running ? 1 : 0, 0);

	return PointerGetDatum(NULL);
}

/*
 * jq_group_stats(queue_name) returns setof (group_key, ready, running,
 * scheduled, dead, blocked, oldest_ready_age, usage, share)
 *
 * One row per group of the queue that has unfinished jobs.  blocked: the
 * queue is strictly ordered and the group's oldest unfinished job is dead,
 * so nothing of the group runs until it is replayed or cancelled.  usage
 * and share (fair-share queues only, NULL otherwise): the group's charged
 * seconds as the claim sees them, and its part of the listed groups'.
 */
Datum
jq_group_stats(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Datum		values[3];
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	uint64		i;
	TimestampTz now = GetCurrentTimestamp();

	tupstore = jq_srf_init(fcinfo, &tupdesc);

	values[0] = CStringGetTextDatum(queue_name);
	values[1] = TimestampTzGetDatum(now);
	values[2] = Float8GetDatum(jq_epoch_seconds(now));

	jq_spi_connect();
	if (!jq_queue_settings(queue_name)->exists)
		jq_raise_unknown_queue(queue_name);
	jq_execute(JQ_PLAN_GROUP_STATS, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < SPI_processed; i++)
	{
		Datum		row[9];
		bool		nulls[9];
		int			col;

		/* usage and share when the SQL definition has them (1.4) */
		for (col = 0; col < 9 && col < tupdesc->natts; col++)
			row[col] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
									 col + 1, &nulls[col]);
		/* the tuplestore copies the values out of SPI memory */
		tuplestore_putvalues(tupstore, tupdesc, row, nulls);
	}
	jq_spi_finish();

	return (Datum) 0;
}

/*
 * In a queue with priority_aging, priorities lie between
 * -JQ_AGED_PRIORITY_LIMIT and JQ_AGED_PRIORITY_LIMIT: the aged claim visits
 * each distinct priority of the queue's pending jobs (JQ_PLAN_CLAIM_AGED),
 * so its cost is bounded by the number of values this range allows
 * (docs/ordering.md, "Costs and limits").  Raises 22023 for a priority
 * outside it.  Connected to SPI (the settings may be looked up).
 */
void
jq_check_aged_priority(const char *queue_name, int32 priority)
{
	const JqQueueSettings *settings;

	if (priority >= -JQ_AGED_PRIORITY_LIMIT && priority <= JQ_AGED_PRIORITY_LIMIT)
		return;
	if (!jq_ordering_installed())
		return;
	settings = jq_queue_settings(queue_name);
	if (settings->exists && settings->aged)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("priority must be between %d and %d in a queue with priority_aging",
						-JQ_AGED_PRIORITY_LIMIT, JQ_AGED_PRIORITY_LIMIT),
				 errdetail("The value given was %d.", priority),
				 errhint("Aging orders jobs by priority level; use fewer levels, or run_at for a deadline.")));
}

/* Rows of finished groups deleted per call of jq_groups_repair */
#define JQ_PRUNE_BATCH 10000

/*
 * Delete up to JQ_PRUNE_BATCH rows of jobqueue.groups of queue (text, or
 * NULL when nulls is JQ_ISNULL: every queue) whose groups have no running
 * and no pending job and no fair-share usage left, so that the table, and
 * every walk over it, follows the groups with work rather than every group
 * a queue ever had.  Two
 * statements: the rows are locked first (skipping those held by a claim, a
 * completion or an open enqueue), then deleted only if a new snapshot,
 * taken after the locks, still shows no job for them (see
 * JQ_PLAN_GROUPS_PRUNE_LOCK and JQ_PLAN_GROUPS_PRUNE).  Connected to SPI.
 */
static void
jq_groups_prune(Datum queue, char queue_null)
{
	Datum		values[3];
	char		nulls[3] = {queue_null, JQ_NOTNULL, JQ_NOTNULL};
	Datum	   *queues;
	Datum	   *groups;
	uint64		n;
	uint64		i;

	values[0] = queue;
	values[1] = Int32GetDatum(JQ_PRUNE_BATCH);
	values[2] = Float8GetDatum(jq_epoch_seconds(GetCurrentTimestamp()));
	jq_execute(JQ_PLAN_GROUPS_PRUNE_LOCK, values, nulls, SPI_OK_SELECT);
	n = SPI_processed;
	if (n == 0)
		return;
	queues = palloc(sizeof(Datum) * n);
	groups = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
	{
		queues[i] = jq_result(i, 1);
		groups[i] = jq_result(i, 2);
	}
	values[0] = PointerGetDatum(construct_array(queues, (int) n, TEXTOID, -1,
												false, TYPALIGN_INT));
	values[1] = PointerGetDatum(construct_array(groups, (int) n, TEXTOID, -1,
												false, TYPALIGN_INT));
	values[2] = queue;
	nulls[0] = JQ_NOTNULL;
	nulls[2] = queue_null;
	jq_execute(JQ_PLAN_GROUPS_PRUNE, values, nulls, SPI_OK_DELETE);
}

/*
 * Correct the rows of jobqueue.groups of queue_name (NULL: of every queue)
 * that disagree with the jobs (JQ_PLAN_GROUPS_REPAIR) or whose fair-share
 * key disagrees with their usage (JQ_PLAN_GROUPS_REKEY_STALE); a group
 * another transaction is changing is left for a later call.  Then delete
 * rows of finished groups (jq_groups_prune).  Returns the number of groups
 * corrected.  Connected to SPI.  Called by jq_recount_groups, by
 * jq_alter_queue and by the worker's reap task, after its last batch.
 */
int64
jq_groups_repair(const char *queue_name)
{
	Datum		values[1];
	char		nulls[1] = {JQ_NOTNULL};
	Datum		missing[3];
	bool		isnull;
	int64		corrected;

	if (queue_name == NULL)
	{
		values[0] = (Datum) 0;
		nulls[0] = JQ_ISNULL;
	}
	else
		values[0] = CStringGetTextDatum(queue_name);
	jq_execute(JQ_PLAN_GROUPS_REPAIR, values, nulls, SPI_OK_SELECT);
	corrected = DatumGetInt64(jq_result_nullable(0, 1, &isnull));
	missing[0] = jq_result(0, 2);
	missing[1] = jq_result(0, 3);
	missing[2] = jq_result(0, 4);
	if (ArrayGetNItems(ARR_NDIM(DatumGetArrayTypeP(missing[0])),
					   ARR_DIMS(DatumGetArrayTypeP(missing[0]))) > 0)
	{
		jq_execute(JQ_PLAN_GROUPS_REPAIR_INSERT, missing, NULL, SPI_OK_INSERT);
		corrected += (int64) SPI_processed;
	}
	jq_execute(JQ_PLAN_GROUPS_REKEY_STALE, values, nulls, SPI_OK_UPDATE_RETURNING);
	corrected += (int64) SPI_processed;
	jq_groups_prune(values[0], nulls[0]);
	return corrected;
}

/*
 * jq_recount_groups(queue_name) returns bigint
 *
 * For an operator: the running jobs of each group of queue_name (NULL:
 * every queue) counted again from the jobs, and every row of
 * jobqueue.groups that disagrees corrected, as the worker does at each
 * pass.  Returns the number of groups corrected.
 */
Datum
jq_recount_groups(PG_FUNCTION_ARGS)
{
	char	   *queue_name = NULL;
	int64		n;

	if (!PG_ARGISNULL(0))
		queue_name = jq_arg_queue_name(fcinfo, 0);
	jq_spi_connect();
	if (queue_name != NULL && !jq_queue_settings(queue_name)->exists)
		jq_raise_unknown_queue(queue_name);
	n = jq_groups_repair(queue_name);
	jq_spi_finish();
	PG_RETURN_INT64(n);
}

/*
 * The ordering policy arguments of jq_create_queue (alter = false) and
 * jq_alter_queue (alter = true), from argument argno on: group_concurrency,
 * group_ordered, fairness, priority_aging.  Sets them on queue_name's row,
 * which the caller has just created or changed.  For jq_alter_queue NULL
 * leaves a setting alone, group_concurrency 0 and priority_aging '0'
 * remove the limit and the aging.  An old SQL definition without these
 * arguments changes nothing.
 *
 * When the queue has a group policy afterwards, its unfinished jobs without
 * a group get the group '' (see JQ_NO_GROUP_SQL in plans.c) and the running
 * counters of its groups are recounted, under a lock on jobqueue.groups
 * that waits for claims in progress and holds off new ones and every move
 * of a grouped job until the end of the transaction.
 */
void
jq_ordering_set_policy(FunctionCallInfo fcinfo, int argno,
					   const char *queue_name, bool alter)
{
	Oid			argtypes[5] = {TEXTOID, INT4OID, BOOLOID, TEXTOID, INTERVALOID};
	Datum		values[5];
	char		nulls[5];
	bool		given = false;
	int			i;
	int32		concurrency = 0;
	bool		ordered = false;
	bool		grouped;

	if (PG_NARGS() < argno + 4 || !jq_ordering_installed())
		return;
	memset(nulls, JQ_NOTNULL, sizeof(nulls));
	values[0] = CStringGetTextDatum(queue_name);
	for (i = 0; i < 4; i++)
		if (!PG_ARGISNULL(argno + i))
			given = true;

	/* group_concurrency: at least 1; alter: 0 removes the limit */
	if (PG_ARGISNULL(argno))
		nulls[1] = JQ_ISNULL;
	else
	{
		concurrency = PG_GETARG_INT32(argno);
		if (concurrency < 1 && !(alter && concurrency == 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("group_concurrency must be at least 1"),
					 errdetail("The value given was %d.", concurrency),
					 alter ? errhint("Pass 0 to remove the limit, NULL to leave it unchanged.") : 0));
		values[1] = Int32GetDatum(concurrency);
	}

	/* group_ordered */
	if (PG_ARGISNULL(argno + 1))
	{
		if (!alter)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("group_ordered must not be null")));
		nulls[2] = JQ_ISNULL;
	}
	else
	{
		ordered = PG_GETARG_BOOL(argno + 1);
		values[2] = BoolGetDatum(ordered);
	}

	/* fairness */
	if (PG_ARGISNULL(argno + 2))
	{
		if (!alter)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("fairness must not be null")));
		nulls[3] = JQ_ISNULL;
	}
	else
	{
		text	   *t = PG_GETARG_TEXT_PP(argno + 2);
		int			len = VARSIZE_ANY_EXHDR(t);
		const char *s = VARDATA_ANY(t);

		if (!((len == 8 && memcmp(s, "priority", 8) == 0) ||
			  (len == 11 && memcmp(s, "round_robin", 11) == 0) ||
			  (len == 8 && memcmp(s, "deadline", 8) == 0) ||
			  (len == 10 && memcmp(s, "fair_share", 10) == 0)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid fairness \"%.*s%s\"",
							Min(len, 32), s, len > 32 ? "..." : ""),
					 errdetail("The fairness policies are \"priority\", \"round_robin\", \"deadline\" and \"fair_share\".")));
		values[3] = PointerGetDatum(t);
	}

	/* priority_aging: positive; alter: zero removes the aging */
	if (PG_ARGISNULL(argno + 3))
		nulls[4] = JQ_ISNULL;
	else
	{
		Interval   *iv = jq_arg_interval(fcinfo, argno + 3, "priority_aging",
										 false, alter);

		values[4] = PointerGetDatum(iv);
	}

	if (!alter && nulls[1] == JQ_NOTNULL && concurrency != 1 && ordered)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group_ordered requires group_concurrency 1 or no limit"),
				 errdetail("A strictly ordered group runs one job at a time."),
				 errhint("Pass group_concurrency => 1, or leave it out.")));
	if (!given)
		return;

	/* the policy as it will be, checked before it is stored */
	jq_execute_once("queue policy for update",
					"SELECT CASE WHEN $2 = 0 THEN NULL "
					"            ELSE COALESCE($2, q.group_concurrency) END, "
					"       COALESCE($3, q.group_ordered) "
					"FROM jobqueue.queues q WHERE q.queue_name = $1 FOR NO KEY UPDATE",
					3, argtypes, values, nulls, SPI_OK_SELECT);
	if (SPI_processed == 0)
		jq_raise_unknown_queue(queue_name);
	{
		bool		lim_null;
		Datum		lim = jq_result_nullable(0, 1, &lim_null);

		if (jq_result_bool(0, 2) && !lim_null && DatumGetInt32(lim) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("group_ordered requires group_concurrency 1 or no limit"),
					 errdetail("A strictly ordered group runs one job at a time; the queue's limit would be %d.",
							   DatumGetInt32(lim)),
					 errhint("Pass group_concurrency => 1 with group_ordered => true.")));
	}

	jq_execute_once("set queue policy",
					"UPDATE jobqueue.queues q SET "
					"  group_concurrency = CASE WHEN $2 = 0 THEN NULL "
					"                           ELSE COALESCE($2, q.group_concurrency) END, "
					"  group_ordered = COALESCE($3, q.group_ordered), "
					"  fairness = COALESCE($4, q.fairness), "
					"  priority_aging = CASE WHEN $5 = interval '0' THEN NULL "
					"                        ELSE COALESCE($5, q.priority_aging) END "
					"WHERE q.queue_name = $1 "
					"RETURNING q.group_concurrency IS NOT NULL OR q.group_ordered "
					"  OR q.fairness IN ('round_robin', 'fair_share')",
					5, argtypes, values, nulls, SPI_OK_UPDATE_RETURNING);
	grouped = jq_result_bool(0, 1);

	/* aging set: the unfinished jobs already there must be in its range */
	if (nulls[4] == JQ_NOTNULL && alter)
	{
		Datum		avalues[2];
		Oid			atypes[2] = {TEXTOID, INT4OID};

		avalues[0] = values[0];
		avalues[1] = Int32GetDatum(JQ_AGED_PRIORITY_LIMIT);
		jq_execute_once("aged priorities",
						"SELECT j.priority FROM jobqueue.jobs j "
						"JOIN jobqueue.queues q ON q.queue_name = j.queue_name "
						"WHERE j.queue_name = $1 AND q.priority_aging IS NOT NULL "
						"  AND j.status IN ('waiting', 'pending') "
						"  AND (j.priority > $2 OR j.priority < -$2) LIMIT 1",
						2, atypes, avalues, NULL, SPI_OK_SELECT);
		if (SPI_processed > 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("priority must be between %d and %d in a queue with priority_aging",
							-JQ_AGED_PRIORITY_LIMIT, JQ_AGED_PRIORITY_LIMIT),
					 errdetail("Queue \"%s\" has a pending job with priority %d.",
							   queue_name, DatumGetInt32(jq_result(0, 1))),
					 errhint("Aging orders jobs by priority level; use fewer levels, or run_at for a deadline.")));
	}
	if (!grouped || !alter)
		return;

	/*
	 * A group policy: every job that may still run gets a group, counters
	 * recounted.  The lock waits for every transaction that has written
	 * jobs (one may have enqueued into this queue under the old policy and
	 * not committed yet) and holds off new writers until this transaction
	 * ends, so that no job without a group is left behind in a queue with
	 * a group policy: pending, running and dead jobs, waiting jobs (released
	 * later) and cancelled ones (replayed later by jq_retry) alike.  (The
	 * queue's row was locked FOR NO KEY UPDATE above, which an enqueue's
	 * foreign key check does not wait for.)
	 */
	jq_execute_once("lock jobs for regrouping",
					"LOCK TABLE jobqueue.jobs IN SHARE ROW EXCLUSIVE MODE",
					0, NULL, NULL, NULL, SPI_OK_UTILITY);
	jq_execute_once("group the ungrouped",
					"UPDATE jobqueue.jobs j SET group_key = '' "
					"WHERE j.queue_name = $1 AND j.group_key IS NULL "
					"  AND j.status <> 'succeeded'",
					1, argtypes, values, NULL, SPI_OK_UPDATE);
	(void) jq_groups_repair(queue_name);
}
