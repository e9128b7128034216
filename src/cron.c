/*-------------------------------------------------------------------------
 *
 * cron.c
 *	  Cron expressions: the parser, the next-fire-time engine, and
 *	  jq_cron_next().
 *
 * An expression is five fields (minute hour day-of-month month day-of-week)
 * of comma-separated items, each "*", a value or a range "a-b", optionally
 * followed by a step "/s" ("a/s" means a to the field's maximum by s).
 * Months and weekdays may be named by their first three letters (jan, mon),
 * in any case; 0 and 7 are both Sunday.  As in Vixie cron, when both day
 * fields are restricted (neither starts with "*") a day matches when either
 * matches; otherwise both must.  The macros @yearly, @annually, @monthly,
 * @weekly, @daily, @midnight and @hourly stand for their five fields, and
 * "N seconds" (N from 1 to 59, as in pg_cron) fires at every multiple of N
 * seconds since 1970-01-01 00:00 UTC (for N dividing 60: at those seconds of
 * every minute).
 *
 * Times are wall-clock times in the schedule's time zone.  A wall-clock time
 * that does not exist (in a spring-forward gap) fires once, at the first
 * instant after the gap (the transition itself); a wall-clock time that
 * occurs twice (in a fall-back overlap) fires once, at its first occurrence.
 * So every fire time is a distinct instant and the sequence increases.
 *
 * Nothing here reads a table or calls user code: the functions are pure,
 * and the background worker's scheduler uses them directly.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_cron_next);

/* Longest expression and time zone name accepted */
#define JQ_CRON_MAXLEN	1000
#define JQ_TZ_MAXLEN	255
/* jq_cron_next returns at most this many times per call */
#define JQ_CRON_MAX_COUNT 100000
/* an expression that does not fire within this many years never does */
#define JQ_CRON_SEARCH_YEARS 400

/* seconds between 1970-01-01 and 2000-01-01 (the TimestampTz epoch) */
#define JQ_UNIX_TO_PG_SECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

typedef struct JqCronField
{
	const char *name;
	int			min;
	int			max;
	const char *const *names;	/* names of min, min + 1, ...; or NULL */
} JqCronField;

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec", NULL
};
static const char *const day_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL
};

static const JqCronField fields[5] = {
	{"minute", 0, 59, NULL},
	{"hour", 0, 23, NULL},
	{"day-of-month", 1, 31, NULL},
	{"month", 1, 12, month_names},
	/* 7 is Sunday too; folded into 0 after parsing */
	{"day-of-week", 0, 7, day_names},
};

static const struct
{
	const char *macro;
	const char *fields;
}			macros[] = {
	{"@yearly", "0 0 1 1 *"},
	{"@annually", "0 0 1 1 *"},
	{"@monthly", "0 0 1 * *"},
	{"@weekly", "0 0 * * 0"},
	{"@daily", "0 0 * * *"},
	{"@midnight", "0 0 * * *"},
	{"@hourly", "0 * * * *"},
};

/*
 * While jq_cron_try_parse runs, errors jump back to it instead of being
 * raised.  The parser takes no resources but palloc'd memory, so leaving it
 * by a long jump is safe.
 */
static sigjmp_buf *soft_error_jump = NULL;
static char *soft_error_reason = NULL;

/*
 * Report an invalid expression; pos is the byte offset of the error, shown
 * as a character position counted from 1.
 */
static void
pg_attribute_noreturn()
jq_cron_error(const char *expr, int pos, const char *reason)
{
	if (soft_error_jump != NULL)
	{
		soft_error_reason = psprintf("at position %d: %s",
									 pg_mbstrlen_with_len(expr, pos) + 1, reason);
		siglongjmp(*soft_error_jump, 1);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid cron expression \"%s\"", expr),
			 errdetail("At position %d: %s.",
					   pg_mbstrlen_with_len(expr, pos) + 1, reason),
			 errhint("Use five fields (minute hour day-of-month month day-of-week), "
					 "a macro such as @daily, or \"N seconds\" with N from 1 to 59.")));
}

