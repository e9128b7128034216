/*-------------------------------------------------------------------------
 *
 * jobqueue.h
 *	  Declarations shared by the files of the jobqueue extension.
 *
 * The extension is split by responsibility, one file each; the map of the
 * files and the design notes are in src/README.md.
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
#include "pgtime.h"
#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/tuplestore.h"

/* NOTIFY channel of the wake-up hint; the payload is the queue name */
#define JQ_NOTIFY_CHANNEL "jobqueue"
/* NOTIFY channel of finished jobs; the payload is "<id> <status>" */
#define JQ_FINISHED_CHANNEL "jobqueue_finished"

/* Error code recorded when the reaper finds an expired lease */
#define JQ_LEASE_EXPIRED_CODE "LEASE_EXPIRED"
/* Error code of a job cancelled because a dependency did not succeed */
#define JQ_DEPENDENCY_FAILED_CODE "DEPENDENCY_FAILED"

/* Limits on identifiers supplied by callers */
#define JQ_QUEUE_NAME_MAXLEN	128
#define JQ_OWNER_MAXLEN			256
#define JQ_ERROR_CODE_MAXLEN	128
#define JQ_IDEMPOTENCY_KEY_MAXLEN 512

/* Names of the shared memory areas and of their LWLock tranches */
#define JQ_SHMEM_NAME "jobqueue"
#define JQ_COUNTERS_TRANCHE "jobqueue counters"
#define JQ_RATELIMIT_TRANCHE "jobqueue rate limits"

/* GUCs of the hot path (lifecycle.c) */
extern int	jq_max_claim_batch;
extern int	jq_max_payload_size;
extern int	jq_max_error_length;
extern int	jq_max_error_stack_size;
extern int	jq_error_history;
extern Datum jq_replay_entry(TimestampTz at, Datum by);
extern Datum jq_call_queue(const char *queue_name, int64 id, char *isnull);
extern Datum jq_call_queue_or_any(const char *queue_name, int64 id, char *isnull);
extern Datum jq_queues_of_ids(const int64 *ids, int n);
extern char *jq_arg_call_queue(FunctionCallInfo fcinfo, bool queue_first);
extern Datum jq_attempt_entry(TimestampTz at, Datum code, Datum message,
							  bool message_null, bool retryable, Datum detail,
							  bool detail_null, Datum stack, bool stack_null);
