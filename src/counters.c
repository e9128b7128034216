/*-------------------------------------------------------------------------
 *
 * counters.c
 *	  Cumulative event counters per (database, queue) in shared memory.
 *
 * What is counted: see JqCounter in jobqueue.h.  Counters live in a
 * fixed-size shared hash table keyed by (database oid, queue name), sized by
 * jobqueue.max_counter_queues, so they need shared_preload_libraries.
 * Without it the SQL functions raise an error saying so, and the call sites
 * on the hot path count nothing (jq_count is a no-op).
 *
 * Keeping the hot path cheap: a call only adds to a backend-local pending
 * table (no lock, no shared cache line).  The pending counts are moved to
 * shared memory once per transaction, at its end, by a transaction callback.
 * So one autocommit jq_claim costs one shared LWLock acquisition and one
 * spinlock on its queue's entry, like a statement in pg_stat_statements, and
 * a transaction that claims and completes many jobs costs the same.
 *
 * Events (enqueued, claimed, completed ...) are counted only when the
 * transaction commits: a rolled-back enqueue enqueued nothing, and the
 * events of a prepared transaction are not counted at all.  Calls and
 * times of jq_claim/jq_complete are counted either way, since the calls were
 * made.  Events of a subtransaction (a savepoint, a PL/pgSQL block with an
 * EXCEPTION clause) are noted in a small undo log and taken back if the
 * subtransaction rolls back; at top level nothing is logged.
 *
 * Locking:
 *	  JqCounterShared->lock (LWLock) protects the hash table's structure:
 *	  shared mode to find an entry and update its counters, exclusive mode to
 *	  insert or remove entries (and to bump the generation).
 *	  JqCounterEntry->mutex (spinlock) protects the entry's counters; it is
 *	  taken with the LWLock held in either mode.
 *	  JqCounterShared->generation changes, under the exclusive lock, whenever
 *	  entries are removed; a backend caches a pointer to the shared entry of
 *	  each queue it counts, valid while the generation it saw is current.
 *
 * The table has room for jobqueue.max_counter_queues entries plus one, and
 * never more (HASH_FIXED_SIZE: it does not grow into PostgreSQL's spare
 * shared memory).  The extra entry is the overflow row, created with the
 * table and never removed: once the table is full, the events of every
 * further (database, queue) pair are added to it.  jq_counters() shows it
 * as queue_name '*' (not a valid queue name) with dbid NULL, since it sums
 * all databases, in every database, once it has counted anything.
 * jq_counters_reset() without a queue name zeroes it along with the
 * database's entries, which it frees.
 *
 * The transaction-end flush must not raise an error (the transaction has
 * already committed), so it only finds and enters entries with HASH_FIND /
 * HASH_ENTER_NULL, and falls back to the overflow row.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* dbid, queue_name, the events, calls and times, since */
#define JQ_COUNTER_COLS (2 + JQ_NUM_COUNTERS + 2 + 1)

PG_FUNCTION_INFO_V1(jq_counters);
PG_FUNCTION_INFO_V1(jq_counters_reset);
PG_FUNCTION_INFO_V1(jq_error_counts);

/* GUCs */
bool		jq_track_counters = true;
int			jq_max_counter_queues = 1000;
int			jq_exact_count_limit = 8 * 1024;	/* kB */

/* Which counters survive a rollback (calls made, not state changes) */
#define JQ_COUNTER_IS_CALL(c) ((c) == JQ_CTR_CLAIM_CALLS || (c) == JQ_CTR_COMPLETE_CALLS)

typedef struct JqCounterKey
{
	Oid			dbid;
	char		queue_name[JQ_QUEUE_NAME_MAXLEN + 1];	/* zero padded; "" =
														 * queue unknown */
} JqCounterKey;

typedef struct JqCounterValues
{
	int64		counts[JQ_NUM_COUNTERS];
	double		claim_time;		/* milliseconds */
	double		complete_time;	/* milliseconds */
} JqCounterValues;

typedef struct JqCounterEntry
{
	JqCounterKey key;			/* hash key; must be first */
	slock_t		mutex;			/* protects values and latency */
	JqCounterValues values;
	TimestampTz since;			/* when counting started (creation, reset) */
	TimestampTz latency_since;	/* when the histograms started */
	JqLatency	latency[JQ_NUM_LATENCIES];
	JqErrorSlot errors[JQ_ERROR_SLOTS + 1];	/* the last: overflow */
} JqCounterEntry;

