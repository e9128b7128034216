/*-------------------------------------------------------------------------
 *
 * outcome.c
 *	  What every job transition shares, below the SQL entry points: the
 *	  lookup of a queue that must exist, the noting of a statement's
 *	  outcome (event counters, wake-ups, finished-notifications and the
 *	  resolution of dependents), and the length of a job's error history.
 *
 * Every statement that moves jobs returns the outcome columns first
 * (JQ_OUTCOME_SQL in plans.c); the entry points (lifecycle.c, admin.c,
 * maintenance.c, results.c, dependencies.c) and the claim pipeline
 * (claim.c) hand that result to jq_note_outcome.  The release and
 * cancellation of dependents is part of noting an outcome: a finished job
 * with dependents resolves them here, level by level, and notes the
 * outcome of each level in turn.  Nothing here calls back up into the
 * entry points or the policies.
 *
 * The dependencies of the jobs that this transaction made wait (enqueued
 * with depends_on) are remembered until it ends: a job of them that this
 * same transaction finishes has its dependents resolved at once (its
 * has_dependents is only set when the transaction commits), and the check
 * at commit (dependencies.c) settles each of them once.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "miscadmin.h"
#include "access/xact.h"
#include "utils/guc.h"
#include "utils/datetime.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* Rows of job_dependencies deleted per statement when a job succeeds */
#define JQ_RELEASE_BATCH 1000

static void jq_dependencies_resolve_distributed(const int64 *succeeded,
												char **succeeded_queues,
												int nsucceeded,
												const int64 *failed,
												char **failed_queues, int nfailed,
												List **woken,
												MemoryContext woken_cxt);

/* Entries kept in a job's error history (jobqueue.error_history) */
int			jq_error_history = 10;

/* Define the GUC of the error history.  Called from _PG_init. */
void
jq_outcome_guc_init(void)
{
	DefineCustomIntVariable("jobqueue.error_history",
							"Number of failures kept in a job's error history.",
							"Older entries are dropped, newest are kept.",
							&jq_error_history,
							10, 1, 1000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
}

/*
 * The history entry of a failed attempt, as a jsonb object: at, code,
 * message (NULL: null), retryable, and detail (jsonb) and stack (text)
 * when not NULL.  The statement adds the attempt and its owner from the
 * row (JQ_ATTEMPT_ENTRY_OF_SQL); built here so that the statement applies
 * no STABLE function (jsonb_build_object) to a column.  Times are written
 * as jsonb_build_object writes them (JsonEncodeDateTime: ISO 8601 in the
 * session's time zone).  Returned in the current memory context.
 */
Datum
jq_attempt_entry(TimestampTz at, Datum code, Datum message, bool message_null,
				 bool retryable, Datum detail, bool detail_null,
				 Datum stack, bool stack_null)
{
	StringInfoData buf;
	char		tsbuf[MAXDATELEN + 1];

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"at\": ");
	escape_json(&buf, JsonEncodeDateTime(tsbuf, TimestampTzGetDatum(at),
										 TIMESTAMPTZOID, NULL));
	appendStringInfoString(&buf, ", \"code\": ");
	escape_json(&buf, TextDatumGetCString(code));
	appendStringInfoString(&buf, ", \"message\": ");
	if (message_null)
		appendStringInfoString(&buf, "null");
	else
		escape_json(&buf, TextDatumGetCString(message));
	appendStringInfo(&buf, ", \"retryable\": %s", retryable ? "true" : "false");
	if (!detail_null)
	{
		Jsonb	   *jb = DatumGetJsonbP(detail);

		appendStringInfoString(&buf, ", \"detail\": ");
		(void) JsonbToCString(&buf, &jb->root, VARSIZE(jb));
	}
	if (!stack_null)
	{
		appendStringInfoString(&buf, ", \"stack\": ");
		escape_json(&buf, TextDatumGetCString(stack));
	}
	appendStringInfoChar(&buf, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/*
 * The dependencies this transaction made jobs wait for, in
 * TopTransactionContext (NULL when there are none): id -> settled at
 * commit yet.  Forgotten when the transaction ends; a subtransaction that
 * rolls back undoes what was settled in it, so then nothing counts as
 * settled (settling again is harmless).
 */
typedef struct JqPendingDependency
{
	int64		id;				/* hash key */
	bool		settled;
} JqPendingDependency;

static HTAB *jq_pending_dependencies = NULL;
static bool jq_pending_callbacks = false;

static void
jq_pending_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		jq_pending_dependencies = NULL; /* its memory went with the transaction */
}

static void
jq_pending_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS seq;
	JqPendingDependency *e;

	if (event != SUBXACT_EVENT_ABORT_SUB || jq_pending_dependencies == NULL)
		return;
	hash_seq_init(&seq, jq_pending_dependencies);
	while ((e = hash_seq_search(&seq)) != NULL)
		e->settled = false;
}

/*
 * Remember the n dependencies ids (bigint, ids[0..n-1]) of jobs that this
 * transaction made wait, for the check at commit.
 */