/* Report the unexpected (possibly multibyte) character at text[pos]. */
static void
pg_attribute_noreturn()
jq_cron_unexpected(const char *expr, const char *text, int offset, int pos,
				   const JqCronField *f)
{
	jq_cron_error(expr, offset + pos,
				  psprintf("unexpected character \"%.*s\" in the %s field",
						   pg_mblen(text + pos), text + pos, f->name));
}

static bool
jq_cron_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * Read a value of field f at expr[*pos]: a number or a name.  Returns the
 * value and advances *pos.
 */
static int
jq_cron_value(const char *expr, const char *text, int offset, int *pos,
			  const JqCronField *f)
{
	int			start = *pos;
	int			value = 0;

	if (isdigit((unsigned char) text[*pos]))
	{
		while (isdigit((unsigned char) text[*pos]))
		{
			if (value < 1000)
				value = value * 10 + (text[*pos] - '0');
			(*pos)++;
		}
		if (value < f->min || value > f->max)
			jq_cron_error(expr, offset + start,
						  psprintf("%d is out of range for the %s field (%d to %d)",
								   Min(value, 999), f->name, f->min, f->max));
		return value;
	}
	if (f->names != NULL && isalpha((unsigned char) text[*pos]))
	{
		char		word[4];
		int			len = 0;

		while (isalpha((unsigned char) text[*pos]))
		{
			if (len < 3)
				word[len] = pg_ascii_tolower((unsigned char) text[*pos]);
			len++;
			(*pos)++;
		}
		if (len == 3)
		{
			word[3] = '\0';
			for (int i = 0; f->names[i] != NULL; i++)
				if (strcmp(word, f->names[i]) == 0)
					return f->min + i;
		}
		jq_cron_error(expr, offset + start,
					  psprintf("unknown name in the %s field", f->name));
	}
	if (text[*pos] == '\0')
		jq_cron_error(expr, offset + start,
					  psprintf("a value is missing in the %s field", f->name));
	jq_cron_unexpected(expr, text, offset, *pos, f);
}

/*
 * Parse field f (the text at expr + offset, without spaces) into a bit
 * mask.  *star is set when the field starts with "*" (Vixie cron's rule
 * for the two day fields).
 */
static uint64
jq_cron_field(const char *expr, const char *text, int offset,
			  const JqCronField *f, bool *star)
{
	uint64		mask = 0;
	int			pos = 0;

	*star = text[0] == '*';
	for (;;)
	{
		int			lo,
					hi,
					step = 1;
		int			item = pos;

		if (text[pos] == '*')
		{
			lo = f->min;
			hi = f->max;
			pos++;
		}
		else
		{
			lo = hi = jq_cron_value(expr, text, offset, &pos, f);
			if (text[pos] == '-')
			{
				pos++;
				hi = jq_cron_value(expr, text, offset, &pos, f);
				if (hi < lo)
					jq_cron_error(expr, offset + item,
								  psprintf("the range %d-%d of the %s field is backwards",
										   lo, hi, f->name));
			}
			else if (text[pos] == '/')
				hi = f->max;
		}
		if (text[pos] == '/')
		{
			int			start = ++pos;

			step = 0;
			if (!isdigit((unsigned char) text[pos]))
				jq_cron_error(expr, offset + start,
							  psprintf("a step must be a number in the %s field", f->name));
			while (isdigit((unsigned char) text[pos]))
			{
				if (step < 1000)
					step = step * 10 + (text[pos] - '0');
				pos++;
			}
			if (step < 1 || step > f->max - f->min + 1)
				jq_cron_error(expr, offset + start,
							  psprintf("the step of the %s field must be between 1 and %d",
									   f->name, f->max - f->min + 1));
		}
		for (int v = lo; v <= hi; v += step)
			mask |= UINT64CONST(1) << v;

		if (text[pos] == '\0')
			break;
		if (text[pos] != ',')
			jq_cron_unexpected(expr, text, offset, pos, f);
		pos++;
	}
	return mask;
}