typedef struct JqCounterShared
{
	LWLock	   *lock;			/* protects the hash table, see above */
	uint64		generation;		/* bumped when entries are removed */
	JqCounterEntry *overflow;	/* the overflow row, in the hash table */
} JqCounterShared;

/* The key of the overflow row: no database, a name no queue can have */
#define JQ_OVERFLOW_QUEUE "*"

/* A backend's pending counts for one queue of its database */
typedef struct JqPending
{
	char		queue_name[JQ_QUEUE_NAME_MAXLEN + 1];	/* hash key */
	bool		dirty;
	JqCounterValues values;
	JqCounterEntry *entry;		/* cached shared entry, or NULL */
	uint64		generation;		/* generation entry was found in */
} JqPending;

static JqCounterShared *jq_counter_shared = NULL;
static HTAB *jq_counter_hash = NULL;

static HTAB *jq_pending_hash = NULL;
static JqPending *jq_pending_last = NULL;
static bool jq_pending_any = false;
static bool jq_xact_callback_registered = false;

/* Events counted inside subtransactions, to take back if they roll back */
typedef struct JqUndo
{
	JqPending  *pending;
	JqCounter	counter;
	int			nest_level;
	int64		n;
} JqUndo;

static List *jq_undo_log = NIL;	/* in TopTransactionContext */

/*
 * Latencies measured in the current transaction, published with its events
 * at commit (in TopTransactionContext; a sample of a subtransaction that
 * rolls back is dropped).  One sample per job moved, so their number is
 * bounded by the transaction's own work.
 */
typedef struct JqSample
{
	JqPending  *pending;
	int64		us;
	int32		nest_level;
	int16		kind;
	int16		bucket;
} JqSample;

static JqSample *jq_samples = NULL;
static int	jq_nsamples = 0;
static int	jq_maxsamples = 0;

/* Failed attempts of the current transaction, as the latencies */
typedef struct JqErrorSample
{
	JqPending  *pending;
	char	   *code;
	int32		attempt;
	int32		nest_level;
	bool		dead;
} JqErrorSample;

static List *jq_error_samples = NIL;	/* in TopTransactionContext */

static void jq_counters_xact_callback(XactEvent event, void *arg);
static JqCounterEntry *jq_counter_entry(JqPending *pending);
static void jq_counters_subxact_callback(SubXactEvent event,
										 SubTransactionId mySubid,
										 SubTransactionId parentSubid,
										 void *arg);

/* Entries of the hash table: one per (database, queue), and the overflow row */
#define JQ_COUNTER_ENTRIES() (jq_max_counter_queues + 1)

/* Size of the shared state, requested by jobqueue.c */
Size
jq_counters_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(JqCounterShared)),
					hash_estimate_size(JQ_COUNTER_ENTRIES(),
									   sizeof(JqCounterEntry)));
}

/* Zero the counters of entry, counting again since now (under its mutex) */
static void
jq_counter_entry_clear(JqCounterEntry *entry, TimestampTz now)
{
	memset(&entry->values, 0, sizeof(entry->values));
	entry->since = now;
	memset(entry->latency, 0, sizeof(entry->latency));
	entry->latency_since = now;
	memset(entry->errors, 0, sizeof(entry->errors));
	strlcpy(entry->errors[JQ_ERROR_SLOTS].code, JQ_ERROR_OVERFLOW_CODE,
			sizeof(entry->errors[JQ_ERROR_SLOTS].code));
	entry->errors[JQ_ERROR_SLOTS].attempt = -1;
}

