# Benchmark plot (tests/bench-launch.sh): overhead per workload, dacce launch against
# perf record --call-graph dwarf and fp, as ratios to the native time.
# Usage: gnuplot -e "data='FILE'; col=N; out='FILE.png'; what='...'" plot.gp
# FILE: one quoted workload name per line, then dacce, perf dwarf, perf fp ratios (columns
# col, col+1, col+2); "?" where a run failed.
set terminal pngcairo size 1100,520 font "sans,10"
set output out
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set ylabel "time / native time (log scale)"
set title sprintf("Overhead per workload (%s): dacce launch vs perf record, cpu-clock at 997 Hz", what)
set xtics rotate by -30 nomirror
set logscale y
set yrange [0.8:*]
set ytics (0.8, 1, 1.25, 1.5, 2, 3, 5, 10, 20, 50)
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 linecolor rgb "#555555"
plot data using col:xtic(1) title "dacce launch" linecolor rgb "#1b9e77", \
     '' using col+1 title "perf --call-graph dwarf" linecolor rgb "#d95f02", \
     '' using col+2 title "perf --call-graph fp" linecolor rgb "#7570b3"
