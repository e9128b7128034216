/*-------------------------------------------------------------------------
 *
 * lifecycle.c
 *	  The hot path: enqueue, claim, complete, fail, heartbeat and release.
 *
 * Each function validates its arguments, runs one prepared statement (see
 * plans.c), notes its outcome (outcome.c) and returns; a claim goes through
 * the claim pipeline (claim.c).  jq_complete_and_claim runs the statements
 * of jq_complete_many and of jq_claim, one after the other, through the
 * same helpers.  State changes are single statements, so a job is never seen
 * half-claimed or half-completed, and a claim never waits for a row that
 * another worker has locked (FOR UPDATE SKIP LOCKED).
 *
 * Fencing: every claim increments the job's lease_token.  complete, fail,
 * heartbeat and release match on (id, token, status = running, lease not
 * expired); a worker whose lease expired, was reaped, cancelled or claimed
 * by someone else matches nothing, changes nothing, and is told so by the
 * return value (false / NULL, an id left out; jq_complete_and_claim only
 * counts its fenced pairs).
 *
 * Memory: results are copied out of SPI memory (SPI_datumTransfer or a
 * tuplestore in per-query memory) before SPI_finish releases it.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

/*
 * A heartbeat statement that took longer than this (microseconds) waited
 * for the row and measures the lease again (jq_heartbeat); one that did
 * not takes a tenth of it.
 */
#define JQ_HEARTBEAT_WAITED 1000

PG_FUNCTION_INFO_V1(jq_claim);
PG_FUNCTION_INFO_V1(jq_complete);
PG_FUNCTION_INFO_V1(jq_complete_in_queue);
PG_FUNCTION_INFO_V1(jq_complete_many);
PG_FUNCTION_INFO_V1(jq_complete_many_in_queue);
PG_FUNCTION_INFO_V1(jq_complete_and_claim);
PG_FUNCTION_INFO_V1(jq_fail);
PG_FUNCTION_INFO_V1(jq_fail_in_queue);
PG_FUNCTION_INFO_V1(jq_heartbeat);
PG_FUNCTION_INFO_V1(jq_heartbeat_in_queue);
PG_FUNCTION_INFO_V1(jq_release);
PG_FUNCTION_INFO_V1(jq_release_in_queue);

static Datum jq_arg_clipped_text(FunctionCallInfo fcinfo, int argno, int maxlen,
								 char *isnull);


/* Hot-path limits, all settable per session. */
int			jq_max_claim_batch = 1000;
int			jq_max_payload_size = 1024 * 1024;
int			jq_max_error_length = 2048;
int			jq_max_error_stack_size = 8192;