/* GUC of results and progress (results.c) */
extern int	jq_max_result_size;

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
	JQ_PLAN_COMPLETE_KEEP,
	JQ_PLAN_COMPLETE_DELETE,
	JQ_PLAN_COMPLETE_MANY_KEEP,
	JQ_PLAN_COMPLETE_MANY_DELETE,
	JQ_PLAN_COMPLETE_REFUSED,
	JQ_PLAN_COMPLETE_MANY_REFUSED,
	JQ_PLAN_FAIL,
	JQ_PLAN_HEARTBEAT,
	JQ_PLAN_RELEASE,
	JQ_PLAN_CANCEL,
	JQ_PLAN_RETRY,
	JQ_PLAN_RETRY_DEAD,
	JQ_PLAN_REAP,
	JQ_PLAN_REAP_CANDIDATES,
	JQ_PLAN_REAP_ONE,
	JQ_PLAN_PURGE,
	JQ_PLAN_QUEUE_NAMES,
	JQ_PLAN_READY_QUEUES,
	JQ_PLAN_NOTIFY_QUEUES,
	JQ_PLAN_NEXT_LEASE_EXPIRY,
	JQ_PLAN_PURGE_DUE,
	/* Results, progress and dependencies */
	JQ_PLAN_PROGRESS,
	JQ_PLAN_JOB,
	JQ_PLAN_DEPENDENCIES_LOCK,
	JQ_PLAN_DEPENDENCIES_READ,
	JQ_PLAN_DEPENDENCIES_SETTLE,
	JQ_PLAN_ENQUEUE_DEPENDENT,
	JQ_PLAN_DEPENDENTS_RELEASE,
	JQ_PLAN_DEPENDENTS_CANCEL,
	JQ_PLAN_RETRY_DEPENDENCIES,
	/* Ordering and fairness (ordering.c) */
	JQ_PLAN_ENQUEUE_GROUPED,
	JQ_PLAN_ENQUEUE_UNKEYED,
	JQ_PLAN_ENQUEUE_MANY_GROUPED,
	JQ_PLAN_CLAIM_PLAIN,
	JQ_PLAN_QUEUE_SETTINGS,
	JQ_PLAN_CLAIM_AGED,
	JQ_PLAN_CLAIM_GROUPS,
	JQ_PLAN_CLAIM_ORDERED,
	JQ_PLAN_GROUP_COUNT,
	JQ_PLAN_GROUP_ADD,
	JQ_PLAN_GROUP_HOLD,
	JQ_PLAN_GROUP_CREATE,
	JQ_PLAN_GROUP_STATS,
	JQ_PLAN_GROUPS_REKEY,
	JQ_PLAN_GROUPS_REPAIR,
	JQ_PLAN_GROUPS_REPAIR_INSERT,
	JQ_PLAN_GROUPS_PRUNE_LOCK,
	JQ_PLAN_GROUPS_REKEY_STALE,
	JQ_PLAN_GROUPS_PRUNE,
	JQ_PLAN_CLAIM_FAIR,
	JQ_PLAN_CLAIM_GROUPS_DEADLINE,
	JQ_PLAN_ROTATION_READ,
	JQ_PLAN_ROTATION_MOVE,
	/* schedules and rate limits (schedules.c, lifecycle.c) */
	JQ_PLAN_SCHEDULES_DUE,
	JQ_PLAN_SCHEDULE_ENQUEUE,
	JQ_PLAN_SCHEDULE_ADVANCE,
	JQ_PLAN_SCHEDULES_NEXT,
	JQ_PLAN_QUEUE_RATE,
	JQ_PLAN_COMPLETION_QUEUES,
	JQ_PLAN_JOB_QUEUE,
	JQ_PLAN_JOBS_QUEUES,
	JQ_PLAN_ENQUEUE_CONTROLLED,
	JQ_PLAN_ENQUEUE_CONTROLLED_KEYED,
	JQ_PLAN_ENQUEUE_DEBOUNCED,
	JQ_PLAN_ENQUEUE_MANY_CONTROLLED,
	JQ_PLAN_EXPIRE_QUEUE,
	JQ_PLAN_EXPIRE_DUE,
	JQ_PLAN_CLAIM_DEADLINE,
	JQ_PLAN_ADMIT_ADD,
	JQ_PLAN_ADMIT_BUMP_QUEUE,
	JQ_PLAN_ADMIT_BUMP_GROUP,
	JQ_PLAN_ADMIT_COUNT_QUEUE,
	JQ_PLAN_ADMIT_COUNT_GROUP,
	JQ_PLAN_ADMIT_SET,
	JQ_PLAN_ADMIT_FORGET,
	JQ_PLAN_DEBOUNCE_RELEASE,
	JQ_PLAN_DEBOUNCE_PENDING,
	JQ_PLAN_LOCAL_QUEUES,
	JQ_PLAN_REAP_QUEUE,
	JQ_PLAN_ROTATION_UPDATE,
	JQ_PLAN_ROTATION_CREATE,
	JQ_PLAN_READY_QUEUE,
	JQ_PLAN_PURGE_DUE_QUEUE,
	JQ_PLAN_QUEUE_ROW,
	JQ_PLAN_DEPENDENCIES_FIND,
	JQ_PLAN_DEPENDENCIES_LOCK_IN,
	JQ_PLAN_ENQUEUE_DEPENDENT_ONE,
	JQ_PLAN_DEPENDENCY_ADD,
	JQ_PLAN_DEPENDENTS_TAKE,
	JQ_PLAN_DEPENDENTS_COUNT_OFF,
	JQ_PLAN_DEPENDENTS_OF,
	JQ_PLAN_DEPENDENTS_DEFER,
	JQ_PLAN_DEPENDENCIES_DEFERRED,
	JQ_PLAN_DEPENDENCIES_UNDEFER,
	JQ_PLAN_DEPENDENTS_CANCEL_IN,
	JQ_PLAN_JOB_DEPENDENCIES,
	JQ_PLAN_DEPENDENCIES_SHARE_IN,
	JQ_PLAN_PURGE_WAITERS,
	JQ_PLAN_DEPENDENCIES_DROP_OF,
	JQ_PLAN_QUEUE_GROUPS,
	JQ_PLAN_JOB_QUEUE_IN,
	JQ_PLAN_DEPENDENCIES_FIND_IN,
	JQ_NUM_PLANS
} JqPlanId;

extern SPIPlanPtr jq_plan(JqPlanId id);
extern SPIPlanPtr jq_plan_prepare(JqPlanId id, const char *sql, bool custom);
extern void jq_plans_check(void);
extern int	jq_plan_queue_param(JqPlanId id);
extern const char *jq_plan_local_sql(JqPlanId id);
extern bool jq_plan_local_custom(JqPlanId id);
extern uint64 jq_plans_generation;
extern const char *jq_plan_sql(JqPlanId id);
extern const char *jq_plan_name(JqPlanId id);
extern bool jq_plan_read_only(JqPlanId id);
extern bool jq_plan_takes_queue_row(JqPlanId id);
extern bool jq_distributed_mode(void);
extern Oid	jq_distributed_jobs(void);
extern void jq_plans_reset(void);
extern void jq_plans_check_mode(void);
extern double jq_epoch_seconds(TimestampTz t);
extern double jq_jitter(void);

/* Statements against a queue's shards on this node, on Citus (localshard.c) */
extern SPIPlanPtr jq_local_shard_plan(JqPlanId id, Datum queue);
extern bool jq_local_shard_try_lock(Datum queue);
extern bool jq_local_shard_job_queue(int64 id, Datum *queue);
extern uint64 jq_local_shard_metadata_epoch(void);