/* Define the GUCs of the counters.  Called from _PG_init. */
void
jq_counters_guc_init(void)
{
	DefineCustomBoolVariable("jobqueue.track_counters",
							 "Collects the event counters shown by jobqueue.jq_counters().",
							 "Only with jobqueue in shared_preload_libraries.",
							 &jq_track_counters,
							 true,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);

	/* read by jobqueue.jq_finished_count() (the queue_stats view) */
	DefineCustomIntVariable("jobqueue.exact_count_limit",
							"Largest jobs table for which queue_stats counts succeeded and cancelled jobs exactly.",
							"Above it they are the planner's estimates; -1 counts exactly at any size.",
							&jq_exact_count_limit,
							8 * 1024, -1, INT_MAX,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);

	/*
	 * A PGC_POSTMASTER variable can only be defined while preloading (the
	 * postmaster refuses it later), and it only matters then.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("jobqueue.max_counter_queues",
							"Number of (database, queue) pairs the event counters can hold.",
							"Events of further pairs are added to one overflow row (queue_name '*') until jobqueue.jq_counters_reset() frees entries.",
							&jq_max_counter_queues,
							1000, 16, 1000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
}

/*
 * Create or attach to the shared state (in every process that starts, and
 * in the postmaster; EXEC_BACKEND re-attaches).  Called by jobqueue.c's
 * shmem_startup_hook with AddinShmemInitLock held.
 */
void
jq_counters_shmem_init(void)
{
	bool		found;
	HASHCTL		info;

	jq_counter_shared = ShmemInitStruct("jobqueue counters",
										sizeof(JqCounterShared), &found);

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(JqCounterKey);
	info.entrysize = sizeof(JqCounterEntry);
	jq_counter_hash = ShmemInitHash("jobqueue counters hash",
									JQ_COUNTER_ENTRIES(), JQ_COUNTER_ENTRIES(),
									&info,
									HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);

	if (!found)
	{
		JqCounterKey key;
		JqCounterEntry *entry;

		jq_counter_shared->lock = &(GetNamedLWLockTranche(JQ_COUNTERS_TRANCHE))->lock;
		jq_counter_shared->generation = 0;

		/* the table is empty, so there is room for the overflow row */
		memset(&key, 0, sizeof(key));
		key.dbid = InvalidOid;
		strlcpy(key.queue_name, JQ_OVERFLOW_QUEUE, sizeof(key.queue_name));
		entry = hash_search(jq_counter_hash, &key, HASH_ENTER, NULL);
		SpinLockInit(&entry->mutex);
		jq_counter_entry_clear(entry, GetCurrentTimestamp());
		jq_counter_shared->overflow = entry;
	}
}

/* Are counters being collected in this backend right now? */
bool
jq_counting(void)
{
	return jq_counter_shared != NULL && jq_track_counters;
}

/*
 * The pending counts of queue_name (NULL: queue unknown), created on first
 * use.  The pending table lives in TopMemoryContext for the backend's life.
 */
static JqPending *
jq_pending_for(const char *queue_name)
{
	char		key[JQ_QUEUE_NAME_MAXLEN + 1];
	JqPending  *p;
	bool		found;

	if (queue_name == NULL)
		queue_name = "";
	if (jq_pending_last != NULL &&
		strcmp(jq_pending_last->queue_name, queue_name) == 0)
		return jq_pending_last;

	if (jq_pending_hash == NULL)
	{
		HASHCTL		info;

		memset(&info, 0, sizeof(info));
		info.keysize = sizeof(key);
		info.entrysize = sizeof(JqPending);
		info.hcxt = TopMemoryContext;
		jq_pending_hash = hash_create("jobqueue pending counters", 16, &info,
									  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	if (!jq_xact_callback_registered)
	{
		RegisterXactCallback(jq_counters_xact_callback, NULL);
		RegisterSubXactCallback(jq_counters_subxact_callback, NULL);
		jq_xact_callback_registered = true;
	}

	memset(key, 0, sizeof(key));
	strlcpy(key, queue_name, sizeof(key));
	p = hash_search(jq_pending_hash, key, HASH_ENTER, &found);
	if (!found)
	{
		p->dirty = false;
		memset(&p->values, 0, sizeof(p->values));
		p->entry = NULL;
		p->generation = 0;
	}
	jq_pending_last = p;
	return p;
}

/*
 * Count n events of kind c for queue_name (NULL: queue unknown) in the
 * current transaction.  Cheap and lock-free; a no-op when counters are off
 * or not available.
 */
void
jq_count(const char *queue_name, JqCounter c, int64 n)
{
	JqPending  *p;

	if (!jq_counting() || n == 0)
		return;
	p = jq_pending_for(queue_name);
	p->values.counts[c] += n;
	p->dirty = true;
	jq_pending_any = true;

	if (GetCurrentTransactionNestLevel() > 1)
	{
		MemoryContext oldcontext = MemoryContextSwitchTo(TopTransactionContext);
		JqUndo	   *u = palloc(sizeof(JqUndo));

		u->pending = p;
		u->counter = c;
		u->nest_level = GetCurrentTransactionNestLevel();
		u->n = n;
		jq_undo_log = lappend(jq_undo_log, u);
		MemoryContextSwitchTo(oldcontext);
	}
}

/*
 * Note a latency of us microseconds of kind for queue_name in the current
 * transaction (published at commit, as events are).  Cheap: an entry in a
 * transaction-local array, no lock.
 */
void
jq_count_latency(const char *queue_name, JqLatencyKind kind, int64 us)
{
	JqSample   *sample;

	if (!jq_counting())
		return;
	if (us < 0)
		us = 0;					/* clocks of different backends */
	if (jq_nsamples >= jq_maxsamples)
	{
		if (jq_samples == NULL)
		{
			jq_maxsamples = 64;
			jq_samples = MemoryContextAlloc(TopTransactionContext,
											sizeof(JqSample) * jq_maxsamples);
		}
		else
		{
			jq_maxsamples *= 2;
			jq_samples = repalloc(jq_samples, sizeof(JqSample) * jq_maxsamples);
		}
	}
	sample = &jq_samples[jq_nsamples++];
	sample->pending = jq_pending_for(queue_name);
	sample->us = us;
	sample->nest_level = GetCurrentTransactionNestLevel();
	sample->kind = (int16) kind;
	sample->bucket = (int16) jq_latency_bucket(us);
	jq_pending_any = true;
}

/*
 * Note a failed attempt of queue_name (the attempt-th) with error code,
 * retried or dead, in the current transaction (published at commit).
 */
void
jq_count_error(const char *queue_name, const char *code, int32 attempt,
			   bool dead)
{
	MemoryContext oldcontext;
	JqErrorSample *e;

	if (!jq_counting() || code == NULL)
		return;
	oldcontext = MemoryContextSwitchTo(TopTransactionContext);
	e = palloc(sizeof(JqErrorSample));
	e->pending = jq_pending_for(queue_name);
	e->code = pstrdup(code);
	e->attempt = attempt;
	e->nest_level = GetCurrentTransactionNestLevel();
	e->dead = dead;
	jq_error_samples = lappend(jq_error_samples, e);
	MemoryContextSwitchTo(oldcontext);
	jq_pending_any = true;
}

/* Add the failed attempts of the transaction (lock held in shared mode) */
static void
jq_errors_flush(void)
{
	ListCell   *lc;

	foreach(lc, jq_error_samples)
	{
		JqErrorSample *e = (JqErrorSample *) lfirst(lc);
		JqCounterEntry *entry = jq_counter_entry(e->pending);
		JqErrorSlot *slot = NULL;
		int			i;

		SpinLockAcquire(&entry->mutex);
		for (i = 0; i < JQ_ERROR_SLOTS; i++)
		{
			JqErrorSlot *s = &entry->errors[i];

			if (s->code[0] == '\0')
			{
				strlcpy(s->code, e->code, sizeof(s->code));
				s->attempt = e->attempt;
				slot = s;
				break;
			}
			if (s->attempt == e->attempt && strcmp(s->code, e->code) == 0)
			{
				slot = s;
				break;
			}
		}
		if (slot == NULL)
			slot = &entry->errors[JQ_ERROR_SLOTS];
		if (e->dead)
			slot->dead++;
		else
			slot->retries++;
		SpinLockRelease(&entry->mutex);
	}
}

/*
 * Add the latencies of the transaction to shared memory (with the lock
 * held in shared mode), runs of samples of one queue under one spinlock.
 */
static void
jq_samples_flush(void)
{
	int			i = 0;

	while (i < jq_nsamples)
	{
		JqPending  *p = jq_samples[i].pending;
		JqCounterEntry *entry = jq_counter_entry(p);

		SpinLockAcquire(&entry->mutex);
		for (; i < jq_nsamples && jq_samples[i].pending == p; i++)
		{
			JqSample   *sample = &jq_samples[i];
			JqLatency  *lat = &entry->latency[sample->kind];

			lat->count++;
			lat->sum_us += sample->us;
			if (sample->us > lat->max_us)
				lat->max_us = sample->us;
			lat->buckets[sample->bucket]++;
		}
		SpinLockRelease(&entry->mutex);
	}
}

/* Forget the latencies of the transaction (its memory is going away) */
static void
jq_samples_forget(void)
{
	jq_samples = NULL;
	jq_nsamples = 0;
	jq_maxsamples = 0;
	jq_error_samples = NIL;
}

/* Start timing a jq_claim or jq_complete call (when counting). */
void
jq_count_start(instr_time *start)
{
	if (jq_counting())
		INSTR_TIME_SET_CURRENT(*start);
	else
		INSTR_TIME_SET_ZERO(*start);
}

/*
 * Count a call of jq_claim (calls = JQ_CTR_CLAIM_CALLS) or of
 * jq_complete/jq_complete_many (JQ_CTR_COMPLETE_CALLS) with the time since
 * *start.
 */
void
jq_count_call(const char *queue_name, JqCounter calls, instr_time *start)
{
	instr_time	duration;
	JqPending  *p;
	double		ms;

	if (!jq_counting() || INSTR_TIME_IS_ZERO(*start))
		return;
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, *start);
	ms = INSTR_TIME_GET_MILLISEC(duration);

	p = jq_pending_for(queue_name);
	p->values.counts[calls] += 1;
	if (calls == JQ_CTR_CLAIM_CALLS)
		p->values.claim_time += ms;
	else
		p->values.complete_time += ms;
	p->dirty = true;
	jq_pending_any = true;
}

/*
 * Find (or, if create, make) the shared entry of our database and
 * pending->queue_name.  Called with the lock held in shared mode; may
 * release and re-take it.  Returns the overflow row when the table is full.
 * Never raises an error.
 */
static JqCounterEntry *
jq_counter_entry(JqPending *pending)
{
	JqCounterKey key;
	JqCounterEntry *entry;
	bool		found;

	if (pending->entry != NULL &&
		pending->generation == jq_counter_shared->generation)
		return pending->entry;

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	memcpy(key.queue_name, pending->queue_name, sizeof(key.queue_name));

	entry = hash_search(jq_counter_hash, &key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		LWLockRelease(jq_counter_shared->lock);
		LWLockAcquire(jq_counter_shared->lock, LW_EXCLUSIVE);
		entry = hash_search(jq_counter_hash, &key, HASH_ENTER_NULL, &found);
		if (entry != NULL && !found)
		{
			SpinLockInit(&entry->mutex);
			jq_counter_entry_clear(entry, GetCurrentTimestamp());
		}
		LWLockRelease(jq_counter_shared->lock);
		LWLockAcquire(jq_counter_shared->lock, LW_SHARED);
		/* an entry may have been removed while we had no lock: look again */
		entry = hash_search(jq_counter_hash, &key, HASH_FIND, NULL);
		/* the table is full: count in the overflow row */
		if (entry == NULL)
			entry = jq_counter_shared->overflow;
	}
	pending->entry = entry;
	pending->generation = jq_counter_shared->generation;
	return entry;
}

/*
 * Move the pending counts to shared memory; with events_too false (the
 * transaction rolled back) only calls and times are moved and the events
 * are discarded.  Must not raise an error.
 */
static void
jq_counters_flush(bool events_too)
{
	HASH_SEQ_STATUS seq;
	JqPending  *p;

	if (!jq_pending_any || jq_pending_hash == NULL)
		return;
	jq_pending_any = false;

	if (jq_counter_shared == NULL)
		return;

	LWLockAcquire(jq_counter_shared->lock, LW_SHARED);
	hash_seq_init(&seq, jq_pending_hash);
	while ((p = hash_seq_search(&seq)) != NULL)
	{
		JqCounterEntry *entry;
		int			i;
		bool		any = false;

		if (!p->dirty)
			continue;
		p->dirty = false;

		for (i = 0; i < JQ_NUM_COUNTERS; i++)
		{
			if (!events_too && !JQ_COUNTER_IS_CALL(i))
				p->values.counts[i] = 0;
			else if (p->values.counts[i] != 0)
				any = true;
		}
		if (!any)
		{
			memset(&p->values, 0, sizeof(p->values));
			continue;
		}

		entry = jq_counter_entry(p);
		SpinLockAcquire(&entry->mutex);
		for (i = 0; i < JQ_NUM_COUNTERS; i++)
			entry->values.counts[i] += p->values.counts[i];
		entry->values.claim_time += p->values.claim_time;
		entry->values.complete_time += p->values.complete_time;
		SpinLockRelease(&entry->mutex);
		memset(&p->values, 0, sizeof(p->values));
	}
	if (events_too && jq_nsamples > 0)
		jq_samples_flush();
	if (events_too && jq_error_samples != NIL)
		jq_errors_flush();
	LWLockRelease(jq_counter_shared->lock);

	/* a backend that saw many queues once should not keep them all */
	if (hash_get_num_entries(jq_pending_hash) > 256)
	{
		hash_destroy(jq_pending_hash);
		jq_pending_hash = NULL;
		jq_pending_last = NULL;
	}
}

/*
 * Subtransaction end: a rollback takes back the events counted inside it
 * (and inside its children); a commit hands them to the parent level.
 */
static void
jq_counters_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext oldcontext;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;

	/* latencies: dropped, or handed to the parent level */
	if (jq_nsamples > 0)
	{
		int			i;
		int			n = 0;

		for (i = 0; i < jq_nsamples; i++)
		{
			if (jq_samples[i].nest_level >= level)
			{
				if (event == SUBXACT_EVENT_ABORT_SUB)
					continue;
				jq_samples[i].nest_level = level - 1;
			}
			jq_samples[n++] = jq_samples[i];
		}
		jq_nsamples = n;
	}
	if (jq_error_samples != NIL)
	{
		List	   *kept = NIL;
		ListCell   *lc;
		MemoryContext oldcontext = MemoryContextSwitchTo(TopTransactionContext);

		foreach(lc, jq_error_samples)
		{
			JqErrorSample *e = (JqErrorSample *) lfirst(lc);

			if (e->nest_level >= level)
			{
				if (event == SUBXACT_EVENT_ABORT_SUB)
					continue;
				e->nest_level = level - 1;
			}
			kept = lappend(kept, e);
		}
		list_free(jq_error_samples);
		jq_error_samples = kept;
		MemoryContextSwitchTo(oldcontext);
	}

	if (jq_undo_log == NIL)
		return;

	/* not the subtransaction's context: it is about to go away */
	oldcontext = MemoryContextSwitchTo(TopTransactionContext);
	foreach(lc, jq_undo_log)
	{
		JqUndo	   *u = (JqUndo *) lfirst(lc);

		if (u->nest_level < level)
			kept = lappend(kept, u);
		else if (event == SUBXACT_EVENT_ABORT_SUB)
			u->pending->values.counts[u->counter] -= u->n;
		else if (level - 1 > 1)
		{
			u->nest_level = level - 1;
			kept = lappend(kept, u);
		}
		/* committed into the top level: nothing left to undo */
	}
	list_free(jq_undo_log);
	jq_undo_log = kept;
	MemoryContextSwitchTo(oldcontext);
}

/* Transaction end: publish the counts (commit) or only the calls (abort). */
static void
jq_counters_xact_callback(XactEvent event, void *arg)
{
	/* the log lived in TopTransactionContext, which is going away */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		jq_undo_log = NIL;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			jq_counters_flush(true);
			break;
		case XACT_EVENT_PREPARE:
			/*
			 * Whether a prepared transaction commits is decided later, by
			 * COMMIT or ROLLBACK PREPARED in some session that knows
			 * nothing of its events: they are not counted, its calls are.
			 */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			jq_counters_flush(false);
			break;
		default:
			break;
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		jq_samples_forget();
}

/* Error out unless the shared counters exist. */
void
jq_require_counters(void)
{
	if (jq_counter_shared == NULL || jq_counter_hash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("jobqueue event counters are not available"),
				 errdetail("The counters live in shared memory, which only exists when the library is preloaded."),
				 errhint("Add jobqueue to shared_preload_libraries and restart the server.")));
}

