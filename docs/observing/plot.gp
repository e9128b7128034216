# The picture of docs/observing.md, from the data files beside this one
# (latency.dat: kind, upper bound in seconds, fraction of the values below
# it, from jq_latency_buckets('demo') joined to jq_latency('demo');
# errors.dat: error code/attempt, retries, dead letters, from
# jq_error_counts('demo')).  Run from this directory: gnuplot plot.gp
set terminal pngcairo noenhanced size 1000,420 font "DejaVu Sans,10"
set output 'observing.png'
set multiplot layout 1,2 title "jobqueue, queue 'demo': a 20 s pgbench run (3 clients: enqueue, claim + sleep + complete or fail 10 %)"
set title "Latency distributions (jq_latency_buckets)"
set logscale x
set xrange [0.0005:1]
set xlabel "seconds (log)"
set ylabel "fraction of jobs at or below"
set yrange [0:1.02]
set grid
set key bottom right
plot 'latency.dat' using (strcol(1) eq "wait" ? $2 : 1/0):3 with steps lw 2 title "wait (ready to claimed)", \
     'latency.dat' using (strcol(1) eq "run" ? $2 : 1/0):3 with steps lw 2 title "run (claim to end of attempt)", \
     'latency.dat' using (strcol(1) eq "total" ? $2 : 1/0):3 with steps lw 2 title "total (enqueue to succeeded)", \
     0.99 with lines dt 2 lc rgb "grey" title "p99"
unset logscale x
set title "Failed attempts by error code/attempt (jq_error_counts)"
set xlabel ""
set ylabel "failed attempts"
set autoscale y
set yrange [0:*]
set xrange [*:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics rotate by -15 font ",9"
set key top right
plot 'errors.dat' using 2:xtic(1) title "retried", '' using 3 title "dead"
unset multiplot