/* Define the GUCs of the hot path.  Called from _PG_init. */
void
jq_lifecycle_guc_init(void)
{
	DefineCustomIntVariable("jobqueue.max_claim_batch",
							"Largest number of jobs one jq_claim call may lease.",
							NULL,
							&jq_max_claim_batch,
							1000, 1, 1000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	/*
	 * Up to 1 GB, as documented.  No value can be larger than 1 GB less its
	 * header (the limit of any varlena, jsonb's is lower still), so at the
	 * top of the range the setting means "no limit of our own".
	 */
	DefineCustomIntVariable("jobqueue.max_payload_size",
							"Largest accepted job payload.",
							"Measured on the stored jsonb value, before compression.",
							&jq_max_payload_size,
							1024 * 1024, 1, 1024 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	/*
	 * At most 64 kB of message and 64 kB of stack trace x error_history (at
	 * most 1000) entries keeps a job's history below jsonb's 256 MB limit,
	 * so appending to it never fails.
	 */
	DefineCustomIntVariable("jobqueue.max_error_length",
							"Longest error message kept in a job's history.",
							"Longer messages are cut on a character boundary.",
							&jq_max_error_length,
							2048, 16, 64 * 1024,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("jobqueue.max_error_stack_size",
							"Longest stack trace kept in a job's history.",
							"Longer stack traces are cut on a character boundary.",
							&jq_max_error_stack_size,
							8192, 16, 64 * 1024,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}

/*
 * The INSERT of one job (JQ_PLAN_ENQUEUE_GROUPED with an idempotency key,
 * JQ_PLAN_ENQUEUE_UNKEYED without): the queue's settings from the
 * backend's cache fill in what the statement would otherwise read from the
 * queue's row, so that it is a plain INSERT ... VALUES (plans.c).  values
 * and nulls are JQ_PLAN_ENQUEUE_GROUPED's first eight parameters.
 *
 * The settings are read under the table's lock (jq_enqueue_settings).  No
 * row back (SPI_processed 0) means an existing key.
 */
static void
jq_enqueue_values(const char *queue_name, Datum *values, const char *nulls)
{
	const JqQueueSettings *settings = jq_enqueue_settings(queue_name);
	Datum		uvalues[9];
	char		unulls[9];

	memcpy(uvalues, values, 8 * sizeof(Datum));
	memcpy(unulls, nulls, 8);
	jq_enqueue_defaults(settings, uvalues, unulls);
	uvalues[8] = BoolGetDatum(settings->notify);
	unulls[8] = JQ_NOTNULL;
	jq_execute(nulls[5] == JQ_ISNULL ? JQ_PLAN_ENQUEUE_UNKEYED : JQ_PLAN_ENQUEUE_GROUPED,
			   uvalues, unulls, SPI_OK_INSERT_RETURNING);
}

/*
 * jq_enqueue(queue_name, payload, priority, run_at, max_attempts,
 *			  idempotency_key, depends_on, group_key) returns bigint
 *
 * With depends_on (not NULL), the job is enqueued by dependencies.c.
 *
 * With an idempotency key the queue already holds, the existing job's id is
 * returned and nothing is inserted.  Two transactions racing with the same
 * key are serialized by the unique index: the second waits for the first,
 * then finds its row (ON CONFLICT DO NOTHING, then a lookup).
 */
Datum
jq_enqueue_call(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Datum		values[8];
	char		nulls[8] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	bool		isnull;
	int64		job_id;
	text	   *group_key;
	JqEnqueueControls controls;

	values[0] = CStringGetTextDatum(queue_name);
	values[1] = jq_arg_required(fcinfo, 1, "payload");
	jq_check_payload(values[1]);
	values[2] = jq_arg_required(fcinfo, 2, "priority");
	values[3] = jq_arg_timestamptz(fcinfo, 3, "run_at", &isnull);
	if (isnull)
		nulls[3] = JQ_ISNULL;
	if (PG_ARGISNULL(4))
	{
		values[4] = (Datum) 0;
		nulls[4] = JQ_ISNULL;
	}
	else
		values[4] = Int32GetDatum(jq_arg_positive_int4(fcinfo, 4, "max_attempts"));
	if (PG_ARGISNULL(5))
	{
		values[5] = (Datum) 0;
		nulls[5] = JQ_ISNULL;
	}
	else
		values[5] = PointerGetDatum(jq_arg_nonempty_text(fcinfo, 5, "idempotency key",
														 JQ_IDEMPOTENCY_KEY_MAXLEN));
	values[6] = TimestampTzGetDatum(GetCurrentTimestamp());
	group_key = jq_arg_group_key(fcinfo, 7);
	values[7] = PointerGetDatum(group_key);
	if (group_key == NULL)
		nulls[7] = JQ_ISNULL;
	/* debounce, deadline, cost: arguments since 1.4 (controls.c) */
	jq_arg_enqueue_controls(fcinfo, 10, true, &controls);
	if (controls.debounce_key != NULL &&
		(nulls[5] == JQ_NOTNULL || (PG_NARGS() > 6 && !PG_ARGISNULL(6))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("debounce_key cannot be combined with %s",
						nulls[5] == JQ_NOTNULL ? "an idempotency key" : "depends_on"),
				 errdetail("A debounced job is replaced by the next call with its key.")));

	/* depends_on: an argument since 1.2, absent in an older definition */
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
	{
		Datum		key = values[7];
		ArrayType  *keys = group_key == NULL ? NULL :
			construct_array(&key, 1, TEXTOID, -1, false, TYPALIGN_INT);

		/* the admission limits first: the lock order of every producer */
		jq_spi_connect();
		{
			const JqQueueSettings *settings = jq_queue_settings(queue_name);

			if (settings->exists && jq_queue_admits(settings))
				jq_admit_jobs(queue_name, settings, 1, &key,
							  group_key == NULL ? 0 : 1, NULL);
		}
		jq_spi_finish();
		job_id = jq_enqueue_dependent(fcinfo, values, nulls, NULL,
									  jq_arg_depends_on(fcinfo, 6),
									  keys, NULL, NULL);
		if (controls.has_start_by || controls.has_cost)
		{
			jq_spi_connect();
			jq_dependent_controls(queue_name, job_id, &controls);
			jq_spi_finish();
		}
		PG_RETURN_INT64(job_id);
	}

	jq_spi_connect();
	jq_check_aged_priority(queue_name, DatumGetInt32(values[2]));
	if (jq_controls_given(&controls) ||
		jq_queue_controls_enqueue(jq_queue_settings(queue_name)))
	{
		job_id = jq_enqueue_controlled(queue_name, &controls, values, nulls);
		jq_spi_finish();
		PG_RETURN_INT64(job_id);
	}
	/* before 1.2 (ALTER EXTENSION UPDATE not run) the schema has no groups */
	if (jq_ordering_installed())
		jq_enqueue_values(queue_name, values, nulls);
	else if (group_key == NULL)
		jq_execute(JQ_PLAN_ENQUEUE, values, nulls, SPI_OK_INSERT_RETURNING);
	else
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job groups need jobqueue 1.2"),
				 errhint("Run ALTER EXTENSION jobqueue UPDATE.")));
	if (SPI_processed == 1)
	{
		/* a job that is not ready yet is announced when it becomes ready */
		job_id = DatumGetInt64(jq_result(0, JQ_OUTCOME_ID));
		(void) jq_note_outcome(JQ_TR_ENQUEUE, 0, NULL, NULL, NULL);
	}
	else
	{
		jq_require_queue(queue_name);

		/*
		 * Without a key, no row means the INSERT did not see the queue,
		 * which was created concurrently after the statement began.
		 */
		if (nulls[5] == JQ_ISNULL)
			jq_raise_unknown_queue(queue_name);

		/* the queue exists, so the key did: return the job that holds it */
		job_id = jq_job_with_key(values[0], values[5]);
	}
	jq_spi_finish();

	PG_RETURN_INT64(job_id);
}

/*
 * jq_enqueue_many(queue_name, payloads jsonb[], priority, run_at,
 *				   depends_on, group_keys text[]) returns setof bigint
 *
 * One INSERT for all payloads; ids come back in payload order.  With
 * depends_on, every job waits for the same jobs (dependencies.c).
 */
Datum
jq_enqueue_many_call(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	ArrayType  *payloads = jq_arg_array(fcinfo, 1, "payloads", JSONBOID);
	ArrayType  *group_keys;
	Datum		values[6];
	char		nulls[6] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	bool		isnull;
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	uint64		i;
	JqEnqueueControls controls;
	Datum		cvalues[8];
	char		cnulls[8];

	values[2] = jq_arg_required(fcinfo, 2, "priority");

	/* check each payload's size before anything is inserted */
	{
		ArrayIterator it = array_create_iterator(payloads, 0, NULL);
		Datum		elem;
		bool		elem_null;

		while (array_iterate(it, &elem, &elem_null))
			jq_check_payload(elem);
		array_free_iterator(it);
	}

	values[0] = CStringGetTextDatum(queue_name);
	values[1] = PointerGetDatum(payloads);
	values[3] = jq_arg_timestamptz(fcinfo, 3, "run_at", &isnull);
	if (isnull)
		nulls[3] = JQ_ISNULL;
	values[4] = TimestampTzGetDatum(GetCurrentTimestamp());
	group_keys = jq_arg_group_keys(fcinfo, 5,
								   ArrayGetNItems(ARR_NDIM(payloads), ARR_DIMS(payloads)));
	values[5] = PointerGetDatum(group_keys);
	if (group_keys == NULL)
		nulls[5] = JQ_ISNULL;
	/* deadline and cost of every job: arguments since 1.4 (controls.c) */
	jq_arg_enqueue_controls(fcinfo, 8, false, &controls);

	tupstore = jq_srf_init(fcinfo, &tupdesc);

	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
	{
		Datum		dvalues[7];
		char		dnulls[7];

		if (jq_controls_given(&controls))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("jq_enqueue_many does not take start_by or cost with depends_on"),
					 errhint("Enqueue such jobs one at a time with jq_enqueue.")));
		/* the admission limits first: the lock order of every producer */
		jq_spi_connect();
		{
			const JqQueueSettings *settings = jq_queue_settings(queue_name);

			if (settings->exists && jq_queue_admits(settings))
			{
				Datum		dv[8];
				char		dn[8];

				memcpy(dv, values, sizeof(values));
				memcpy(dn, nulls, sizeof(nulls));
				jq_enqueue_many_controls(queue_name, &controls,
										 DatumGetTimestampTz(values[4]), dv, dn);
			}
		}
		jq_spi_finish();

		/* the layout of jq_enqueue's values: no max_attempts, no key */
		dvalues[0] = values[0];
		dvalues[2] = values[2];
		dvalues[3] = values[3];
		dvalues[6] = values[4];
		memset(dnulls, JQ_NOTNULL, sizeof(dnulls));
		dnulls[3] = nulls[3];
		dnulls[4] = dnulls[5] = JQ_ISNULL;
		dvalues[1] = dvalues[4] = dvalues[5] = (Datum) 0;
		(void) jq_enqueue_dependent(fcinfo, dvalues, dnulls, payloads,
									jq_arg_depends_on(fcinfo, 4), group_keys,
									tupstore, tupdesc);
		return (Datum) 0;
	}

	jq_spi_connect();
	jq_check_aged_priority(queue_name, DatumGetInt32(values[2]));
	if (jq_controls_given(&controls) ||
		jq_queue_controls_enqueue(jq_queue_settings(queue_name)))
	{
		memcpy(cvalues, values, sizeof(values));
		memcpy(cnulls, nulls, sizeof(nulls));
		jq_enqueue_many_controls(queue_name, &controls,
								 DatumGetTimestampTz(nulls[3] == JQ_ISNULL ?
													 values[4] : values[3]),
								 cvalues, cnulls);
		jq_execute(JQ_PLAN_ENQUEUE_MANY_CONTROLLED, cvalues, cnulls,
				   SPI_OK_INSERT_RETURNING);
	}
	else if (jq_ordering_installed())
		jq_execute(JQ_PLAN_ENQUEUE_MANY_GROUPED, values, nulls, SPI_OK_INSERT_RETURNING);
	else if (group_keys == NULL)
		jq_execute(JQ_PLAN_ENQUEUE_MANY, values, nulls, SPI_OK_INSERT_RETURNING);
	else
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job groups need jobqueue 1.2"),
				 errhint("Run ALTER EXTENSION jobqueue UPDATE.")));
	(void) jq_note_outcome(JQ_TR_ENQUEUE, 0, NULL, NULL, NULL);
	for (i = 0; i < SPI_processed; i++)
	{
		Datum		id = jq_result(i, JQ_OUTCOME_ID);
		bool		id_null = false;

		tuplestore_putvalues(tupstore, tupdesc, &id, &id_null);
	}
	/* only after the loop: this lookup replaces SPI_tuptable */
	if (SPI_processed == 0)
		jq_require_queue(queue_name);
	jq_spi_finish();

	return (Datum) 0;
}

