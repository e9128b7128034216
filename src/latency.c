/*-------------------------------------------------------------------------
 *
 * latency.c
 *	  Latency histograms per queue: the buckets, the quantiles, and
 *	  jq_latency(), jq_latency_buckets(), jq_latency_reset().
 *
 * What is measured (the kinds of JqLatencyKind in jobqueue.h), each from
 * values that the statements moving the job return anyway, with no
 * statement of its own:
 *
 *	  wait	 claim time - available_at (the moment the job became
 *			 claimable: its run_at, the end of a backoff or a release
 *			 delay, its release by its last dependency), by the claims;
 *	  run	 end of the attempt - started_at, by complete, fail, release
 *			 and the reaper (a lease lost ends when the reaper finds it);
 *	  total	 succeeded or dead - created_at, by complete, fail and the
 *			 reaper (a replayed job counts from its first enqueue).
 *
 * The histograms live in the counters' entries (counters.c): one set per
 * (database, queue), in the same bounded table with the same overflow row,
 * published at commit like the events, removed by jq_counters_reset() and
 * zeroed by jq_latency_reset().
 *
 * Buckets are log-linear (as HdrHistogram's): [0, 100 us), then for each
 * octave [100 us * 2^k, 100 us * 2^(k+1)), k = 0 .. 31, sixteen buckets of
 * equal width, then [100 us * 2^32, infinity) (2^32 * 100 us is 4.97
 * days).  A bucket is at most 1/16 of its lower bound wide, so a quantile
 * read by interpolation inside its bucket is within 6.25 %, about 3 % on
 * average, of the true value.  Each histogram is 514 counters of 8 bytes
 * plus count, sum and max: 4,136 bytes, three per queue.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include <math.h>

#include "port/pg_bitutils.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jq_latency);
PG_FUNCTION_INFO_V1(jq_latency_buckets);
PG_FUNCTION_INFO_V1(jq_latency_histograms);
PG_FUNCTION_INFO_V1(jq_latency_reset);

/* The first value (us) of the last bucket: 100 us * 2^32 */
#define JQ_LAT_TOP_US	((int64) JQ_LAT_BASE_US << JQ_LAT_OCTAVES)

static const char *const jq_latency_kind_names[JQ_NUM_LATENCIES] = {
	"wait", "run", "total"
};

/* The bucket of a latency of us microseconds (us >= 0) */
int
jq_latency_bucket(int64 us)
{
	uint64		w;
	int			k;

	if (us < JQ_LAT_BASE_US)
		return 0;
	if (us >= JQ_LAT_TOP_US)
		return JQ_LAT_BUCKETS - 1;

	/*
	 * w >= 16 * 2^k exactly when us >= 100 us * 2^k, and within octave k
	 * the bucket is w / 2^k - 16: integer arithmetic only.
	 */
	w = (uint64) us * JQ_LAT_SUB / JQ_LAT_BASE_US;
	k = pg_leftmost_one_pos64(w) - 4;
	return 1 + k * JQ_LAT_SUB + (int) ((w >> k) - JQ_LAT_SUB);
}

/* The lower bound of bucket b, in seconds */
static double
jq_latency_lower(int b)
{
	int			k;
	int			i;

	if (b == 0)
		return 0.0;
	if (b == JQ_LAT_BUCKETS - 1)
		return ldexp(JQ_LAT_BASE_US / 1e6, JQ_LAT_OCTAVES);
	k = (b - 1) / JQ_LAT_SUB;
	i = (b - 1) % JQ_LAT_SUB;
	return ldexp(JQ_LAT_BASE_US / 1e6 * (JQ_LAT_SUB + i) / JQ_LAT_SUB, k);
}

/* The upper bound of bucket b, in seconds (infinity for the last) */
static double
jq_latency_upper(int b)
{
	if (b == JQ_LAT_BUCKETS - 1)
		return get_float8_infinity();
	return jq_latency_lower(b + 1);
}

/*
 * Quantile q (0 < q <= 1) of histogram lat (count > 0), in microseconds:
 * interpolated inside the bucket that holds the rank, never above the
 * largest value seen.
 */
