/*-------------------------------------------------------------------------
 *
 * trace.c
 *	  W3C trace context of jobs: the settings jobqueue.traceparent and
 *	  jobqueue.tracestate, their checks, and the explicit traceparent and
 *	  tracestate arguments of jq_enqueue, jq_enqueue_many and jq_schedule.
 *
 * A job records the trace context of whoever enqueued it, from one of two
 * sources: the explicit argument of the call, or else the session's
 * setting (so that a trigger or a PL/pgSQL function inherits what the
 * application set with SET LOCAL jobqueue.traceparent = '...').  The
 * columns traceparent and tracestate of jobqueue.jobs and
 * jobqueue.schedules default to the settings, so every INSERT, by any
 * statement, records the session's context with no parameter of its own;
 * an explicit argument is the setting for the duration of the call, as a
 * function's SET clause would be (jq_trace_push).  A scheduled run gets
 * the context its schedule recorded, a dependent released by its last
 * dependency the dependency's traceparent as trace_origin, a replay the
 * replayer's context and its previous traceparent as trace_origin (see
 * plans.c).  The claims return all three.
 *
 * Checks: a traceparent is version-00 or a later version's form of
 * "vv-<32 hex>-<16 hex>-<2 hex>", lower case, neither id all zeros,
 * version ff refused; a tracestate is at most 512 printable ASCII
 * characters.  An invalid value is refused with 22023
 * (invalid_parameter_value), by SET and by the arguments alike.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "utils/builtins.h"
#include "utils/guc.h"

PG_FUNCTION_INFO_V1(jq_enqueue);
PG_FUNCTION_INFO_V1(jq_enqueue_many);
PG_FUNCTION_INFO_V1(jq_schedule);

#define JQ_TRACESTATE_MAXLEN 512

static char *jq_traceparent = NULL;
static char *jq_tracestate = NULL;

static bool
jq_is_lower_hex(const char *s, int n, bool *all_zero)
{
	int			i;

	*all_zero = true;
	for (i = 0; i < n; i++)
	{
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
		if (s[i] != '0')
			*all_zero = false;
	}
	return true;
}

/*
 * Is value a valid traceparent?  Sets *why to the reason when not.
 * "" means none.
 */
static bool
jq_traceparent_valid(const char *value, const char **why)
{
	size_t		len = strlen(value);
	bool		zero;

	if (len == 0)
		return true;
	if (len < 55 || value[2] != '-' || value[35] != '-' || value[52] != '-')
	{
		*why = "A traceparent has the form 00-<32 hex digits>-<16 hex digits>-<2 hex digits>.";
		return false;
	}
	if (!jq_is_lower_hex(value, 2, &zero) || strncmp(value, "ff", 2) == 0)
	{
		*why = "The version must be two lower-case hex digits other than ff.";
		return false;
	}
	if (strncmp(value, "00", 2) == 0 ? len != 55 : (len > 55 && value[55] != '-'))
	{
		*why = "A traceparent has the form 00-<32 hex digits>-<16 hex digits>-<2 hex digits>.";
		return false;
	}
	if (!jq_is_lower_hex(value + 3, 32, &zero) || zero)
	{
		*why = "The trace id must be 32 lower-case hex digits, not all zero.";
		return false;
	}
	if (!jq_is_lower_hex(value + 36, 16, &zero) || zero)
	{
		*why = "The parent id must be 16 lower-case hex digits, not all zero.";
		return false;
	}
	if (!jq_is_lower_hex(value + 53, 2, &zero))
	{
		*why = "The flags must be two lower-case hex digits.";
		return false;
	}
	return true;
}

static bool
jq_traceparent_check(char **newval, void **extra, GucSource source)
{
	const char *why = NULL;

	if (*newval == NULL || jq_traceparent_valid(*newval, &why))
		return true;
	GUC_check_errdetail("%s", why);
	return false;
}