/*
 * The arguments of a batch completion (jq_complete_many,
 * jq_complete_and_claim), checked.
 */
typedef struct JqCompleteArgs
{
	ArrayType  *ids;
	ArrayType  *tokens;
	ArrayType  *results;		/* NULL: none */
	int			nids;
} JqCompleteArgs;

/* One job of a batch completion, for sorting by id */
typedef struct JqCompleteItem
{
	int64		id;
	Datum		token;
	Datum		result;
	bool		result_null;
} JqCompleteItem;

static int
jq_complete_item_cmp(const void *a, const void *b)
{
	int64		x = ((const JqCompleteItem *) a)->id;
	int64		y = ((const JqCompleteItem *) b)->id;

	return (x > y) - (x < y);
}

/*
 * Put the jobs of a batch completion in id order, their tokens and results
 * with them.  Every statement that completes them then takes their rows in
 * that order (a nested loop over the list), the one order that every other
 * statement locking several jobs uses too (a producer's commit settling
 * its dependencies, dependencies.c): a batch whose caller lists its jobs
 * in any other order cannot deadlock with them.  Already in order (what
 * the clients send): nothing is copied.
 */
static void
jq_complete_args_sort(JqCompleteArgs *args)
{
	Datum	   *ids;
	Datum	   *tokens;
	Datum	   *results = NULL;
	bool	   *results_null = NULL;
	int			n;
	int			i;
	JqCompleteItem *items;

	if (args->nids < 2)
		return;
	deconstruct_array(args->ids, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &ids, NULL, &n);
	for (i = 1; i < n; i++)
	{
		if (DatumGetInt64(ids[i - 1]) > DatumGetInt64(ids[i]))
			break;
	}
	if (i == n)
		return;

	deconstruct_array(args->tokens, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &tokens, NULL, &n);
	if (args->results != NULL)
		deconstruct_array(args->results, JSONBOID, -1, false, TYPALIGN_INT,
						  &results, &results_null, &n);
	items = palloc(sizeof(JqCompleteItem) * n);
	for (i = 0; i < n; i++)
	{
		items[i].id = DatumGetInt64(ids[i]);
		items[i].token = tokens[i];
		items[i].result = results != NULL ? results[i] : (Datum) 0;
		items[i].result_null = results != NULL ? results_null[i] : true;
	}
	qsort(items, n, sizeof(JqCompleteItem), jq_complete_item_cmp);
	for (i = 0; i < n; i++)
	{
		ids[i] = Int64GetDatum(items[i].id);
		tokens[i] = items[i].token;
		if (results != NULL)
		{
			results[i] = items[i].result;
			results_null[i] = items[i].result_null;
		}
	}
	args->ids = construct_array(ids, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
								TYPALIGN_DOUBLE);
	args->tokens = construct_array(tokens, n, INT8OID, sizeof(int64),
								   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	if (results != NULL)
	{
		int			dims[1] = {n};
		int			lbs[1] = {1};

		args->results = construct_md_array(results, results_null, 1, dims, lbs,
										   JSONBOID, -1, false, TYPALIGN_INT);
	}
	pfree(items);
}

/*
 * Check the completion arguments ids and tokens (arguments ids_argno and
 * ids_argno + 1 of fcinfo) and results (argument results_argno, absent
 * when an old SQL definition of jq_complete_many does not pass it) into
 * *args: one-dimensional arrays of the same length, ids and tokens without
 * NULLs, each result within jobqueue.max_result_size.
 */
static void
jq_complete_args(FunctionCallInfo fcinfo, int ids_argno, int results_argno,
				 JqCompleteArgs *args)
{
	int			ntokens;

	args->ids = jq_arg_array(fcinfo, ids_argno, "ids", INT8OID);
	args->tokens = jq_arg_array(fcinfo, ids_argno + 1, "tokens", INT8OID);
	args->nids = ArrayGetNItems(ARR_NDIM(args->ids), ARR_DIMS(args->ids));
	ntokens = ArrayGetNItems(ARR_NDIM(args->tokens), ARR_DIMS(args->tokens));
	if (args->nids != ntokens)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("ids and tokens must have the same number of elements"),
				 errdetail("There are %d ids and %d tokens.", args->nids, ntokens)));
	args->results = NULL;
	if (PG_NARGS() > results_argno && !PG_ARGISNULL(results_argno))
	{
		ArrayType  *results = PG_GETARG_ARRAYTYPE_P(results_argno);
		int			nresults = ArrayGetNItems(ARR_NDIM(results), ARR_DIMS(results));
		ArrayIterator it;
		Datum		elem;
		bool		elem_null;

		if (ARR_ELEMTYPE(results) != JSONBOID)
			elog(ERROR, "unexpected element type %u of results", ARR_ELEMTYPE(results));
		if (ARR_NDIM(results) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("results must be a one-dimensional array"),
					 errdetail("The array has %d dimensions.", ARR_NDIM(results))));
		if (nresults != args->nids)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("ids and results must have the same number of elements"),
					 errdetail("There are %d ids and %d results.", args->nids, nresults)));
		it = array_create_iterator(results, 0, NULL);
		while (array_iterate(it, &elem, &elem_null))
		{
			if (!elem_null)
				jq_check_result(elem, "result");
		}
		array_free_iterator(it);
		args->results = results;
	}
	jq_complete_args_sort(args);
}