/* Parse "N seconds" (or "N second"); false when expr is not of that form. */
static bool
jq_cron_parse_seconds(const char *expr, JqCron *cron)
{
	const char *p = expr;
	int			n = 0;
	int			digits = 0;
	int			start;

	while (jq_cron_space(*p))
		p++;
	start = p - expr;
	while (isdigit((unsigned char) *p))
	{
		if (n < 1000)
			n = n * 10 + (*p - '0');
		digits++;
		p++;
	}
	if (digits == 0 || !jq_cron_space(*p))
		return false;
	while (jq_cron_space(*p))
		p++;
	if (pg_strncasecmp(p, "second", 6) != 0)
		return false;
	p += 6;
	if (*p == 's' || *p == 'S')
		p++;
	while (jq_cron_space(*p))
		p++;
	if (*p != '\0')
		return false;
	if (n < 1 || n > 59)
		jq_cron_error(expr, start,
					  "an interval in seconds must be between 1 and 59");
	cron->seconds = n;
	return true;
}

/*
 * Parse expr into *cron.  Raises 22023 (invalid_parameter_value) with the
 * position of the error in the detail.
 */
void
jq_cron_parse(const char *expr, JqCron *cron)
{
	const char *text = expr;
	const char *p;
	int			nfields = 0;
	int			len = strlen(expr);
	uint64		masks[5];
	bool		stars[5];
	int			macro_pos = -1;

	memset(cron, 0, sizeof(JqCron));
	if (len > JQ_CRON_MAXLEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cron expression is too long"),
				 errdetail("It has %d bytes; the limit is %d.", len, JQ_CRON_MAXLEN)));
	if (jq_cron_parse_seconds(expr, cron))
		return;

	/* a macro stands for its fields; errors cannot occur in those */
	for (p = expr; jq_cron_space(*p); p++)
		;
	if (*p == '@')
	{
		const char *end = p;
		int			wordlen;

		macro_pos = p - expr;
		while (*end != '\0' && !jq_cron_space(*end))
			end++;
		wordlen = end - p;
		for (const char *q = end; *q != '\0'; q++)
			if (!jq_cron_space(*q))
				jq_cron_error(expr, q - expr, "nothing may follow a macro");
		text = NULL;
		for (int i = 0; i < lengthof(macros); i++)
			if (wordlen == strlen(macros[i].macro) &&
				pg_strncasecmp(p, macros[i].macro, wordlen) == 0)
				text = macros[i].fields;
		if (text == NULL)
			jq_cron_error(expr, macro_pos, "unknown macro");
	}

	p = text;
	for (;;)
	{
		char		buf[JQ_CRON_MAXLEN + 1];
		int			start;
		int			flen;

		while (jq_cron_space(*p))
			p++;
		if (*p == '\0')
			break;
		start = p - text;
		while (*p != '\0' && !jq_cron_space(*p))
			p++;
		flen = (p - text) - start;
		if (nfields == 5)
			jq_cron_error(expr, start,
						  "too many fields: five are expected "
						  "(minute hour day-of-month month day-of-week)");
		memcpy(buf, text + start, flen);
		buf[flen] = '\0';
		masks[nfields] = jq_cron_field(expr, buf, macro_pos >= 0 ? macro_pos : start,
									   &fields[nfields], &stars[nfields]);
		nfields++;
	}
	if (nfields < 5)
		jq_cron_error(expr, len,
					  psprintf("%d field%s found where five are expected "
							   "(minute hour day-of-month month day-of-week)",
							   nfields, nfields == 1 ? "" : "s"));

	cron->minutes = masks[0];
	cron->hours = (uint32) masks[1];
	cron->days = (uint32) masks[2];
	cron->months = (uint16) masks[3];
	/* 7 is Sunday */
	cron->weekdays = (uint8) ((masks[4] | (masks[4] >> 7)) & 0x7F);
	cron->dom_star = stars[2];
	cron->dow_star = stars[4];
}

/*
 * Parse expr into *cron without raising an error: false, with the reason in
 * *reason (palloc'd), when the expression is invalid.  For expressions read
 * back from a table, which a hand-written UPDATE may have broken.
 */