/* Statement execution and result access (spi.c) */
#define JQ_NOTNULL ' '
#define JQ_ISNULL 'n'
extern void jq_spi_connect(void);
extern void jq_spi_finish(void);
extern void jq_execute(JqPlanId id, Datum *values, const char *nulls,
					   int rc_expected);
extern void jq_execute_multi_shard(JqPlanId id, Datum *values, const char *nulls);
/* the most parameters of a statement that takes the queue's row (plans.c) */
#define JQ_QUEUE_ROW_MAX_ARGS 8
extern void jq_execute_queue(JqPlanId id, Datum *values, const char *nulls,
							 int nargs, int rc_expected);
extern void jq_execute_once(const char *name, const char *sql, int nargs,
							Oid *argtypes, Datum *values, const char *nulls,
							int rc_expected);
extern bool jq_run_subxact(void (*fn) (void *arg), void *arg,
						  bool data_errors_only, ErrorData **edata);
extern bool jq_execute_subxact(JqPlanId id, Datum *values, const char *nulls,
							   int rc_expected, ErrorData **edata);
extern Datum jq_result(uint64 row, int col);
extern Datum jq_result_nullable(uint64 row, int col, bool *isnull);
extern int	jq_statement_depth;
extern void (*jq_after_statement_hook) (bool failed);
extern bool jq_result_bool(uint64 row, int col);
extern char *jq_result_name(uint64 row, int col);
extern char *jq_result_cstring(uint64 row, int col);

/*
 * State transitions of a job.  Statements that move jobs return the same
 * outcome columns, which jq_note_outcome (outcome.c) turns into event
 * counts, wake-ups and the resolution of dependents.
 */
typedef enum JqTransition
{
	JQ_TR_ENQUEUE,
	JQ_TR_COMPLETE,
	JQ_TR_FAIL_RETRYABLE,
	JQ_TR_FAIL_PERMANENT,
	JQ_TR_HEARTBEAT,
	JQ_TR_RELEASE,
	JQ_TR_CANCEL,
	JQ_TR_REPLAY,
	JQ_TR_REAP,
	JQ_TR_PROGRESS,
	JQ_TR_DEPENDENCIES_MET,		/* waiting -> pending */
	JQ_TR_DEPENDENCY_FAILED,	/* waiting -> cancelled */
	JQ_TR_EXPIRE				/* pending -> cancelled past start_by */
} JqTransition;

/*
 * The outcome columns (JQ_OUTCOME_SQL in plans.c) that every statement
 * moving jobs returns first; a statement's own columns follow.
 */
#define JQ_OUTCOME_QUEUE		1
#define JQ_OUTCOME_STATUS		2
#define JQ_OUTCOME_WAKE			3
#define JQ_OUTCOME_ID			4
#define JQ_OUTCOME_FINISHED		5
#define JQ_OUTCOME_DEPENDENTS	6
#define JQ_OUTCOME_STARTED		7	/* the attempt's start (latency.c) */
#define JQ_OUTCOME_CREATED		8	/* the job's enqueue */
#define JQ_OUTCOME_NOW			9	/* the statement's now */
#define JQ_OUTCOME_NCOLS		9

/*
 * The columns of every claim statement: jq_claim's first five (id, payload,
 * attempt, token, lease_expires_at), then the job's available_at (the wait
 * histogram), its trace context (jq_claim's last three columns since 1.4:
 * traceparent, tracestate, trace_origin), then the statement's own.
 */
#define JQ_CLAIM_AVAILABLE		6
#define JQ_CLAIM_TRACEPARENT	7
#define JQ_CLAIM_NCOLS			9

extern uint64 jq_note_outcome(JqTransition t, uint64 nasked, List **woken,
							  MemoryContext woken_cxt, char **first_queue);
extern void jq_lifecycle_guc_init(void);
extern void jq_results_guc_init(void);
extern void jq_outcome_guc_init(void);
extern bool jq_require_queue(const char *queue_name);
extern int64 jq_job_with_key(Datum queue, Datum key);
extern void jq_dependencies_resolve(const int64 *succeeded, int nsucceeded,
									const int64 *failed, int nfailed,
									List **woken, MemoryContext woken_cxt);
extern int	jq_dependencies_resolve_deferred(const char *queue, int max_jobs);

/*
 * A job by queue and id, with what goes with it to a statement: the
 * dependencies and their dependents on Citus (dependencies.c, outcome.c)
 */
typedef struct JqJobRef
{
	char	   *queue;
	int64		id;
	char	   *status;			/* NULL: not read, or no such job */
	Datum		value;
	bool		value_null;
	int32		count;
} JqJobRef;
extern int	jq_job_ref_cmp(const void *a, const void *b);
extern Datum jq_job_ref_ids(const JqJobRef *refs, int from, int to);
extern int	jq_job_ref_run(const JqJobRef *refs, int from, int n);
extern void jq_dependencies_note_waiting(const Datum *ids, int n);
extern int	jq_dependencies_take_unsettled(int64 dep, int64 **ids);

