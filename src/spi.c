/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  Running statements and reading their results: the one SPI layer of
 *	  jobqueue.
 *
 * Every statement goes through here: the kept statements of plans.c by
 * their id (jq_execute), one-off administrative statements by their text
 * (jq_execute_once), and a kept statement in a subtransaction that may fail
 * on the data it reads (jq_execute_subxact).  Errors name the statement
 * (its name in plans.c); statements marked read-only there run read-only,
 * in the caller's snapshot.  The jq_result* functions read the result of
 * the last statement, in SPI_tuptable, by row and column.
 *
 * Memory: strings that must outlive the SPI connection are copied into the
 * memory context that was current at SPI_connect (jq_result_cstring);
 * jq_result_name returns a string in SPI memory, valid until SPI_finish.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/xact.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

void
jq_spi_connect(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
}

void
jq_spi_finish(void)
{
	int			rc = SPI_finish();

	if (rc != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
}

/*
 * How many kept statements are running in this backend right now (nested:
 * a trigger's statement inside a statement), and the work to do after each
 * (failed: it raised an error).  The hook is set by a layer above
 * (ordering.c: the changes of the group counters, applied after the
 * statement in one order for every backend); this file never calls up.
 */
int			jq_statement_depth = 0;
void		(*jq_after_statement_hook) (bool failed) = NULL;

/*
 * Run kept statement id; raise an error unless it returned rc_expected.
 * On Citus, a statement of one queue whose shard is on this node runs
 * against that shard (localshard.c).
 */
void
jq_execute(JqPlanId id, Datum *values, const char *nulls, int rc_expected)
{
	volatile int rc = 0;
	int			queue_param = jq_plan_queue_param(id);

	jq_statement_depth++;
	PG_TRY();
	{
		SPIPlanPtr	plan = NULL;

		if (queue_param > 0 &&
			(nulls == NULL || nulls[queue_param - 1] != JQ_ISNULL))
			plan = jq_local_shard_plan(id, values[queue_param - 1]);
		if (plan == NULL)
			plan = jq_plan(id);
		rc = SPI_execute_plan(plan, values, nulls,
							  jq_plan_read_only(id), 0);
	}
	PG_CATCH();
	{
		jq_statement_depth--;
		if (jq_after_statement_hook != NULL)
			jq_after_statement_hook(true);
		PG_RE_THROW();
	}
	PG_END_TRY();
	jq_statement_depth--;
	if (jq_after_statement_hook != NULL)
		jq_after_statement_hook(false);

	/*
	 * A statement's text on Citus (plans.c, JQ_DIST_INSERT_SQL) may be a
	 * SELECT of the rows an INSERT ... RETURNING returned
	 */
	if (rc == SPI_OK_SELECT && rc_expected == SPI_OK_INSERT_RETURNING)
		return;
	if (rc != rc_expected)
		elog(ERROR, "jobqueue statement \"%s\" failed: %s",
			 jq_plan_name(id), SPI_result_code_string(rc));
}

/*
 * Run kept statement id of the queue values[0], with its nargs parameters
 * (nulls: NULL for none null).  In distributed mode a statement that takes
 * the queue's row (jq_plan_takes_queue_row) gets it as one more parameter,
 * read first (JQ_PLAN_QUEUE_ROW; NULL for a missing queue): jq_claim runs
 * delegated to the queue's node with force_delegation, where Citus refuses
 * a statement that reads the reference table queues beside the queue's
 * shard.  Otherwise as jq_execute.
 */
void
jq_execute_queue(JqPlanId id, Datum *values, const char *nulls, int nargs,
				 int rc_expected)
{
	Datum		qvalues[JQ_QUEUE_ROW_MAX_ARGS + 1];
	char		qnulls[JQ_QUEUE_ROW_MAX_ARGS + 1];
	bool		isnull = true;

	if (!jq_plan_takes_queue_row(id))
	{
		jq_execute(id, values, nulls, rc_expected);
		return;
	}
	Assert(nargs <= JQ_QUEUE_ROW_MAX_ARGS);
	memcpy(qvalues, values, nargs * sizeof(Datum));
	if (nulls != NULL)
		memcpy(qnulls, nulls, nargs);
	else
		memset(qnulls, JQ_NOTNULL, nargs);
	jq_execute(JQ_PLAN_QUEUE_ROW, values, NULL, SPI_OK_SELECT);
	qvalues[nargs] = SPI_processed == 1 ? jq_result_nullable(0, 1, &isnull) : (Datum) 0;
	qnulls[nargs] = isnull ? JQ_ISNULL : JQ_NOTNULL;
	jq_execute(id, qvalues, qnulls, rc_expected);
}

/*
 * Citus: run kept statement id, a read of several shards (SPI_OK_SELECT),
 * over one connection per node (citus.max_adaptive_executor_pool_size = 1
 * for the statement): its tasks are an index probe each, for which Citus
 * would otherwise open up to that many connections per node (16 by
 * default), anew at each call of a delegated function: tens of
 * milliseconds.
 */
void
jq_execute_multi_shard(JqPlanId id, Datum *values, const char *nulls)
{
	int			guc_nestlevel = NewGUCNestLevel();

	(void) set_config_option("citus.max_adaptive_executor_pool_size", "1",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	jq_execute(id, values, nulls, SPI_OK_SELECT);
	AtEOXact_GUC(true, guc_nestlevel);
}

/*
 * Run a one-off statement (administration, cold paths) named name, with
 * parameters; raise an error unless it returned rc_expected.
 */
void
jq_execute_once(const char *name, const char *sql, int nargs, Oid *argtypes,
				Datum *values, const char *nulls, int rc_expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls,
										   false, 0);

	if (rc != rc_expected)
		elog(ERROR, "jobqueue statement \"%s\" failed: %s",
			 name, SPI_result_code_string(rc));
}

/*
 * Is edata an error caused by the data a statement read (a value out of
 * range, a violated constraint, a value too large), as opposed to one about
 * the session or the transaction (cancel, read-only, serialization)?
 */
static bool
jq_error_is_data(ErrorData *edata)
{
	int			category = ERRCODE_TO_CATEGORY(edata->sqlerrcode);

	return category == ERRCODE_DATA_EXCEPTION ||
		category == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION ||
		category == ERRCODE_PROGRAM_LIMIT_EXCEEDED;
}

/*
 * Run fn(arg) in a subtransaction (the pattern of a PL/pgSQL block with an
 * EXCEPTION clause).  Returns true when it succeeded.  When it failed, the
 * subtransaction is rolled back and, if the error is one caused by the
 * data or data_errors_only is false, the error is returned in *edata (in
 * the caller's memory context) and false returned; any other error is
 * raised again after the rollback.
 */
bool
jq_run_subxact(void (*fn) (void *arg), void *arg, bool data_errors_only,
			   ErrorData **edata)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	volatile bool ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(oldcontext);
		e = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
		if (data_errors_only && !jq_error_is_data(e))
			ReThrowError(e);
		*edata = e;
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

typedef struct JqSubxactStatement
{
	JqPlanId	id;
	Datum	   *values;
	const char *nulls;
	int			rc_expected;
} JqSubxactStatement;

static void
jq_execute_statement(void *arg)
{
	JqSubxactStatement *st = (JqSubxactStatement *) arg;

	jq_execute(st->id, st->values, st->nulls, st->rc_expected);
}

/*
 * Run kept statement id as jq_execute does, in a subtransaction
 * (jq_run_subxact).  Returns true when it succeeded; its result is in
 * SPI_tuptable.  When it failed with an error caused by the data, the
 * error is returned in *edata and false returned; any other error is
 * raised again.
 */
bool
jq_execute_subxact(JqPlanId id, Datum *values, const char *nulls,
				   int rc_expected, ErrorData **edata)
{
	JqSubxactStatement st = {id, values, nulls, rc_expected};

	return jq_run_subxact(jq_execute_statement, &st, true, edata);
}

/* Column col of result row row, which must not be NULL. */
Datum
jq_result(uint64 row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	if (isnull)
		elog(ERROR, "unexpected null in column %d of a jobqueue result", col);
	return d;
}

/* Column col of result row row, or (Datum) 0 with *isnull set. */
Datum
jq_result_nullable(uint64 row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						 col, isnull);
}

/* Is column col of result row row true (NULL counts as false)? */
bool
jq_result_bool(uint64 row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	return !isnull && DatumGetBool(d);
}

/*
 * Column col of result row row as a C string in SPI memory (valid until
 * SPI_finish), or NULL.  For queue names and statuses read while connected.
 */
char *
jq_result_name(uint64 row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/*
 * Column col of result row row as a C string, copied into the memory
 * context that was current at SPI_connect so that it survives SPI_finish.
 */
char *
jq_result_cstring(uint64 row, int col)
{
	char	   *s = jq_result_name(row, col);
	char	   *copy;

	if (s == NULL)
		elog(ERROR, "unexpected null in column %d of a jobqueue result", col);
	copy = SPI_palloc(strlen(s) + 1);
	strcpy(copy, s);
	return copy;
}
