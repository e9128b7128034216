/*-------------------------------------------------------------------------
 *
 * version.c
 *	  Which library is loaded, and whether it fits the schema: jq_version(),
 *	  and the background worker's warning when it serves a database whose
 *	  ALTER EXTENSION UPDATE has not run.
 *
 * The library's version is default_version of jobqueue.control when it was
 * built (the Makefile passes it as JQ_LIBRARY_VERSION).  A library loaded
 * before `make install` stays loaded until the server restarts (when it is
 * in shared_preload_libraries) or the session ends: jq_version() tells it
 * apart from the extension's version in pg_extension.  An older library
 * cannot report anything itself; the 1.3--1.4 script detects it by the
 * symbol of jq_version, which it lacks.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#ifndef JQ_LIBRARY_VERSION
#error "JQ_LIBRARY_VERSION must be defined (the Makefile takes it from jobqueue.control)"
#endif

PG_FUNCTION_INFO_V1(jq_version);

/*
 * extversion of jobqueue in pg_extension of the current database, palloc'd;
 * NULL when the extension is not installed.  Needs a transaction.
 */
char *
jq_extension_version(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("jobqueue"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * jq_version(): the version of the library this session runs and the
 * version of the extension installed in this database.  They differ after
 * `make install` until the restart, or after the restart until ALTER
 * EXTENSION jobqueue UPDATE.
 */
Datum
jq_version(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	char	   *extversion;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	values[0] = CStringGetTextDatum(JQ_LIBRARY_VERSION);
	extversion = jq_extension_version();
	if (extversion != NULL)
		values[1] = CStringGetTextDatum(extversion);
	else
		nulls[1] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * Is version a (major.minor) older than b?  Versions that do not parse
 * count as older: the hint to run the update is the harmless one.
 */
static bool
jq_version_older(const char *a, const char *b)
{
	int			amaj,
				amin,
				bmaj,
				bmin;

	if (sscanf(a, "%d.%d", &amaj, &amin) != 2 || sscanf(b, "%d.%d", &bmaj, &bmin) != 2)
		return true;
	return amaj < bmaj || (amaj == bmaj && amin < bmin);
}

/*
 * Warn when the extension in this database is not at the library's
 * version: after the restart that loaded a new library, before ALTER
 * EXTENSION jobqueue UPDATE (the statements of a newer library fall back
 * to what an older schema has where they can, and say what is missing
 * where not), or after an update run before the restart.  The worker
 * calls it once per visit, in a transaction.
 */
void
jq_warn_schema_version(void)
{
	char	   *extversion = jq_extension_version();

	if (extversion == NULL || strcmp(extversion, JQ_LIBRARY_VERSION) == 0)
		return;
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("jobqueue library %s serves database \"%s\", where the extension is at version %s",
					JQ_LIBRARY_VERSION, get_database_name(MyDatabaseId), extversion),
			 jq_version_older(extversion, JQ_LIBRARY_VERSION) ?
			 errhint("Run ALTER EXTENSION jobqueue UPDATE in that database.") :
			 errhint("Restart the server so that the library of version %s is loaded.", extversion)));
}
