/*-------------------------------------------------------------------------
 *
 * srf.c
 *	  Materialized set-returning functions.
 *
 * All of our set-returning functions produce their whole result in one
 * statement, so they use materialize mode: the rows go into a tuplestore
 * that lives in the per-query memory context and outlives the SPI
 * connection that produced them.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "miscadmin.h"

/*
 * Set up materialize mode for fcinfo and return an empty tuplestore for the
 * result; *tupdesc receives the result row type (also in per-query memory).
 */
Tuplestorestate *
jq_srf_init(FunctionCallInfo fcinfo, TupleDesc *tupdesc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext oldcontext;
	Tuplestorestate *tupstore;
	TupleDesc	desc;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialize mode required, but it is not allowed in this context")));

	oldcontext = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);

	/*
	 * The executor usually knows the row type it expects (a call in FROM):
	 * copying it is much cheaper than building it from the catalog again.
	 */
	if (rsinfo->expectedDesc != NULL)
		desc = CreateTupleDescCopy(rsinfo->expectedDesc);
	else
	{
		switch (get_call_result_type(fcinfo, NULL, &desc))
		{
			case TYPEFUNC_COMPOSITE:
				desc = CreateTupleDescCopy(desc);
				break;
			case TYPEFUNC_SCALAR:
				desc = CreateTemplateTupleDesc(1);
				TupleDescInitEntry(desc, (AttrNumber) 1, "result",
								   get_fn_expr_rettype(fcinfo->flinfo), -1, 0);
				break;
			default:
				elog(ERROR, "return type must be a row type or a scalar");
		}
	}

	tupstore = tuplestore_begin_heap(true, false, work_mem);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tupstore;
	rsinfo->setDesc = desc;

	MemoryContextSwitchTo(oldcontext);

	*tupdesc = desc;
	return tupstore;
}