/* Argument validation (validate.c); each raises an ERROR on bad input */
extern char *jq_arg_queue_name(FunctionCallInfo fcinfo, int argno);
extern void jq_check_text_length(const char *what, int64 len, int maxlen);
extern text *jq_arg_nonempty_text(FunctionCallInfo fcinfo, int argno,
								  const char *what, int maxlen);
extern Datum jq_arg_required(FunctionCallInfo fcinfo, int argno,
							 const char *what);
extern int64 jq_arg_int8(FunctionCallInfo fcinfo, int argno, const char *what);
extern int32 jq_arg_positive_int4(FunctionCallInfo fcinfo, int argno,
								  const char *what);
extern int32 jq_arg_nonnegative_int4(FunctionCallInfo fcinfo, int argno,
									  const char *what);
extern Interval *jq_arg_interval(FunctionCallInfo fcinfo, int argno,
								 const char *what, bool allow_null,
								 bool allow_zero);
extern Datum jq_arg_timestamptz(FunctionCallInfo fcinfo, int argno,
								const char *what, bool *isnull);
extern void jq_check_payload(Datum payload);
extern void jq_check_result(Datum value, const char *what);
extern ArrayType *jq_arg_array(FunctionCallInfo fcinfo, int argno,
							   const char *what, Oid elemtype);
extern void jq_raise_unknown_queue(const char *queue_name);

/*
 * Ordering and fairness (ordering.c): group keys, the queue policy
 * arguments of jq_create_queue/jq_alter_queue, the claim statement chosen
 * by the queue's policy.
 */
#define JQ_GROUP_KEY_MAXLEN		256
extern text *jq_arg_group_key(FunctionCallInfo fcinfo, int argno);
extern ArrayType *jq_arg_group_keys(FunctionCallInfo fcinfo, int argno,
									int npayloads);
/*
 * A queue has a group policy when its claims must look at groups: a
 * per-group limit, strict order per group, or round_robin or fair_share
 * fairness ('deadline' orders jobs, not groups).  Q is the queues row (SQL for plans.c and grouplimits.c).
 */
#define JQ_GROUP_POLICY_SQL \
	"(q.group_concurrency IS NOT NULL OR q.group_ordered " \
	" OR q.fairness IN ('round_robin', 'fair_share'))"

extern bool jq_ordering_installed(void);

/* version.c */
extern char *jq_extension_version(void);
extern void jq_warn_schema_version(void);
extern void jq_ordering_set_policy(FunctionCallInfo fcinfo, int argno,
								   const char *queue_name, bool alter);
extern int64 jq_groups_repair(const char *queue_name);
#define JQ_AGED_PRIORITY_LIMIT	1000
extern void jq_check_aged_priority(const char *queue_name, int32 priority);

extern Datum jq_queues_on_groups(const int32 *groups, int n);

/* The per-backend cache of queue settings (queuecache.c) */
typedef struct JqQueueSettings
{
	char		queue_name[JQ_QUEUE_NAME_MAXLEN + 1];	/* hash key */
	bool		exists;			/* false: no such queue (also cached) */
	bool		paused;
	bool		group_policy;	/* group_concurrency, group_ordered or round_robin */
	bool		ordered;		/* group_ordered */
	bool		notify;
	int32		max_attempts;
	bool		aged;			/* priority_aging */
	bool		round_robin;	/* fairness = 'round_robin' */
	Interval	lease_duration;
	Interval	max_runtime;
	bool		deadline;		/* fairness = 'deadline' */
	bool		has_max_wait;	/* max_wait is set */
	Interval	max_wait;
	int32		max_pending;	/* 0: none */
	int32		group_max_pending;	/* 0: none */
	bool		fair_share;		/* fairness = 'fair_share' */
	double		half_life_secs; /* fair_share_half_life, in seconds */
} JqQueueSettings;

extern const JqQueueSettings *jq_queue_settings(const char *queue_name);
extern const JqQueueSettings *jq_enqueue_settings(const char *queue_name);
extern void jq_enqueue_defaults(const JqQueueSettings *settings, Datum *values,
								char *nulls);
extern void jq_queues_changed(void);
extern void jq_queues_changed_elsewhere(void);
extern void jq_completion_queues(Datum *notify_finished, Datum *delete_on_success);

/*
 * Controls (controls.c): debounce, deadlines, admission limits; the
 * arguments of a job's controls and of a queue's, the enqueue of a job
 * with controls.
 */
#define JQ_DEBOUNCE_KEY_MAXLEN	512
#define JQ_EXPIRED_CODE			"EXPIRED"
typedef struct JqEnqueueControls
{
	text	   *debounce_key;	/* NULL: not debounced */
	Interval   *debounce;		/* NULL: no quiet period */
	Interval   *debounce_max_wait;	/* NULL: no bound */
	bool		has_start_by;
	TimestampTz start_by;
	bool		has_cost;
	float8		cost;
} JqEnqueueControls;

