/*-------------------------------------------------------------------------
 *
 * ratelimit.c
 *	  Cluster-wide rate limits of queues: token buckets in shared memory,
 *	  and jq_rate_limits().
 *
 * A queue with a rate_limit (jobs started per second) and a rate_burst
 * (the bucket's size) has one bucket per (database, queue) here, shared by
 * every backend of the cluster.  jq_claim() reserves tokens before its
 * statement (jq_rate_reserve), claims at most that many jobs, and gives
 * back what it did not claim (jq_rate_return).  No lock is held while the
 * statement runs: the reservation and the give-back are short critical
 * sections under the bucket's spinlock.  A claim never waits for tokens; it
 * returns fewer jobs, or none.
 *
 * Locking: rl->lock (an LWLock) protects the assignment of buckets to
 * queues: shared to find a bucket, exclusive to take a free one or reuse an
 * idle one.  Each bucket's mutex (a spinlock) protects its tokens, its
 * times and its statistics.  A bucket is never reassigned while a claim
 * holds tokens of it: reuse takes only a bucket that has been full (and so
 * untouched) for a while, and the claim's give-back checks the owner.
 *
 * The table has jobqueue.max_rate_limited_queues buckets, fixed at start.
 * When every bucket is taken by a queue whose bucket is not full again, a
 * claim on a further rate-limited queue fails (53400) instead of running
 * unlimited.  After a restart every bucket starts full (rate_burst tokens).
 * Without shared_preload_libraries there are no buckets, and claims on a
 * rate-limited queue fail (55000).
 *
 * Holdings end with the backend: each backend remembers the reservations
 * it has not given back yet (held[]), and a before_shmem_exit callback
 * gives them back.  A claim ended by FATAL (pg_terminate_backend, a
 * lost client, statement_timeout in a pooler that closes the session)
 * never reaches its PG_CATCH, but proc_exit still runs the callback, so
 * its bucket's holders drop to zero and the bucket can be reused (by any
 * database: the dropped database's buckets too).
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include <math.h>

#include "catalog/namespace.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_rate_limits);

int			jq_max_rate_limited_queues = 256;

/* a session re-reads a queue's rate policy after this long */
#define JQ_RATE_POLICY_TTL_MS 1000

typedef struct JqBucket
{
	slock_t		mutex;
	Oid			dboid;			/* InvalidOid: free */
	char		queue_name[JQ_QUEUE_NAME_MAXLEN + 1];
	double		rate;			/* tokens per second */
	int			burst;
	double		tokens;
	TimestampTz updated;		/* tokens were computed at this time */
	int			holders;		/* claims holding reserved tokens */
	uint64		claims_limited; /* claims that got fewer jobs than asked */
	uint64		jobs_started;	/* jobs claimed through this bucket */
} JqBucket;

typedef struct JqRateShared
{
	LWLock	   *lock;
	int			nbuckets;
	JqBucket	buckets[FLEXIBLE_ARRAY_MEMBER];
} JqRateShared;

static JqRateShared *rl = NULL;

/* The per-session cache of rate policies */
typedef struct JqRatePolicy
{
	char		queue_name[JQ_QUEUE_NAME_MAXLEN + 1];	/* hash key */
	double		rate;			/* 0: no limit */
	int			burst;
	TimestampTz fetched;
} JqRatePolicy;

static HTAB *policies = NULL;

/*
 * This backend's reservations not given back yet: normally at most one (a
 * claim), more only if a claim runs inside another one's statement.
 */
#define JQ_MAX_HELD 8
typedef struct JqHolding
{
	int			bucket;
	int			reserved;
} JqHolding;

static JqHolding held[JQ_MAX_HELD];
static int	nheld = 0;
static bool exit_callback_registered = false;

static void jq_rate_release_held(int code, Datum arg);

