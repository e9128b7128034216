/*-------------------------------------------------------------------------
 *
 * claim.c
 *	  The claim pipeline, from the cached queue settings to the noted
 *	  outcome: the arguments of a claim, the queue's rate limit, the
 *	  statement chosen by the queue's policy, the rotation cursor of the
 *	  group claims, and the counting of what was claimed.
 *
 * jq_claim and jq_complete_and_claim (lifecycle.c) check their arguments
 * with jq_claim_args and call jq_claim_batch.  Which statement a claim runs
 * is decided by the queue's policy, read from the backend's cache of queue
 * settings (queuecache.c): a queue without any runs JQ_PLAN_CLAIM_PLAIN,
 * which reads the jobs table only; aging alone JQ_PLAN_CLAIM_AGED; strict
 * order per group JQ_PLAN_CLAIM_ORDERED; fair share JQ_PLAN_CLAIM_FAIR;
 * deadline order JQ_PLAN_CLAIM_DEADLINE, with a group policy
 * JQ_PLAN_CLAIM_GROUPS_DEADLINE; any other group policy
 * JQ_PLAN_CLAIM_GROUPS (see ordering.c for why their limits hold).  A
 * policy change takes effect for the claims that start after it commits.
 *
 * Callers: the entry points above; callees: queuecache.c, ratelimit.c,
 * counters.c, spi.c and outcome.c below.  Nothing here calls back up.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "catalog/namespace.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* The claim statement a queue needs */
typedef enum JqClaimKind
{
	JQ_CLAIM_PLAIN,
	JQ_CLAIM_AGED,
	JQ_CLAIM_GROUPS,
	JQ_CLAIM_ORDERED,
	JQ_CLAIM_DEADLINE,			/* fairness 'deadline' without a group policy */
	JQ_CLAIM_GROUPS_DEADLINE,	/* fairness 'deadline' with one */
	JQ_CLAIM_FAIR
} JqClaimKind;

/* The rotation cursor of a queue's group claims, in this backend */
typedef struct JqQueuePolicy
{
	char		queue_name[JQ_QUEUE_NAME_MAXLEN + 1];	/* hash key */
	bool		has_cursor;
	char		cursor[JQ_GROUP_KEY_MAXLEN + 1];
} JqQueuePolicy;

static HTAB *queue_policies = NULL;

