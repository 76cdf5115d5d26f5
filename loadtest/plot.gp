# Latency by percentile, HdrHistogram style: x is 1/(1 - percentile), on a log scale, so that the tail
# (99%, 99.9%, 99.99%) gets as much room as the body. Input: "percentile milliseconds" lines, as written
# by loadtest/lua/check-offers.lua (CHECK_LATENCY_FILE).
# usage: gnuplot -e "data='FILE'; out='FILE.png'; name='TITLE'" loadtest/plot.gp
set terminal pngcairo size 640,360 font "sans,9"
set output out
set title name
set logscale x
set xrange [1:*]
set xtics ("0%%" 1, "50%%" 2, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000)
set xlabel "percentile"
set ylabel "latency (ms)"
set grid
set key off
plot data using (1 / (1 - $1 / 100)):2 with linespoints pointtype 7 pointsize 0.5 linewidth 1.5