extern void jq_arg_enqueue_controls(FunctionCallInfo fcinfo, int argno,
									bool single, JqEnqueueControls *c);
extern bool jq_controls_given(const JqEnqueueControls *c);
extern bool jq_queue_controls_enqueue(const JqQueueSettings *settings);
extern int64 jq_enqueue_controlled(const char *queue_name,
								   const JqEnqueueControls *c,
								   Datum *values, char *nulls);
extern void jq_enqueue_many_controls(const char *queue_name,
									 const JqEnqueueControls *c,
									 TimestampTz available_at,
									 Datum *values, char *nulls);
extern void jq_dependent_controls(const char *queue_name, int64 job_id,
								  const JqEnqueueControls *c);
extern void jq_controls_set_policy(FunctionCallInfo fcinfo, int argno,
								   const char *queue_name, bool alter);
extern int64 jq_expire_batch(const char *queue_name, int max_jobs,
							 TimestampTz now);
extern void jq_admit_jobs(const char *queue_name, const JqQueueSettings *settings,
						  int64 njobs, Datum *keys, int nkeys, text *debounce_key);
extern bool jq_queue_admits(const JqQueueSettings *settings);
extern void jq_admission_forget(const char *queue_name);
/* jobs expired by a claim before it claims, at most */
#define JQ_CLAIM_EXPIRE_BATCH	100

/*
 * The claim pipeline (claim.c): the checked arguments of a claim, and the
 * claim of a batch under the queue's policy and rate limit.
 */
/*
 * The arguments of a claim (jq_claim, jq_complete_and_claim), checked.
 */
typedef struct JqClaimArgs
{
	char	   *queue_name;
	int32		n;				/* 0 only for jq_complete_and_claim */
	text	   *owner;
	Interval   *lease;			/* NULL: the queue's lease_duration */
} JqClaimArgs;

extern void jq_claim_args(FunctionCallInfo fcinfo, int queue_argno, int n_argno,
						  bool allow_zero, JqClaimArgs *args);
extern uint64 jq_claim_batch(const JqClaimArgs *args, TimestampTz now,
							 Tuplestorestate *tupstore, TupleDesc tupdesc);
extern JqPlanId jq_claim_plan_of(const char *queue_name);

/* Set-returning helper (srf.c) */
extern Tuplestorestate *jq_srf_init(FunctionCallInfo fcinfo,
									TupleDesc *tupdesc);

/* Wake-up hint (wakeup.c) */
extern void jq_wakeup_queue(const char *queue_name);
extern void jq_wakeup_finished(int64 job_id, const char *status);

/* Dependencies (dependencies.c) */
extern int64 jq_enqueue_dependent(FunctionCallInfo fcinfo, Datum *values,
								  char *nulls, ArrayType *payloads,
								  ArrayType *depends_on, ArrayType *group_keys,
								  Tuplestorestate *tupstore,
								  TupleDesc tupdesc);
extern void jq_retry_check_dependencies(int64 job_id, Datum queue, bool queue_null);
extern Datum jq_job_dependencies(Datum job_id, Datum queue);
extern ArrayType *jq_arg_depends_on(FunctionCallInfo fcinfo, int argno);

/*
 * Maintenance routines (maintenance.c).  Both run inside the caller's
 * transaction and SPI connection; the background worker wraps each call in
 * a transaction of its own so that batches stay short.  When woken_queues
 * is not NULL, the names of queues in which jobs became ready are appended
 * (allocated in result_cxt).
 */
extern int64 jq_reap_batch(int max_jobs, List **woken_queues,
						   MemoryContext result_cxt);
/*
 * On Citus (jq_distributed_mode()): jq_reap_batch for the queues of the
 * list (the worker's: those whose shard this node holds), one statement
 * on the queue's shard per queue.
 */
extern int64 jq_reap_queues_batch(List *queues, int max_jobs, List **woken_queues,
								  MemoryContext result_cxt, bool *more);
extern int64 jq_purge_batch(const char *queue_name, Interval *older_than,
							int max_jobs);
/*
 * On Citus: one purge batch for the queues whose shard this node holds,
 * one JQ_PLAN_PURGE per queue with finished jobs past its retention.
 */
extern int64 jq_purge_local_batch(int max_jobs, bool *more);
/*
 * On Citus: the queues whose shard this node holds (JQ_PLAN_LOCAL_QUEUES),
 * in CurrentMemoryContext, each with its shard locked against a move to the
 * end of the transaction (those whose shard is moving are left out); with
 * wake set, only those whose listeners are woken.
 */
extern List *jq_local_queues(bool wake);
/* Every queue (JQ_PLAN_QUEUE_NAMES), in CurrentMemoryContext */
extern List *jq_all_queues(void);

/*
 * Event counters (counters.c).  The events are counted per queue when the
 * transaction commits; the calls (and their time) in any case.  The order is
 * the column order of jq_counters().
 */