bool
jq_cron_try_parse(const char *expr, JqCron *cron, char **reason)
{
	sigjmp_buf	jump;

	*reason = NULL;
	if (strlen(expr) > JQ_CRON_MAXLEN)
	{
		*reason = pstrdup("the expression is too long");
		return false;
	}
	if (sigsetjmp(jump, 0) != 0)
	{
		soft_error_jump = NULL;
		*reason = soft_error_reason;
		return false;
	}
	soft_error_jump = &jump;
	jq_cron_parse(expr, cron);
	soft_error_jump = NULL;
	return true;
}

/*
 * Look up a time zone by name, as PostgreSQL's TimeZone setting does.
 * Raises 22023 when the name is unknown.
 */
pg_tz *
jq_cron_timezone(const char *name)
{
	pg_tz	   *tz = NULL;

	if (name[0] != '\0' && strlen(name) <= JQ_TZ_MAXLEN)
		tz = pg_tzset(name);
	if (tz == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" is not recognized",
						strlen(name) <= 64 ? name :
						psprintf("%.*s...", pg_mbcliplen(name, strlen(name), 64), name)),
				 errhint("Use a name from pg_timezone_names, such as \"UTC\" or \"Europe/Paris\".")));
	return tz;
}

/* UTC offset (seconds east) in zone tz at Unix time t */
static long
jq_gmtoff(pg_time_t t, const pg_tz *tz)
{
	struct pg_tm *tm = pg_localtime(&t, tz);

	return tm != NULL ? tm->tm_gmtoff : 0;
}

/*
 * The instant (Unix time) a wall-clock time fires at.  local is the wall
 * clock read as if it were UTC.  The offsets one day before and after are
 * the two that can apply (no zone changes its offset twice in two days);
 * a wall-clock time that exists with both is in an overlap and fires at
 * the earlier instant; one that exists with neither is in a gap and fires
 * at the transition, found by bisection.
 */