static bool
jq_tracestate_check(char **newval, void **extra, GucSource source)
{
	const char *p;

	if (*newval == NULL)
		return true;
	if (strlen(*newval) > JQ_TRACESTATE_MAXLEN)
	{
		GUC_check_errdetail("A tracestate is at most %d characters.", JQ_TRACESTATE_MAXLEN);
		return false;
	}
	for (p = *newval; *p; p++)
	{
		if (*p < 0x20 || *p > 0x7e)
		{
			GUC_check_errdetail("A tracestate holds printable ASCII characters only.");
			return false;
		}
	}
	return true;
}

/* Define the settings.  Called from _PG_init. */
void
jq_trace_guc_init(void)
{
	DefineCustomStringVariable("jobqueue.traceparent",
							   "W3C traceparent recorded with the jobs this session enqueues.",
							   "Used when jq_enqueue, jq_enqueue_many or jq_schedule gets no traceparent argument; empty: none.",
							   &jq_traceparent,
							   "",
							   PGC_USERSET, 0,
							   jq_traceparent_check, NULL, NULL);
	DefineCustomStringVariable("jobqueue.tracestate",
							   "W3C tracestate recorded with jobqueue.traceparent.",
							   NULL,
							   &jq_tracestate,
							   "",
							   PGC_USERSET, 0,
							   jq_tracestate_check, NULL, NULL);
}

/*
 * The session's trace context, jobqueue.traceparent and jobqueue.tracestate,
 * as text Datums, each NULL (nulls[i] = JQ_ISNULL) when empty: parameters
 * of the replay statements, which Citus could not run with
 * current_setting() (STABLE) in their UPDATE.
 */
void
jq_trace_session(Datum *values, char *nulls)
{
	const char *settings[2] = {jq_traceparent, jq_tracestate};

	for (int i = 0; i < 2; i++)
	{
		if (settings[i] == NULL || settings[i][0] == '\0')
		{
			values[i] = (Datum) 0;
			nulls[i] = JQ_ISNULL;
		}
		else
		{
			values[i] = CStringGetTextDatum(settings[i]);
			nulls[i] = JQ_NOTNULL;
		}
	}
}

/*
 * The explicit trace context of a call: arguments argno (traceparent) and
 * argno + 1 (tracestate), when given, become the settings until
 * jq_trace_pop (or the end of the (sub)transaction, on an error).  With a
 * traceparent but no tracestate the session's tracestate is not used.
 * Returns the GUC nesting level to pop, or -1 when nothing was set.
 */
static int
jq_trace_push(FunctionCallInfo fcinfo, int argno)
{
	int			nest;
	char	   *traceparent;
	char	   *tracestate = "";

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return -1;
	traceparent = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (PG_NARGS() > argno + 1 && !PG_ARGISNULL(argno + 1))
		tracestate = text_to_cstring(PG_GETARG_TEXT_PP(argno + 1));
	nest = NewGUCNestLevel();
	(void) set_config_option("jobqueue.traceparent", traceparent,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, ERROR, false);
	(void) set_config_option("jobqueue.tracestate", tracestate,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, ERROR, false);
	return nest;
}

static void
jq_trace_pop(int nest)
{
	if (nest >= 0)
		AtEOXact_GUC(true, nest);
}

/*
 * jq_enqueue(..., group_key, traceparent, tracestate): the enqueue
 * (lifecycle.c) with the trace context of the last two arguments (absent
 * in a definition from before 1.4)
 */
Datum
jq_enqueue(PG_FUNCTION_ARGS)
{
	int			nest = jq_trace_push(fcinfo, 8);
	Datum		result = jq_enqueue_call(fcinfo);

	jq_trace_pop(nest);
	return result;
}

/* jq_enqueue_many(..., group_keys, traceparent, tracestate) */
Datum
jq_enqueue_many(PG_FUNCTION_ARGS)
{
	int			nest = jq_trace_push(fcinfo, 6);
	Datum		result = jq_enqueue_many_call(fcinfo);

	jq_trace_pop(nest);
	return result;
}

/* jq_schedule(..., enabled, traceparent, tracestate) */
Datum
jq_schedule(PG_FUNCTION_ARGS)
{
	int			nest = jq_trace_push(fcinfo, 8);
	Datum		result = jq_schedule_call(fcinfo);

	jq_trace_pop(nest);
	return result;
}