typedef enum JqCounter
{
	JQ_CTR_ENQUEUED,
	JQ_CTR_CLAIMED,
	JQ_CTR_COMPLETED,
	JQ_CTR_COMPLETE_FENCED,
	JQ_CTR_HEARTBEAT_REFUSED,
	JQ_CTR_FAILED_RETRYABLE,
	JQ_CTR_FAILED_PERMANENT,
	JQ_CTR_RETRIES_SCHEDULED,
	JQ_CTR_LEASES_EXPIRED,
	JQ_CTR_DEAD_LETTERED,
	JQ_CTR_REPLAYED,
	JQ_CTR_PURGED,
	JQ_CTR_RELEASED,			/* given back by jq_release (since 1.4) */
	JQ_CTR_DEBOUNCED,			/* a debounced enqueue replaced a job (1.4) */
	JQ_CTR_EXPIRED,				/* cancelled past start_by (1.4) */
	JQ_CTR_CLAIM_CALLS,
	JQ_CTR_COMPLETE_CALLS,
	JQ_NUM_COUNTERS
} JqCounter;

extern bool jq_track_counters;
extern int	jq_max_counter_queues;
extern int	jq_exact_count_limit;
extern void jq_counters_guc_init(void);
extern Size jq_counters_shmem_size(void);
extern void jq_counters_shmem_init(void);
extern bool jq_counting(void);
extern void jq_count(const char *queue_name, JqCounter c, int64 n);
extern void jq_count_start(instr_time *start);
extern void jq_count_call(const char *queue_name, JqCounter calls,
						  instr_time *start);

/*
 * Latency histograms (latency.c; kept with the counters of each queue in
 * counters.c).  wait: from the moment a job became claimable to its claim;
 * run: from a claim to the end of that attempt; total: from the enqueue to
 * succeeded or dead.  Log-linear buckets: bucket 0 holds [0, 100 us), then
 * JQ_LAT_OCTAVES octaves of 100 us each split in JQ_LAT_SUB equal buckets
 * (at most 1/16 = 6.25 % wide, so about 3 % from the middle), then one
 * bucket for everything from 100 us * 2^32 (about 5 days) on.
 */
typedef enum JqLatencyKind
{
	JQ_LAT_WAIT,
	JQ_LAT_RUN,
	JQ_LAT_TOTAL,
	JQ_NUM_LATENCIES
} JqLatencyKind;

#define JQ_LAT_BASE_US		100
#define JQ_LAT_SUB			16
#define JQ_LAT_OCTAVES		32
#define JQ_LAT_BUCKETS		(1 + JQ_LAT_OCTAVES * JQ_LAT_SUB + 1)

typedef struct JqLatency
{
	int64		count;
	int64		sum_us;
	int64		max_us;
	int64		buckets[JQ_LAT_BUCKETS];
} JqLatency;

/* A copy of the histograms of one counters entry (jq_latency_snapshot) */
typedef struct JqLatencySnapshot
{
	char		queue_name[JQ_QUEUE_NAME_MAXLEN + 1];	/* "*": overflow row */
	TimestampTz since;
	JqLatency	lat[JQ_NUM_LATENCIES];
} JqLatencySnapshot;

extern int	jq_latency_bucket(int64 us);
extern void jq_count_latency(const char *queue_name, JqLatencyKind kind,
							 int64 us);
extern int	jq_latency_snapshot(const char *queue_name,
								JqLatencySnapshot **snapshots);
extern void jq_latency_clear(const char *queue_name);
extern void jq_require_counters(void);

/*
 * Failed attempts by error code and attempt number (counters.c), at most
 * JQ_ERROR_SLOTS pairs per queue; further pairs are counted in the queue's
 * overflow slot (code "*").  jq_error_counts() shows them.
 */
#define JQ_ERROR_SLOTS		32
#define JQ_ERROR_OVERFLOW_CODE "*"

typedef struct JqErrorSlot
{
	char		code[JQ_ERROR_CODE_MAXLEN + 1];	/* "": free */
	int32		attempt;		/* -1 in the overflow slot */
	int64		retries;		/* retries scheduled */
	int64		dead;			/* dead letters */
} JqErrorSlot;

typedef struct JqErrorSnapshot
{
	char		queue_name[JQ_QUEUE_NAME_MAXLEN + 1];
	JqErrorSlot slots[JQ_ERROR_SLOTS + 1];	/* the last: overflow */
} JqErrorSnapshot;

/*
 * Trace context (trace.c): the settings jobqueue.traceparent and
 * jobqueue.tracestate; jq_enqueue, jq_enqueue_many and jq_schedule take
 * their explicit arguments and call these (lifecycle.c, schedules.c).
 */
extern void jq_trace_guc_init(void);
extern void jq_trace_session(Datum *values, char *nulls);
extern Datum jq_enqueue_call(PG_FUNCTION_ARGS);
extern Datum jq_enqueue_many_call(PG_FUNCTION_ARGS);
extern Datum jq_schedule_call(PG_FUNCTION_ARGS);