static pg_time_t
jq_wall_to_unix(pg_time_t local, const pg_tz *tz)
{
	long		off_before = jq_gmtoff(local - SECS_PER_DAY, tz);
	long		off_after = jq_gmtoff(local + SECS_PER_DAY, tz);
	pg_time_t	t_before = local - off_before;
	pg_time_t	t_after = local - off_after;
	bool		ok_before = jq_gmtoff(t_before, tz) == off_before;
	bool		ok_after = jq_gmtoff(t_after, tz) == off_after;
	pg_time_t	lo,
				hi;

	if (ok_before && ok_after)
		return Min(t_before, t_after);
	if (ok_before)
		return t_before;
	if (ok_after)
		return t_after;

	/*
	 * A gap: the offset grows from off_before to off_after, and the
	 * transition lies in (t_after, t_before].  Find its first instant.
	 */
	lo = Min(t_before, t_after);
	hi = Max(t_before, t_after);
	while (hi - lo > 1)
	{
		pg_time_t	mid = lo + (hi - lo) / 2;

		if (jq_gmtoff(mid, tz) == off_before)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* Does the day jd (a Julian day number) match the day fields? */
static bool
jq_cron_day_matches(const JqCron *cron, int jd, int mday)
{
	bool		dom = (cron->days & (((uint32) 1) << mday)) != 0;
	bool		dow = (cron->weekdays & (1 << j2day(jd))) != 0;

	if (cron->dom_star || cron->dow_star)
		return dom && dow;
	return dom || dow;
}

/*
 * The first fire time of cron in zone tz strictly after 'after'.  Returns
 * DT_NOEND when there is none within JQ_CRON_SEARCH_YEARS years or before
 * the year 9999.
 */
TimestampTz
jq_cron_next_time(const JqCron *cron, pg_tz *tz, TimestampTz after)
{
	int64		after_secs;
	pg_time_t	unix_after;
	struct pg_tm *tm;
	int			jd;
	int			minute;
	int			year,
				month,
				mday;
	int			last_year;

	Assert(!TIMESTAMP_NOT_FINITE(after));
	/* whole seconds, rounded down: "strictly after" holds for fractions */
	after_secs = after >= 0 ? after / USECS_PER_SEC :
		-((-after + USECS_PER_SEC - 1) / USECS_PER_SEC);
	unix_after = after_secs + JQ_UNIX_TO_PG_SECS;

	if (cron->seconds > 0)
	{
		pg_time_t	n = cron->seconds;
		pg_time_t	next = (unix_after >= 0 ? unix_after / n :
							-((-unix_after + n - 1) / n)) * n + n;

		return (TimestampTz) (next - JQ_UNIX_TO_PG_SECS) * USECS_PER_SEC;
	}

	/* the wall clock at 'after', then its next whole minute */
	tm = pg_localtime(&unix_after, tz);
	if (tm == NULL)
		return DT_NOEND;
	year = tm->tm_year + 1900;
	jd = date2j(year, tm->tm_mon + 1, tm->tm_mday);
	minute = tm->tm_hour * 60 + tm->tm_min + 1;
	if (minute == 24 * 60)
	{
		jd++;
		minute = 0;
	}
	last_year = Min(year + JQ_CRON_SEARCH_YEARS, 9999);

	for (;;)
	{
		int			hour;

		j2date(jd, &year, &month, &mday);
		if (year > last_year)
			return DT_NOEND;
		if ((cron->months & (1 << month)) == 0)
		{
			/* the first day of the next month */
			jd = month == 12 ? date2j(year + 1, 1, 1) : date2j(year, month + 1, 1);
			minute = 0;
			continue;
		}
		if (!jq_cron_day_matches(cron, jd, mday))
		{
			jd++;
			minute = 0;
			continue;
		}
		hour = minute / 60;
		if ((cron->hours & (((uint32) 1) << hour)) == 0)
		{
			minute = (hour + 1) * 60;
		}
		else if ((cron->minutes & (UINT64CONST(1) << (minute % 60))) == 0)
		{
			minute++;
		}
		else
		{
			pg_time_t	local = ((pg_time_t) (jd - UNIX_EPOCH_JDATE)) * SECS_PER_DAY +
				minute * SECS_PER_MINUTE;
			pg_time_t	t = jq_wall_to_unix(local, tz);

			/*
			 * A wall-clock time in the second half of an overlap fires at its
			 * first occurrence, which may be before 'after': go on.
			 */
			if (t > unix_after)
				return (TimestampTz) (t - JQ_UNIX_TO_PG_SECS) * USECS_PER_SEC;
			minute++;
		}
		if (minute >= 24 * 60)
		{
			jd++;
			minute = 0;
		}
	}
}

/*
 * jq_cron_next(cron, after, timezone, count) returns setof timestamptz
 *
 * The next count fire times of cron in zone timezone, strictly after
 * 'after'.  Fewer when the expression stops firing (for instance
 * '0 0 30 2 *', which never does).
 */
Datum
jq_cron_next(PG_FUNCTION_ARGS)
{
	JqCron		cron;
	pg_tz	   *tz;
	TimestampTz after;
	int32		count;
	bool		isnull;
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	char	   *expr;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cron must not be null")));
	expr = text_to_cstring(PG_GETARG_TEXT_PP(0));
	after = DatumGetTimestampTz(jq_arg_timestamptz(fcinfo, 1, "after", &isnull));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("after must not be null")));
	if (PG_NARGS() > 2 && PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("timezone must not be null")));
	count = PG_NARGS() > 3 ? jq_arg_positive_int4(fcinfo, 3, "count") : 1;
	if (count > JQ_CRON_MAX_COUNT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("count must not exceed %d", JQ_CRON_MAX_COUNT),
				 errdetail("The value given was %d.", count)));

	jq_cron_parse(expr, &cron);
	tz = jq_cron_timezone(PG_NARGS() > 2 ?
						  text_to_cstring(PG_GETARG_TEXT_PP(2)) : "UTC");

	store = jq_srf_init(fcinfo, &tupdesc);
	for (int i = 0; i < count; i++)
	{
		Datum		value;
		bool		null = false;

		CHECK_FOR_INTERRUPTS();
		after = jq_cron_next_time(&cron, tz, after);
		if (after == DT_NOEND || !IS_VALID_TIMESTAMP(after))
			break;
		value = TimestampTzGetDatum(after);
		tuplestore_putvalues(store, tupdesc, &value, &null);
	}
	return (Datum) 0;
}
