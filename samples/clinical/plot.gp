# samples/clinical/plot.gp: run by run.py (from the repository root) with
# mdp = 1 when the build has the model release (dp_mdp), else 0.
# Columns of out/epsilon.dat: epsilon, then mean and sd over seeded releases
# of IS (new rule, majority) and of the model release (new rule, majority),
# then the exact values (new rule, majority, the log).
if (!exists("mdp")) mdp = 0
set terminal pngcairo size 900,520 font ",10" noenhanced
set output "samples/clinical/out/epsilon.png"
set datafile separator "\t"
set logscale x
set grid
set key outside right
set xlabel "epsilon (delta = 1e-5, 20,000 patients)"
set ylabel "value: P(home) - P(died) within 30 days"
set title "private estimates of two rules against their exact values"
set xrange [0.07:14]
set yrange [0:0.7]
f = "samples/clinical/out/epsilon.dat"
if (mdp) {
  plot f u 1:10 w l dt 2 lc rgb "#d62728" t "exact, new rule", \
       "" u 1:11 w l dt 2 lc rgb "#1f77b4" t "exact, majority rule", \
       "" u 1:12 w l dt 3 lc rgb "#7f7f7f" t "exact, the log", \
       "" u 1:2:3 w yerrorlines lc rgb "#d62728" pt 7 ps 0.6 t "IS, new rule", \
       "" u 1:4:5 w yerrorlines lc rgb "#1f77b4" pt 7 ps 0.6 t "IS, majority rule", \
       "" u 1:6:7 w yerrorlines lc rgb "#ff7f0e" pt 5 ps 0.6 t "model, new rule", \
       "" u 1:8:9 w yerrorlines lc rgb "#2ca02c" pt 5 ps 0.6 t "model, majority rule"
} else {
  plot f u 1:10 w l dt 2 lc rgb "#d62728" t "exact, new rule", \
       "" u 1:11 w l dt 2 lc rgb "#1f77b4" t "exact, majority rule", \
       "" u 1:12 w l dt 3 lc rgb "#7f7f7f" t "exact, the log", \
       "" u 1:2:3 w yerrorlines lc rgb "#d62728" pt 7 ps 0.6 t "IS, new rule", \
       "" u 1:4:5 w yerrorlines lc rgb "#1f77b4" pt 7 ps 0.6 t "IS, majority rule"
}