/*
 * jq_counters(all_databases boolean DEFAULT false)
 *		returns setof record (see the 1.1 script for the columns)
 *
 * The counters of the current database, one row per queue (queue_name NULL:
 * fenced completions and refused heartbeats of jobs that no longer exist),
 * and the overflow row (dbid NULL, queue_name '*': queues of any database
 * that found the table full) once it has counted something.
 * all_databases needs pg_read_all_stats (or superuser).  The calling
 * backend's own counts are published at the end of each of its
 * transactions, so a transaction sees its own events only after it ends.
 */
Datum
jq_counters(PG_FUNCTION_ARGS)
{
	bool		all_databases = PG_ARGISNULL(0) ? false : PG_GETARG_BOOL(0);
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	HASH_SEQ_STATUS seq;
	JqCounterEntry *entry;
	bool		cols_1_4;

	jq_require_counters();
	if (all_databases &&
		!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the counters of other databases"),
				 errdetail("Only roles with privileges of pg_read_all_stats may use all_databases => true.")));

	tupstore = jq_srf_init(fcinfo, &tupdesc);
	/*
	 * before 1.4 (ALTER EXTENSION UPDATE not run): no columns released,
	 * debounced, expired
	 */
	cols_1_4 = (tupdesc->natts == JQ_COUNTER_COLS);
	if (tupdesc->natts != JQ_COUNTER_COLS &&
		tupdesc->natts != JQ_COUNTER_COLS - 3)
		elog(ERROR, "jq_counters: unexpected result type with %d columns",
			 tupdesc->natts);

	LWLockAcquire(jq_counter_shared->lock, LW_SHARED);
	hash_seq_init(&seq, jq_counter_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		Datum		values[JQ_COUNTER_COLS];
		bool		nulls[JQ_COUNTER_COLS];
		JqCounterValues v;
		TimestampTz since;
		int			col = 0;
		int			i;

		bool		overflow = (entry == jq_counter_shared->overflow);

		if (!overflow && !all_databases && entry->key.dbid != MyDatabaseId)
			continue;

		SpinLockAcquire(&entry->mutex);
		v = entry->values;
		since = entry->since;
		SpinLockRelease(&entry->mutex);

		if (overflow)
		{
			bool		any = false;

			for (i = 0; i < JQ_NUM_COUNTERS; i++)
				any |= (v.counts[i] != 0);
			if (!any)
				continue;
		}

		memset(nulls, false, sizeof(nulls));
		if (overflow)
			nulls[col++] = true;
		else
			values[col++] = ObjectIdGetDatum(entry->key.dbid);
		if (entry->key.queue_name[0] == '\0')
			nulls[col++] = true;
		else
			values[col++] = CStringGetTextDatum(entry->key.queue_name);
		for (i = 0; i < JQ_CTR_CLAIM_CALLS; i++)
		{
			if ((i == JQ_CTR_RELEASED || i == JQ_CTR_DEBOUNCED ||
				 i == JQ_CTR_EXPIRED) && !cols_1_4)
				continue;
			values[col++] = Int64GetDatum(v.counts[i]);
		}
		values[col++] = Int64GetDatum(v.counts[JQ_CTR_CLAIM_CALLS]);
		values[col++] = Float8GetDatum(v.claim_time);
		values[col++] = Int64GetDatum(v.counts[JQ_CTR_COMPLETE_CALLS]);
		values[col++] = Float8GetDatum(v.complete_time);
		values[col++] = TimestampTzGetDatum(since);
		Assert(col == tupdesc->natts);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	LWLockRelease(jq_counter_shared->lock);

	return (Datum) 0;
}

