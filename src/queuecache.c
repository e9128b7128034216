/*-------------------------------------------------------------------------
 *
 * queuecache.c
 *	  The per-backend cache of the queue settings that the claim, the
 *	  enqueue and the completion of a job need, and its invalidation.
 *
 * Two caches.  The settings a claim or an enqueue needs of its queue's
 * row (jq_queue_settings): whether it exists, is paused, has an ordering
 * policy, its lease_duration, max_runtime, max_attempts and notify; with
 * them the plain claim and the enqueue of a job without a key touch the
 * jobs table only.  And the queues with notify_finished:
 * jq_complete and jq_complete_many announce the end of a job when its
 * queue has notify_finished, and delete the job instead of keeping it as
 * 'succeeded' when its queue's retention is zero.  Looking those settings
 * up per job (a subquery on jobqueue.queues in the statement) cost every
 * completion an index probe, although almost no queue has them.  Instead,
 * each backend keeps the names of the queues of its database that have
 * each of them (usually none), and the statements test the job's queue
 * against those arrays, parameters.
 *
 * Invalidation: the functions that change jobqueue.queues (create, alter,
 * drop, pause, resume) call jq_queues_changed().  At the commit of that
 * transaction, once the change is visible, the shared counter
 * jq_shared->queues_generation goes up by one; a backend re-reads its
 * caches when the counter differs from the value it read before its last
 * read of the table.  Since the
 * counter is read before the table, a change that commits after the read
 * always moves the counter past the cached value.  A claim, enqueue or
 * completion that runs while the change commits may still use the
 * settings from before it, as if it had run a moment earlier; the next
 * call sees the change.  The
 * session that makes the change sees it at once (a local counter, also
 * moved when the transaction or a subtransaction aborts, which may have
 * cached uncommitted settings).  A prepared transaction's change is
 * published by COMMIT PREPARED, which moves the counter (utility.c).
 *
 * Without shared_preload_libraries there is no shared counter, and the
 * settings are read at every call.  The tables are to be changed through
 * the functions only (docs/sql-reference.md, Tables): a hand-written UPDATE
 * of jobqueue.queues takes effect in other sessions at the next change made
 * through a function.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

/* The cached names, in TopMemoryContext; NULL: not read yet */
static ArrayType *notify_finished_queues = NULL;
static ArrayType *delete_on_success_queues = NULL;
/* the shared and local counters when they were read */
static uint64 cached_shared_generation = 0;
static uint64 cached_local_generation = 0;

/* The cached settings of queues, by name; NULL: none read yet */
static HTAB *queue_settings = NULL;
static uint64 settings_shared_generation = 0;
static uint64 settings_local_generation = 0;

/* Citus: every queue and the node group of its shard, in name order */
static int	queue_groups_n = -1;	/* -1: not read yet */
static char **queue_groups_names = NULL;
static int32 *queue_groups_groups = NULL;
static uint64 queue_groups_shared_generation = 0;
static uint64 queue_groups_local_generation = 0;
static uint64 queue_groups_epoch = 0;

/* moved by this backend's own changes and aborts */
static uint64 local_generation = 1;
/* this transaction changed jobqueue.queues */
static bool changed_in_xact = false;
static bool callbacks_registered = false;

static void
jq_queuecache_xact_callback(XactEvent event, void *arg)
{
	if (!changed_in_xact)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			/* after the commit is visible to others; cannot fail */
			if (jq_shared != NULL)
				pg_atomic_fetch_add_u64(&jq_shared->queues_generation, 1);
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			local_generation++;
			changed_in_xact = false;
			break;
		case XACT_EVENT_PREPARE:
			/* COMMIT PREPARED moves the shared counter (utility.c) */
			local_generation++;
			changed_in_xact = false;
			break;
		default:
			break;
	}
}

static void
jq_queuecache_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							   SubTransactionId parentSubid, void *arg)
{
	/* the cache may hold what the aborted subtransaction wrote */
	if (event == SUBXACT_EVENT_ABORT_SUB && changed_in_xact)
		local_generation++;
}