/*
 * Is the text[] a (from jq_completion_queues) empty?  Then no queue keeps
 * no history, and a completion is a plain UPDATE (JQ_PLAN_COMPLETE_KEEP).
 */
static bool
jq_text_array_empty(Datum a)
{
	ArrayType  *arr = DatumGetArrayTypeP(a);

	return ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) == 0;
}

/*
 * Where some queue keeps no history, a completion is two statements over
 * the same jobs (plans.c, JQ_SUCCEED_KEEP_SQL): an UPDATE that keeps the
 * jobs of the other queues and a DELETE for the jobs of those queues.  The
 * one that completed the jobs of this backend's last completion runs
 * first, the other only when jobs are left over (a batch of both kinds, or
 * refused jobs): a worker completes the jobs of one queue again and again,
 * so a completion is one statement, one index lookup per job.
 */
static bool jq_completion_deletes_first = false;

/*
 * Run completion statement plan (KEEP or DELETE, parameters values and
 * nulls) and note its outcome.  The ids completed are stored from
 * completed[0] on, and put in tupstore, each unless NULL; *queue_name gets
 * the first queue of the result unless it has one.  Returns the number of
 * jobs completed.
 */
static uint64
jq_complete_run(JqPlanId plan, bool deletes, Datum *values, const char *nulls,
				Tuplestorestate *tupstore, TupleDesc tupdesc,
				Datum *completed, char **queue_name)
{
	uint64		n;
	uint64		i;
	char	   *first = NULL;

	jq_execute(plan, values, nulls,
			   deletes ? SPI_OK_DELETE_RETURNING : SPI_OK_UPDATE_RETURNING);
	n = SPI_processed;
	for (i = 0; i < n; i++)
	{
		Datum		id = jq_result(i, JQ_OUTCOME_ID);
		bool		id_null = false;

		if (completed != NULL)
			completed[i] = id;
		if (tupstore != NULL)
			tuplestore_putvalues(tupstore, tupdesc, &id, &id_null);
	}
	if (n > 0)
	{
		(void) jq_note_outcome(JQ_TR_COMPLETE, 0, NULL, NULL, &first);
		if (*queue_name == NULL)
			*queue_name = first;
	}
	return n;
}

/*
 * Complete nasked jobs with the statements keep and delete (their
 * parameters: values and nulls, of the JQ_PLAN_COMPLETE_* plans; values[5]
 * the queues that keep no history, values[6] the jobs' queue), as
 * jq_complete_run does.  *queue_name
 * gets the first queue of a result, or NULL.  Returns the number of jobs
 * completed.
 */
static uint64
jq_complete_jobs(JqPlanId keep, JqPlanId delete, uint64 nasked,
				 Datum *values, const char *nulls,
				 Tuplestorestate *tupstore, TupleDesc tupdesc,
				 Datum *completed, char **queue_name)
{
	bool		deletes = jq_completion_deletes_first;
	uint64		n;
	uint64		more;

	*queue_name = NULL;
	if (jq_text_array_empty(values[5]))
		return jq_complete_run(keep, false, values, nulls, tupstore, tupdesc,
							   completed, queue_name);
	n = jq_complete_run(deletes ? delete : keep, deletes, values, nulls,
						tupstore, tupdesc, completed, queue_name);
	if (n >= nasked)
		return n;
	more = jq_complete_run(deletes ? keep : delete, !deletes, values, nulls,
						   tupstore, tupdesc,
						   completed != NULL ? completed + n : NULL, queue_name);
	if (n == 0 && more > 0)
		jq_completion_deletes_first = !deletes;
	n += more;
	if (n < nasked)
	{
		/*
		 * Jobs left over: refused, or of a queue that keeps no history but
		 * held by another transaction (the DELETE skips them: a producer's
		 * open transaction that made jobs wait for them).  Those are kept
		 * as succeeded instead, by the UPDATE with no queue left out; the
		 * purge takes them later.
		 */
		Datum		kvalues[7];

		memcpy(kvalues, values, sizeof(kvalues));
		kvalues[5] = PointerGetDatum(construct_empty_array(TEXTOID));
		n += jq_complete_run(keep, false, kvalues, nulls, tupstore, tupdesc,
							 completed != NULL ? completed + n : NULL, queue_name);
	}
	return n;
}

