# Plots of the jobqueue benchmark; run by bench/run.sh as
#   gnuplot -e "dat='<data dir>'; out='<results dir>'" bench/plots.gp
set terminal pngcairo noenhanced size 1300,500 font "sans,10"
set grid
set key top left
f(name) = dat . "/" . name . ".dat"
nonempty(name) = system("test -s " . f(name) . " && echo 1 || echo 0") + 0

# Throughput of claim + complete against clients, one panel per
# synchronous_commit setting.
if (nonempty("claim_off_1_ext")) {
	set output out . "/throughput_claim.png"
	set key below horizontal maxcols 3
	set multiplot layout 1,2 title "claim + complete: jobs per second (median), jobqueue vs hand-written SQL"
	set logscale y
	set xlabel "clients"
	set ylabel "jobs/s"
	set xtics (1, 2, 4, 8)
	set logscale x 2
	do for [sync in "off on"] {
		set title "synchronous_commit = " . sync
		plot for [n in "1 10 100"] f("claim_" . sync . "_" . n . "_ext") using 1:2 \
				with linespoints lw 2 pt 7 title "jq_claim(" . n . ")", \
			 for [n in "1 10 100"] f("claim_" . sync . "_" . n . "_hand") using 1:2 \
				with linespoints lw 2 dt 2 pt 6 title "hand-written, " . n
	}
	unset multiplot
	unset logscale

	set output out . "/ratio.png"
	set multiplot layout 1,2 title "jobqueue / hand-written SQL, jobs per second (target >= 0.95)"
	set logscale x 2
	set yrange [0.5:1.3]
	set ylabel "ratio"
	do for [sync in "off on"] {
		set title "synchronous_commit = " . sync
		plot 0.95 with lines lc rgb "red" dt 3 title "target 0.95", \
			 for [n in "1 10 100"] f("ratio_" . sync . "_" . n) using 1:2 \
				with linespoints lw 2 pt 7 title "batch " . n
	}
	unset multiplot
	unset logscale
	set autoscale y
	set key inside top left
}

# Claim latency against backlog size.
if (nonempty("growth_ext")) {
	set output out . "/growth_latency.png"
	set title "claim latency (1 client, claim of 1 job) against pending jobs"
	set logscale x 10
	set logscale y
	set xtics auto
	set format x "%.0s%c"
	set xlabel "pending jobs"
	set ylabel "latency (us)"
	set key below horizontal maxcols 3
	plot f("growth_ext") using 1:2 with linespoints lw 2 pt 7 title "jq_claim p50", \
		 f("growth_ext") using 1:3 with linespoints lw 2 pt 5 title "jq_claim p99", \
		 f("growth_hand") using 1:2 with linespoints lw 2 dt 2 pt 6 title "hand-written p50", \
		 f("growth_hand") using 1:3 with linespoints lw 2 dt 2 pt 4 title "hand-written p99", \
		 f("growth_finished_ext") using 1:2 with points pt 9 ps 2 title "jq_claim p50, + " . finished . " finished jobs", \
		 f("growth_finished_ext") using 1:3 with points pt 11 ps 2 title "jq_claim p99, + " . finished . " finished jobs", \
		 f("growth_finished_hand") using 1:2 with points pt 8 ps 2 title "hand-written p50, + " . finished . " finished jobs", \
		 f("growth_finished_hand") using 1:3 with points pt 10 ps 2 title "hand-written p99, + " . finished . " finished jobs"
	unset logscale
	set format x "%g"
}

# The peer benchmark: jobs per second of each contender draining the same
# backlog, median of the rounds with their min and max.
if (nonempty("peers")) {
	set output out . "/peers.png"
	set terminal pngcairo noenhanced size 1100,500 font "sans,10"
	set title "draining a backlog of no-op jobs: jobs per second (bar: median of the rounds, whiskers: min and max)"
	set style fill solid 0.5 border -1
	set boxwidth 0.6
	set yrange [0:*]
	set offsets 0.2, 0.2, 0, 0
	set xlabel ""
	set ylabel "jobs/s"
	set key top right
	unset logscale
	plot f("peers") using 1:3:xtic(2) with boxes lc rgb "#4477aa" title "median", \
		 f("peers") using 1:3:4:5 with yerrorbars lc rgb "black" pt 0 lw 1.5 title "min / max", \
		 f("peers") using 1:3:(sprintf("%.0f", $3)) with labels offset 0,1.2 notitle
	set offsets 0, 0, 0, 0
	set autoscale y
	set xtics auto
	set terminal pngcairo noenhanced size 1300,500 font "sans,10"
}

# Sustained churn over time.
if (nonempty("churn")) {
	set output out . "/churn.png"
	set terminal pngcairo noenhanced size 1300,800 font "sans,10"
	set key below horizontal maxcols 3
	set multiplot layout 2,1 title "sustained churn: enqueue + claim + complete at a steady rate"
	set xlabel "time (s)"
	set title "throughput"
	set ylabel "jobs/s"
	set y2label "latency (ms)"
	set y2tics
	set ytics nomirror
	set yrange [0:*]
	set y2range [0:*]
	plot f("churn") using 1:2 with lines lw 2 title "jobs/s", \
		 f("churn") using 1:3 axes x1y2 with lines title "latency (ms)", \
		 f("churn") using 1:4 axes x1y2 with lines title "schedule lag (ms)"
	set title "table size and dead tuples"
	set ylabel "MB"
	set y2label "tuples"
	plot f("churn") using 1:5 with lines lw 2 title "table + indexes (MB)", \
		 f("churn") using 1:6 with lines title "heap (MB)", \
		 f("churn") using 1:7 with lines title "indexes (MB)", \
		 f("churn") using 1:8 axes x1y2 with lines title "n_dead_tup", \
		 f("churn") using 1:9 axes x1y2 with lines title "n_live_tup"
	unset multiplot
}

# The targets of issues 14 and 15 (bench/targets.sh, not run.sh's plots):
# the margin of each measured target, ratio / threshold ("at most" targets:
# threshold / ratio), so that 1.0 and above is met.
if (nonempty("targets")) {
	set output out . "/targets.png"
	set terminal pngcairo noenhanced size 1400,650 font "sans,9"
	set title "targets of issues 14 and 15: ratio / threshold (for \"at most\" targets threshold / ratio); 1.0 and above: met"
	unset logscale
	unset multiplot
	set style fill solid 0.6 border -1
	set boxwidth 0.7
	set yrange [0:*]
	set offsets 0.5, 0.5, 0, 0
	set xlabel ""
	set ylabel "margin"
	set xtics rotate by -40 left nomirror
	set rmargin 12
	set bmargin 10
	set key top right
	plot f("targets") using 1:3:($4 > 0 ? 0x4477aa : 0xcc6677):xtic(2) with boxes lc rgb variable notitle, \
		 1.0 with lines lc rgb "red" dt 2 lw 2 title "1.0: the threshold", \
		 f("targets") using 1:3:(sprintf("%.2f", $3)) with labels offset 0,0.8 notitle
}
