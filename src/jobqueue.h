/*-------------------------------------------------------------------------
 *
 * jobqueue.h
 *	  Declarations shared by the files of the jobqueue extension.
 *
 * The extension is split by responsibility:
 *	  jobqueue.c	module entry (_PG_init) and GUCs
 *	  plans.c		the per-backend cache of prepared SPI statements
 *	  validate.c	argument checks shared by every SQL function
 *	  lifecycle.c	enqueue, claim, complete, fail, heartbeat, release
 *	  admin.c		queue administration, cancel and replay
 *	  maintenance.c	reaping expired leases and purging finished jobs,
 *					callable from SQL and from the background worker
 *	  wakeup.c		the "queue has new work" hint (NOTIFY)
 *	  srf.c			materialized set-returning function helper
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_H
#define JOBQUEUE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/pg_list.h"
#include "utils/tuplestore.h"

/* NOTIFY channel of the wake-up hint; the payload is the queue name */
#define JQ_NOTIFY_CHANNEL "jobqueue"

/* Error code recorded when the reaper finds an expired lease */
#define JQ_LEASE_EXPIRED_CODE "LEASE_EXPIRED"

/* Limits on identifiers supplied by callers */
#define JQ_QUEUE_NAME_MAXLEN	128
#define JQ_OWNER_MAXLEN			256
#define JQ_ERROR_CODE_MAXLEN	128
#define JQ_IDEMPOTENCY_KEY_MAXLEN 512

/* GUCs (jobqueue.c) */
extern int	jq_max_claim_batch;
extern int	jq_max_payload_size;
extern int	jq_max_error_length;
extern int	jq_error_history;

/*
 * Prepared statements (plans.c).  Every statement the extension runs more
 * than once per backend is listed here, prepared on first use and kept for
 * the life of the backend.
 */
typedef enum JqPlanId
{
	JQ_PLAN_ENQUEUE,
	JQ_PLAN_ENQUEUE_EXISTING,
	JQ_PLAN_ENQUEUE_MANY,
	JQ_PLAN_QUEUE_EXISTS,
	JQ_PLAN_CLAIM,
	JQ_PLAN_COMPLETE,
	JQ_PLAN_COMPLETE_MANY,
	JQ_PLAN_FAIL,
	JQ_PLAN_HEARTBEAT,
	JQ_PLAN_RELEASE,
	JQ_PLAN_CANCEL,
	JQ_PLAN_RETRY,
	JQ_PLAN_RETRY_DEAD,
	JQ_PLAN_REAP,
	JQ_PLAN_PURGE,
	JQ_PLAN_QUEUE_NAMES,
	JQ_NUM_PLANS
} JqPlanId;

extern SPIPlanPtr jq_plan(JqPlanId id);
extern const char *jq_plan_sql(JqPlanId id);
extern void jq_spi_connect(void);
extern void jq_spi_finish(void);

/* Statement execution and result access (lifecycle.c) */
#define JQ_NOTNULL ' '
#define JQ_ISNULL 'n'
extern void jq_execute(JqPlanId id, Datum *values, const char *nulls,
					   int rc_expected);
extern Datum jq_result(uint64 row, int col);
extern bool jq_result_bool(uint64 row, int col);
extern char *jq_result_cstring(uint64 row, int col);
extern void jq_require_queue(const char *queue_name);

/* Argument validation (validate.c); each raises an ERROR on bad input */
extern char *jq_arg_queue_name(FunctionCallInfo fcinfo, int argno);
extern void jq_check_queue_name(const char *name);
extern text *jq_arg_nonempty_text(FunctionCallInfo fcinfo, int argno,
								  const char *what, int maxlen);
extern int64 jq_arg_int8(FunctionCallInfo fcinfo, int argno, const char *what);
extern int32 jq_arg_positive_int4(FunctionCallInfo fcinfo, int argno,
								  const char *what);
extern Interval *jq_arg_interval(FunctionCallInfo fcinfo, int argno,
								 const char *what, bool allow_null,
								 bool allow_zero);
extern void jq_check_interval(Interval *iv, const char *what, bool allow_zero);
extern Datum jq_arg_timestamptz(FunctionCallInfo fcinfo, int argno,
								const char *what, bool *isnull);
extern void jq_check_payload(Datum payload);
extern ArrayType *jq_arg_array(FunctionCallInfo fcinfo, int argno,
							   const char *what, Oid elemtype);
extern void jq_raise_unknown_queue(const char *queue_name);

/* Set-returning helper (srf.c) */
extern Tuplestorestate *jq_srf_init(FunctionCallInfo fcinfo,
									TupleDesc *tupdesc);

/* Wake-up hint (wakeup.c) */
extern void jq_wakeup_queue(const char *queue_name);

/*
 * Maintenance routines (maintenance.c).  Both run inside the caller's
 * transaction and SPI connection; the background worker wraps each call in
 * a transaction of its own so that batches stay short.  When woken_queues
 * is not NULL, the names of queues in which jobs became ready are appended
 * (allocated in result_cxt).
 */
extern int64 jq_reap_batch(int max_jobs, List **woken_queues,
						   MemoryContext result_cxt);
extern int64 jq_purge_batch(const char *queue_name, Interval *older_than,
							int max_jobs);

#endif							/* JOBQUEUE_H */