/*
 * Note that the current transaction changes jobqueue.queues: this session
 * re-reads the settings at once, every session after the commit.
 */
void
jq_queues_changed(void)
{
	if (!callbacks_registered)
	{
		RegisterXactCallback(jq_queuecache_xact_callback, NULL);
		RegisterSubXactCallback(jq_queuecache_subxact_callback, NULL);
		callbacks_registered = true;
	}
	changed_in_xact = true;
	local_generation++;
}

/*
 * A prepared transaction was committed, which may have changed
 * jobqueue.queues: every backend re-reads the settings.  Called by the
 * utility hook after COMMIT PREPARED.
 */
void
jq_queues_changed_elsewhere(void)
{
	if (jq_shared != NULL)
		pg_atomic_fetch_add_u64(&jq_shared->queues_generation, 1);
}

/* Has jobqueue.queues the notify_finished column of 1.2? */
static bool
jq_notify_finished_column_exists(void)
{
	Oid			nspoid = get_namespace_oid("jobqueue", true);
	Oid			relid = OidIsValid(nspoid) ? get_relname_relid("queues", nspoid) : InvalidOid;

	return OidIsValid(relid) &&
		get_attnum(relid, "notify_finished") != InvalidAttrNumber;
}

/* A copy of text[] Datum d in TopMemoryContext, replacing *cached */
static void
jq_queuecache_keep(ArrayType **cached, Datum d)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	ArrayType  *copy = DatumGetArrayTypePCopy(d);

	MemoryContextSwitchTo(oldcontext);
	if (*cached != NULL)
		pfree(*cached);
	*cached = copy;
}

/*
 * The names of the queues of the current database that have
 * notify_finished (*notify_finished) and that delete their jobs when they
 * succeed, the queues whose retention is zero (*delete_on_success), each
 * as a text[] Datum (usually empty), from the cache or read afresh.  Must
 * be called while connected to SPI; does not change SPI_tuptable when the
 * cache is current.  The arrays stay valid until the next call.
 */
void
jq_completion_queues(Datum *notify_finished, Datum *delete_on_success)
{
	uint64		shared_generation;

	shared_generation = jq_shared != NULL ?
		pg_atomic_read_u64(&jq_shared->queues_generation) : 0;
	if (notify_finished_queues == NULL || jq_shared == NULL ||
		shared_generation != cached_shared_generation ||
		local_generation != cached_local_generation)
	{
		/* the counter is read before the table (see the header) */
		pg_read_barrier();
		if (jq_notify_finished_column_exists())
		{
			jq_execute(JQ_PLAN_COMPLETION_QUEUES, NULL, NULL, SPI_OK_SELECT);
			jq_queuecache_keep(&notify_finished_queues, jq_result(0, 1));
			jq_queuecache_keep(&delete_on_success_queues, jq_result(0, 2));
		}
		else
		{
			/* before 1.2: neither setting exists */
			Datum		empty = PointerGetDatum(construct_empty_array(TEXTOID));

			jq_queuecache_keep(&notify_finished_queues, empty);
			jq_queuecache_keep(&delete_on_success_queues, empty);
		}
		cached_shared_generation = shared_generation;
		cached_local_generation = local_generation;
	}
	*notify_finished = PointerGetDatum(notify_finished_queues);
	*delete_on_success = PointerGetDatum(delete_on_success_queues);
}

/*
 * The settings of queue_name a claim needs, from the cache or read afresh
 * (exists is false for an unknown queue).  Must be called while connected
 * to SPI; replaces SPI_tuptable when it reads.  The entry stays valid until
 * the next call.
 */