/*
 * jq_counters_reset(queue_name text DEFAULT NULL) returns void
 *
 * Removes the counters of one queue, or of every queue of the current
 * database (NULL), which frees their entries.  NULL also zeroes the
 * overflow row, which is never removed.
 */
Datum
jq_counters_reset(PG_FUNCTION_ARGS)
{
	char	   *queue_name = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	TimestampTz now = GetCurrentTimestamp();
	HASH_SEQ_STATUS seq;
	JqCounterEntry *entry;

	jq_require_counters();

	LWLockAcquire(jq_counter_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, jq_counter_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		if (entry == jq_counter_shared->overflow)
		{
			if (queue_name == NULL)
			{
				SpinLockAcquire(&entry->mutex);
				jq_counter_entry_clear(entry, now);
				SpinLockRelease(&entry->mutex);
			}
			continue;
		}
		if (entry->key.dbid != MyDatabaseId)
			continue;
		if (queue_name != NULL && strcmp(entry->key.queue_name, queue_name) != 0)
			continue;
		hash_search(jq_counter_hash, &entry->key, HASH_REMOVE, NULL);
	}
	jq_counter_shared->generation++;
	LWLockRelease(jq_counter_shared->lock);

	PG_RETURN_VOID();
}

/*
 * Copies of the histograms of the entries of the current database (and of
 * the overflow row, queue_name "*", when it has counted anything), or of
 * queue_name's entry only; entries that counted nothing are left out.
 * Returns their number; *snapshots is palloc'd.
 */