static int64
jq_latency_quantile(const JqLatency *lat, double q)
{
	int64		rank = (int64) ceil(q * (double) lat->count);
	int64		seen = 0;
	int			b;

	if (rank < 1)
		rank = 1;
	for (b = 0; b < JQ_LAT_BUCKETS; b++)
	{
		int64		n = lat->buckets[b];

		if (n > 0 && seen + n >= rank)
		{
			double		lo;
			double		hi;
			double		v;

			if (b == JQ_LAT_BUCKETS - 1)
				return lat->max_us;
			lo = jq_latency_lower(b) * 1e6;
			hi = jq_latency_upper(b) * 1e6;
			v = lo + (hi - lo) * (double) (rank - seen) / (double) n;
			return Min((int64) v, lat->max_us);
		}
		seen += n;
	}
	return lat->max_us;
}

/* An interval of us microseconds */
static Datum
jq_interval_us(int64 us)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = us;
	return IntervalPGetDatum(iv);
}

/* The queue_name argument of the functions below: NULL means all */
static char *
jq_latency_queue_arg(FunctionCallInfo fcinfo)
{
	return PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
}

/*
 * jq_latency(queue_name text DEFAULT NULL)
 *		returns table(queue_name, kind, count, p50, p90, p99, max, sum, since)
 *
 * One row per queue of the current database that timed something (and the
 * overflow row '*', once it has), and kind: wait, run, total.  The
 * quantiles are NULL while count is 0.
 */