const JqQueueSettings *
jq_queue_settings(const char *queue_name)
{
	uint64		shared_generation;
	JqQueueSettings *entry;
	char		key[JQ_QUEUE_NAME_MAXLEN + 1];
	bool		found;
	Datum		values[1];
	JqQueueSettings settings;

	shared_generation = jq_shared != NULL ?
		pg_atomic_read_u64(&jq_shared->queues_generation) : 0;
	/* stale, without a shared counter to tell, or grown large: start over */
	if (queue_settings != NULL &&
		(jq_shared == NULL ||
		 shared_generation != settings_shared_generation ||
		 local_generation != settings_local_generation ||
		 hash_get_num_entries(queue_settings) >= 1024))
	{
		hash_destroy(queue_settings);
		queue_settings = NULL;
	}
	if (queue_settings == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(key);
		ctl.entrysize = sizeof(JqQueueSettings);
		ctl.hcxt = TopMemoryContext;
		queue_settings = hash_create("jobqueue queue settings", 16, &ctl,
									 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
		settings_shared_generation = shared_generation;
		settings_local_generation = local_generation;
	}

	memset(key, 0, sizeof(key));
	strlcpy(key, queue_name, sizeof(key));
	entry = hash_search(queue_settings, key, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;

	/*
	 * The counter was read before the table (see the header), which is read
	 * in a new snapshot: the caller may have waited for a lock since its
	 * statement's snapshot was taken, for a transaction that changed the
	 * queue (jq_enqueue_values takes the lock on jobs first, which
	 * jq_drop_queue and a change of the group policy hold).
	 */
	pg_read_barrier();
	values[0] = CStringGetTextDatum(queue_name);
	PushActiveSnapshot(GetTransactionSnapshot());
	jq_execute(JQ_PLAN_QUEUE_SETTINGS, values, NULL, SPI_OK_SELECT);
	PopActiveSnapshot();
	memset(&settings, 0, sizeof(settings));
	settings.exists = SPI_processed == 1;
	if (settings.exists)
	{
		settings.paused = jq_result_bool(0, 1);
		settings.lease_duration = *DatumGetIntervalP(jq_result(0, 2));
		settings.max_runtime = *DatumGetIntervalP(jq_result(0, 3));
		settings.group_policy = jq_result_bool(0, 4);
		settings.aged = jq_result_bool(0, 5);
		settings.ordered = jq_result_bool(0, 6);
		settings.max_attempts = DatumGetInt32(jq_result(0, 7));
		settings.notify = jq_result_bool(0, 8);
		settings.round_robin = jq_result_bool(0, 9);
		settings.deadline = jq_result_bool(0, 10);
		settings.has_max_wait = jq_result_bool(0, 11);
		settings.max_wait = *DatumGetIntervalP(jq_result(0, 12));
		settings.max_pending = DatumGetInt32(jq_result(0, 13));
		settings.group_max_pending = DatumGetInt32(jq_result(0, 14));
		settings.fair_share = jq_result_bool(0, 15);
		settings.half_life_secs = DatumGetFloat8(jq_result(0, 16));
	}
	/* entered only now: an error above leaves no half-filled entry */
	entry = hash_search(queue_settings, key, HASH_ENTER, &found);
	memcpy(entry->queue_name, key, sizeof(key));
	entry->exists = settings.exists;
	entry->paused = settings.paused;
	entry->group_policy = settings.group_policy;
	entry->aged = settings.aged;
	entry->ordered = settings.ordered;
	entry->max_attempts = settings.max_attempts;
	entry->notify = settings.notify;
	entry->round_robin = settings.round_robin;
	entry->lease_duration = settings.lease_duration;
	entry->max_runtime = settings.max_runtime;
	entry->deadline = settings.deadline;
	entry->has_max_wait = settings.has_max_wait;
	entry->max_wait = settings.max_wait;
	entry->max_pending = settings.max_pending;
	entry->group_max_pending = settings.group_max_pending;
	entry->fair_share = settings.fair_share;
	entry->half_life_secs = settings.half_life_secs;
	return entry;
}

/*
 * The settings of queue_name for an enqueue, read under the lock on jobs
 * that its INSERT takes anyway: jq_drop_queue and a change of the group
 * policy (jq_ordering_set_policy) hold a lock on jobs that conflicts with
 * it until they commit, and their commit moves the cache's counter before
 * that lock is released.  So a queue dropped while the enqueue waited is
 * seen gone, and a job without a group gets the group '' when its queue
 * has a group policy now.  Raises the unknown-queue error.  Must be called
 * while connected to SPI.
 */
const JqQueueSettings *
jq_enqueue_settings(const char *queue_name)
{
	const JqQueueSettings *settings;

	LockRelationOid(get_relname_relid("jobs", get_namespace_oid("jobqueue", false)),
					RowExclusiveLock);
	settings = jq_queue_settings(queue_name);
	if (!settings->exists)
		jq_raise_unknown_queue(queue_name);
	return settings;
}

/*
 * The queue's defaults in an enqueue's parameters (laid out as
 * JQ_PLAN_ENQUEUE_GROUPED's): $5 its max_attempts when NULL, and $8 the
 * group '' for a job without a group in a queue with a group policy.
 */
void
jq_enqueue_defaults(const JqQueueSettings *settings, Datum *values, char *nulls)
{
	if (nulls[4] == JQ_ISNULL)
	{
		values[4] = Int32GetDatum(settings->max_attempts);
		nulls[4] = JQ_NOTNULL;
	}
	if (nulls[7] == JQ_ISNULL && settings->group_policy)
	{
		values[7] = CStringGetTextDatum("");
		nulls[7] = JQ_NOTNULL;
	}
}

/*
 * Citus: the names of the queues, as a text[] Datum, whose shard of jobs is
 * placed on one of the node groups groups[0..n-1]; with n = 0, every
 * queue.  From a cache of every queue's group, read again when the queues
 * or jobs's placements change (jq_local_shard_metadata_epoch).  A cache
 * that misses a change (a queue created through another node, whose
 * counter moved instead) costs only speed: the callers read every shard
 * when these queues do not have what they look for.  Connected to SPI;
 * replaces SPI_tuptable when it reads.
 */
Datum
jq_queues_on_groups(const int32 *groups, int n)
{
	uint64		shared_generation;
	uint64		epoch = jq_local_shard_metadata_epoch();
	Datum	   *names;
	int			count = 0;

	shared_generation = jq_shared != NULL ?
		pg_atomic_read_u64(&jq_shared->queues_generation) : 0;
	if (queue_groups_n < 0 || jq_shared == NULL ||
		shared_generation != queue_groups_shared_generation ||
		local_generation != queue_groups_local_generation ||
		epoch != queue_groups_epoch)
	{
		/* the counter is read before the table (see the header) */
		pg_read_barrier();
		jq_execute(JQ_PLAN_QUEUE_GROUPS, NULL, NULL, SPI_OK_SELECT);
		for (int i = 0; i < queue_groups_n; i++)
			pfree(queue_groups_names[i]);
		if (queue_groups_names != NULL)
		{
			pfree(queue_groups_names);
			pfree(queue_groups_groups);
		}
		queue_groups_names = MemoryContextAlloc(TopMemoryContext,
												sizeof(char *) * Max(SPI_processed, 1));
		queue_groups_groups = MemoryContextAlloc(TopMemoryContext,
												 sizeof(int32) * Max(SPI_processed, 1));
		for (uint64 row = 0; row < SPI_processed; row++)
		{
			bool		isnull;
			Datum		group = jq_result_nullable(row, 2, &isnull);

			queue_groups_names[row] = MemoryContextStrdup(TopMemoryContext,
														  jq_result_name(row, 1));
			queue_groups_groups[row] = isnull ? -1 : DatumGetInt32(group);
		}
		queue_groups_n = (int) SPI_processed;
		queue_groups_shared_generation = shared_generation;
		queue_groups_local_generation = local_generation;
		queue_groups_epoch = epoch;
	}

	names = palloc(sizeof(Datum) * Max(queue_groups_n, 1));
	for (int i = 0; i < queue_groups_n; i++)
	{
		bool		match = (n == 0);

		for (int k = 0; k < n && !match; k++)
			match = queue_groups_groups[i] == groups[k];
		if (match)
			names[count++] = CStringGetTextDatum(queue_groups_names[i]);
	}
	return PointerGetDatum(construct_array(names, count, TEXTOID, -1, false,
										   TYPALIGN_INT));
}
