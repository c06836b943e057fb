# samples/q_learning/plot.gp: run by run.sql (from the repo root).
set terminal pngcairo size 1100,420 font ",10" noenhanced
set datafile separator "\t"
set key outside right
set grid
set xlabel "state s"

set output "samples/q_learning/out/q_values.png"
set multiplot layout 1,2
set title "Q(s, a) x 1000 after 78 SGD steps (lr 3e-4)"
set ylabel "Q x 1000"
plot "samples/q_learning/out/q_values.dat" u 1:2 w lp lc rgb "#d62728" pt 7 ps 0.5 t "private, left", \
     "" u 1:3 w lp lc rgb "#1f77b4" pt 7 ps 0.5 t "private, right", \
     "" u 1:4 w l dt 2 lc rgb "#d62728" t "non-private, left", \
     "" u 1:5 w l dt 2 lc rgb "#1f77b4" t "non-private, right"
set title "reference: non-private, converged (lr 0.3, 20,000 steps)"
set ylabel "Q"
plot "samples/q_learning/out/q_values.dat" u 1:6 w l lc rgb "#d62728" t "left", \
     "" u 1:7 w l lc rgb "#1f77b4" t "right"
unset multiplot

set terminal pngcairo size 700,420 font ",10" noenhanced
set output "samples/q_learning/out/noise.png"
set title "one noise path per action (dp_q_noise, calibrated sigma and beta)"
set ylabel "g_a(s)"
plot "samples/q_learning/out/noise.dat" u 1:2 w l lc rgb "#d62728" t "g_left", \
     "" u 1:3 w l lc rgb "#1f77b4" t "g_right"
