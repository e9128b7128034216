/*-------------------------------------------------------------------------
 *
 * jobqueue.c
 *	  Module entry point of jobqueue: GUCs of every part, shared memory.
 *
 * Everything that only needs SQL works when the library is loaded on demand
 * by CREATE EXTENSION.  Shared memory and the background workers exist only
 * when the library is in shared_preload_libraries; _PG_init then asks for
 * them: the shared memory hooks are installed here, once, and call the
 * size and init functions of counters.c, shmem.c and ratelimit.c.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

/*
 * Ask for the shared memory and the locks of the counters (counters.c) and
 * of the workers (shmem.c).
 */
static void
jq_shmem_request(void)
{
#if PG_VERSION_NUM >= 150000
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	RequestAddinShmemSpace(add_size(add_size(jq_counters_shmem_size(),
											 jq_workers_shmem_size()),
									jq_ratelimit_shmem_size()));
	RequestNamedLWLockTranche(JQ_COUNTERS_TRANCHE, 1);
	RequestNamedLWLockTranche(JQ_RATELIMIT_TRANCHE, 1);
	RequestNamedLWLockTranche(JQ_SHMEM_NAME, jq_workers_lock_count());
}

/* Create or attach to the shared state of the counters and the workers. */
static void
jq_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	jq_counters_shmem_init();
	jq_workers_shmem_init();
	jq_ratelimit_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Each part defines its own GUCs in its own file; shared memory is asked
 * for here, once, for all parts.
 */
void
_PG_init(void)
{
	jq_lifecycle_guc_init();
	jq_outcome_guc_init();
	jq_results_guc_init();
	jq_counters_guc_init();
	jq_trace_guc_init();
	jq_worker_guc_init();
	jq_ratelimit_guc_init();

	if (process_shared_preload_libraries_in_progress)
	{
#if PG_VERSION_NUM >= 150000
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = jq_shmem_request;
#else
		jq_shmem_request();
#endif
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = jq_shmem_startup;

		jq_utility_init();
		jq_delegation_init();
		if (!IsBinaryUpgrade)
			jq_launcher_register();
	}

#if PG_VERSION_NUM >= 150000
	MarkGUCPrefixReserved("jobqueue");
#else
	EmitWarningsOnPlaceholders("jobqueue");
#endif
}
