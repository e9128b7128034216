#!/usr/bin/env bash
# The targets of issue 14 ("Speed") and issue 15 (the client libraries),
# measured: one table made from the results the parts of bench/run.sh wrote.
#
#   bench/targets.sh                       the results in bench/results/
#   BENCH_RESULTS=/some/dir bench/targets.sh
#
# The last step of bench/run.sh; runs alone on any results directory (no
# cluster, no root).  Every ratio is computed here from the CSV files of the
# parts (medians of the runs, as the parts' own summaries compute them);
# a target whose file is missing is "not run".  Writes to $RES:
#
#   targets.csv  issue,target,measured,ratio,threshold,met (met: yes, no,
#                not run)
#   targets.md   the same as a markdown table, with the source file of each
#                row and its time
#   targets.png  the margin of each target: ratio / threshold for an
#                "at least" target, threshold / ratio for an "at most" one,
#                so that 1.0 and above is met (bench/plots.gp; needs gnuplot)
#
# Targets and where they come from:
#   14.1  jq_claim(1) + jq_complete >= 1.0x the hand-written statements,
#         1/2/4/8 clients, synchronous_commit on and off: throughput.csv
#         (claim, batch 1), the worst client count per setting
#   14.2  jq_complete_and_claim >= 1.6x (1 job per call) and >= 1.2x (100)
#         the hand-written two-statement loop: roundtrip.csv, the worst
#         configuration
#   14.3  batched drain >= 1.5x the minimal table, >= 2.5x pg-boss and
#         graphile-worker: peers.csv (ext; ext0: retention 0)
#   14.4  WAL per job (enqueue + claim + complete) <= 0.7x the 1.2
#         baseline: wal.csv (statements only, as wal.txt's first ratio)
#   14.5  claim p50 with finished history beside 10k pending <= 1.3x
#         without: wal_history.csv (new side), growth.csv (jq_claim); size
#         after many jobs with purging <= 2x the size after a tenth of them:
#         wal_size.csv, bloat.csv; steady state: churn.csv (the largest
#         size in the second half of the run <= 1.2x the largest in the
#         first half)
#   14.6  nothing slower than 1.2: enqueue 1 and 100, reap, purge (and
#         claim 1 and 100) >= 1.0x the baseline: wal_rates.csv
#   15    Node.js client >= 1.5x pg-boss and graphile-worker: peers.csv
#         (jqnode, history kept; jqnode0, retention 0); workers against the pgbench ceiling, Go >= 0.8, Node.js
#         >= 0.6, Python >= 0.4: clients.csv
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RES=${BENCH_RESULTS:-$BENCH_DIR/results}
[ -d "$RES" ] || { echo "targets: no results directory $RES" >&2; exit 1; }

# Median of the values on standard input, one a line.
median() {
	sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# The median of column $3 of CSV file $1 over the rows where awk
# condition $2 holds (columns by name: c["jobs_per_s"]).
csv_median() {
	awk -F, -v col="$3" "NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
		$2 { print \$c[col] }" "$RES/$1" | median
}
# The distinct values of column $2 of file $1 where $3 holds, in order of
# first appearance.
csv_values() {
	awk -F, -v col="$2" "NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
		${3:-1} && !seen[\$c[col]]++ { print \$c[col] }" "$RES/$1"
}
# a / b with 2 decimals, empty when either is missing or b is 0
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b + 0 != 0) printf "%.2f", a / b }'; }
have() { [ -s "$RES/$1" ] && [ "$(wc -l <"$RES/$1")" -gt 1 ]; }
src() { echo "$1 ($(date -u -r "$RES/$1" '+%Y-%m-%d %H:%M UTC'))"; }

