/*-------------------------------------------------------------------------
 *
 * grouplimits.c
 *	  Per-group overrides of a queue's group defaults:
 *	  jq_set_group_limit() and jq_group_limits().
 *
 * A queue with a group policy applies its group defaults to every group
 * (group_concurrency; the group rate limit and the fair-share weight of 1).
 * jobqueue.group_limits holds, per (queue, group), the values that replace
 * them for one group; a NULL column keeps the default.  The group claims
 * (JQ_PLAN_CLAIM_GROUPS, plans.c) read the row of each group they visit,
 * through the primary key, in their snapshot: an override takes effect for
 * the claims that start after it commits, like any policy change, and an
 * override of a group without ready jobs is never read.  The limit itself
 * is enforced exactly as the queue-wide one, on the locked row of
 * jobqueue.groups (see ordering.c).
 *
 * Callers: the SQL functions below; callees: validate.c, queuecache.c,
 * spi.c, srf.c.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jq_set_group_limit);
PG_FUNCTION_INFO_V1(jq_group_limits);

/* The largest rate, burst and weight an override may have */
#define JQ_GROUP_LIMIT_MAX	1000000

/*
 * The optional float8 argument argno, greater than 0 and at most
 * JQ_GROUP_LIMIT_MAX (what names it), into values[i]/nulls[i].
 */
static void
jq_arg_group_float(FunctionCallInfo fcinfo, int argno, const char *what,
				   Datum *values, char *nulls, int i)
{
	float8		v;

	if (PG_ARGISNULL(argno))
		return;
	v = PG_GETARG_FLOAT8(argno);
	if (isnan(v) || v <= 0 || v > JQ_GROUP_LIMIT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be greater than 0 and at most %d",
						what, JQ_GROUP_LIMIT_MAX),
				 errdetail("The value given was %g.", v),
				 errhint("Pass NULL to use the queue's default.")));
	values[i] = Float8GetDatum(v);
	nulls[i] = JQ_NOTNULL;
}

/*
 * jq_set_group_limit(queue_name, group_key, concurrency, rate_limit,
 *					  rate_burst, weight) returns void
 *
 * Sets the overrides of one group of a queue with a group policy, replacing
 * those it had; with every override NULL, removes them.  concurrency 0
 * holds the group back (none of its jobs starts); rate_limit is jobs
 * started per second, rate_burst the bucket's size; weight is the group's
 * share under fairness 'fair_share'.  The group need not have jobs.
 */
