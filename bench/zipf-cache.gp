# gnuplot -e "csv='zipf.csv'; out='zipf.svg'; ttl='...'" bench/zipf-cache.gp
# Two panels from `ustore bench zipf --csv`: the page cache's hit ratio
# (per interval and since the start), and what the server holds (RSS, the
# cache's file data and tree nodes, its budget, dirty data) in MiB.
set terminal svg size 900,640 dynamic font "sans,12" background "#ffffff"
set output out
set datafile separator ","
set key autotitle columnhead
set multiplot layout 2,1 title ttl
set grid
set xlabel "seconds"
set ylabel "hit ratio"
set yrange [0:1]
set key bottom right
plot csv using 1:4 with lines lw 1 lc rgb "#8fb3d9" title "per second", \
     csv using 1:5 with lines lw 2 lc rgb "#1f4e8c" title "since the start"
set ylabel "MiB"
set yrange [0:*]
set key top left
mib = 1048576.0
plot csv using 1:($10/mib) with lines lw 2 lc rgb "#c0392b" title "server RSS", \
     csv using 1:($8/mib) with lines lw 1 dt 2 lc rgb "#555555" title "cache budget", \
     csv using 1:(($6+$7)/mib) with lines lw 2 lc rgb "#27ae60" title "cache held (data + nodes)", \
     csv using 1:($6/mib) with lines lw 1 lc rgb "#82c99a" title "cached file data", \
     csv using 1:($9/mib) with lines lw 1 lc rgb "#e67e22" title "dirty data"
unset multiplot