ROWS=()
# row issue short target measured ratio op threshold source: op ">=" or "<="
row() {
	local issue=$1 short=$2 target=$3 measured=$4 ratio=$5 op=$6 thr=$7 source=$8 met margin=
	if [ -z "$ratio" ]; then
		met="not run"
		[ -n "$measured" ] || measured="not run"
	elif awk -v r="$ratio" -v t="$thr" -v op="$op" 'BEGIN { exit !(op == ">=" ? r >= t : r <= t) }'; then
		met=yes
	else
		met=no
	fi
	[ -z "$ratio" ] || margin=$(awk -v r="$ratio" -v t="$thr" -v op="$op" \
		'BEGIN { if (op == ">=") printf "%.3f", r / t; else if (r > 0) printf "%.3f", t / r }')
	ROWS+=("$issue|$short|$target|$measured|$ratio|$op $thr|$met|$source|$margin")
}
notrun() { row "$1" "$2" "$3" "" "" "$4" "$5" "$6 (missing)"; }

# ---- 14.1: one job per call against the hand-written statements ----------
t1() {
	local f=throughput.csv sync cl list ratios worst
	for sync in on off; do
		local target="jq_claim(1) + jq_complete >= 1.0x the best hand-written statements, synchronous_commit $sync, every client count"
		if ! have $f || [ -z "$(csv_values $f clients "\$c[\"scenario\"] == \"claim\" && \$c[\"batch\"] == 1 && \$c[\"sync_commit\"] == \"$sync\" && \$c[\"ratio\"] != \"\"")" ]; then
			notrun 14.1 "claim 1, sync $sync" "$target" ">=" 1.0 $f
			continue
		fi
		list='' ratios=''
		for cl in $(csv_values $f clients "\$c[\"scenario\"] == \"claim\" && \$c[\"batch\"] == 1 && \$c[\"sync_commit\"] == \"$sync\" && \$c[\"ratio\"] != \"\""); do
			local r
			r=$(csv_median $f "\$c[\"scenario\"] == \"claim\" && \$c[\"batch\"] == 1 && \$c[\"sync_commit\"] == \"$sync\" && \$c[\"clients\"] == $cl" ratio)
			list+="$cl: $(printf '%.2f' "$r"), "
			ratios+="$r "
		done
		worst=$(tr ' ' '\n' <<<"$ratios" | grep -v '^$' | sort -g | head -n 1)
		row 14.1 "claim 1, sync $sync" "$target" \
			"jobs/s ratio (median of $(csv_values $f runs | sort -n | head -n 1) runs) by clients: ${list%, }; the worst" \
			"$(printf '%.2f' "$worst")" ">=" 1.0 "$(src $f)"
	done
}

# ---- 14.2: one round trip per turn ---------------------------------------
# On the local socket (every synchronous_commit/clients measured, the worst),
# then over each network link of bench/netdelay (1 client, the link's own
# row: the round trip it saves is what the function is for).
t2() {
	local f=roundtrip.csv n thr key list worst r c h link local per target
	for n in 1 100; do
		thr=$([ $n = 1 ] && echo 1.6 || echo 1.2)
		per="$n jobs"
		[ "$n" != 1 ] || per="1 job"
		target="jq_complete_and_claim >= ${thr}x the hand-written two-statement loop, $per per call"
		if ! have $f || [ -z "$(csv_values $f clients "\$c[\"batch\"] == $n && \$c[\"impl\"] == \"cac\"")" ]; then
			notrun 14.2 "round trip, $n per call" "$target" ">=" "$thr" $f
			continue
		fi
		# rows of the local socket (files without the link column have only those)
		local="(!(\"link\" in c) || \$c[\"link\"] == \"local\")"
		list='' worst=''
		for key in $(awk -F, -v n=$n 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
				$2 == n && $4 == "cac" && (!("link" in c) || $c["link"] == "local") && !s[$1 "/" $3]++ { print $1 "/" $3 }' "$RES/$f"); do
			c=$(csv_median $f "$local && \$c[\"batch\"] == $n && (\$c[\"sync_commit\"] \"/\" \$c[\"clients\"]) == \"$key\" && \$c[\"impl\"] == \"cac\"" jobs_per_s)
			h=$(csv_median $f "$local && \$c[\"batch\"] == $n && (\$c[\"sync_commit\"] \"/\" \$c[\"clients\"]) == \"$key\" && \$c[\"impl\"] == \"hand\"" jobs_per_s)
			r=$(div "$c" "$h")
			[ -n "$r" ] || continue
			list+="$key: $r, "
			if [ -z "$worst" ] || awk -v a="$r" -v b="$worst" 'BEGIN { exit !(a < b) }'; then worst=$r; fi
		done
		row 14.2 "round trip, $n per call" "$target" \
			"local socket: ratio of the median jobs/s by synchronous_commit/clients: ${list%, }; the worst" "$worst" ">=" "$thr" "$(src $f)"
		while IFS= read -r link; do
			[ -n "$link" ] || continue
			c=$(csv_median $f "\$c[\"link\"] == \"$link\" && \$c[\"batch\"] == $n && \$c[\"impl\"] == \"cac\"" jobs_per_s)
			h=$(csv_median $f "\$c[\"link\"] == \"$link\" && \$c[\"batch\"] == $n && \$c[\"impl\"] == \"hand\"" jobs_per_s)
			r=$(div "$c" "$h")
			[ -n "$r" ] || continue
			row 14.2 "round trip, $n per call, $link" "$target" \
				"over a network link (bench/netdelay, $link each way; round trip in roundtrip.txt), 1 client, synchronous_commit off: ratio of the median jobs/s" \
				"$r" ">=" "$thr" "$(src $f)"
		done < <(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
				("link" in c) && $c["link"] != "local" && !s[$c["link"]]++ { print $c["link"] }' "$RES/$f")
	done
}

# ---- 14.3 and 15: the peers ---------------------------------------------
peer_med() { csv_median peers.csv "\$c[\"contender\"] == \"$1\"" jobs_per_s; }
# peers_rows issue: the rows of that issue (14.3 or 15)
peers_rows() {
	local f=peers.csv a b thr issue label what a_name b_name ma mb runs
	while IFS='|' read -r issue a b thr label; do
		[ "$issue" = "$1" ] || continue
		what=$label
		a_name=$(peer_name "$a") b_name=$(peer_name "$b")
		local target="batched drain of no-op jobs: $a_name / $b_name >= ${thr}x"
		[ "$issue" = 15 ] && target="$a_name / $b_name, draining no-op jobs, >= ${thr}x"
		if ! have $f; then
			notrun "$issue" "$what" "$target" ">=" "$thr" $f
			continue
		fi
		ma=$(peer_med "$a") mb=$(peer_med "$b")
		runs=$(awk -F, -v a="$a" 'NR > 1 && $1 == a' "$RES/$f" | wc -l)
		if [ -z "$ma" ] || [ -z "$mb" ]; then
			row "$issue" "$what" "$target" "not run: no runs of $([ -z "$ma" ] && echo "$a" || echo "$b") in $f" "" ">=" "$thr" "$(src $f)"
			continue
		fi
		row "$issue" "$what" "$target" \
			"$(printf '%.0f' "$ma") / $(printf '%.0f' "$mb") jobs/s, medians of $runs run(s) each" \
			"$(div "$ma" "$mb")" ">=" "$thr" "$(src $f)"
	done <<-EOF
		14.3|ext|hand|1.5|drain / minimal
		14.3|ext0|hand|1.5|drain, ret. 0 / minimal
		14.3|ext|pgboss|2.5|drain / pg-boss
		14.3|ext0|pgboss|2.5|drain, ret. 0 / pg-boss
		14.3|ext|graphile|2.5|drain / graphile
		14.3|ext0|graphile|2.5|drain, ret. 0 / graphile
		15|jqnode|pgboss|1.5|Node client / pg-boss
		15|jqnode|graphile|1.5|Node client / graphile
		15|jqnode0|pgboss|1.5|Node client, ret. 0 / pg-boss
		15|jqnode0|graphile|1.5|Node client, ret. 0 / graphile
	EOF
}
peer_name() {
	case $1 in
	ext) echo "jobqueue (jq_claim of 100 + jq_complete_many, history kept)" ;;
	ext0) echo "jobqueue with retention 0 (no history)" ;;
	hand) echo "the minimal hand-written table" ;;
	pgboss) echo pg-boss ;;
	graphile) echo graphile-worker ;;
	jqnode) echo "the Node.js client (history kept)" ;;
	jqnode0) echo "the Node.js client on a queue with retention 0 (no history, as graphile-worker)" ;;
	esac
}