Datum
jq_set_group_limit(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	text	   *group_key = jq_arg_nonempty_text(fcinfo, 1, "group key",
												 JQ_GROUP_KEY_MAXLEN);
	Oid			argtypes[6] = {TEXTOID, TEXTOID, INT4OID, FLOAT8OID, INT4OID, FLOAT8OID};
	Datum		values[6];
	char		nulls[6];
	bool		any = false;
	int			i;

	memset(values, 0, sizeof(values));
	memset(nulls, JQ_ISNULL, sizeof(nulls));
	values[0] = CStringGetTextDatum(queue_name);
	nulls[0] = JQ_NOTNULL;
	values[1] = PointerGetDatum(group_key);
	nulls[1] = JQ_NOTNULL;

	if (!PG_ARGISNULL(2))
	{
		int32		concurrency = PG_GETARG_INT32(2);

		if (concurrency < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("concurrency must not be negative"),
					 errdetail("The value given was %d.", concurrency),
					 errhint("Pass 0 to hold the group back, NULL to use the queue's group_concurrency.")));
		values[2] = Int32GetDatum(concurrency);
		nulls[2] = JQ_NOTNULL;
	}
	jq_arg_group_float(fcinfo, 3, "rate_limit", values, nulls, 3);
	if (!PG_ARGISNULL(4))
	{
		int32		burst = PG_GETARG_INT32(4);

		if (burst < 1 || burst > JQ_GROUP_LIMIT_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rate_burst must be between 1 and %d", JQ_GROUP_LIMIT_MAX),
					 errdetail("The value given was %d.", burst),
					 errhint("Pass NULL to use the queue's default.")));
		values[4] = Int32GetDatum(burst);
		nulls[4] = JQ_NOTNULL;
	}
	jq_arg_group_float(fcinfo, 5, "weight", values, nulls, 5);
	for (i = 2; i < 6; i++)
		if (nulls[i] == JQ_NOTNULL)
			any = true;

	jq_spi_connect();

	/*
	 * The queue must exist and have a group policy: in a queue without one
	 * jobs have no groups to the claims.  Its row is locked against a
	 * concurrent drop (KEY SHARE, as the foreign key would).
	 */
	jq_execute_once("group limit queue",
					"SELECT " JQ_GROUP_POLICY_SQL " FROM jobqueue.queues q "
					"WHERE q.queue_name = $1 FOR KEY SHARE",
					1, argtypes, values, nulls, SPI_OK_SELECT);
	if (SPI_processed == 0)
		jq_raise_unknown_queue(queue_name);
	if (any && !jq_result_bool(0, 1))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("queue \"%s\" has no group policy", queue_name),
				 errdetail("Group overrides apply to the groups of a queue with group_concurrency, group_ordered or a fairness other than \"priority\"."),
				 errhint("Give the queue a policy first, for instance jobqueue.jq_alter_queue('%s', group_concurrency => 4).",
						 queue_name)));

	if (any)
		jq_execute_once("set group limit",
						"INSERT INTO jobqueue.group_limits AS gl "
						"  (queue_name, group_key, concurrency, rate_limit, rate_burst, weight) "
						"VALUES ($1, $2, $3, $4, $5, $6) "
						"ON CONFLICT (queue_name, group_key) DO UPDATE SET "
						"  concurrency = EXCLUDED.concurrency, rate_limit = EXCLUDED.rate_limit, "
						"  rate_burst = EXCLUDED.rate_burst, weight = EXCLUDED.weight",
						6, argtypes, values, nulls, SPI_OK_INSERT);
	else
		jq_execute_once("remove group limit",
						"DELETE FROM jobqueue.group_limits gl "
						"WHERE gl.queue_name = $1 AND gl.group_key = $2",
						2, argtypes, values, nulls, SPI_OK_DELETE);
	/* the group's place in the fair-share order follows its weight */
	jq_execute(JQ_PLAN_GROUPS_REKEY, values, nulls, SPI_OK_UPDATE);
	jq_spi_finish();
	PG_RETURN_VOID();
}

/*
 * jq_group_limits(queue_name) returns setof (group_key, concurrency,
 * rate_limit, rate_burst, weight)
 *
 * The overrides of the groups of a queue, by group key.
 */
Datum
jq_group_limits(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_arg_queue_name(fcinfo, 0);
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	uint64		i;

	tupstore = jq_srf_init(fcinfo, &tupdesc);
	values[0] = CStringGetTextDatum(queue_name);

	jq_spi_connect();
	if (!jq_queue_settings(queue_name)->exists)
		jq_raise_unknown_queue(queue_name);
	jq_execute_once("group limits",
					"SELECT gl.group_key, gl.concurrency, gl.rate_limit, gl.rate_burst, "
					"       gl.weight "
					"FROM jobqueue.group_limits gl WHERE gl.queue_name = $1 "
					"ORDER BY gl.group_key COLLATE \"C\"",
					1, argtypes, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < SPI_processed; i++)
	{
		Datum		row[5];
		bool		rownulls[5];
		int			col;

		for (col = 0; col < 5; col++)
			row[col] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
									 col + 1, &rownulls[col]);
		tuplestore_putvalues(tupstore, tupdesc, row, rownulls);
	}
	jq_spi_finish();
	return (Datum) 0;
}