Datum
jq_latency(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_latency_queue_arg(fcinfo);
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	JqLatencySnapshot *snaps;
	int			n;
	int			s;

	jq_require_counters();
	tupstore = jq_srf_init(fcinfo, &tupdesc);
	if (tupdesc->natts != 9)
		elog(ERROR, "jq_latency: unexpected result type with %d columns",
			 tupdesc->natts);
	n = jq_latency_snapshot(queue_name, &snaps);
	for (s = 0; s < n; s++)
	{
		int			k;

		for (k = 0; k < JQ_NUM_LATENCIES; k++)
		{
			const JqLatency *lat = &snaps[s].lat[k];
			Datum		values[9];
			bool		nulls[9];

			memset(nulls, false, sizeof(nulls));
			values[0] = CStringGetTextDatum(snaps[s].queue_name);
			values[1] = CStringGetTextDatum(jq_latency_kind_names[k]);
			values[2] = Int64GetDatum(lat->count);
			if (lat->count > 0)
			{
				values[3] = jq_interval_us(jq_latency_quantile(lat, 0.50));
				values[4] = jq_interval_us(jq_latency_quantile(lat, 0.90));
				values[5] = jq_interval_us(jq_latency_quantile(lat, 0.99));
				values[6] = jq_interval_us(lat->max_us);
			}
			else
				nulls[3] = nulls[4] = nulls[5] = nulls[6] = true;
			values[7] = jq_interval_us(lat->sum_us);
			values[8] = TimestampTzGetDatum(snaps[s].since);
			tuplestore_putvalues(tupstore, tupdesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/*
 * jq_latency_buckets(queue_name text DEFAULT NULL)
 *		returns table(queue_name, kind, bucket, le, count)
 *
 * The histograms of jq_latency() bucket by bucket, as a Prometheus
 * histogram has them: le the bucket's upper bound in seconds (infinity for
 * the last), count the number of values below it (cumulative).  Every
 * bucket, JQ_LAT_BUCKETS rows per queue and kind; the upper bounds of the
 * buckets numbered a multiple of 16 are 100 us * 2^(bucket / 16), one per
 * octave, a coarser histogram that is still exact.
 */
Datum
jq_latency_buckets(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_latency_queue_arg(fcinfo);
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	JqLatencySnapshot *snaps;
	int			n;
	int			s;

	jq_require_counters();
	tupstore = jq_srf_init(fcinfo, &tupdesc);
	if (tupdesc->natts != 5)
		elog(ERROR, "jq_latency_buckets: unexpected result type with %d columns",
			 tupdesc->natts);
	n = jq_latency_snapshot(queue_name, &snaps);
	for (s = 0; s < n; s++)
	{
		int			k;

		for (k = 0; k < JQ_NUM_LATENCIES; k++)
		{
			const JqLatency *lat = &snaps[s].lat[k];
			Datum		queue = CStringGetTextDatum(snaps[s].queue_name);
			Datum		kind = CStringGetTextDatum(jq_latency_kind_names[k]);
			int64		cumulative = 0;
			int			b;

			for (b = 0; b < JQ_LAT_BUCKETS; b++)
			{
				Datum		values[5];
				bool		nulls[5] = {false, false, false, false, false};

				cumulative += lat->buckets[b];
				values[0] = queue;
				values[1] = kind;
				values[2] = Int32GetDatum(b);
				values[3] = Float8GetDatum(jq_latency_upper(b));
				values[4] = Int64GetDatum(cumulative);
				tuplestore_putvalues(tupstore, tupdesc, values, nulls);
			}
		}
	}
	return (Datum) 0;
}

/*
 * jq_latency_histograms(queue_name text DEFAULT NULL)
 *		returns table(queue_name, kind, le, counts, count, sum)
 *
 * The histograms of jq_latency() one row per queue and kind, one bucket per
 * octave, in the shape of a Prometheus histogram: le the upper bounds in
 * seconds (100 us * 2^n, the bounds of the buckets numbered a multiple of
 * JQ_LAT_SUB, without the infinite last), counts the cumulative counts at
 * those bounds, count (the +Inf bucket) and sum in seconds, all from one
 * snapshot.  What a metrics exporter reads at every scrape: a few rows per
 * queue, where jq_latency_buckets has 514 per queue and kind.
 */
Datum
jq_latency_histograms(PG_FUNCTION_ARGS)
{
	char	   *queue_name = jq_latency_queue_arg(fcinfo);
	const int	nbounds = JQ_LAT_OCTAVES + 1;
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	JqLatencySnapshot *snaps;
	Datum	   *bounds;
	Datum	   *counts;
	ArrayType  *le;
	int			n;
	int			s;
	int			i;

	jq_require_counters();
	tupstore = jq_srf_init(fcinfo, &tupdesc);
	if (tupdesc->natts != 6)
		elog(ERROR, "jq_latency_histograms: unexpected result type with %d columns",
			 tupdesc->natts);
	bounds = palloc(sizeof(Datum) * nbounds);
	counts = palloc(sizeof(Datum) * nbounds);
	for (i = 0; i < nbounds; i++)
		bounds[i] = Float8GetDatum(jq_latency_upper(i * JQ_LAT_SUB));
	le = construct_array(bounds, nbounds, FLOAT8OID, sizeof(float8),
						 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	n = jq_latency_snapshot(queue_name, &snaps);
	for (s = 0; s < n; s++)
	{
		int			k;

		for (k = 0; k < JQ_NUM_LATENCIES; k++)
		{
			const JqLatency *lat = &snaps[s].lat[k];
			Datum		values[6];
			bool		nulls[6] = {false, false, false, false, false, false};
			int64		cumulative = 0;
			int			b = 0;

			for (i = 0; i < nbounds; i++)
			{
				for (; b <= i * JQ_LAT_SUB; b++)
					cumulative += lat->buckets[b];
				counts[i] = Int64GetDatum(cumulative);
			}
			values[0] = CStringGetTextDatum(snaps[s].queue_name);
			values[1] = CStringGetTextDatum(jq_latency_kind_names[k]);
			values[2] = PointerGetDatum(le);
			values[3] = PointerGetDatum(construct_array(counts, nbounds, INT8OID,
														sizeof(int64), FLOAT8PASSBYVAL,
														TYPALIGN_DOUBLE));
			values[4] = Int64GetDatum(lat->count);
			values[5] = Float8GetDatum((double) lat->sum_us / 1e6);
			tuplestore_putvalues(tupstore, tupdesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/*
 * jq_latency_reset(queue_name text DEFAULT NULL) returns void
 *
 * Zeroes the histograms of one queue, or of every queue of the current
 * database and of the overflow row (NULL); the event counters stay.
 */
Datum
jq_latency_reset(PG_FUNCTION_ARGS)
{
	jq_latency_clear(jq_latency_queue_arg(fcinfo));
	PG_RETURN_VOID();
}