/* The rotation cursor entry of queue_name, created (empty) on first use. */
static JqQueuePolicy *
jq_policy_entry(const char *queue_name)
{
	JqQueuePolicy *entry;
	char		key[JQ_QUEUE_NAME_MAXLEN + 1];
	bool		found;

	if (queue_policies == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(key);
		ctl.entrysize = sizeof(JqQueuePolicy);
		ctl.hcxt = TopMemoryContext;
		queue_policies = hash_create("jobqueue queue policies", 16, &ctl,
									 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	memset(key, 0, sizeof(key));
	strlcpy(key, queue_name, sizeof(key));
	/* a backend serving very many queues starts over rather than grow */
	if (hash_get_num_entries(queue_policies) >= 1024 &&
		hash_search(queue_policies, key, HASH_FIND, NULL) == NULL)
	{
		hash_destroy(queue_policies);
		queue_policies = NULL;
		return jq_policy_entry(queue_name);
	}
	entry = hash_search(queue_policies, key, HASH_ENTER, &found);
	if (!found)
		entry->has_cursor = false;
	return entry;
}

/*
 * Does the schema have jobqueue.group_rotation (version 1.4)?  Before the
 * ALTER EXTENSION UPDATE, round_robin claims rotate per backend.
 */
static bool
jq_rotation_installed(void)
{
	Oid			nsp = get_namespace_oid("jobqueue", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("group_rotation", nsp));
}

/* The claim statement of a queue with these settings */
static JqClaimKind
jq_settings_claim_kind(const JqQueueSettings *settings)
{
	if (settings->ordered)
		return JQ_CLAIM_ORDERED;
	if (settings->fair_share)
		return JQ_CLAIM_FAIR;
	if (settings->group_policy)
		return settings->deadline ? JQ_CLAIM_GROUPS_DEADLINE : JQ_CLAIM_GROUPS;
	if (settings->deadline)
		return JQ_CLAIM_DEADLINE;
	if (settings->aged)
		return JQ_CLAIM_AGED;
	return JQ_CLAIM_PLAIN;
}

/*
 * The claim statement queue_name needs; raises the unknown-queue error when
 * it does not exist.  May replace SPI_tuptable (jq_queue_settings).
 */
static JqClaimKind
jq_queue_claim_kind(const char *queue_name)
{
	const JqQueueSettings *settings = jq_queue_settings(queue_name);

	if (!settings->exists)
		jq_raise_unknown_queue(queue_name);
	return jq_settings_claim_kind(settings);
}

/*
 * The claim statement jq_claim runs for queue_name (which must exist), for
 * jq_explain_claim: JQ_PLAN_CLAIM on a schema from before 1.2, otherwise
 * the statement of the queue's policy.
 */
JqPlanId
jq_claim_plan_of(const char *queue_name)
{
	if (!jq_ordering_installed())
		return JQ_PLAN_CLAIM;
	switch (jq_queue_claim_kind(queue_name))
	{
		case JQ_CLAIM_GROUPS:
			return JQ_PLAN_CLAIM_GROUPS;
		case JQ_CLAIM_ORDERED:
			return JQ_PLAN_CLAIM_ORDERED;
		case JQ_CLAIM_FAIR:
			return JQ_PLAN_CLAIM_FAIR;
		case JQ_CLAIM_GROUPS_DEADLINE:
			return JQ_PLAN_CLAIM_GROUPS_DEADLINE;
		case JQ_CLAIM_AGED:
			return JQ_PLAN_CLAIM_AGED;
		case JQ_CLAIM_DEADLINE:
			return JQ_PLAN_CLAIM_DEADLINE;
		case JQ_CLAIM_PLAIN:
			break;
	}
	return JQ_PLAN_CLAIM_PLAIN;
}

/*
 * The claim order of a leased job, read from its row once: the rows are
 * sorted by these copies, since every read of a column of a row with NULLs
 * walks the row from its start (the trace columns come before priority).
 */
typedef struct JqClaimOrderKey
{
	HeapTuple	tuple;
	int64		id;
	TimestampTz available_at;
	TimestampTz start_by;
	int32		priority;
	bool		has_start_by;
} JqClaimOrderKey;

/* Claim order of two leased jobs: priority DESC, available_at, id */
static int
jq_claim_order_cmp(const void *a, const void *b)
{
	const JqClaimOrderKey *ka = (const JqClaimOrderKey *) a;
	const JqClaimOrderKey *kb = (const JqClaimOrderKey *) b;

	if (ka->priority != kb->priority)
		return ka->priority > kb->priority ? -1 : 1;
	if (ka->available_at != kb->available_at)
		return ka->available_at < kb->available_at ? -1 : 1;
	return ka->id < kb->id ? -1 : (ka->id > kb->id ? 1 : 0);
}

/*
 * Claim order of two jobs leased by a deadline claim: earliest start_by
 * first, jobs without one after, then as jq_claim_order_cmp.
 */
static int
jq_deadline_order_cmp(const void *a, const void *b)
{
	const JqClaimOrderKey *ka = (const JqClaimOrderKey *) a;
	const JqClaimOrderKey *kb = (const JqClaimOrderKey *) b;

	if (ka->has_start_by != kb->has_start_by)
		return ka->has_start_by ? -1 : 1;
	if (ka->has_start_by && ka->start_by != kb->start_by)
		return ka->start_by < kb->start_by ? -1 : 1;
	return jq_claim_order_cmp(a, b);
}

/*
 * Put the rows of SPI_tuptable (leased jobs: id first, available_at in
 * JQ_CLAIM_AVAILABLE, priority in JQ_CLAIM_NCOLS + 1 and, with deadline,
 * start_by in JQ_CLAIM_NCOLS + 2) in claim order.
 */
static void
jq_sort_claimed(bool deadline)
{
	SPITupleTable *tuptable = SPI_tuptable;
	TupleDesc	tupdesc = tuptable->tupdesc;
	uint64		n = SPI_processed;
	JqClaimOrderKey *keys = palloc(n * sizeof(JqClaimOrderKey));
	Datum	   *values = palloc(tupdesc->natts * sizeof(Datum));
	bool	   *isnull = palloc(tupdesc->natts * sizeof(bool));
	uint64		i;

	Assert(tupdesc->natts >= JQ_CLAIM_NCOLS + (deadline ? 2 : 1));
	for (i = 0; i < n; i++)
	{
		JqClaimOrderKey *k = &keys[i];

		heap_deform_tuple(tuptable->vals[i], tupdesc, values, isnull);
		k->tuple = tuptable->vals[i];
		k->id = DatumGetInt64(values[0]);
		k->available_at = DatumGetTimestampTz(values[JQ_CLAIM_AVAILABLE - 1]);
		k->priority = DatumGetInt32(values[JQ_CLAIM_NCOLS]);
		k->has_start_by = deadline && !isnull[JQ_CLAIM_NCOLS + 1];
		k->start_by = k->has_start_by ?
			DatumGetTimestampTz(values[JQ_CLAIM_NCOLS + 1]) : 0;
	}
	qsort(keys, n, sizeof(JqClaimOrderKey),
		  deadline ? jq_deadline_order_cmp : jq_claim_order_cmp);
	for (i = 0; i < n; i++)
		tuptable->vals[i] = keys[i].tuple;
	pfree(keys);
	pfree(values);
	pfree(isnull);
}

/*
 * The end of a claim's lease: now + LEAST(lease or the queue's
 * lease_duration, max_runtime), computed here from the cached settings, in
 * the session's time zone as the SQL expression would, so that no claim
 * statement applies timestamptz + interval (STABLE) to the queue's columns.
 * values and nulls are jq_claim's parameters.
 */
static Datum
jq_claim_lease_end(const JqQueueSettings *settings, Datum *values,
				   const char *nulls)
{
	Datum		lease;

	lease = nulls[3] == JQ_ISNULL ?
		IntervalPGetDatum(&settings->lease_duration) : values[3];
	lease = DirectFunctionCall2(interval_smaller, lease,
								IntervalPGetDatum(&settings->max_runtime));
	return DirectFunctionCall2(timestamptz_pl_interval, values[4], lease);
}

/*
 * The claim of a queue without a policy (JQ_PLAN_CLAIM_PLAIN), or with
 * deadline order and no group policy (JQ_PLAN_CLAIM_DEADLINE); values[3]
 * is the lease's end.  The jobs come back in id order and are put in claim
 * order.
 */
static void
jq_claim_plain(Datum *values, bool deadline)
{
	jq_execute(deadline ? JQ_PLAN_CLAIM_DEADLINE : JQ_PLAN_CLAIM_PLAIN,
			   values, NULL, SPI_OK_UPDATE_RETURNING);
	if (SPI_processed > 1)
		jq_sort_claimed(deadline);
}

/*
 * The claim of a fair-share queue (JQ_PLAN_CLAIM_FAIR): the groups in order
 * of their usage per weight at now, which the statement gets also as Unix
 * epoch seconds (the unit of jobqueue.groups.usage_epoch); or of a deadline
 * queue with a group policy (JQ_PLAN_CLAIM_GROUPS_DEADLINE, the epoch for
 * the rate tokens).  No rotation cursor: the order comes from the usage or
 * the deadlines.
 */
static void
jq_claim_fair(Datum *values, JqPlanId plan)
{
	Datum		fvalues[6];
	char		fnulls[6];

	memcpy(fvalues, values, 5 * sizeof(Datum));
	memset(fnulls, JQ_NOTNULL, 5);	/* $4 is the lease's end, never NULL */
	fvalues[5] = Float8GetDatum(jq_epoch_seconds(DatumGetTimestampTz(values[4])));
	fnulls[5] = JQ_NOTNULL;
	jq_execute_queue(plan, fvalues, fnulls, 6, SPI_OK_SELECT);
}

/*
 * Run the claim statement of kind with jq_claim's parameters (values and
 * nulls: queue, n, owner, lease, now); the group claims also get the
 * backend's rotation cursor, and move it to the last group served.
 */
static void
jq_claim_run(JqClaimKind kind, const JqQueueSettings *settings,
			 const char *queue_name, Datum *values, const char *nulls)
{
	JqQueuePolicy *entry;
	Datum		gvalues[7];
	char		gnulls[7];
	int64		last_pos = 0;
	uint64		i;
	bool		rotation_row = false;	/* the read found the cursor's row */
	JqPlanId	plan = JQ_PLAN_CLAIM_GROUPS;
	Datum		lvalues[5];

	/* every claim of 1.2 on gets the lease's end ($4), not the lease */
	memcpy(lvalues, values, sizeof(lvalues));
	lvalues[3] = jq_claim_lease_end(settings, values, nulls);
	values = lvalues;
	switch (kind)
	{
		case JQ_CLAIM_PLAIN:
			jq_claim_plain(values, false);
			return;
		case JQ_CLAIM_DEADLINE:
			jq_claim_plain(values, true);
			return;
		case JQ_CLAIM_AGED:
			jq_execute_queue(JQ_PLAN_CLAIM_AGED, values, NULL, 5, SPI_OK_SELECT);
			return;
		case JQ_CLAIM_GROUPS:
			break;
		case JQ_CLAIM_ORDERED:
			plan = JQ_PLAN_CLAIM_ORDERED;
			break;
		case JQ_CLAIM_FAIR:
			jq_claim_fair(values, JQ_PLAN_CLAIM_FAIR);
			return;
		case JQ_CLAIM_GROUPS_DEADLINE:
			jq_claim_fair(values, JQ_PLAN_CLAIM_GROUPS_DEADLINE);
			return;
	}

	/*
	 * The rotation cursor: looked up only by the claims that rotate.  A
	 * round_robin queue keeps it in jobqueue.group_rotation, shared by
	 * every session (a fresh connection continues the rotation where the
	 * last claim left it); the other group policies keep it per backend.
	 */
	entry = jq_policy_entry(queue_name);
	memcpy(gvalues, values, 5 * sizeof(Datum));
	memset(gnulls, JQ_NOTNULL, 5);
	if (settings->round_robin && jq_rotation_installed())
	{
		jq_execute(JQ_PLAN_ROTATION_READ, values, NULL, SPI_OK_SELECT);
		rotation_row = SPI_processed == 1;
		entry->has_cursor = rotation_row;
		if (entry->has_cursor)
			strlcpy(entry->cursor, jq_result_name(0, 1), sizeof(entry->cursor));
	}
	if (entry->has_cursor)
	{
		gvalues[5] = CStringGetTextDatum(entry->cursor);
		gnulls[5] = JQ_NOTNULL;
	}
	else
	{
		gvalues[5] = (Datum) 0;
		gnulls[5] = JQ_ISNULL;
	}
	/* the time of the rate tokens (JQ_PLAN_CLAIM_GROUPS) */
	gvalues[6] = Float8GetDatum(jq_epoch_seconds(DatumGetTimestampTz(values[4])));
	gnulls[6] = JQ_NOTNULL;
	jq_execute_queue(plan, gvalues, gnulls, plan == JQ_PLAN_CLAIM_ORDERED ? 6 : 7,
					 SPI_OK_SELECT);

	/* the cursor moves to the group served last in rotation order */
	for (i = 0; i < SPI_processed; i++)
	{
		int64		pos = DatumGetInt64(jq_result(i, JQ_CLAIM_NCOLS + 2));

		if (pos > last_pos)
		{
			char	   *key = jq_result_name(i, JQ_CLAIM_NCOLS + 1);

			last_pos = pos;
			strlcpy(entry->cursor, key, sizeof(entry->cursor));
			entry->has_cursor = true;
		}
	}
	if (last_pos > 0 && settings->round_robin && jq_rotation_installed())
	{
		SPITupleTable *tuptable = SPI_tuptable;
		uint64		processed = SPI_processed;
		Datum		rvalues[2];

		rvalues[0] = values[0];
		rvalues[1] = CStringGetTextDatum(entry->cursor);
		/* Citus routes neither CTE of the one statement: two, by the read */
		if (!jq_distributed_mode())
			jq_execute(JQ_PLAN_ROTATION_MOVE, rvalues, NULL, SPI_OK_INSERT);
		else if (rotation_row)
			jq_execute(JQ_PLAN_ROTATION_UPDATE, rvalues, NULL, SPI_OK_UPDATE);
		else
			jq_execute(JQ_PLAN_ROTATION_CREATE, rvalues, NULL, SPI_OK_INSERT);
		/* the claimed jobs stay the result */
		SPI_tuptable = tuptable;
		SPI_processed = processed;
	}
}

/*
 * Lease up to n jobs of queue_name with the statement its policy needs.
 * values and nulls are JQ_PLAN_CLAIM's parameters.  The leased jobs are in
 * SPI_tuptable, their first five columns those of jq_claim; returns their
 * number.  When it is 0 the queue has been checked to exist (the error for
 * an unknown queue is raised here).
 */
static uint64
jq_claim_execute(const char *queue_name, Datum *values, const char *nulls)
{
	const JqQueueSettings *settings;

	/* a schema from before 1.2: the claim of 1.1 */
	if (!jq_ordering_installed())
	{
		jq_execute(JQ_PLAN_CLAIM, values, nulls, SPI_OK_SELECT);
		if (SPI_processed > 0)
			return SPI_processed;
		jq_require_queue(queue_name);
		return 0;
	}

	settings = jq_queue_settings(queue_name);
	if (!settings->exists)
		jq_raise_unknown_queue(queue_name);
	if (settings->paused)
		return 0;

	/*
	 * Where jobs get deadlines from the queue or are claimed by them, the
	 * claim first expires what it would otherwise skip (controls.c); in
	 * other queues the claims skip a job past its start_by, and the worker
	 * expires it.
	 */
	if (settings->has_max_wait || settings->deadline)
		(void) jq_expire_batch(queue_name, JQ_CLAIM_EXPIRE_BATCH,
							   DatumGetTimestampTz(values[4]));
	jq_claim_run(jq_settings_claim_kind(settings), settings, queue_name,
				 values, nulls);
	return SPI_processed;
}

/*
 * Check the claim arguments of fcinfo into *args: queue_name in argument
 * queue_argno, then n, owner and lease in arguments n_argno .. n_argno + 2.
 * n may be 0 when allow_zero.
 */
void
jq_claim_args(FunctionCallInfo fcinfo, int queue_argno, int n_argno,
			  bool allow_zero, JqClaimArgs *args)
{
	args->queue_name = jq_arg_queue_name(fcinfo, queue_argno);
	if (allow_zero)
		args->n = jq_arg_nonnegative_int4(fcinfo, n_argno, "n");
	else
		args->n = jq_arg_positive_int4(fcinfo, n_argno, "n");
	if (args->n > jq_max_claim_batch)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must not exceed jobqueue.max_claim_batch (%d)",
						jq_max_claim_batch),
				 errdetail("The value given was %d.", args->n),
				 errhint("Claim in smaller batches, or raise jobqueue.max_claim_batch.")));
	args->owner = jq_arg_nonempty_text(fcinfo, n_argno + 1, "owner", JQ_OWNER_MAXLEN);
	args->lease = jq_arg_interval(fcinfo, n_argno + 2, "lease", true, false);
}

