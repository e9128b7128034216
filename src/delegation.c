/*-------------------------------------------------------------------------
 *
 * delegation.c
 *	  A call that Citus would delegate with a NULL queue is refused first.
 *
 * jq_distribute() has Citus delegate the functions that name a queue
 * first to the node of that queue's shard.  Citus 13.2 finds the node by
 * hashing the argument of a top-level call (SELECT f(...), SELECT ... FROM
 * f(...)) without looking whether it is NULL, and the backend crashes
 * (SIGSEGV in FindShardInterval), taking every session of the node with
 * it.  Every one of those functions refuses a NULL queue anyway
 * (jq_arg_queue_name), except jq_recount_groups, for which NULL means
 * every queue, which in distributed mode has to be repaired queue by
 * queue.  So a planner hook, installed only where Citus is loaded, raises
 * the error such a call would raise before Citus plans it: the same error,
 * earlier.  On a server without Citus nothing here runs.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

static planner_hook_type prev_planner_hook = NULL;

/*
 * Is arg NULL when the call is planned: a NULL constant, a parameter bound
 * to NULL, or an expression that the planner folds to a NULL constant
 * (nullif('a', 'a'), a bound parameter inside an immutable function).
 * standard_planner folds the call's arguments before Citus looks at them,
 * so the same folding is done here, on a copy, with the same bound values.
 */
static bool
jq_null_argument(Node *arg, ParamListInfo params)
{
	Param	   *p;
	ParamExternData *prm;
	ParamExternData prmdata;

	while (IsA(arg, RelabelType))
		arg = (Node *) ((RelabelType *) arg)->arg;
	if (IsA(arg, Const))
		return ((Const *) arg)->constisnull;
	if (!IsA(arg, Param))
	{
		PlannerGlobal *glob = makeNode(PlannerGlobal);
		PlannerInfo *root = makeNode(PlannerInfo);

		glob->boundParams = params;
		root->glob = glob;
		arg = eval_const_expressions(root, copyObject(arg));
		while (IsA(arg, RelabelType))
			arg = (Node *) ((RelabelType *) arg)->arg;
		return IsA(arg, Const) && ((Const *) arg)->constisnull;
	}
	if (params == NULL)
		return false;
	p = (Param *) arg;
	if (p->paramkind != PARAM_EXTERN || p->paramid <= 0 || p->paramid > params->numParams)
		return false;
	if (params->paramFetch != NULL)
		prm = params->paramFetch(params, p->paramid, false, &prmdata);
	else
		prm = &params->params[p->paramid - 1];
	return OidIsValid(prm->ptype) && prm->isnull;
}

/*
 * Is the first argument of call f NULL (jq_null_argument), or left out so
 * that its default is used, and the first parameter of a jobqueue function
 * named queue_name?  Then raise the error of a NULL queue.
 */
static void
jq_refuse_null_queue(FuncExpr *f, ParamListInfo params)
{
	HeapTuple	tup;
	Form_pg_proc proc;
	Datum		names;
	bool		isnull;
	bool		named_queue = false;
	char	   *nspname;

	if (f->args != NIL && !jq_null_argument(linitial(f->args), params))
		return;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(f->funcid));
	if (!HeapTupleIsValid(tup))
		return;
	proc = (Form_pg_proc) GETSTRUCT(tup);
	nspname = proc->pronargs >= 1 && proc->proargtypes.values[0] == TEXTOID ?
		get_namespace_name(proc->pronamespace) : NULL;
	if (nspname != NULL && strcmp(nspname, "jobqueue") == 0)
	{
		names = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proargnames, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			int			nelems;

			deconstruct_array(DatumGetArrayTypeP(names), TEXTOID, -1, false,
							  TYPALIGN_INT, &elems, NULL, &nelems);
			named_queue = nelems >= 1 &&
				strcmp(TextDatumGetCString(elems[0]), "queue_name") == 0;
		}
	}
	if (named_queue && strcmp(NameStr(proc->proname), "jq_recount_groups") == 0)
	{
		bool		distributed;

		ReleaseSysCache(tup);
		/* NULL is every queue, also where Citus is loaded but idle */
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		distributed = jq_distributed_mode();
		SPI_finish();
		if (!distributed)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("jq_recount_groups() of every queue is not supported on a Citus cluster"),
				 errdetail("On Citus the call is delegated to the node of the queue it names."),
				 errhint("Recount each queue: SELECT sum(jobqueue.jq_recount_groups(q.queue_name)) FROM jobqueue.queues q.")));
	}
	ReleaseSysCache(tup);
	if (named_queue)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue name must not be null")));
}

/*
 * The shapes of a query that Citus delegates: one function call as the
 * only target (SELECT f(...)) or as the only item of FROM
 * (SELECT ... FROM f(...)), without WHERE.
 */
static PlannedStmt *
jq_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	if (parse->commandType == CMD_SELECT && parse->jointree != NULL &&
		parse->jointree->quals == NULL)
	{
		List	   *from = parse->jointree->fromlist;

		if (from == NIL && list_length(parse->targetList) == 1)
		{
			Node	   *expr = (Node *) ((TargetEntry *) linitial(parse->targetList))->expr;

			if (IsA(expr, FuncExpr))
				jq_refuse_null_queue((FuncExpr *) expr, boundParams);
		}
		else if (list_length(from) == 1 && IsA(linitial(from), RangeTblRef))
		{
			RangeTblEntry *rte = rt_fetch(((RangeTblRef *) linitial(from))->rtindex,
										  parse->rtable);

			if (rte->rtekind == RTE_FUNCTION && list_length(rte->functions) == 1)
			{
				Node	   *expr = ((RangeTblFunction *) linitial(rte->functions))->funcexpr;

				if (IsA(expr, FuncExpr))
					jq_refuse_null_queue((FuncExpr *) expr, boundParams);
			}
		}
	}
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/*
 * Install the hook when Citus is loaded (its settings exist): Citus must
 * come first in shared_preload_libraries, so it is loaded by now.
 */
void
jq_delegation_init(void)
{
	if (GetConfigOption("citus.enable_ddl_propagation", true, false) == NULL)
		return;
	prev_planner_hook = planner_hook;
	planner_hook = jq_planner;
}
