/*-------------------------------------------------------------------------
 *
 * validate.c
 *	  Argument checks shared by every SQL-callable function of jobqueue.
 *
 * Our functions are not STRICT: a NULL where a value is required gets an
 * error that names the argument, rather than a silent NULL result that a
 * caller would mistake for "fenced" or "nothing to do".  Every check raises
 * an ERROR with a specific SQLSTATE before anything is changed.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/*
 * Longest interval we accept for any policy or delay: interval '100 years',
 * measured as interval comparison does (30-day months), so that the check
 * agrees with "iv <= interval '100 years'".
 */
#define JQ_MAX_INTERVAL_USECS	(100.0 * MONTHS_PER_YEAR * DAYS_PER_MONTH * USECS_PER_DAY)

static void
jq_check_not_null(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
}

/*
 * Check that the len bytes at name are a valid queue name: 1 to 128
 * characters, each an ASCII letter, digit, or one of "_-.:".  Queue names
 * appear in NOTIFY payloads and metric labels, so we keep them plain.
 *
 * The characters are checked first, so that a name is called too long only
 * when it is made of valid characters; those are all one byte long, so the
 * length in bytes is then the length in characters.  Only the first 129
 * bytes are looked at: a longer name is either invalid there or too long.
 */
static void
jq_check_queue_name(const char *name, int len)
{
	int			i;

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("queue name must not be empty")));
	for (i = 0; i < len && i <= JQ_QUEUE_NAME_MAXLEN; i++)
	{
		char		c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') ||
			  c == '_' || c == '-' || c == '.' || c == ':'))
		{
			/* quote at most 128 characters of a long name */
			int			shown = pg_mbcharcliplen(name, len, JQ_QUEUE_NAME_MAXLEN);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("invalid queue name \"%.*s%s\"", shown, name,
							shown < len ? "..." : ""),
					 errdetail("Queue names consist of letters, digits and the characters \"_\", \"-\", \".\" and \":\".")));
		}
	}
	if (len > JQ_QUEUE_NAME_MAXLEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("queue name is too long"),
				 errdetail("Queue names have at most %d characters.",
						   JQ_QUEUE_NAME_MAXLEN)));
}

/* The queue name in argument argno, checked; palloc'd in the caller's context. */
char *
jq_arg_queue_name(FunctionCallInfo fcinfo, int argno)
{
	text	   *t;

	jq_check_not_null(fcinfo, argno, "queue name");
	t = PG_GETARG_TEXT_PP(argno);
	jq_check_queue_name(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	return text_to_cstring(t);
}

/*
 * A required, non-empty text argument of at most maxlen bytes (an owner,
 * an error code, an idempotency key).
 */
text *
jq_arg_nonempty_text(FunctionCallInfo fcinfo, int argno, const char *what,
					 int maxlen)
{
	text	   *t;
	int			len;

	jq_check_not_null(fcinfo, argno, what);
	t = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(t);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what)));
	jq_check_text_length(what, len, maxlen);
	return t;
}

/*
 * Error unless len, the length in bytes of a text value (uncompressed,
 * without its header), is at most maxlen; what names the value.
 */
void
jq_check_text_length(const char *what, int64 len, int maxlen)
{
	if (len > maxlen)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("%s is too long", what),
				 errdetail("The limit is %d bytes, the value has %lld.",
						   maxlen, (long long) len)));
}

/* A required argument of any type, as it was passed. */
Datum
jq_arg_required(FunctionCallInfo fcinfo, int argno, const char *what)
{
	jq_check_not_null(fcinfo, argno, what);
	return PG_GETARG_DATUM(argno);
}

/* A required bigint argument (job ids and tokens). */
int64
jq_arg_int8(FunctionCallInfo fcinfo, int argno, const char *what)
{
	jq_check_not_null(fcinfo, argno, what);
	return PG_GETARG_INT64(argno);
}

/* A required integer argument that must be at least 1. */
int32
jq_arg_positive_int4(FunctionCallInfo fcinfo, int argno, const char *what)
{
	int32		v;

	jq_check_not_null(fcinfo, argno, what);
	v = PG_GETARG_INT32(argno);
	if (v < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at least 1", what),
				 errdetail("The value given was %d.", v)));
	return v;
}

/* A required integer argument that must be at least 0. */
int32
jq_arg_nonnegative_int4(FunctionCallInfo fcinfo, int argno, const char *what)
{
	int32		v;

	jq_check_not_null(fcinfo, argno, what);
	v = PG_GETARG_INT32(argno);
	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", what),
				 errdetail("The value given was %d.", v)));
	return v;
}