/*
 * Complete the (id, token) pairs of args (at least one) at now, under the
 * rule of jq_complete (jq_complete_jobs); the ids completed go into tupstore
 * (rows of one bigint column) unless it is NULL.  Every statement is
 * filtered by queue (plans.c): first queue_name's (NULL: none); then, when
 * lookup is set and jobs are left, the other jobs: on plain PostgreSQL in
 * one statement for any queue (JQ_ANY_QUEUE_SQL), on Citus one statement
 * for each of their queues, looked up (JQ_PLAN_JOBS_QUEUES).  Without lookup (a
 * queue-first jq_complete_many) a job of another queue is refused as a
 * fenced one is.  Counts the completions, the fenced ones and the call
 * (started at *start), announces the jobs of queues with notify_finished
 * and releases their dependents (jq_note_outcome).  Must be called while
 * connected to SPI; SPI_tuptable is replaced.  Returns the number of jobs
 * completed.
 */
static uint64
jq_complete_batch(const JqCompleteArgs *args, const char *queue_name, bool lookup,
				  TimestampTz now, Tuplestorestate *tupstore, TupleDesc tupdesc,
				  instr_time *start)
{
	Datum		values[7];
	char		nulls[7] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_ISNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	uint64		ncompleted = 0;
	Datum	   *completed;
	char	   *counted_queue = NULL;
	char	   *first;
	List	   *queues = NIL;
	ListCell   *lc;

	Assert(args->nids > 0);
	values[0] = PointerGetDatum(args->ids);
	values[1] = PointerGetDatum(args->tokens);
	values[2] = TimestampTzGetDatum(now);
	values[3] = PointerGetDatum(args->results);
	if (args->results != NULL)
		nulls[3] = JQ_NOTNULL;
	jq_completion_queues(&values[4], &values[5]);
	/* a job is completed once, however often its id is given */
	completed = palloc(sizeof(Datum) * args->nids);
	if (queue_name != NULL)
	{
		values[6] = CStringGetTextDatum(queue_name);
		ncompleted = jq_complete_jobs(JQ_PLAN_COMPLETE_MANY_KEEP,
									  JQ_PLAN_COMPLETE_MANY_DELETE,
									  (uint64) args->nids, values, nulls,
									  tupstore, tupdesc, completed, &counted_queue);
	}
	if (lookup && !jq_distributed_mode() && ncompleted < (uint64) args->nids)
	{
		/* on plain PostgreSQL, the other jobs of any queue in one statement */
		nulls[6] = JQ_ISNULL;
		ncompleted += jq_complete_jobs(JQ_PLAN_COMPLETE_MANY_KEEP,
									   JQ_PLAN_COMPLETE_MANY_DELETE,
									   (uint64) args->nids - ncompleted, values, nulls,
									   tupstore, tupdesc, completed + ncompleted, &first);
		if (counted_queue == NULL)
			counted_queue = first;
	}
	else if (lookup && ncompleted < (uint64) args->nids)
	{
		/* the queues of the other jobs (a read), then each queue's statement */
		Datum		qvalues[2];
		char		qnulls[2] = {JQ_NOTNULL, JQ_NOTNULL};

		qvalues[0] = values[0];
		qvalues[1] = queue_name != NULL ? CStringGetTextDatum(queue_name) : (Datum) 0;
		if (queue_name == NULL)
			qnulls[1] = JQ_ISNULL;
		jq_execute(JQ_PLAN_JOBS_QUEUES, qvalues, qnulls, SPI_OK_SELECT);
		for (uint64 i = 0; i < SPI_processed; i++)
			queues = lappend(queues, jq_result_name(i, 1));
	}
	foreach(lc, queues)
	{
		values[6] = CStringGetTextDatum((char *) lfirst(lc));
		ncompleted += jq_complete_jobs(JQ_PLAN_COMPLETE_MANY_KEEP,
									   JQ_PLAN_COMPLETE_MANY_DELETE,
									   (uint64) args->nids - ncompleted, values, nulls,
									   tupstore, tupdesc, completed + ncompleted, &first);
		if (counted_queue == NULL)
			counted_queue = first;
		if (ncompleted >= (uint64) args->nids)
			break;
	}
	if (ncompleted < (uint64) args->nids)
	{
		/*
		 * The others were refused: their queues, for the counters (rare).
		 * A queue-first call looks in its queue only; a call by ids alone
		 * reads each job's queue.
		 */
		Datum		rvalues[3];
		char		rnulls[3] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
		char	   *refused_queue;

		rvalues[0] = PointerGetDatum(args->ids);
		rvalues[1] = PointerGetDatum(construct_array(completed, (int) ncompleted,
													 INT8OID, 8, FLOAT8PASSBYVAL,
													 TYPALIGN_DOUBLE));
		if (lookup || queue_name == NULL)
		{
			rvalues[2] = (Datum) 0;
			rnulls[2] = JQ_ISNULL;
		}
		else
			rvalues[2] = CStringGetTextDatum(queue_name);
		jq_execute(JQ_PLAN_COMPLETE_MANY_REFUSED, rvalues, rnulls, SPI_OK_SELECT);
		(void) jq_note_outcome(JQ_TR_COMPLETE, (uint64) args->nids - ncompleted,
							   NULL, NULL, &refused_queue);
		if (counted_queue == NULL)
			counted_queue = refused_queue;
	}
	/* a queue-first call is counted in its queue, also when all were refused */
	if (counted_queue == NULL && queue_name != NULL && !lookup)
		counted_queue = (char *) queue_name;
	jq_count_call(counted_queue, JQ_CTR_COMPLETE_CALLS, start);
	pfree(completed);
	return ncompleted;
}