# ---- 14.4: WAL per job against the baseline --------------------------------
wal_med() { csv_median wal.csv "\$c[\"side\"] == \"$1\" && \$c[\"mode\"] == \"$2\"" "$3"; }
t4() {
	local f=wal.csv side mode label n o s ov op pv opv all oall
	for side in new new-ret0; do
		for mode in single batch; do
			label=$([ $mode = single ] && echo "one job per call" || echo "100 per call")
			[ $side = new-ret0 ] && label+=", retention 0"
			local target="WAL bytes per job (enqueue + claim + complete) <= 0.7x the 1.2 baseline, $label"
			if ! have $f || [ -z "$(wal_med "$side" $mode stmt_bytes)" ]; then
				notrun 14.4 "WAL, $label" "$target" "<=" 0.7 $f
				continue
			fi
			# bytes per job: each run's bytes over its jobs
			n=$(csv_median $f "\$c[\"side\"] == \"$side\" && \$c[\"mode\"] == \"$mode\"" jobs)
			s=$(wal_med "$side" $mode stmt_bytes) o=$(wal_med old $mode stmt_bytes)
			ov=$(wal_med "$side" $mode vacuum_bytes) op=$(wal_med old $mode vacuum_bytes)
			pv=$(wal_med "$side" $mode purge_vacuum_bytes) opv=$(wal_med old $mode purge_vacuum_bytes)
			all=$(awk -v a="$s" -v b="$ov" -v c="$pv" 'BEGIN { print a + b + c }')
			oall=$(awk -v a="$o" -v b="$op" -v c="$opv" 'BEGIN { print a + b + c }')
			row 14.4 "WAL, $label" "$target" \
				"$(awk -v a="$s" -v b="$o" -v n="$n" 'BEGIN { printf "%.0f / %.0f", a / n, b / n }') bytes/job (statements); with the vacuum, purge and vacuum after: $(div "$all" "$oall")x; $(awk -F, -v s="$side" -v m=$mode 'NR > 1 && $1 == s && $2 == m' "$RES/$f" | wc -l) run(s)" \
				"$(div "$s" "$o")" "<=" 0.7 "$(src $f)"
		done
	done
}