int
jq_latency_snapshot(const char *queue_name, JqLatencySnapshot **snapshots)
{
	HASH_SEQ_STATUS seq;
	JqCounterEntry *entry;
	int			n = 0;
	int			max;
	JqLatencySnapshot *out;

	jq_require_counters();
	LWLockAcquire(jq_counter_shared->lock, LW_SHARED);
	max = (int) hash_get_num_entries(jq_counter_hash);
	out = palloc(sizeof(JqLatencySnapshot) * Max(max, 1));
	hash_seq_init(&seq, jq_counter_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		bool		overflow = (entry == jq_counter_shared->overflow);
		JqLatencySnapshot *snap = &out[n];
		int			k;
		bool		any = false;

		if (!overflow && entry->key.dbid != MyDatabaseId)
			continue;
		if (queue_name != NULL && strcmp(entry->key.queue_name, queue_name) != 0)
			continue;
		if (queue_name == NULL && !overflow && entry->key.queue_name[0] == '\0')
			continue;			/* no queue: nothing is timed there */
		if (n >= max)
			break;
		for (k = 0; k < JQ_NUM_LATENCIES; k++)
		{
			SpinLockAcquire(&entry->mutex);
			snap->lat[k] = entry->latency[k];
			snap->since = entry->latency_since;
			SpinLockRelease(&entry->mutex);
			any |= (snap->lat[k].count > 0);
		}
		if (!any)
			continue;
		memcpy(snap->queue_name, entry->key.queue_name, sizeof(snap->queue_name));
		n++;
	}
	LWLockRelease(jq_counter_shared->lock);
	*snapshots = out;
	return n;
}