/*
 * jq_claim(queue_name, n, owner, lease)
 *		returns table(id, payload, attempt, token, lease_expires_at)
 *
 * Leases up to n ready jobs in one statement (see JQ_PLAN_CLAIM).  An empty
 * result means nothing is ready, or the queue is paused; an unknown queue
 * is an error.
 */
Datum
jq_claim(PG_FUNCTION_ARGS)
{
	JqClaimArgs args;
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;

	jq_claim_args(fcinfo, 0, 1, false, &args);
	tupstore = jq_srf_init(fcinfo, &tupdesc);
	jq_spi_connect();
	(void) jq_claim_batch(&args, GetCurrentTimestamp(), tupstore, tupdesc);
	jq_spi_finish();

	return (Datum) 0;
}

/*
 * jq_complete(id, token, result) returns boolean
 * jq_complete(queue_name, id, token, result) returns boolean
 *
 * True when the caller held the current, unexpired lease and the job is now
 * succeeded, with its result (NULL: none) -- or deleted, when its queue's
 * retention is zero (the result is then not kept); false (and nothing
 * changed, the result not stored) otherwise.  A result larger than
 * jobqueue.max_result_size is an error, and the job stays running.
 *
 * Queue-first (queue_first: the arguments after the queue's): the job must
 * be of that queue (false otherwise), which must exist; by id alone, any
 * queue's (jq_call_queue_or_any).
 */
static Datum
jq_complete_call(FunctionCallInfo fcinfo, bool queue_first)
{
	int			off = queue_first ? 1 : 0;
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	Datum		values[7];
	char		nulls[7] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_ISNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	bool		done;
	char	   *queue_name;
	instr_time	start;

	jq_count_start(&start);
	values[0] = Int64GetDatum(jq_arg_int8(fcinfo, off, "job id"));
	values[1] = Int64GetDatum(jq_arg_int8(fcinfo, off + 1, "token"));
	values[2] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[3] = (Datum) 0;
	/* result: an argument since 1.2, absent in an older definition */
	if (PG_NARGS() > off + 2 && !PG_ARGISNULL(off + 2))
	{
		values[3] = PG_GETARG_DATUM(off + 2);
		jq_check_result(values[3], "result");
		nulls[3] = JQ_NOTNULL;
	}

	jq_spi_connect();
	values[6] = jq_call_queue_or_any(call_queue, DatumGetInt64(values[0]), &nulls[6]);
	jq_completion_queues(&values[4], &values[5]);
	done = jq_complete_jobs(JQ_PLAN_COMPLETE_KEEP, JQ_PLAN_COMPLETE_DELETE, 1,
							values, nulls, NULL, NULL, NULL, &queue_name) == 1;
	if (!done)
	{
		/* refused: the job's queue, for the counters (rare) */
		Datum		rvalues[2] = {values[0], values[6]};
		char		rnulls[2] = {JQ_NOTNULL, nulls[6]};

		jq_execute(JQ_PLAN_COMPLETE_REFUSED, rvalues, rnulls, SPI_OK_SELECT);
		(void) jq_note_outcome(JQ_TR_COMPLETE, 1, NULL, NULL, &queue_name);
		if (queue_name == NULL)
			queue_name = call_queue;
	}
	jq_count_call(queue_name, JQ_CTR_COMPLETE_CALLS, &start);
	jq_spi_finish();

	PG_RETURN_BOOL(done);
}

Datum
jq_complete(PG_FUNCTION_ARGS)
{
	return jq_complete_call(fcinfo, false);
}

Datum
jq_complete_in_queue(PG_FUNCTION_ARGS)
{
	return jq_complete_call(fcinfo, true);
}

/*
 * jq_complete_many(ids bigint[], tokens bigint[], results jsonb[])
 * jq_complete_many(queue_name, ids bigint[], tokens bigint[], results jsonb[])
 *		returns setof bigint
 *
 * Completes each (id, token) pair under the rule of jq_complete, in one
 * call, with the result at the same position (results NULL: none;
 * NULL elements are allowed); returns the ids that were completed.
 * Queue-first: one statement, in that queue (an id of another queue is
 * refused); by ids alone, one statement for any queue, or on Citus one
 * per queue of the jobs (jq_complete_batch).
 */
static Datum
jq_complete_many_call(FunctionCallInfo fcinfo, bool queue_first)
{
	int			off = queue_first ? 1 : 0;
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	JqCompleteArgs args;
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	instr_time	start;

	jq_count_start(&start);
	/* results: an argument since 1.2, absent in an older definition */
	jq_complete_args(fcinfo, off, off + 2, &args);
	tupstore = jq_srf_init(fcinfo, &tupdesc);

	jq_spi_connect();
	if (call_queue != NULL && !jq_queue_settings(call_queue)->exists)
		jq_raise_unknown_queue(call_queue);
	if (args.nids > 0)
		(void) jq_complete_batch(&args, call_queue, call_queue == NULL,
								 GetCurrentTimestamp(), tupstore, tupdesc, &start);
	jq_spi_finish();

	return (Datum) 0;
}

Datum
jq_complete_many(PG_FUNCTION_ARGS)
{
	return jq_complete_many_call(fcinfo, false);
}

Datum
jq_complete_many_in_queue(PG_FUNCTION_ARGS)
{
	return jq_complete_many_call(fcinfo, true);
}

/*
 * jq_complete_and_claim(queue_name, ids bigint[], tokens bigint[], n, owner,
 *						 lease, results jsonb[])
 *		returns table(id, payload, attempt, token, lease_expires_at)
 *
 * One round trip per batch for a worker loop: completes the (id, token)
 * pairs exactly as jq_complete_many(ids, tokens, results) would (the ids
 * may belong to any queue), then claims up to n jobs of queue_name exactly
 * as jq_claim(queue_name, n, owner, lease) would, and returns the jobs
 * claimed.  Both happen in the caller's transaction, as two statements in
 * one SPI connection: the claim sees what the completion did (a group's
 * slot freed, dependents released), as a claim after a separate
 * jq_complete_many would.  The ids that were completed are not returned; a
 * worker that must know whether it was fenced calls jq_complete_many.
 *
 * Empty ids and tokens: claim only.  n = 0: complete only, no rows (the
 * queue must still exist; nothing else of the claim is looked at).  Any
 * error rolls back both parts with the rest of the statement.
 *
 * The counters are those of the two calls: a complete call when there are
 * ids, a claim call when n > 0.
 */