void
jq_dependencies_note_waiting(const Datum *ids, int n)
{
	int			i;

	if (n == 0)
		return;
	if (!jq_pending_callbacks)
	{
		RegisterXactCallback(jq_pending_xact_callback, NULL);
		RegisterSubXactCallback(jq_pending_subxact_callback, NULL);
		jq_pending_callbacks = true;
	}
	if (jq_pending_dependencies == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(JqPendingDependency);
		ctl.hcxt = TopTransactionContext;
		jq_pending_dependencies = hash_create("jobqueue pending dependencies",
											  64, &ctl,
											  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	for (i = 0; i < n; i++)
	{
		int64		id = DatumGetInt64(ids[i]);
		bool		found;
		JqPendingDependency *e;

		e = hash_search(jq_pending_dependencies, &id, HASH_ENTER, &found);
		if (!found)
			e->settled = false;
	}
}

/* Is status (a job_status label) final? */
static bool
jq_status_finished(const char *status)
{
	return strcmp(status, "succeeded") == 0 || strcmp(status, "dead") == 0 ||
		strcmp(status, "cancelled") == 0;
}

/* Did this transaction make a job wait for job id? */
static bool
jq_dependency_pending(int64 id)
{
	return jq_pending_dependencies != NULL &&
		hash_search(jq_pending_dependencies, &id, HASH_FIND, NULL) != NULL;
}

static int
jq_int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/*
 * For the check at commit of a row of job_dependencies naming dependency
 * dep: the dependencies to settle now, sorted, each once per transaction
 * -- dep and every other one remembered and not settled yet (one
 * statement for all of them), or none when dep is settled already.  They
 * count as settled from now on.  Returns their number; *ids is palloc'd.
 */
int
jq_dependencies_take_unsettled(int64 dep, int64 **ids)
{
	HASH_SEQ_STATUS seq;
	JqPendingDependency *e;
	int			n = 0;
	int			size;
	Datum		d;

	*ids = NULL;
	if (jq_pending_dependencies != NULL)
	{
		e = hash_search(jq_pending_dependencies, &dep, HASH_FIND, NULL);
		if (e != NULL && e->settled)
			return 0;
	}
	/* (a row written by hand, not by an enqueue, is remembered here) */
	d = Int64GetDatum(dep);
	jq_dependencies_note_waiting(&d, 1);

	size = hash_get_num_entries(jq_pending_dependencies);
	*ids = palloc(sizeof(int64) * Max(size, 1));
	hash_seq_init(&seq, jq_pending_dependencies);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (!e->settled)
		{
			(*ids)[n++] = e->id;
			e->settled = true;
		}
	}
	qsort(*ids, n, sizeof(int64), jq_int64_cmp);
	return n;
}

/*
 * The history entry of a replay, without the status replayed (which the
 * statement adds from the row, JQ_REPLAY_SQL): event, at, by (a text
 * Datum).  As jq_attempt_entry.
 */
Datum
jq_replay_entry(TimestampTz at, Datum by)
{
	StringInfoData buf;
	char		tsbuf[MAXDATELEN + 1];

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"event\": \"replay\", \"at\": ");
	escape_json(&buf, JsonEncodeDateTime(tsbuf, TimestampTzGetDatum(at),
										 TIMESTAMPTZOID, NULL));
	appendStringInfoString(&buf, ", \"by\": ");
	escape_json(&buf, TextDatumGetCString(by));
	appendStringInfoChar(&buf, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/*
 * The queue argument of a call that acts on one job: the first argument of
 * a queue-first call (checked as every queue name is), NULL for a call by
 * id alone.  Before SPI is connected.
 */
char *
jq_arg_call_queue(FunctionCallInfo fcinfo, bool queue_first)
{
	return queue_first ? jq_arg_queue_name(fcinfo, 0) : NULL;
}

/*
 * The queue a call acts in, as a text Datum, for the statements, which
 * are all filtered by queue (plans.c: on Citus, a statement on the queue's
 * shard alone).  A queue-first call names it (queue_name): it must exist
 * (an error otherwise); a job of another queue is then simply not found,
 * and the call is refused as a fenced one is.  A call by id alone
 * (queue_name NULL) reads the job's queue first: on Citus where it most
 * likely is (jq_job_queue_distributed), then from every shard
 * (JQ_PLAN_JOB_QUEUE); no
 * such job: *isnull = JQ_ISNULL, and the statement run with NULL finds
 * nothing, as it would for an unknown id.  Must be called while connected
 * to SPI; replaces SPI_tuptable.
 */
static bool jq_job_queue_distributed(int64 id, Datum *queue);

Datum
jq_call_queue(const char *queue_name, int64 id, char *isnull)
{
	Datum		value = Int64GetDatum(id);

	*isnull = JQ_NOTNULL;
	if (queue_name != NULL)
	{
		if (!jq_queue_settings(queue_name)->exists)
			jq_raise_unknown_queue(queue_name);
		return CStringGetTextDatum(queue_name);
	}
	if (jq_distributed_mode())
	{
		Datum		queue;

		if (jq_job_queue_distributed(id, &queue))
			return queue;
	}
	jq_execute(JQ_PLAN_JOB_QUEUE, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		*isnull = JQ_ISNULL;
		return (Datum) 0;
	}
	return CStringGetTextDatum(jq_result_name(0, 1));
}

/*
 * Citus: the names of the queues, as a text[] Datum, whose shards most
 * likely hold jobs ids[0..n-1]: the queues placed on the node groups whose
 * id ranges drew them (jq_distribute() gives group g the ids from
 * g * 2^48 + 1 on, and a delegated enqueue draws its id on the queue's
 * node); with n = 0, every queue.  May replace SPI_tuptable.
 */
Datum
jq_queues_of_ids(const int64 *ids, int n)
{
	int32	   *groups = palloc(sizeof(int32) * Max(n, 1));

	for (int i = 0; i < n; i++)
		groups[i] = (int32) ((ids[i] - 1) >> 48);
	return jq_queues_on_groups(groups, n);
}

/*
 * Citus: the queue of job id, read where it most likely is: in the shards
 * on this node (localshard.c), then in the queues on the node that drew
 * the id, then in every queue, each a read of those queues' shards only.
 * false when none has it: the caller reads every shard (a job of no
 * queue, written by hand, or none).
 */
static bool
jq_job_queue_distributed(int64 id, Datum *queue)
{
	Datum		values[2];

	if (jq_local_shard_job_queue(id, queue))
		return true;
	values[0] = Int64GetDatum(id);
	for (int pass = 0; pass < 2; pass++)
	{
		values[1] = jq_queues_of_ids(&id, pass == 0 ? 1 : 0);
		jq_execute_multi_shard(JQ_PLAN_JOB_QUEUE_IN, values, NULL);
		if (SPI_processed > 0)
		{
			*queue = CStringGetTextDatum(jq_result_name(0, 1));
			return true;
		}
	}
	return false;
}

/*
 * jq_call_queue for the statements that take the job's own queue when the
 * queue is NULL (plans.c, JQ_ANY_QUEUE_SQL): on plain PostgreSQL a call by
 * id alone passes NULL and reads nothing first, as before 1.4; on Citus
 * its queue is read first, as jq_call_queue does.
 */
Datum
jq_call_queue_or_any(const char *queue_name, int64 id, char *isnull)
{
	if (queue_name == NULL && !jq_distributed_mode())
	{
		*isnull = JQ_ISNULL;
		return (Datum) 0;
	}
	return jq_call_queue(queue_name, id, isnull);
}

/*
 * The events of one row of an outcome: job moved by transition t into
 * status (NULL: the caller's request was refused).
 */
static void
jq_count_outcome(JqTransition t, const char *queue_name, const char *status,
				 int64 n)
{
	if (status == NULL)
	{
		if (t == JQ_TR_COMPLETE)
			jq_count(queue_name, JQ_CTR_COMPLETE_FENCED, n);
		else if (t == JQ_TR_HEARTBEAT)
			jq_count(queue_name, JQ_CTR_HEARTBEAT_REFUSED, n);
		return;
	}
	switch (t)
	{
		case JQ_TR_ENQUEUE:
			jq_count(queue_name, JQ_CTR_ENQUEUED, n);
			return;
		case JQ_TR_COMPLETE:
			jq_count(queue_name, JQ_CTR_COMPLETED, n);
			return;
		case JQ_TR_FAIL_RETRYABLE:
			jq_count(queue_name, JQ_CTR_FAILED_RETRYABLE, n);
			break;
		case JQ_TR_FAIL_PERMANENT:
			jq_count(queue_name, JQ_CTR_FAILED_PERMANENT, n);
			break;
		case JQ_TR_REAP:
			jq_count(queue_name, JQ_CTR_LEASES_EXPIRED, n);
			break;
		case JQ_TR_REPLAY:
			jq_count(queue_name, JQ_CTR_REPLAYED, n);
			return;
		case JQ_TR_RELEASE:
			jq_count(queue_name, JQ_CTR_RELEASED, n);
			return;
		case JQ_TR_EXPIRE:
			jq_count(queue_name, JQ_CTR_EXPIRED, n);
			return;
		default:
			return;				/* heartbeat, cancel */
	}
	/* a failed attempt: retried or dead */
	jq_count(queue_name, strcmp(status, "dead") == 0 ?
			 JQ_CTR_DEAD_LETTERED : JQ_CTR_RETRIES_SCHEDULED, n);
}

/*
 * The latencies and failures of row i of an outcome (jq_note_outcome): the
 * run of an attempt that ended (complete, fail, release, reap), the total
 * of a job that succeeded or is dead, and a failed attempt by error code
 * and number.  status is the row's (not NULL).
 */
static void
jq_time_outcome(JqTransition t, uint64 i, const Datum *values,
				const bool *nulls, const char *queue_name, const char *status)
{
	TimestampTz now;

	if (t != JQ_TR_COMPLETE && t != JQ_TR_FAIL_RETRYABLE &&
		t != JQ_TR_FAIL_PERMANENT && t != JQ_TR_REAP && t != JQ_TR_RELEASE)
		return;
	if (nulls[JQ_OUTCOME_NOW - 1])
		return;
	now = DatumGetTimestampTz(values[JQ_OUTCOME_NOW - 1]);
	if (!nulls[JQ_OUTCOME_STARTED - 1])
		jq_count_latency(queue_name, JQ_LAT_RUN,
						 now - DatumGetTimestampTz(values[JQ_OUTCOME_STARTED - 1]));
	if (t == JQ_TR_FAIL_RETRYABLE || t == JQ_TR_FAIL_PERMANENT ||
		t == JQ_TR_REAP)
	{
		bool		isnull;
		Datum		d;

		/* the failed attempt, by error code and number (JQ_FAILED_OUTCOME_SQL) */
		d = jq_result_nullable(i, JQ_OUTCOME_NCOLS + 2, &isnull);
		if (!isnull)
			jq_count_error(queue_name, jq_result_name(i, JQ_OUTCOME_NCOLS + 1),
						   DatumGetInt32(d), strcmp(status, "dead") == 0);
	}
	if (t == JQ_TR_RELEASE ||
		(t != JQ_TR_COMPLETE && strcmp(status, "dead") != 0))
		return;
	if (!nulls[JQ_OUTCOME_CREATED - 1])
		jq_count_latency(queue_name, JQ_LAT_TOTAL,
						 now - DatumGetTimestampTz(values[JQ_OUTCOME_CREATED - 1]));
}

/* Is column COL of the deformed row (values, nulls) true?  NULL is false. */
#define JQ_ROW_TRUE(COL) (!nulls[(COL) - 1] && DatumGetBool(values[(COL) - 1]))

/*
 * Note what a statement of transition t did, from its result in
 * SPI_tuptable, whose first columns are the outcome (see JQ_OUTCOME_SQL in
 * plans.c): count the events and time the attempts per queue, wake the listeners of each
 * queue in which a job became ready -- or, when woken is not NULL, add the
 * queue to *woken once (allocated in woken_cxt) for the caller to
 * announce.  Announce the jobs that finished in a queue with
 * notify_finished, and resolve the dependents of jobs that finished (see
 * dependencies.c; SPI_tuptable is the caller's again afterwards).  nasked
 * jobs were asked for by id; those without a row are counted as refused
 * with the queue unknown.  Must be called while connected to SPI.
 *
 * Returns the number of jobs moved (rows with a status).  *first_queue, if
 * not NULL, receives the first queue of the result (in SPI memory), or NULL.
 */
uint64
jq_note_outcome(JqTransition t, uint64 nasked, List **woken,
				MemoryContext woken_cxt, char **first_queue)
{
	bool		counting = jq_counting();
	uint64		moved = 0;
	uint64		i;
	/* the current run of rows with the same queue and status */
	char	   *run_queue = NULL;
	char	   *run_status = NULL;
	int64		run_n = 0;
	Datum		prev_queue = (Datum) 0;
	bool		prev_queue_null = true;
	Oid			prev_status = InvalidOid;
	/* finished jobs that others may wait for */
	int64	   *succeeded = NULL;
	int64	   *failed = NULL;
	int			nsucceeded = 0;
	int			nfailed = 0;
	/* and their queues, on Citus */
	char	  **succeeded_queues = NULL;
	char	  **failed_queues = NULL;
	/* the current row, deformed once: one walk over it, not one per column */
	TupleDesc	tupdesc = SPI_processed > 0 ? SPI_tuptable->tupdesc : NULL;
	int			natts = tupdesc != NULL ? Max(tupdesc->natts, JQ_OUTCOME_NCOLS) : 0;
	Datum	   *values = palloc(sizeof(Datum) * Max(natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(natts, 1));

	Assert(tupdesc == NULL || tupdesc->natts >= JQ_OUTCOME_NCOLS);
	if (first_queue != NULL)
		*first_queue = NULL;

	for (i = 0; i < SPI_processed; i++)
	{
		bool		queue_null;
		bool		status_null;
		Datum		queue;
		Datum		status;
		Oid			status_oid;
		bool		same;
		bool		dependents;
		bool		finished;

		heap_deform_tuple(SPI_tuptable->vals[i], tupdesc, values, nulls);
		queue = values[JQ_OUTCOME_QUEUE - 1];
		queue_null = nulls[JQ_OUTCOME_QUEUE - 1];
		status = values[JQ_OUTCOME_STATUS - 1];
		status_null = nulls[JQ_OUTCOME_STATUS - 1];
		status_oid = status_null ? InvalidOid : DatumGetObjectId(status);

		if (!status_null)
			moved++;

		/* rows come in runs of one queue: look at the name only when it changes */
		same = (i > 0 && queue_null == prev_queue_null &&
				(queue_null ||
				 (VARSIZE_ANY_EXHDR(DatumGetPointer(queue)) ==
				  VARSIZE_ANY_EXHDR(DatumGetPointer(prev_queue)) &&
				  memcmp(VARDATA_ANY(DatumGetPointer(queue)),
						 VARDATA_ANY(DatumGetPointer(prev_queue)),
						 VARSIZE_ANY_EXHDR(DatumGetPointer(queue))) == 0)));
		if (!same)
		{
			if (counting && run_n > 0)
				jq_count_outcome(t, run_queue, run_status, run_n);
			run_n = 0;
			run_queue = queue_null ? NULL : jq_result_name(i, 1);
			run_status = status_null ? NULL : jq_result_name(i, 2);
			prev_queue = queue;
			prev_queue_null = queue_null;
			prev_status = status_oid;
			if (i == 0 && first_queue != NULL)
				*first_queue = run_queue;
		}
		else if (status_oid != prev_status)
		{
			if (counting && run_n > 0)
				jq_count_outcome(t, run_queue, run_status, run_n);
			run_n = 0;
			run_status = status_null ? NULL : jq_result_name(i, 2);
			prev_status = status_oid;
		}
		run_n++;
		if (counting && !status_null)
			jq_time_outcome(t, i, values, nulls, run_queue, run_status);

		dependents = JQ_ROW_TRUE(JQ_OUTCOME_DEPENDENTS);
		finished = JQ_ROW_TRUE(JQ_OUTCOME_FINISHED);
		if (!dependents && jq_pending_dependencies != NULL && !status_null &&
			jq_status_finished(jq_result_name(i, JQ_OUTCOME_STATUS)))
		{
			/*
			 * A job that this transaction made others wait for, finished
			 * by it before its commit sets has_dependents: its dependents
			 * (rows this transaction wrote) are resolved now.
			 */
			dependents = jq_dependency_pending(DatumGetInt64(values[JQ_OUTCOME_ID - 1]));
		}
		if (finished ||
			(dependents &&
			 t != JQ_TR_DEPENDENCIES_MET && t != JQ_TR_DEPENDENCY_FAILED))
		{
			int64		id = DatumGetInt64(values[JQ_OUTCOME_ID - 1]);
			char	   *status = jq_result_name(i, JQ_OUTCOME_STATUS);

			if (finished)
				jq_wakeup_finished(id, status);
			/* the dependency transitions resolve their own levels */
			if (dependents &&
				t != JQ_TR_DEPENDENCIES_MET && t != JQ_TR_DEPENDENCY_FAILED)
			{
				if (succeeded == NULL)
				{
					succeeded = palloc(sizeof(int64) * SPI_processed);
					failed = palloc(sizeof(int64) * SPI_processed);
					succeeded_queues = palloc(sizeof(char *) * SPI_processed);
					failed_queues = palloc(sizeof(char *) * SPI_processed);
				}
				if (strcmp(status, "succeeded") == 0)
				{
					succeeded_queues[nsucceeded] = run_queue;
					succeeded[nsucceeded++] = id;
				}
				else
				{
					failed_queues[nfailed] = run_queue;
					failed[nfailed++] = id;
				}
			}
		}

		if (JQ_ROW_TRUE(JQ_OUTCOME_WAKE) && run_queue != NULL)
		{
			if (woken == NULL)
				jq_wakeup_queue(run_queue);
			else
			{
				ListCell   *lc;
				bool		seen = false;

				foreach(lc, *woken)
				{
					if (strcmp((char *) lfirst(lc), run_queue) == 0)
					{
						seen = true;
						break;
					}
				}
				if (!seen)
				{
					MemoryContext oldcontext = MemoryContextSwitchTo(woken_cxt);

					*woken = lappend(*woken, pstrdup(run_queue));
					MemoryContextSwitchTo(oldcontext);
				}
			}
		}
	}
	if (counting && run_n > 0)
		jq_count_outcome(t, run_queue, run_status, run_n);
	if (counting && nasked > SPI_processed)
		jq_count_outcome(t, NULL, NULL, (int64) (nasked - SPI_processed));
	pfree(values);
	pfree(nulls);
	if ((nsucceeded > 0 || nfailed > 0) && jq_distributed_mode())
		jq_dependencies_resolve_distributed(succeeded, succeeded_queues, nsucceeded,
											failed, failed_queues, nfailed,
											woken, woken_cxt);
	else if (nsucceeded > 0 || nfailed > 0)
		jq_dependencies_resolve(succeeded, nsucceeded, failed, nfailed,
								woken, woken_cxt);
	return moved;
}

/*
 * Error out if queue_name does not exist.  Used when a statement returned
 * no rows, to tell "nothing to do" from "no such queue" without paying for
 * a second lookup on the common path.  Returns the queue's notify setting.
 */
bool
jq_require_queue(const char *queue_name)
{
	Datum		values[1];

	values[0] = CStringGetTextDatum(queue_name);
	jq_execute(JQ_PLAN_QUEUE_EXISTS, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		jq_raise_unknown_queue(queue_name);
	return jq_result_bool(0, 2);
}

/*
 * The id of the job of queue (text) that holds idempotency key (text): the
 * enqueue that found the key taken returns it.  Connected to SPI.
 */
int64
jq_job_with_key(Datum queue, Datum key)
{
	Datum		values[2];

	values[0] = queue;
	values[1] = key;
	jq_execute(JQ_PLAN_ENQUEUE_EXISTING, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not enqueue job: the job with this idempotency key was deleted concurrently"),
				 errhint("Retry the transaction.")));
	return DatumGetInt64(jq_result(0, 1));
}

static ArrayType *
jq_int64_array(const int64 *ids, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		elems[i] = Int64GetDatum(ids[i]);
	return construct_array(elems, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
						   TYPALIGN_DOUBLE);
}

/*
 * Resolve the dependents of jobs that finished in this transaction: those
 * of succeeded[] are released (or counted closer to release), those of
 * failed[] (dead or cancelled) cancelled, transitively.  Called by
 * jq_note_outcome while connected to SPI; SPI_tuptable and SPI_processed
 * are the caller's again on return.  Wake-ups go to *woken as in
 * jq_note_outcome.
 */
void
jq_dependencies_resolve(const int64 *succeeded, int nsucceeded,
						const int64 *failed, int nfailed,
						List **woken, MemoryContext woken_cxt)
{
	SPITupleTable *saved_tuptable = SPI_tuptable;
	uint64		saved_processed = SPI_processed;
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[3];

	if (nsucceeded > 0)
	{
		values[0] = PointerGetDatum(jq_int64_array(succeeded, nsucceeded));
		values[1] = TimestampTzGetDatum(now);
		values[2] = Int32GetDatum(JQ_RELEASE_BATCH);
		for (;;)
		{
			jq_execute(JQ_PLAN_DEPENDENTS_RELEASE, values, NULL,
					   SPI_OK_UPDATE_RETURNING);
			if (SPI_processed == 0)
				break;
			(void) jq_note_outcome(JQ_TR_DEPENDENCIES_MET, 0, woken, woken_cxt,
								   NULL);
			CHECK_FOR_INTERRUPTS();
		}
	}

	if (nfailed > 0)
	{
		int64	   *level = palloc(sizeof(int64) * nfailed);
		int			nlevel = nfailed;

		memcpy(level, failed, sizeof(int64) * nfailed);
		values[1] = TimestampTzGetDatum(now);
		values[2] = Int32GetDatum(jq_error_history);
		while (nlevel > 0)
		{
			int64	   *next;
			int			nnext = 0;
			uint64		i;

			values[0] = PointerGetDatum(jq_int64_array(level, nlevel));
			jq_execute(JQ_PLAN_DEPENDENTS_CANCEL, values, NULL,
					   SPI_OK_UPDATE_RETURNING);
			next = palloc(sizeof(int64) * Max(SPI_processed, 1));
			for (i = 0; i < SPI_processed; i++)
			{
				if (jq_result_bool(i, JQ_OUTCOME_DEPENDENTS))
					next[nnext++] = DatumGetInt64(jq_result(i, JQ_OUTCOME_ID));
			}
			(void) jq_note_outcome(JQ_TR_DEPENDENCY_FAILED, 0, woken, woken_cxt,
								   NULL);
			level = next;
			nlevel = nnext;
			CHECK_FOR_INTERRUPTS();
		}
	}

	SPI_tuptable = saved_tuptable;
	SPI_processed = saved_processed;
}

/* By queue, then id: the order of statements and locks on Citus */
int
jq_job_ref_cmp(const void *a, const void *b)
{
	const JqJobRef *x = a;
	const JqJobRef *y = b;
	int			c = strcmp(x->queue, y->queue);

	return c != 0 ? c : (x->id > y->id) - (x->id < y->id);
}

/* refs[from, to), one queue's: their ids as a bigint[] */
Datum
jq_job_ref_ids(const JqJobRef *refs, int from, int to)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(to - from, 1));
	int			i;

	for (i = from; i < to; i++)
		elems[i - from] = Int64GetDatum(refs[i].id);
	return PointerGetDatum(construct_array(elems, to - from, INT8OID, sizeof(int64),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* refs[from, to): their values as an array of type typid (text or jsonb) */
static Datum
jq_job_ref_values(const JqJobRef *refs, int from, int to, Oid typid)
{
	int			n = to - from;
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int			i;

	for (i = 0; i < n; i++)
	{
		elems[i] = refs[from + i].value;
		nulls[i] = refs[from + i].value_null;
	}
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs, typid,
											  -1, false, TYPALIGN_INT));
}

/* refs[from, to): their counts as an integer[] */
static Datum
jq_job_ref_counts(const JqJobRef *refs, int from, int to)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(to - from, 1));
	int			i;

	for (i = from; i < to; i++)
		elems[i - from] = Int32GetDatum(refs[i].count);
	return PointerGetDatum(construct_array(elems, to - from, INT4OID, sizeof(int32),
										   true, TYPALIGN_INT));
}