void
jq_ratelimit_guc_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("jobqueue.max_rate_limited_queues",
							"Number of rate-limited queues (of all databases) whose buckets shared memory holds.",
							"Claims on a further rate-limited queue fail while every bucket is in use.",
							&jq_max_rate_limited_queues,
							256, 1, 100000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
}

Size
jq_ratelimit_shmem_size(void)
{
	return add_size(offsetof(JqRateShared, buckets),
					mul_size(sizeof(JqBucket), jq_max_rate_limited_queues));
}

/* Create or attach to the buckets; called under AddinShmemInitLock. */
void
jq_ratelimit_shmem_init(void)
{
	bool		found;

	rl = ShmemInitStruct("jobqueue rate limits", jq_ratelimit_shmem_size(), &found);
	if (!found)
	{
		memset(rl, 0, jq_ratelimit_shmem_size());
		rl->lock = &(GetNamedLWLockTranche(JQ_RATELIMIT_TRANCHE))->lock;
		rl->nbuckets = jq_max_rate_limited_queues;
		for (int i = 0; i < rl->nbuckets; i++)
			SpinLockInit(&rl->buckets[i].mutex);
	}
}

/* Has jobqueue.queues the rate limit columns of 1.2? */
static bool
jq_rate_columns_exist(void)
{
	Oid			nspoid = get_namespace_oid("jobqueue", true);
	Oid			relid = OidIsValid(nspoid) ? get_relname_relid("queues", nspoid) : InvalidOid;

	return OidIsValid(relid) && get_attnum(relid, "rate_limit") != InvalidAttrNumber;
}

/*
 * The rate policy of queue_name: true with *rate and *burst when it has a
 * rate limit.  Read from the table at most once a second per session (and
 * at once after jq_rate_forget), while connected to SPI.
 */