extern void jq_count_error(const char *queue_name, const char *code,
						   int32 attempt, bool dead);
extern int	jq_error_snapshot(const char *queue_name,
							  JqErrorSnapshot **snapshots);

/*
 * Background workers (shmem.c, launcher.c, worker.c, worker_tasks.c,
 * utility.c; the process model is described in src/README.md).  All of
 * this exists only when the library is in shared_preload_libraries;
 * jq_shared is NULL otherwise.
 *
 * The registry has one entry per database the launcher looks after (at most
 * jobqueue.max_databases); the pool has jobqueue.max_workers slots, each
 * serving one database at a time.
 */
typedef enum JqExtensionState
{
	JQ_EXT_UNKNOWN,				/* not looked at since start-up or CREATE
								 * DATABASE: one visit finds out */
	JQ_EXT_PRESENT,				/* the extension is installed: served */
	JQ_EXT_ABSENT				/* not installed: never visited, until the DDL
								 * hook sees CREATE EXTENSION jobqueue */
} JqExtensionState;

typedef enum JqWorkerState
{
	JQ_WORKER_NONE,				/* free pool slot */
	JQ_WORKER_STARTING,			/* registered, or attached and checking */
	JQ_WORKER_RUNNING			/* the extension is there; serving */
} JqWorkerState;

/* The tasks of a worker (worker_tasks.c), in the order they run */
typedef enum JqTaskId
{
	JQ_TASK_REAP,
	JQ_TASK_ANNOUNCE,
	JQ_TASK_PURGE,
	JQ_TASK_SCHEDULE,
	JQ_NUM_TASKS
} JqTaskId;

#define JQ_MAX_MARKS		32
#define JQ_MAX_FINISHED_MARKS 256
#define JQ_STATUS_MAXLEN	16

/* A finished job to announce on JQ_FINISHED_CHANNEL */
typedef struct JqFinishedMark
{
	int64		id;
	char		status[JQ_STATUS_MAXLEN];
} JqFinishedMark;
/* delay before a database whose worker failed is visited again, in ms */
#define JQ_WORKER_RESTART_DELAY 2000
#define JQ_LAST_ERROR_LEN	256

/* What one task did in one database since the database was registered */
typedef struct JqTaskStats
{
	TimestampTz last_run;		/* start of the last complete run */
	TimestampTz last_error_at;
	uint64		runs;
	uint64		items;			/* jobs reaped, queues announced, jobs purged,
								 * jobs scheduled */
	int			consecutive_errors;
	char		last_error[JQ_LAST_ERROR_LEN];
} JqTaskStats;

typedef struct JqDatabaseEntry
{
	Oid			dboid;			/* InvalidOid: free entry */
	JqExtensionState extension;
	int			worker;			/* pool slot serving it, or -1 */
	TimestampTz next_visit;		/* due for a worker from then on */
	TimestampTz hold_until;		/* DDL on the database: no worker before */
	bool		stop_requested; /* DDL on the database: its worker must leave */
	bool		unwanted;		/* not to be served now (not listed, or the
								 * pool is off): its worker must leave */
	bool		unserved;		/* due, but no background worker could start */
	TimestampTz started_at;		/* start of the current or last visit */
	TimestampTz last_tick;		/* start of the last complete pass */
	pg_atomic_uint32 activity;	/* set by backends that changed jobs; reset
								 * by the worker at the start of a pass */
	JqTaskStats tasks[JQ_NUM_TASKS];
} JqDatabaseEntry;

typedef struct JqPoolSlot
{
	LWLock	   *marks_lock;		/* protects nmarks, marks_overflow, marks */
	int			entry;			/* registry entry served, or -1 */
	Oid			dboid;
	JqWorkerState state;
	pid_t		pid;			/* attached worker, 0 if none */
	Latch	   *latch;			/* its latch, NULL if none */
	bool		yield_requested;	/* another database waits for a slot */
	TimestampTz started_at;
	/* queues that committed transactions marked as having new work */
	int			nmarks;
	bool		marks_overflow; /* more than JQ_MAX_MARKS: wake every queue */
	char		marks[JQ_MAX_MARKS][JQ_QUEUE_NAME_MAXLEN + 1];
	/* finished jobs that committed transactions marked for announcement */
	int			nfinished;
	int			finished_reserved;	/* promised at pre-commit, written at
									 * commit */
	JqFinishedMark finished[JQ_MAX_FINISHED_MARKS];
} JqPoolSlot;

typedef struct JqShared
{
	LWLock	   *lock;			/* protects everything but the marks */
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	bool		rescan_requested;	/* the launcher should scan pg_database */
	bool		registry_full;	/* some database has no entry */
	int			nentries;
	int			nworkers;
	JqDatabaseEntry *entries;
	JqPoolSlot *workers;
	/* bumped when a transaction that changed jobqueue.queues commits */
	pg_atomic_uint64 queues_generation;
} JqShared;

