# The soak scenario's gateway VmRSS over time, with the least-squares line fitted after the warm-up.
# Input: "seconds VmRSS_kB aborts open_fds" lines, as bench.sh's soak_sample writes them.
# usage: gnuplot -e "data='FILE'; out='FILE.png'; name='TITLE'; warm=SECONDS; slope=KB_PER_S; base=KB" loadtest/soak.gp
set terminal pngcairo size 640,360 font "sans,9"
set output out
set title name
set xlabel "seconds"
set ylabel "VmRSS (MB)"
set grid
set key bottom right
set arrow from warm, graph 0 to warm, graph 1 nohead dashtype 2
plot data using 1:($2 / 1024) with linespoints pointtype 7 pointsize 0.5 linewidth 1.5 title "VmRSS", \
     [warm:*] (base + slope * x) / 1024 with lines linewidth 1 title "fit after the warm-up"