bool
jq_rate_policy(const char *queue_name, double *rate, int *burst)
{
	JqRatePolicy *p;
	bool		found;
	TimestampTz now = GetCurrentTimestamp();
	char		key[JQ_QUEUE_NAME_MAXLEN + 1];

	/* a session that claims from very many queues starts over */
	if (policies != NULL && hash_get_num_entries(policies) >= 10000)
	{
		hash_destroy(policies);
		policies = NULL;
	}
	if (policies == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = JQ_QUEUE_NAME_MAXLEN + 1;
		ctl.entrysize = sizeof(JqRatePolicy);
		ctl.hcxt = TopMemoryContext;
		policies = hash_create("jobqueue rate policies", 16, &ctl,
							   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	memset(key, 0, sizeof(key));
	strlcpy(key, queue_name, sizeof(key));
	p = hash_search(policies, key, HASH_FIND, &found);
	if (p == NULL || now - p->fetched > JQ_RATE_POLICY_TTL_MS * 1000)
	{
		Datum		values[1];
		double		r = 0;
		int			b = 0;

		values[0] = CStringGetTextDatum(queue_name);
		/* before ALTER EXTENSION UPDATE to 1.2 there are no rate limits */
		if (jq_rate_columns_exist())
			jq_execute(JQ_PLAN_QUEUE_RATE, values, NULL, SPI_OK_SELECT);
		else
			SPI_processed = 0;
		if (SPI_processed == 1)
		{
			bool		rnull,
						bnull;
			Datum		rd = jq_result_nullable(0, 1, &rnull);
			Datum		bd = jq_result_nullable(0, 2, &bnull);

			if (!rnull)
			{
				r = DatumGetFloat8(rd);
				b = bnull ? Max(1, (int) ceil(r)) : DatumGetInt32(bd);
			}
		}
		/* an unknown queue has no limit: the claim statement says so */
		p = hash_search(policies, key, HASH_ENTER, &found);
		p->rate = r;
		p->burst = b;
		p->fetched = now;
	}
	*rate = p->rate;
	*burst = p->burst;
	return p->rate > 0;
}

/* Forget the cached policy of queue_name (after this session changed it). */
void
jq_rate_forget(const char *queue_name)
{
	char		key[JQ_QUEUE_NAME_MAXLEN + 1];

	if (policies == NULL)
		return;
	memset(key, 0, sizeof(key));
	strlcpy(key, queue_name, sizeof(key));
	(void) hash_search(policies, key, HASH_REMOVE, NULL);
}

/* Refill bucket b (mutex held) at time now with its policy. */
static void
jq_bucket_refill(JqBucket *b, TimestampTz now, double rate, int burst)
{
	if (now > b->updated)
		b->tokens += (double) (now - b->updated) / USECS_PER_SEC * b->rate;
	b->updated = Max(now, b->updated);
	b->rate = rate;
	b->burst = burst;
	if (b->tokens > burst)
		b->tokens = burst;
}

/*
 * Reserve up to n tokens of queue_name's bucket in the current database.
 * Returns how many (0 to n) and the bucket in *bucket, to be given back
 * with jq_rate_return.  Never waits.
 */
int
jq_rate_reserve(const char *queue_name, double rate, int burst, int n,
				int *bucket)
{
	TimestampTz now = GetCurrentTimestamp();
	int			found = -1;
	int			take;
	JqBucket   *b;

	if (rl == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("queue \"%s\" has a rate limit, which needs jobqueue in shared_preload_libraries",
						queue_name),
				 errhint("Add jobqueue to shared_preload_libraries and restart the server, "
						 "or remove the limit with jobqueue.jq_alter_queue('%s', rate_limit => 0).",
						 queue_name)));

	LWLockAcquire(rl->lock, LW_SHARED);
	for (int i = 0; i < rl->nbuckets; i++)
	{
		b = &rl->buckets[i];
		if (b->dboid == MyDatabaseId && strcmp(b->queue_name, queue_name) == 0)
		{
			found = i;
			break;
		}
	}
	LWLockRelease(rl->lock);

	if (found < 0)
	{
		int			idle = -1;
		TimestampTz idle_since = 0;

		LWLockAcquire(rl->lock, LW_EXCLUSIVE);
		for (int i = 0; i < rl->nbuckets && found < 0; i++)
		{
			b = &rl->buckets[i];
			if (b->dboid == MyDatabaseId && strcmp(b->queue_name, queue_name) == 0)
				found = i;
			else if (b->dboid == InvalidOid)
			{
				if (idle < 0 || rl->buckets[idle].dboid != InvalidOid)
					idle = i;
			}
			else if (idle < 0 || rl->buckets[idle].dboid != InvalidOid)
			{
				bool		full;
				TimestampTz updated;

				/* a bucket full again is as good as a new one: reusable */
				SpinLockAcquire(&b->mutex);
				full = b->holders == 0 &&
					b->tokens + (double) (now - b->updated) / USECS_PER_SEC * b->rate >= b->burst &&
					now - b->updated > USECS_PER_SEC;
				updated = b->updated;
				SpinLockRelease(&b->mutex);
				if (full && (idle < 0 || updated < idle_since))
				{
					idle = i;
					idle_since = updated;
				}
			}
		}
		if (found < 0 && idle >= 0)
		{
			b = &rl->buckets[idle];
			SpinLockAcquire(&b->mutex);
			b->dboid = MyDatabaseId;
			strlcpy(b->queue_name, queue_name, sizeof(b->queue_name));
			b->rate = rate;
			b->burst = burst;
			b->tokens = burst;
			b->updated = now;
			b->holders = 0;
			b->claims_limited = 0;
			b->jobs_started = 0;
			SpinLockRelease(&b->mutex);
			found = idle;
		}
		LWLockRelease(rl->lock);
		if (found < 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("no rate limit bucket is free for queue \"%s\"", queue_name),
					 errdetail("All %d buckets are in use by rate-limited queues.",
							   rl->nbuckets),
					 errhint("Raise jobqueue.max_rate_limited_queues.")));
	}

	/* remember the holding before taking it: proc_exit must find it */
	if (!exit_callback_registered)
	{
		before_shmem_exit(jq_rate_release_held, (Datum) 0);
		exit_callback_registered = true;
	}
	if (nheld >= JQ_MAX_HELD)
		elog(ERROR, "too many nested rate-limited claims");

	b = &rl->buckets[found];
	HOLD_INTERRUPTS();
	SpinLockAcquire(&b->mutex);
	jq_bucket_refill(b, now, rate, burst);
	take = b->tokens >= n ? n : (int) floor(Max(b->tokens, 0));
	b->tokens -= take;
	if (take < n)
		b->claims_limited++;
	if (take > 0)
		b->holders++;
	SpinLockRelease(&b->mutex);
	if (take > 0)
	{
		held[nheld].bucket = found;
		held[nheld].reserved = take;
		nheld++;
	}
	RESUME_INTERRUPTS();
	*bucket = take > 0 ? found : -1;
	return take;
}