# ---- 14.5: history and size ------------------------------------------------
t5() {
	local f=wal_history.csv h0 h1 oh0 oh1 fin
	local target="claim p50 with finished jobs beside 10k pending <= 1.3x with none (wal.sh, this build)"
	if have $f && [ -n "$(csv_median $f "\$c[\"side\"] == \"new\" && \$c[\"db\"] == \"h1\"" p50_us)" ]; then
		h0=$(csv_median $f "\$c[\"side\"] == \"new\" && \$c[\"db\"] == \"h0\"" p50_us)
		h1=$(csv_median $f "\$c[\"side\"] == \"new\" && \$c[\"db\"] == \"h1\"" p50_us)
		oh0=$(csv_median $f "\$c[\"side\"] == \"old\" && \$c[\"db\"] == \"h0\"" p50_us)
		oh1=$(csv_median $f "\$c[\"side\"] == \"old\" && \$c[\"db\"] == \"h1\"" p50_us)
		fin=$(sed -n 's/^Claim p50 with \([0-9]*\) finished.*/\1/p' "$RES/wal.txt" 2>/dev/null || true)
		row 14.5 "history (wal.sh)" "$target" \
			"p50 ${h1} us with ${fin:-?} finished / ${h0} us without, medians of $(awk -F, 'NR > 1 && $1 == "new" && $2 == "h1"' "$RES/$f" | wc -l) alternating run(s); the 1.2 baseline: $(div "$oh1" "$oh0")x" \
			"$(div "$h1" "$h0")" "<=" 1.3 "$(src $f)"
	else
		notrun 14.5 "history (wal.sh)" "$target" "<=" 1.3 $f
	fi

	f=growth.csv
	target="claim p50 with finished jobs beside the pending ones <= 1.3x with the pending ones alone (run.sh growth, jq_claim)"
	local line pending finished p50 base hand hbase
	line=$(have $f && awk -F, 'NR > 1 && $3 > 0 && $4 == "ext" { print $2 "," $3 "," $6; exit }' "$RES/$f" || true)
	if [ -n "$line" ]; then
		IFS=, read -r pending finished p50 <<<"$line"
		# the same pending jobs alone, or the smallest backlog measured
		base=$(awk -F, -v p="$pending" 'NR > 1 && $3 == 0 && $4 == "ext" && $2 == p { print $6; exit }' "$RES/$f")
		local basep=$pending
		if [ -z "$base" ]; then
			read -r basep base < <(awk -F, 'NR > 1 && $3 == 0 && $4 == "ext" { print $2, $6 }' "$RES/$f" | sort -n | head -n 1)
		fi
		hand=$(awk -F, 'NR > 1 && $3 > 0 && $4 == "hand" { print $6; exit }' "$RES/$f")
		hbase=$(awk -F, -v p="$basep" 'NR > 1 && $3 == 0 && $4 == "hand" && $2 == p { print $6; exit }' "$RES/$f")
		row 14.5 "history (growth)" "$target" \
			"p50 $p50 us with $finished finished beside $pending pending / $base us with $basep pending alone; hand-written: $(div "$hand" "$hbase")x" \
			"$(div "$p50" "$base")" "<=" 1.3 "$(src $f)"
	else
		notrun 14.5 "history (growth)" "$target" "<=" 1.3 $f
	fi

	f=wal_size.csv
	local side phase lo hi first last later settle
	for side in new new-ret0; do
		for phase in "right after" later; do
			local label="size, $side, settled"
			[ "$phase" = later ] || label="size, $side, $phase"
			target="table + indexes after many jobs with purging <= 2x the size after a tenth of them ($side: $([ $side = new ] && echo "retention 1 second" || echo "retention 0"), $([ "$phase" = later ] && echo "after a pause" || echo "right after the flow"); wal.sh)"
			if ! have $f || ! grep -q "^$side," "$RES/$f"; then
				notrun 14.5 "$label" "$target" "<=" 2 $f
				continue
			fi
			read -r lo hi < <(awk -F, -v s="$side" 'NR > 1 && $1 == s { if (lo == "" || $2 < lo) lo = $2; if ($2 > hi) hi = $2 } END { print lo, hi }' "$RES/$f")
			first=$(awk -F, -v s="$side" -v n="$lo" 'NR > 1 && $1 == s && $2 == n && $3 == "right after" { print $6; exit }' "$RES/$f")
			if [ "$phase" = later ]; then
				read -r last settle < <(awk -F, -v s="$side" -v n="$hi" 'NR > 1 && $1 == s && $2 == n && $3 ~ / s later$/ { print $6, $3; exit }' "$RES/$f")
			else
				last=$(awk -F, -v s="$side" -v n="$hi" 'NR > 1 && $1 == s && $2 == n && $3 == "right after" { print $6; exit }' "$RES/$f")
				settle=
			fi
			row 14.5 "$label" "$target" \
				"$(awk -v a="$last" -v b="$first" 'BEGIN { printf "%.1f MB / %.1f MB", a / 1048576, b / 1048576 }') after $hi / $lo jobs${settle:+ (${settle% later} later)}" \
				"$(div "$last" "$first")" "<=" 2 "$(src $f)"
		done
	done

	f=bloat.csv
	target="table + indexes after many jobs with purging <= 2x the size after a tenth of them (run.sh bloat, purging on)"
	line=$(have $f && awk -F, 'NR > 1 && $1 != "none" { print $1; exit }' "$RES/$f" || true)
	if [ -n "$line" ]; then
		read -r lo hi < <(awk -F, 'NR > 1 && $1 != "none" { if (lo == "" || $2 < lo) lo = $2; if ($2 > hi) hi = $2 } END { print lo, hi }' "$RES/$f")
		first=$(awk -F, -v n="$lo" 'NR > 1 && $1 != "none" && $2 == n && $3 == "right after" { print $6; exit }' "$RES/$f")
		last=$(awk -F, -v n="$hi" 'NR > 1 && $1 != "none" && $2 == n && $3 == "right after" { print $6; exit }' "$RES/$f")
		later=$(awk -F, -v n="$hi" 'NR > 1 && $1 != "none" && $2 == n && $3 ~ / s later$/ { print $6; exit }' "$RES/$f")
		row 14.5 "size (bloat)" "$target" \
			"$(awk -v a="$last" -v b="$first" 'BEGIN { printf "%.1f MB / %.1f MB", a / 1048576, b / 1048576 }') after $hi / $lo jobs, purging by $line; after a pause: $(div "$later" "$first")x" \
			"$(div "$last" "$first")" "<=" 2 "$(src $f)"
	else
		notrun 14.5 "size (bloat)" "$target" "<=" 2 $f
	fi

	f=churn.csv
	target="a steady state under sustained churn with purging: the largest size in the second half of the run <= 1.2x the largest in the first half (run.sh churn)"
	if have $f; then
		local stats
		stats=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			{ t[NR] = $c["t"]; s[NR] = $c["total_bytes"]; if ($c["t"] > tmax) tmax = $c["t"] }
			END { for (i in t) { if (t[i] <= tmax / 2) { if (s[i] > a) a = s[i] } else if (s[i] > b) b = s[i] }
				  printf "%s %s %s %d", a, b, tmax, NR - 1 }' "$RES/$f")
		local a b tmax samples
		read -r a b tmax samples <<<"$stats"
		row 14.5 "size (churn)" "$target" \
			"$(awk -v a="$b" -v b="$a" 'BEGIN { printf "%.1f MB / %.1f MB", a / 1048576, b / 1048576 }'), $samples samples over $(printf '%.0f' "$tmax") s" \
			"$(div "$b" "$a")" "<=" 1.2 "$(src $f)"
	else
		notrun 14.5 "size (churn)" "$target" "<=" 1.2 $f
	fi
}

# ---- 14.6: nothing slower than 1.2 -----------------------------------------
t6() {
	local f=wal_rates.csv wl label n o runs
	for wl in enqueue1 enqueue100 reap purge claim1 claim100; do
		case $wl in
		enqueue1) label="jq_enqueue, 1 per transaction" ;;
		enqueue100) label="jq_enqueue_many of 100" ;;
		reap) label="jq_reap of expired leases" ;;
		purge) label="jq_purge of finished jobs" ;;
		claim1) label="jq_claim(1) + jq_complete" ;;
		claim100) label="jq_claim(100) + jq_complete_many" ;;
		esac
		local target="not slower than the 1.2 baseline: $label, jobs/s >= 1.0x"
		n=$(have $f && csv_median $f "\$c[\"side\"] == \"new\" && \$c[\"workload\"] == \"$wl\"" jobs_per_s || true)
		if [ -z "$n" ]; then
			notrun 14.6 "rate, $wl" "$target" ">=" 1.0 $f
			continue
		fi
		o=$(csv_median $f "\$c[\"side\"] == \"old\" && \$c[\"workload\"] == \"$wl\"" jobs_per_s)
		runs=$(awk -F, -v w="$wl" 'NR > 1 && $1 == "new" && $2 == w' "$RES/$f" | wc -l)
		row 14.6 "rate, $wl" "$target" "$(printf '%.0f' "$n") / $(printf '%.0f' "$o") jobs/s, medians of $runs alternating run(s)" \
			"$(div "$n" "$o")" ">=" 1.0 "$(src $f)"
	done
}