/*
 * Zero the histograms of queue_name's entry, or of every entry of the
 * current database and of the overflow row (NULL); the event counters are
 * kept.
 */
void
jq_latency_clear(const char *queue_name)
{
	TimestampTz now = GetCurrentTimestamp();
	HASH_SEQ_STATUS seq;
	JqCounterEntry *entry;

	jq_require_counters();
	LWLockAcquire(jq_counter_shared->lock, LW_SHARED);
	hash_seq_init(&seq, jq_counter_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		bool		overflow = (entry == jq_counter_shared->overflow);

		if (overflow ? queue_name != NULL :
			(entry->key.dbid != MyDatabaseId ||
			 (queue_name != NULL && strcmp(entry->key.queue_name, queue_name) != 0)))
			continue;
		SpinLockAcquire(&entry->mutex);
		memset(entry->latency, 0, sizeof(entry->latency));
		entry->latency_since = now;
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(jq_counter_shared->lock);
}

/*
 * Copies of the failed-attempt slots of the entries of the current
 * database and of the overflow row ("*"), or of queue_name's entry only;
 * entries without any are left out.  Returns their number; *snapshots is
 * palloc'd.
 */
int
jq_error_snapshot(const char *queue_name, JqErrorSnapshot **snapshots)
{
	HASH_SEQ_STATUS seq;
	JqCounterEntry *entry;
	int			n = 0;
	int			max;
	JqErrorSnapshot *out;

	jq_require_counters();
	LWLockAcquire(jq_counter_shared->lock, LW_SHARED);
	max = (int) hash_get_num_entries(jq_counter_hash);
	out = palloc(sizeof(JqErrorSnapshot) * Max(max, 1));
	hash_seq_init(&seq, jq_counter_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		bool		overflow = (entry == jq_counter_shared->overflow);
		JqErrorSnapshot *snap = &out[n];

		if (!overflow && entry->key.dbid != MyDatabaseId)
			continue;
		if (queue_name != NULL && strcmp(entry->key.queue_name, queue_name) != 0)
			continue;
		if (n >= max)
			break;
		SpinLockAcquire(&entry->mutex);
		memcpy(snap->slots, entry->errors, sizeof(snap->slots));
		SpinLockRelease(&entry->mutex);
		if (snap->slots[0].code[0] == '\0')
			continue;			/* no failure counted */
		memcpy(snap->queue_name, entry->key.queue_name, sizeof(snap->queue_name));
		n++;
	}
	LWLockRelease(jq_counter_shared->lock);
	*snapshots = out;
	return n;
}

/*
 * jq_error_counts(queue_name text DEFAULT NULL)
 *		returns table(queue_name, error_code, attempt, retries, dead_lettered)
 *
 * The failed attempts of each queue of the current database (and of the
 * overflow row '*'), or of one queue, by the job's last_error_code and
 * the number of the attempt that failed: how many were retried and how
 * many left the job dead.  At most JQ_ERROR_SLOTS pairs per queue; the
 * others are summed in the row with error_code '*' and attempt NULL.
 */
Datum
jq_error_counts(PG_FUNCTION_ARGS)
{
	char	   *queue_name = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	JqErrorSnapshot *snaps;
	int			n;
	int			s;

	jq_require_counters();
	tupstore = jq_srf_init(fcinfo, &tupdesc);
	if (tupdesc->natts != 5)
		elog(ERROR, "jq_error_counts: unexpected result type with %d columns",
			 tupdesc->natts);
	n = jq_error_snapshot(queue_name, &snaps);
	for (s = 0; s < n; s++)
	{
		int			i;

		for (i = 0; i <= JQ_ERROR_SLOTS; i++)
		{
			const JqErrorSlot *slot = &snaps[s].slots[i];
			Datum		values[5];
			bool		nulls[5] = {false, false, false, false, false};

			if (i < JQ_ERROR_SLOTS && slot->code[0] == '\0')
				continue;
			if (i == JQ_ERROR_SLOTS && slot->retries == 0 && slot->dead == 0)
				continue;
			values[0] = CStringGetTextDatum(snaps[s].queue_name);
			values[1] = CStringGetTextDatum(slot->code);
			if (slot->attempt < 0)
				nulls[2] = true;
			else
				values[2] = Int32GetDatum(slot->attempt);
			values[3] = Int64GetDatum(slot->retries);
			values[4] = Int64GetDatum(slot->dead);
			tuplestore_putvalues(tupstore, tupdesc, values, nulls);
		}
	}
	return (Datum) 0;
}