/* The end of the run of refs[from] 's queue in refs[0, n) (sorted) */
int
jq_job_ref_run(const JqJobRef *refs, int from, int n)
{
	int			to = from + 1;

	while (to < n && strcmp(refs[to].queue, refs[from].queue) == 0)
		to++;
	return to;
}

static JqJobRef *
jq_job_refs(const int64 *ids, char **queues, int n)
{
	JqJobRef   *refs = palloc0(sizeof(JqJobRef) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
	{
		refs[i].queue = queues[i];
		refs[i].id = ids[i];
	}
	qsort(refs, n, sizeof(JqJobRef), jq_job_ref_cmp);
	return refs;
}

/* The work of jq_resolve_dependents_of, for a subtransaction */
typedef struct JqResolve
{
	bool		succeeded;		/* released, or (false) cancelled */
	const char *queue;			/* the queue of the jobs that finished */
	Datum		ids;			/* those jobs, bigint[] */
	bool		same_queue;		/* only the dependents in queue, or all */
	Datum		now;
	List	  **woken;
	MemoryContext woken_cxt;
} JqResolve;

static void jq_resolve_dependents_of(bool succeeded, const char *queue, Datum ids,
									 Datum now, List **woken,
									 MemoryContext woken_cxt);

/*
 * Release the dependents (all, or those in r->queue) of r->ids, jobs of
 * r->queue that succeeded: the rows naming them are taken on its shard in
 * batches (JQ_PLAN_DEPENDENTS_TAKE), and each batch's dependents counted
 * off on their own shards, a statement per queue.
 */
static void
jq_release_dependents(JqResolve *r)
{
	Datum		values[4];
	char		nulls[4] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};

	values[0] = CStringGetTextDatum(r->queue);
	values[1] = r->ids;
	values[2] = Int32GetDatum(JQ_RELEASE_BATCH);
	values[3] = BoolGetDatum(true);
	nulls[3] = r->same_queue ? JQ_NOTNULL : JQ_ISNULL;
	for (;;)
	{
		JqJobRef   *dependents;
		int			ndependents;
		int			taken = 0;
		int			from;
		int			i;

		jq_execute(JQ_PLAN_DEPENDENTS_TAKE, values, nulls, SPI_OK_SELECT);
		if (SPI_processed == 0)
			break;
		ndependents = (int) SPI_processed;
		dependents = palloc0(sizeof(JqJobRef) * ndependents);
		for (i = 0; i < ndependents; i++)
		{
			dependents[i].queue = jq_result_name(i, 1);
			dependents[i].id = DatumGetInt64(jq_result(i, 2));
			dependents[i].count = DatumGetInt32(jq_result(i, 3));
			dependents[i].value = jq_result_nullable(i, 4, &dependents[i].value_null);
			taken += dependents[i].count;
		}
		/* in (queue, id) order already */
		for (from = 0; from < ndependents;)
		{
			int			to = jq_job_ref_run(dependents, from, ndependents);
			Datum		count_values[6];

			count_values[0] = CStringGetTextDatum(dependents[from].queue);
			count_values[1] = jq_job_ref_ids(dependents, from, to);
			count_values[2] = jq_job_ref_counts(dependents, from, to);
			count_values[3] = jq_job_ref_values(dependents, from, to, TEXTOID);
			count_values[4] = r->now;
			count_values[5] = BoolGetDatum(jq_queue_settings(dependents[from].queue)->notify);
			jq_execute(JQ_PLAN_DEPENDENTS_COUNT_OFF, count_values, NULL,
					   SPI_OK_UPDATE_RETURNING);
			(void) jq_note_outcome(JQ_TR_DEPENDENCIES_MET, 0, r->woken,
								   r->woken_cxt, NULL);
			from = to;
		}
		/* a batch not full was the last */
		if (taken < JQ_RELEASE_BATCH)
			break;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Cancel the waiting dependents (all, or those in r->queue) of r->ids,
 * jobs of r->queue that ended dead or cancelled, each on its own shard,
 * and then theirs, queue by queue.
 */
static void
jq_cancel_dependents(JqResolve *r)
{
	Datum		values[4];
	char		nulls[4] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	JqJobRef   *dependents;
	int			ndependents;
	JqJobRef   *next = NULL;
	int			nnext = 0;
	int			from;
	int			i;

	values[0] = CStringGetTextDatum(r->queue);
	values[1] = r->ids;
	values[2] = r->now;
	values[3] = BoolGetDatum(true);
	nulls[3] = r->same_queue ? JQ_NOTNULL : JQ_ISNULL;
	jq_execute(JQ_PLAN_DEPENDENTS_OF, values, nulls, SPI_OK_SELECT);
	ndependents = (int) SPI_processed;
	dependents = palloc0(sizeof(JqJobRef) * Max(ndependents, 1));
	for (i = 0; i < ndependents; i++)
	{
		dependents[i].queue = jq_result_name(i, 1);
		dependents[i].id = DatumGetInt64(jq_result(i, 2));
		dependents[i].value = jq_result(i, 3);
	}
	next = palloc0(sizeof(JqJobRef) * Max(ndependents, 1));
	for (from = 0; from < ndependents;)
	{
		int			to = jq_job_ref_run(dependents, from, ndependents);
		Datum		cancel_values[6];
		Datum		delete_on_success;
		uint64		row;

		jq_completion_queues(&cancel_values[5], &delete_on_success);
		cancel_values[0] = CStringGetTextDatum(dependents[from].queue);
		cancel_values[1] = jq_job_ref_ids(dependents, from, to);
		cancel_values[2] = jq_job_ref_values(dependents, from, to, JSONBOID);
		cancel_values[3] = r->now;
		cancel_values[4] = Int32GetDatum(jq_error_history);
		jq_execute(JQ_PLAN_DEPENDENTS_CANCEL_IN, cancel_values, NULL,
				   SPI_OK_UPDATE_RETURNING);
		for (row = 0; row < SPI_processed; row++)
		{
			if (!jq_result_bool(row, JQ_OUTCOME_DEPENDENTS))
				continue;
			next[nnext].queue = jq_result_name(row, JQ_OUTCOME_QUEUE);
			next[nnext].id = DatumGetInt64(jq_result(row, JQ_OUTCOME_ID));
			nnext++;
		}
		(void) jq_note_outcome(JQ_TR_DEPENDENCY_FAILED, 0, r->woken,
							   r->woken_cxt, NULL);
		from = to;
	}
	CHECK_FOR_INTERRUPTS();
	/* the next level, each cancelled job's queue with its own dependents */
	qsort(next, nnext, sizeof(JqJobRef), jq_job_ref_cmp);
	for (from = 0; from < nnext;)
	{
		int			to = jq_job_ref_run(next, from, nnext);

		jq_resolve_dependents_of(false, next[from].queue,
								 jq_job_ref_ids(next, from, to), r->now,
								 r->woken, r->woken_cxt);
		from = to;
	}
}

static void
jq_resolve_dependents_step(void *arg)
{
	JqResolve  *r = (JqResolve *) arg;

	if (r->succeeded)
		jq_release_dependents(r);
	else
		jq_cancel_dependents(r);
}

/*
 * Resolve the dependents of ids, jobs of queue that finished (succeeded,
 * or dead or cancelled), in a subtransaction.  A write to another queue's
 * shard is refused inside a call that Citus delegated with
 * force_delegation (jq_claim, jq_complete_and_claim; 0A000): then the
 * subtransaction is undone, the rows of the dependents in other queues
 * are left for the worker of this node, marked deferred
 * (JQ_PLAN_DEPENDENTS_DEFER; jq_dependencies_resolve_deferred), and those
 * in queue resolved at once.
 */
static void
jq_resolve_dependents_of(bool succeeded, const char *queue, Datum ids,
						 Datum now, List **woken, MemoryContext woken_cxt)
{
	JqResolve	r = {succeeded, queue, ids, false, now, woken, woken_cxt};
	ErrorData  *edata;

	/* a failure recurses once per level of dependents */
	check_stack_depth();

	if (!jq_run_subxact(jq_resolve_dependents_step, &r, false, &edata))
	{
		Datum		values[2];

		if (edata->sqlerrcode != ERRCODE_FEATURE_NOT_SUPPORTED)
			ReThrowError(edata);
		FreeErrorData(edata);
		values[0] = CStringGetTextDatum(queue);
		values[1] = ids;
		jq_execute(JQ_PLAN_DEPENDENTS_DEFER, values, NULL, SPI_OK_UPDATE);
		r.same_queue = true;
		jq_resolve_dependents_step(&r);
	}
}

/*
 * jq_dependencies_resolve on Citus, where the rows of job_dependencies sit
 * on the shards of the jobs they wait for (queue_name) and name the
 * dependents' queues (job_queue): per queue of the finished jobs, a
 * statement on its shard takes the rows (JQ_PLAN_DEPENDENTS_TAKE, or reads
 * them, JQ_PLAN_DEPENDENTS_OF, for a failure); then per queue of the
 * dependents, a statement on that shard updates them as the one statement
 * of a single server does.  A dependent in a queue on another node is a
 * write on that node, refused in some calls (jq_resolve_dependents_of).
 */
static void
jq_dependencies_resolve_distributed(const int64 *succeeded, char **succeeded_queues,
									int nsucceeded, const int64 *failed,
									char **failed_queues, int nfailed,
									List **woken, MemoryContext woken_cxt)
{
	SPITupleTable *saved_tuptable = SPI_tuptable;
	uint64		saved_processed = SPI_processed;
	Datum		now = TimestampTzGetDatum(GetCurrentTimestamp());
	JqJobRef   *done;
	int			from;

	done = jq_job_refs(succeeded, succeeded_queues, nsucceeded);
	for (from = 0; from < nsucceeded;)
	{
		int			to = jq_job_ref_run(done, from, nsucceeded);

		jq_resolve_dependents_of(true, done[from].queue,
								 jq_job_ref_ids(done, from, to), now, woken, woken_cxt);
		from = to;
	}
	done = jq_job_refs(failed, failed_queues, nfailed);
	for (from = 0; from < nfailed;)
	{
		int			to = jq_job_ref_run(done, from, nfailed);

		jq_resolve_dependents_of(false, done[from].queue,
								 jq_job_ref_ids(done, from, to), now, woken, woken_cxt);
		from = to;
	}

	SPI_tuptable = saved_tuptable;
	SPI_processed = saved_processed;
}

/*
 * On Citus: resolve the dependents deferred by calls of queue (see
 * jq_resolve_dependents_of), up to max_jobs jobs that finished; the
 * worker of the queue's node runs it after its reap.  The mark is cleared
 * first, so that a resolution deferred again stays marked.  Returns the
 * number of jobs looked at.  Connected to SPI.
 */
int
jq_dependencies_resolve_deferred(const char *queue, int max_jobs)
{
	Datum		values[2];
	Datum		now = TimestampTzGetDatum(GetCurrentTimestamp());
	JqJobRef   *succeeded;
	JqJobRef   *failed;
	JqJobRef   *all;
	int			nsucceeded = 0;
	int			nfailed = 0;
	int			n;
	int			i;

	values[0] = CStringGetTextDatum(queue);
	values[1] = Int32GetDatum(max_jobs);
	jq_execute(JQ_PLAN_DEPENDENCIES_DEFERRED, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	if (n == 0)
		return 0;
	all = palloc0(sizeof(JqJobRef) * n);
	succeeded = palloc0(sizeof(JqJobRef) * n);
	failed = palloc0(sizeof(JqJobRef) * n);
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		char	   *status;

		all[i].queue = (char *) queue;
		all[i].id = DatumGetInt64(jq_result(i, 1));
		(void) jq_result_nullable(i, 2, &isnull);
		/* a job replayed or deleted since has nothing left to resolve */
		if (isnull)
			continue;
		status = jq_result_name(i, 2);
		if (strcmp(status, "succeeded") == 0)
			succeeded[nsucceeded++] = all[i];
		else if (strcmp(status, "dead") == 0 || strcmp(status, "cancelled") == 0)
			failed[nfailed++] = all[i];
	}
	values[1] = jq_job_ref_ids(all, 0, n);
	jq_execute(JQ_PLAN_DEPENDENCIES_UNDEFER, values, NULL, SPI_OK_UPDATE);
	if (nsucceeded > 0)
		jq_resolve_dependents_of(true, queue, jq_job_ref_ids(succeeded, 0, nsucceeded),
								 now, NULL, NULL);
	if (nfailed > 0)
		jq_resolve_dependents_of(false, queue, jq_job_ref_ids(failed, 0, nfailed),
								 now, NULL, NULL);
	return n;
}