extern JqShared *jq_shared;
/* false when the postmaster refused to register the launcher */
extern bool jq_launcher_registered;

/* GUCs of the workers (worker.c) */
extern bool jq_worker_enabled;
extern char *jq_worker_databases;
extern int	jq_launcher_interval;
extern int	jq_reap_interval;
extern int	jq_purge_interval;
extern int	jq_idle_visit_interval;
extern int	jq_reap_batch_size;
extern int	jq_purge_batch_size;
extern int	jq_max_workers;
extern int	jq_max_databases;

extern void jq_worker_guc_init(void);
extern bool jq_database_wanted(const char *dbname);

/* shmem.c */
extern Size jq_workers_shmem_size(void);
extern int	jq_workers_lock_count(void);
extern void jq_workers_shmem_init(void);
extern JqDatabaseEntry *jq_entry_find(Oid dboid);
extern JqDatabaseEntry *jq_entry_get(Oid dboid);
extern JqDatabaseEntry *jq_my_entry(void);
extern void jq_pool_slot_clear(JqPoolSlot *slot);
extern bool jq_worker_running(Oid dboid);
extern void jq_note_activity(void);
extern void jq_mark_queues(Oid dboid, const char *const *names, int nnames);
extern int	jq_reserve_finished(Oid dboid, int n);
extern void jq_unreserve_finished(int slot_index, Oid dboid, int n);
extern void jq_mark_finished(int slot_index, Oid dboid,
							 const JqFinishedMark *marks, int n);
extern void jq_launcher_wake(bool rescan);

/* launcher.c, worker.c, utility.c */
extern void jq_launcher_register(void);
extern void jq_utility_init(void);
extern PGDLLEXPORT void jq_launcher_main(Datum main_arg);
extern PGDLLEXPORT void jq_worker_main(Datum main_arg);

/* delegation.c: the planner hook where Citus is loaded */
extern void jq_delegation_init(void);

/*
 * Worker tasks (worker_tasks.c).  A task's unit runs inside a transaction
 * the worker opened, with SPI connected and a snapshot pushed; it returns
 * the number of items it handled and sets *more when another unit is due at
 * once.  The worker commits after every unit, checks for signals and stop
 * requests between units, and keeps no state between them.  A task whose
 * work comes at known times also has next_due: the time its last unit saw
 * the next work coming (0: at once); the task is then due at that time even
 * before its interval has passed, and the database when the worker leaves.
 */
typedef struct JqWorkerTask
{
	const char *name;
	const char *activity;		/* shown in pg_stat_activity */
	int		   *interval_ms;	/* runs at least this long after its last
								 * start, unless next_due says earlier */
	int64		(*run_unit) (TimestampTz now, List **ready, MemoryContext cxt,
							 bool *more);
	TimestampTz (*next_due) (void);	/* or NULL */
} JqWorkerTask;

extern const JqWorkerTask jq_worker_tasks[JQ_NUM_TASKS];
extern TimestampTz jq_ready_checked_until;
extern void jq_note_announced(const char *queue_name, TimestampTz at);
extern TimestampTz jq_next_lease_expiry(void);
extern bool jq_worker_database_busy(void);

/* schedules.c: the schedule task */
extern int64 jq_task_schedule(TimestampTz now, List **ready, MemoryContext cxt,
							  bool *more);
extern TimestampTz jq_schedules_next_due(void);

/* Rate limits of queues (ratelimit.c) */
extern int	jq_max_rate_limited_queues;
extern void jq_ratelimit_guc_init(void);
extern Size jq_ratelimit_shmem_size(void);
extern void jq_ratelimit_shmem_init(void);
extern bool jq_rate_policy(const char *queue_name, double *rate, int *burst);
extern void jq_rate_forget(const char *queue_name);
extern int	jq_rate_reserve(const char *queue_name, double rate, int burst,
							int n, int *bucket);
extern void jq_rate_return(int bucket, int reserved, int unused);

/*
 * Cron expressions (cron.c).  Bit v of a mask is set when value v matches;
 * seconds is N for "N seconds", 0 for the five-field form.
 */
typedef struct JqCron
{
	uint64		minutes;		/* 0-59 */
	uint32		hours;			/* 0-23 */
	uint32		days;			/* 1-31 */
	uint16		months;			/* 1-12 */
	uint8		weekdays;		/* 0-6, Sunday = 0 */
	bool		dom_star;		/* day-of-month starts with "*" */
	bool		dow_star;		/* day-of-week starts with "*" */
	int			seconds;
} JqCron;

extern void jq_cron_parse(const char *expr, JqCron *cron);
extern bool jq_cron_try_parse(const char *expr, JqCron *cron, char **reason);
extern pg_tz *jq_cron_timezone(const char *name);
extern TimestampTz jq_cron_next_time(const JqCron *cron, pg_tz *tz,
									 TimestampTz after);

#endif							/* JOBQUEUE_H */