# ---- 15: the client libraries against the ceiling -------------------------
t15() {
	peers_rows 15
	local f=clients.csv lang thr name ceil m runs
	for lang in go node python; do
		case $lang in
		go) thr=0.8 name=Go ;;
		node) thr=0.6 name=Node.js ;;
		python) thr=0.4 name=Python ;;
		esac
		local target="the $name client's worker (concurrency 8, batch 100, no-op jobs) >= ${thr}x pgbench running the same SQL on one connection"
		m=$(have $f && csv_median $f "\$c[\"runner\"] == \"$lang\"" jobs_per_s || true)
		ceil=$(have $f && csv_median $f "\$c[\"runner\"] == \"pgbench\"" jobs_per_s || true)
		if [ -z "$m" ] || [ -z "$ceil" ]; then
			notrun 15 "$name worker / ceiling" "$target" ">=" "$thr" $f
			continue
		fi
		runs=$(awk -F, -v r="$lang" 'NR > 1 && $1 == r' "$RES/$f" | wc -l)
		row 15 "$name worker / ceiling" "$target" "$(printf '%.0f' "$m") / $(printf '%.0f' "$ceil") jobs/s, medians of $runs run(s) taking turns" \
			"$(div "$m" "$ceil")" ">=" "$thr" "$(src $f)"
	done
}