/*
 * Check an interval used as a duration: finite, positive (or zero when
 * allow_zero), and at most 100 years, so that adding it to the current time
 * cannot leave the timestamp range.  Months count as 30 days and days as 24
 * hours, as in interval comparison.
 */
static void
jq_check_interval(Interval *iv, const char *what, bool allow_zero)
{
	double		usecs;

#if PG_VERSION_NUM >= 170000
	if (INTERVAL_NOT_FINITE(iv))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be finite", what)));
#endif
	usecs = (double) iv->month * DAYS_PER_MONTH * USECS_PER_DAY +
		(double) iv->day * USECS_PER_DAY + (double) iv->time;

	if (usecs < 0 || (usecs == 0 && !allow_zero))
	{
		if (allow_zero)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must be zero or positive", what)));
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must be positive", what)));
	}
	if (usecs > JQ_MAX_INTERVAL_USECS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not exceed 100 years", what)));

	/*
	 * A timestamp plus an interval adds the months, then the days, then the
	 * time, each with calendar rules (months of 28 to 31 days, days of 23 to
	 * 25 hours across a DST change).  With fields of both signs a positive
	 * interval can thus move a timestamp backwards on some dates ('1 mon -30
	 * days 1 second' in February), and a small total can hide millions of
	 * years of months that overflow the timestamp.  All fields have the sign
	 * of the total, then, and each is at most the total.
	 */
	if (iv->month < 0 || iv->day < 0 || iv->time < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not mix positive and negative fields", what),
				 errdetail("Months, days and time are added to a timestamp one after the other, so such an interval can be negative on some dates.")));
}

/* An interval argument; NULL is returned as NULL when allow_null. */
Interval *
jq_arg_interval(FunctionCallInfo fcinfo, int argno, const char *what,
				bool allow_null, bool allow_zero)
{
	Interval   *iv;

	if (PG_ARGISNULL(argno))
	{
		if (allow_null)
			return NULL;
		jq_check_not_null(fcinfo, argno, what);
	}
	iv = PG_GETARG_INTERVAL_P(argno);
	jq_check_interval(iv, what, allow_zero);
	return iv;
}

/* An optional timestamptz argument, which must be finite when given. */
Datum
jq_arg_timestamptz(FunctionCallInfo fcinfo, int argno, const char *what,
				   bool *isnull)
{
	TimestampTz ts;

	*isnull = PG_ARGISNULL(argno);
	if (*isnull)
		return (Datum) 0;
	ts = PG_GETARG_TIMESTAMPTZ(argno);
	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be finite", what)));
	return TimestampTzGetDatum(ts);
}

/*
 * Check a payload against jobqueue.max_payload_size.  The size is that of
 * the jsonb value before compression, read from its header or its TOAST
 * pointer, which costs no detoasting.  Every storage form counts: a short
 * (1-byte) header inline, a 4-byte header inline or compressed, and a
 * pointer to a value stored out of line (VARATT_IS_SHORT is true for those
 * too, so they are told apart first).
 */
void
jq_check_payload(Datum payload)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(payload);
	Size		size;

	if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
		size = toast_raw_datum_size(payload) - VARHDRSZ;
	else
		size = VARSIZE_ANY_EXHDR(v);

	if (size > (Size) jq_max_payload_size)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("job payload is too large"),
				 errdetail("The payload has %zu bytes; jobqueue.max_payload_size is %d bytes.",
						   size, jq_max_payload_size),
				 errhint("Store large data in a table of its own and put its key in the payload.")));
}

/*
 * A required one-dimensional array without NULL elements.  An empty array
 * is accepted.
 */
ArrayType *
jq_arg_array(FunctionCallInfo fcinfo, int argno, const char *what,
			 Oid elemtype)
{
	ArrayType  *arr;

	jq_check_not_null(fcinfo, argno, what);
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_ELEMTYPE(arr) != elemtype)
		elog(ERROR, "unexpected element type %u of %s", ARR_ELEMTYPE(arr), what);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what),
				 errdetail("The array has %d dimensions.", ARR_NDIM(arr))));
	if (array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain null elements", what)));
	return arr;
}

/* Raise the error for a queue that does not exist. */
void
jq_raise_unknown_queue(const char *queue_name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("queue \"%s\" does not exist", queue_name),
			 errhint("Create it with jobqueue.jq_create_queue('%s').",
					 queue_name)));
}
