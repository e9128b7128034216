#!/usr/bin/env bash
# jobqueue benchmark suite: jq_* functions side by side with the equivalent
# hand-written SQL, with pgbench custom scripts.
#
# Usage (as root, or with sudo, on Debian bookworm):
#     sudo bench/run.sh                    full run (about 50 minutes)
#     sudo BENCH_QUICK=1 bench/run.sh      small sizes, short runs (about 8 minutes),
#                                          results in bench/work-quick/, not bench/results/
#     sudo BENCH_ONLY="throughput naive" bench/run.sh    some parts only
#     sudo bench/naive.sh                  one part alone (any part below)
#
# It installs what is missing (PostgreSQL 15, gnuplot-nox), builds and
# installs the extension (PG_CONFIG=... to pick another installation), starts
# a throwaway tuned cluster in bench/work/ (git-ignored) as user postgres, runs
# the parts below, and writes CSV files and PNG plots to bench/results/
# (BENCH_RESULTS=... to write elsewhere).  See bench/README.md for what each
# part measures and how to read the results.
#
# Parts (BENCH_ONLY picks a subset, in this order), each in bench/<part>.sh,
# with what they share in bench/lib.sh:
#   throughput  claim+complete (batch 1, 10, 100) and enqueue (1, 100),
#               jobqueue and hand-written SQL interleaved, synchronous_commit
#               on and off, median of BENCH_ROUNDS runs; jobs/s, WAL and
#               server CPU per job
#   roundtrip   the worker loop with one round trip per turn
#               (jq_complete_and_claim) against two (jq_claim + complete,
#               and the hand-written statements), on the local socket and
#               over network links (bench/netdelay, needs Go)
#   diag        where the time goes: pg_stat_statements (nested statements
#               too) for claim+complete of 1 and 100 jobs, both ways
#   naive       the classic broken claim vs jq_claim, 8 clients x 1250 claims
#               on 10,000 jobs
#   growth      claim latency p50/p99 with 10k..10M pending jobs, and with
#               10M finished jobs beside 10k pending
#   reap        time to clear 100k and 1M expired leases
#   bloat       table and index size after 100k and 1M jobs flowed through,
#               with and without purging
#   peers       jobqueue, a minimal hand-written table, pg-boss,
#               graphile-worker and jobqueue's Node.js client draining the
#               same backlog of 100,000 no-op jobs, rounds alternating; WAL
#               bytes per job; where jobqueue's server time goes
#               (bench/peers.sh; needs Node.js 20 or later for pg-boss 10,
#               npm and the npm registry)
#   wal         bench/wal.sh, on two clusters of its own: this tree against
#               the 1.2 baseline (BENCH_OLD_REF, df97d69): WAL per job,
#               claim latency beside a finished history, enqueue, claim,
#               reap and purge rates, size with purging.  The baseline's
#               installation is PG_CONFIG_OLD; without it, a copy of
#               PG_CONFIG's installation in bench/work-pg-df97d69 with the
#               baseline built into it (made once, then used again)
#   clients     bench/clients.sh, on a cluster of its own: the workers of
#               the Python, Node.js and Go clients against pgbench running
#               the same SQL (needs Go, Node.js, npm and the npm registry)
#   churn       steady-rate enqueue+claim+complete, sampled over time
#
# Then bench/targets.sh: every target of issues 14 and 15, the ratio
# measured and met or not, from the results files: targets.csv, targets.md,
# targets.png (runs alone on a results directory, too).
#
# Ports: the cluster of the parts listens on BENCH_PORT (55432); wal's two
# on the first free ports from BENCH_PORT+1 and BENCH_PORT+11, clients' from
# BENCH_PORT+21 (without BENCH_PORT: the scripts' own, 55581, 55591, 57500).
#
# Each part replaces only its own files in bench/results/ (the list is
# BENCH_PART_FILES in lib.sh); environment.txt, loadavg.csv and summary.md
# describe a run of every part, a run of some parts writes them with the
# parts' names added (environment.peers.txt).
source "$(dirname "$0")/lib.sh"
for part in $BENCH_PARTS; do
	case " $BENCH_EXTERNAL_PARTS " in
	*" $part "*) ;;	# run as scripts of their own (part_external in lib.sh)
	*) source "$BENCH_DIR/$part.sh" ;;
	esac
done

bench_main "${BENCH_ONLY:-$BENCH_PARTS}"