Datum
jq_complete_and_claim(PG_FUNCTION_ARGS)
{
	JqClaimArgs claim;
	JqCompleteArgs complete;
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	instr_time	start;

	jq_count_start(&start);
	/* queue_name, ids, tokens, n, owner, lease, results */
	jq_claim_args(fcinfo, 0, 3, true, &claim);
	jq_complete_args(fcinfo, 1, 6, &complete);
	tupstore = jq_srf_init(fcinfo, &tupdesc);

	jq_spi_connect();
	if (complete.nids > 0)
		(void) jq_complete_batch(&complete, claim.queue_name, true,
								 GetCurrentTimestamp(), NULL, NULL, &start);

	/*
	 * The claim reads the clock again, as a separate jq_claim would: a
	 * dependent released by the completion is ready from the moment of its
	 * release (dependencies.c), after the completion's clock reading.
	 */
	if (claim.n > 0)
		(void) jq_claim_batch(&claim, GetCurrentTimestamp(), tupstore, tupdesc);
	else
		(void) jq_require_queue(claim.queue_name);
	jq_spi_finish();

	return (Datum) 0;
}

/*
 * jq_fail(id, token, error_code, error_message, retryable, retry_in,
 *		   error_detail, stack) returns job_status
 * jq_fail(queue_name, id, token, error_code, ...) returns job_status
 *
 * Records the failure in the job's history (with error_detail, bounded by
 * jobqueue.max_result_size, and the stack trace, cut to
 * jobqueue.max_error_stack_size, when not NULL) and returns the new status:
 * pending (a retry is scheduled) or dead (not retryable, or no attempts
 * left).  NULL means the caller's lease was fenced and nothing changed
 * (also: a queue-first call for a job of another queue).
 */
static Datum
jq_fail_call(FunctionCallInfo fcinfo, bool queue_first)
{
	int			off = queue_first ? 1 : 0;
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	Datum		values[11];
	char		nulls[11] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	Interval   *retry_in;
	Datum		status = (Datum) 0;
	bool		fenced;
	TimestampTz now = GetCurrentTimestamp();
	Datum		message;
	char		message_null;
	Datum		detail = (Datum) 0;
	bool		detail_null = true;
	Datum		stack;
	char		stack_null;

	values[0] = Int64GetDatum(jq_arg_int8(fcinfo, off, "job id"));
	values[1] = Int64GetDatum(jq_arg_int8(fcinfo, off + 1, "token"));
	values[2] = PointerGetDatum(jq_arg_nonempty_text(fcinfo, off + 2, "error code",
													 JQ_ERROR_CODE_MAXLEN));
	message = jq_arg_clipped_text(fcinfo, off + 3, jq_max_error_length, &message_null);
	values[4] = jq_arg_required(fcinfo, off + 4, "retryable");
	retry_in = jq_arg_interval(fcinfo, off + 5, "retry_in", true, true);
	if (retry_in == NULL)
	{
		values[5] = (Datum) 0;
		nulls[5] = JQ_ISNULL;
	}
	else
		values[5] = DirectFunctionCall2(timestamptz_pl_interval,
										TimestampTzGetDatum(now),
										IntervalPGetDatum(retry_in));
	values[6] = TimestampTzGetDatum(now);
	values[7] = Int32GetDatum(jq_error_history);
	/* error_detail: an argument since 1.2, absent in an older definition */
	if (PG_NARGS() > off + 6 && !PG_ARGISNULL(off + 6))
	{
		detail = PG_GETARG_DATUM(off + 6);
		jq_check_result(detail, "error detail");
		detail_null = false;
	}
	/* stack: an argument since 1.4 */
	stack = jq_arg_clipped_text(fcinfo, off + 7, jq_max_error_stack_size, &stack_null);
	values[3] = jq_attempt_entry(now, values[2], message, message_null == JQ_ISNULL,
								 DatumGetBool(values[4]), detail, detail_null,
								 stack, stack_null == JQ_ISNULL);
	values[8] = Float8GetDatum(jq_epoch_seconds(now));
	values[9] = Float8GetDatum(jq_jitter());

	jq_spi_connect();
	values[10] = jq_call_queue_or_any(call_queue, DatumGetInt64(values[0]), &nulls[10]);
	jq_execute(JQ_PLAN_FAIL, values, nulls, SPI_OK_UPDATE_RETURNING);
	fenced = (SPI_processed == 0);
	if (!fenced)
	{
		status = jq_result(0, 2);	/* an enum: an OID, passed by value */
		(void) jq_note_outcome(DatumGetBool(values[4]) ?
							   JQ_TR_FAIL_RETRYABLE : JQ_TR_FAIL_PERMANENT,
							   0, NULL, NULL, NULL);
	}
	jq_spi_finish();

	if (fenced)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(status);
}

Datum
jq_fail(PG_FUNCTION_ARGS)
{
	return jq_fail_call(fcinfo, false);
}

Datum
jq_fail_in_queue(PG_FUNCTION_ARGS)
{
	return jq_fail_call(fcinfo, true);
}

/*
 * Text argument argno cut to at most maxlen bytes on a character boundary,
 * or NULL (and *isnull set) when it is NULL or absent (an older definition
 * of the function).
 */
static Datum
jq_arg_clipped_text(FunctionCallInfo fcinfo, int argno, int maxlen,
					char *isnull)
{
	text	   *t;
	int			len;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
	{
		*isnull = JQ_ISNULL;
		return (Datum) 0;
	}
	t = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(t);
	*isnull = JQ_NOTNULL;
	if (len <= maxlen)
		return PointerGetDatum(t);
	len = pg_mbcliplen(VARDATA_ANY(t), len, maxlen);
	return PointerGetDatum(cstring_to_text_with_len(VARDATA_ANY(t), len));
}