/*
 * Lease up to args->n (at least 1) jobs of args->queue_name at now, under
 * the rules of jq_claim: the statement of the queue's ordering policy
 * (jq_claim_execute), its rate limit, a paused queue claims nothing, an
 * unknown queue is an error.  The jobs go into tupstore (rows of jq_claim's
 * result type tupdesc), in claim order; returns their number.  Counts the
 * jobs claimed and the claim call, and notes the activity for the worker
 * pool.  Must be called while connected to SPI; SPI_tuptable is replaced.
 */
uint64
jq_claim_batch(const JqClaimArgs *args, TimestampTz now,
			   Tuplestorestate *tupstore, TupleDesc tupdesc)
{
	const char *queue_name = args->queue_name;
	Datum		values[5];
	char		nulls[5] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	uint64		i;
	volatile uint64 nclaimed = 0;
	instr_time	start;
	double		rate;
	int			burst;
	int			bucket = -1;
	volatile int32 reserved = args->n;

	Assert(args->n > 0);
	jq_count_start(&start);
	values[0] = CStringGetTextDatum(queue_name);
	values[1] = Int32GetDatum(args->n);
	values[2] = PointerGetDatum(args->owner);
	values[3] = PointerGetDatum(args->lease);
	if (args->lease == NULL)
		nulls[3] = JQ_ISNULL;
	values[4] = TimestampTzGetDatum(now);

	/*
	 * A rate-limited queue: reserve tokens (never waiting), claim at most
	 * that many, give back the rest -- also when the statement fails.
	 */
	if (jq_rate_policy(queue_name, &rate, &burst))
	{
		reserved = jq_rate_reserve(queue_name, rate, burst, args->n, &bucket);
		if (reserved == 0)
		{
			jq_count_call(queue_name, JQ_CTR_CLAIM_CALLS, &start);
			return 0;
		}
		values[1] = Int32GetDatum(reserved);
	}
	PG_TRY();
	{
		/* the statement of the queue's policy (ordering.c) */
		nclaimed = jq_claim_execute(queue_name, values, nulls);
	}
	PG_CATCH();
	{
		jq_rate_return(bucket, reserved, reserved);
		PG_RE_THROW();
	}
	PG_END_TRY();
	jq_rate_return(bucket, reserved, reserved - (int) nclaimed);
	jq_count(queue_name, JQ_CTR_CLAIMED, (int64) nclaimed);
	/* leases that may expire: the worker pool should come by soon */
	if (nclaimed > 0)
		jq_note_activity();
	if (nclaimed > 0)
	{
		TupleDesc	spi_tupdesc = SPI_tuptable->tupdesc;
		Datum	   *cols = palloc(spi_tupdesc->natts * sizeof(Datum));
		bool	   *colnulls = palloc(spi_tupdesc->natts * sizeof(bool));

		Assert(spi_tupdesc->natts >= JQ_CLAIM_AVAILABLE);
		for (i = 0; i < nclaimed; i++)
		{
			Datum		row[8];
			bool		rownulls[8];
			int			col;

			/*
			 * The first five columns; the trace context when jq_claim's
			 * definition has it (1.4); a statement returns more.  One
			 * pass over the row: a read of one column of a row with
			 * NULLs walks it from its start.
			 */
			heap_deform_tuple(SPI_tuptable->vals[i], spi_tupdesc, cols, colnulls);
			for (col = 0; col < 5; col++)
			{
				row[col] = cols[col];
				rownulls[col] = colnulls[col];
			}
			for (; col < tupdesc->natts && col < 8; col++)
			{
				int			from = JQ_CLAIM_TRACEPARENT - 1 + col - 5;

				row[col] = from < spi_tupdesc->natts ? cols[from] : (Datum) 0;
				rownulls[col] = from < spi_tupdesc->natts ? colnulls[from] : true;
			}
			tuplestore_putvalues(tupstore, tupdesc, row, rownulls);
			/* the wait: since the job became claimable */
			if (!colnulls[JQ_CLAIM_AVAILABLE - 1])
				jq_count_latency(queue_name, JQ_LAT_WAIT,
								 now - DatumGetTimestampTz(cols[JQ_CLAIM_AVAILABLE - 1]));
		}
		pfree(cols);
		pfree(colnulls);
	}
	jq_count_call(queue_name, JQ_CTR_CLAIM_CALLS, &start);
	return nclaimed;
}