t1
t2
peers_rows 14.3
t4
t5
t6
t15

# ---- the files -------------------------------------------------------------
csvq() { local v=${1//\"/\"\"}; printf '"%s"' "$v"; }
{
	echo "issue,target,measured,ratio,threshold,met"
	for r in "${ROWS[@]}"; do
		IFS='|' read -r issue short target measured ratio thr met source margin <<<"$r"
		echo "$issue,$(csvq "$target"),$(csvq "$measured"),$ratio,$(csvq "$thr"),$met"
	done
} >"$RES/targets.csv"

# The run the results came from: its environment file, newest first.
envfile=$(ls -t "$RES"/environment*.txt 2>/dev/null | head -n 1 || true)
quick=${BENCH_QUICK:-0}
[ -n "$envfile" ] && grep -q 'BENCH_QUICK=1' "$envfile" && quick=1
{
	echo "# Targets of issues 14 and 15"
	echo
	echo "From the results in \`${RES#"$(dirname "$BENCH_DIR")/"}\` by \`bench/targets.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC');" \
		"$(grep -c . <<<"$(printf '%s\n' "${ROWS[@]}" | grep -v '|not run|')") of ${#ROWS[@]} targets measured," \
		"$(printf '%s\n' "${ROWS[@]}" | grep -c '|yes|' || true) met."
	echo "Ratios are of medians (each part's own runs, side by side in one run); the source file and its time are in the last column."
	if [ -n "$envfile" ]; then
		echo "Run: $(basename "$envfile"): $(sed -n 's/^load average (1, 5, 15 min) /load average /p' "$envfile");" \
			"$(sed -n 's/^wall time of the parts: /wall time: /p' "$envfile")."
	fi
	echo "Load average when this table was made: $(cut -d' ' -f1-3 /proc/loadavg); each part's files record the load during its runs."
	if [ "$quick" = 1 ]; then
		echo
		echo "**Quick run (BENCH_QUICK=1): small sizes, one round each. The ratios show that every part ran; they are not evidence.**"
	fi
	echo
	echo "| issue | target | measured | ratio | threshold | met | source |"
	echo "|---|---|---|---|---|---|---|"
	for r in "${ROWS[@]}"; do
		IFS='|' read -r issue short target measured ratio thr met source margin <<<"$r"
		case $met in yes) met="yes" ;; no) met="**no**" ;; esac
		echo "| $issue | $target | $measured | ${ratio:-} | $thr | $met | $source |" | sed 's/>= /≥ /g; s/<= /≤ /g'
	done
} >"$RES/targets.md"

# targets.png: the margin of each measured target (bench/plots.gp)
if command -v gnuplot >/dev/null; then
	d=$(mktemp -d "${TMPDIR:-/tmp}/jobqueue-targets.XXXXXX")
	i=0
	for r in "${ROWS[@]}"; do
		IFS='|' read -r issue short target measured ratio thr met source margin <<<"$r"
		[ -n "$margin" ] || continue
		i=$((i + 1))
		echo "$i \"$issue $short\" $margin $([ "$met" = yes ] && echo 1 || echo 0)"
	done >"$d/targets.dat"
	rm -f "$RES/targets.png"
	gnuplot -e "dat='$d'; out='$RES'" "$BENCH_DIR/plots.gp"
	rm -rf "$d"
else
	echo "targets: gnuplot is not installed: no targets.png" >&2
fi
column -s '|' -t < <(printf '%s\n' "${ROWS[@]}" | awk -F'|' '{ print $1 "|" $2 "|" $5 "|" $6 "|" $7 }')
echo "targets: $RES/targets.csv, $RES/targets.md$([ -f "$RES/targets.png" ] && echo ", $RES/targets.png")"