/*
 * The times of JQ_PLAN_HEARTBEAT from now (values[3]) and the queue's
 * settings (NULL: no such job): the new expiry ($3), the start before
 * which the runtime is used up ($6), max_runtime in seconds ($7).
 */
static void
jq_heartbeat_times(const JqQueueSettings *settings, Interval *extend, Datum *values)
{
	if (settings == NULL || !settings->exists)
	{
		/*
		 * No such job, or its queue's row is gone (deleted by hand): nothing
		 * is extended, the refusal is reported
		 */
		values[2] = values[3];
		values[5] = TimestampTzGetDatum(DT_NOEND);
		values[6] = Float8GetDatum(0);
	}
	else
	{
		const Interval *lease = extend != NULL ? extend : &settings->lease_duration;

		values[2] = DirectFunctionCall2(timestamptz_pl_interval, values[3],
										IntervalPGetDatum(lease));
		values[5] = DirectFunctionCall2(timestamptz_mi_interval, values[3],
										IntervalPGetDatum(&settings->max_runtime));
		values[6] = DirectFunctionCall2(interval_part, CStringGetTextDatum("epoch"),
										IntervalPGetDatum(&settings->max_runtime));
	}
}

/*
 * jq_heartbeat(id, token, extend) returns timestamptz
 * jq_heartbeat(queue_name, id, token, extend) returns timestamptz
 *
 * Extends the lease to now + extend (default: the queue's lease_duration),
 * never past started_at + max_runtime.  NULL when the lease is lost or the
 * job has used up its max_runtime (or, queue-first, is of another queue).
 * now is when the statement got the row: a heartbeat that waited for it
 * measures again.  The times the statement needs are computed here from
 * the queue's cached settings (jq_heartbeat_times).
 */
static Datum
jq_heartbeat_call(FunctionCallInfo fcinfo, bool queue_first)
{
	int			off = queue_first ? 1 : 0;
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	Datum		values[7];
	char		nulls[7] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	Interval   *extend;
	Datum		expires = (Datum) 0;
	bool		lost;
	TimestampTz now;
	TimestampTz after;
	const JqQueueSettings *settings = NULL;

	values[0] = Int64GetDatum(jq_arg_int8(fcinfo, off, "job id"));
	values[1] = Int64GetDatum(jq_arg_int8(fcinfo, off + 1, "token"));
	extend = jq_arg_interval(fcinfo, off + 2, "extend", true, false);
	now = GetCurrentTimestamp();
	values[3] = TimestampTzGetDatum(now);

	jq_spi_connect();
	values[4] = jq_call_queue(call_queue, DatumGetInt64(values[0]), &nulls[4]);
	if (nulls[4] == JQ_NOTNULL)
		settings = jq_queue_settings(TextDatumGetCString(values[4]));
	jq_heartbeat_times(settings, extend, values);
	jq_execute(JQ_PLAN_HEARTBEAT, values, nulls, SPI_OK_SELECT);
	lost = (jq_note_outcome(JQ_TR_HEARTBEAT, 1, NULL, NULL, NULL) == 0);
	after = GetCurrentTimestamp();
	if (!lost && after - now > JQ_HEARTBEAT_WAITED)
	{
		/*
		 * The statement waited (for another transaction's lock on the row,
		 * or for the machine): the lease it set runs from before the wait.
		 * Measure it again from now, holding the row, so that the lease
		 * returned is never one that has passed or is about to; a wait
		 * longer than the lease loses it (NULL: the lease set before the
		 * wait has run out).
		 */
		values[3] = TimestampTzGetDatum(after);
		jq_heartbeat_times(settings, extend, values);
		jq_execute(JQ_PLAN_HEARTBEAT, values, nulls, SPI_OK_SELECT);
		lost = (jq_note_outcome(JQ_TR_HEARTBEAT, 1, NULL, NULL, NULL) == 0);
	}
	/* copied out of SPI memory: timestamptz may be passed by reference */
	if (!lost)
		expires = SPI_datumTransfer(jq_result(0, JQ_OUTCOME_NCOLS + 1), FLOAT8PASSBYVAL,
									sizeof(TimestampTz));
	jq_spi_finish();

	if (lost)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(expires);
}

Datum
jq_heartbeat(PG_FUNCTION_ARGS)
{
	return jq_heartbeat_call(fcinfo, false);
}

Datum
jq_heartbeat_in_queue(PG_FUNCTION_ARGS)
{
	return jq_heartbeat_call(fcinfo, true);
}

/*
 * jq_release(id, token, delay) returns boolean
 * jq_release(queue_name, id, token, delay) returns boolean
 *
 * Gives a claimed job back (pending again after delay) without counting the
 * attempt: for a worker that shuts down before it starts the work.
 */
static Datum
jq_release_call(FunctionCallInfo fcinfo, bool queue_first)
{
	int			off = queue_first ? 1 : 0;
	char	   *call_queue = jq_arg_call_queue(fcinfo, queue_first);
	Datum		values[5];
	char		nulls[5] = {JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL, JQ_NOTNULL};
	bool		released;
	TimestampTz now = GetCurrentTimestamp();

	values[0] = Int64GetDatum(jq_arg_int8(fcinfo, off, "job id"));
	values[1] = Int64GetDatum(jq_arg_int8(fcinfo, off + 1, "token"));
	/* ready again at now + delay, computed here (see JQ_PLAN_RELEASE) */
	values[2] = DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now),
									PointerGetDatum(jq_arg_interval(fcinfo, off + 2, "delay",
																	false, true)));
	values[3] = TimestampTzGetDatum(now);

	jq_spi_connect();
	values[4] = jq_call_queue_or_any(call_queue, DatumGetInt64(values[0]), &nulls[4]);
	jq_execute(JQ_PLAN_RELEASE, values, nulls, SPI_OK_UPDATE_RETURNING);
	released = (jq_note_outcome(JQ_TR_RELEASE, 0, NULL, NULL, NULL) == 1);
	jq_spi_finish();

	PG_RETURN_BOOL(released);
}

Datum
jq_release(PG_FUNCTION_ARGS)
{
	return jq_release_call(fcinfo, false);
}

Datum
jq_release_in_queue(PG_FUNCTION_ARGS)
{
	return jq_release_call(fcinfo, true);
}
