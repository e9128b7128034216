/*-------------------------------------------------------------------------
 *
 * jobqueue.c
 *	  Module entry point and configuration parameters of jobqueue.
 *
 * Everything that only needs SQL works when the library is loaded on demand
 * by CREATE EXTENSION.  Shared memory and the background workers exist only
 * when the library is in shared_preload_libraries; _PG_init then asks for
 * them (see shmem.c and launcher.c).
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "miscadmin.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

/* Hot-path limits, all settable per session. */
int			jq_max_claim_batch = 1000;
int			jq_max_payload_size = 1024 * 1024;
int			jq_max_error_length = 2048;
int			jq_error_history = 10;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("jobqueue.max_claim_batch",
							"Largest number of jobs one jq_claim call may lease.",
							NULL,
							&jq_max_claim_batch,
							1000, 1, 1000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	/*
	 * Up to 1 GB, as documented.  No value can be larger than 1 GB less its
	 * header (the limit of any varlena, jsonb's is lower still), so at the
	 * top of the range the setting means "no limit of our own".
	 */
	DefineCustomIntVariable("jobqueue.max_payload_size",
							"Largest accepted job payload.",
							"Measured on the stored jsonb value, before compression.",
							&jq_max_payload_size,
							1024 * 1024, 1, 1024 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	/*
	 * At most 64 kB x error_history (at most 1000) entries keeps a job's
	 * history far below jsonb's 256 MB limit, so appending to it never fails.
	 */
	DefineCustomIntVariable("jobqueue.max_error_length",
							"Longest error message kept in a job's history.",
							"Longer messages are cut on a character boundary.",
							&jq_max_error_length,
							2048, 16, 64 * 1024,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("jobqueue.error_history",
							"Number of failures kept in a job's error history.",
							"Older entries are dropped, newest are kept.",
							&jq_error_history,
							10, 1, 1000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	/* event counters: their GUCs, and shared memory when preloaded */
	jq_counters_init();

	/* background workers: their GUCs always, the rest only when preloaded */
	jq_worker_guc_init();
	if (process_shared_preload_libraries_in_progress)
	{
		jq_shmem_init();
		jq_utility_init();
		if (!IsBinaryUpgrade)
			jq_launcher_register();
	}

#if PG_VERSION_NUM >= 150000
	MarkGUCPrefixReserved("jobqueue");
#else
	EmitWarningsOnPlaceholders("jobqueue");
#endif
}