/*
 * Give back the unused of the reserved tokens of bucket (from
 * jq_rate_reserve); reserved - unused jobs were claimed.  Never fails.
 */
void
jq_rate_return(int bucket, int reserved, int unused)
{
	JqBucket   *b;

	if (bucket < 0 || rl == NULL)
		return;
	HOLD_INTERRUPTS();
	/* forget the holding (the newest one of this bucket) */
	for (int i = nheld - 1; i >= 0; i--)
	{
		if (held[i].bucket == bucket)
		{
			held[i] = held[nheld - 1];
			nheld--;
			break;
		}
	}
	b = &rl->buckets[bucket];
	SpinLockAcquire(&b->mutex);
	b->tokens = Min(b->tokens + unused, (double) b->burst);
	b->jobs_started += reserved - unused;
	b->holders--;
	SpinLockRelease(&b->mutex);
	RESUME_INTERRUPTS();
}

/*
 * before_shmem_exit callback: give back what this backend still holds, as
 * an error would have (all of it unused: the claim's transaction ends
 * without committing).
 */
static void
jq_rate_release_held(int code, Datum arg)
{
	while (nheld > 0)
	{
		JqHolding	h = held[nheld - 1];

		jq_rate_return(h.bucket, h.reserved, h.reserved);
	}
}

/*
 * jq_rate_limits() returns setof record
 *
 * The buckets of this database's rate-limited queues: the policy last used,
 * the tokens now, how many claims were cut by the limit and how many jobs
 * were claimed since the bucket was created (at the first claim after a
 * restart).  No rows without shared_preload_libraries.
 */
Datum
jq_rate_limits(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *store = jq_srf_init(fcinfo, &tupdesc);
	TimestampTz now = GetCurrentTimestamp();

	if (rl == NULL)
		return (Datum) 0;
	LWLockAcquire(rl->lock, LW_SHARED);
	for (int i = 0; i < rl->nbuckets; i++)
	{
		JqBucket   *b = &rl->buckets[i];
		JqBucket	copy;
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		if (b->dboid != MyDatabaseId)
			continue;
		SpinLockAcquire(&b->mutex);
		memcpy(&copy, b, sizeof(JqBucket));
		SpinLockRelease(&b->mutex);
		copy.tokens = Min(copy.tokens + (double) Max(now - copy.updated, 0) / USECS_PER_SEC * copy.rate,
						  (double) copy.burst);
		values[0] = CStringGetTextDatum(copy.queue_name);
		values[1] = Float8GetDatum(copy.rate);
		values[2] = Int32GetDatum(copy.burst);
		values[3] = Float8GetDatum(copy.tokens);
		values[4] = Int64GetDatum((int64) copy.claims_limited);
		values[5] = Int64GetDatum((int64) copy.jobs_started);
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	LWLockRelease(rl->lock);
	return (Datum) 0;
}
