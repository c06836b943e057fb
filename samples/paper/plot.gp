# plot.gp: the figures of run.sh.
#   gnuplot -e "dir='out'; zero=0.7; runs=20; sweep=1" plot.gp
#   rmse.png:   RMSE vs batch size, one panel per feature form
#   lambda.png: RMSE vs lambda (tabular), one panel per batch size
set datafile separator ","
set terminal pngcairo size 1400,680 font "sans,11"
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key outside bottom center horizontal maxrows 2 font ",10" width 2
set bmargin 8
set ylabel sprintf("RMSE over the 40 states (mean of %d runs; bars: std. error)", runs)

# style per method: colour, dash, point
methods = "LSW DP-LSW DP-LSW_(fmax=1) LSL DP-LSL DP-LSL_(fmax=1)"
colour(i) = word("#1f4e9c #1f4e9c #6fa8ff #b22222 #b22222 #ff8c69", i)
dash(i) = i == 1 || i == 4 ? 1 : (i == 2 || i == 5 ? 2 : 3)
name(i) = system("echo '" . word(methods, i) . "' | tr _ ' '")
pick(f, m, col) = (strcol(1) eq f && strcol(2) eq m) ? column(col) : 1/0
lo(f, m) = (strcol(1) eq f && strcol(2) eq m) ? \
  (column(4) - column(7) > column(4) / 10 ? column(4) - column(7) : column(4) / 10) : 1/0
hi(f, m) = (strcol(1) eq f && strcol(2) eq m) ? column(4) + column(7) : 1/0

set output dir."/rmse.png"
set multiplot layout 1,2 title "Chain N = 40, p = 0.5, {/Symbol g} = 0.99; DP: {/Symbol e} = 0.1, {/Symbol d} = 0.1; LSL: {/Symbol l} = 100 sqrt(m)"
set xlabel "episodes in the batch (m)" offset 0,0.3
set yrange [1e-5:1e6]
do for [f in "tabular aggregate2"] {
  set title (f eq "tabular" ? "tabular features (d = 40)" : "adjacent pairs aggregated (d = 20)")
  plot for [i=1:6] dir."/rmse.csv" every ::1 \
         using 3:(pick(f, name(i), 4)):(lo(f, name(i))):(hi(f, name(i))) \
         with yerrorlines lw (i == 1 || i == 4 ? 2.5 : 1.5) dt dash(i) pt (i <= 3 ? 7 : 5) ps 0.6 \
         lc rgb colour(i) title name(i), \
       zero with lines lw 2 dt 4 lc rgb "#666666" title "estimate V = 0"
}
unset multiplot

if (sweep) {
  set output dir."/lambda.png"
  set multiplot layout 1,2 title "Tabular: RMSE vs the regularisation {/Symbol l} of LSL / DP-LSL (horizontal: LSW, DP-LSW at the same m)"
  set xlabel "{/Symbol l}"
  set ylabel sprintf("RMSE over the 40 states (mean of %d runs)", runs)
  set yrange [1e-4:1e6]
  ref(f, m, ep) = system(sprintf("awk -F, '$1==\"%s\" && $2==\"%s\" && $3==%d {print $4}' %s/rmse.csv", f, m, ep, dir))
  do for [ep in system("cut -d, -f3 ".dir."/lambda.csv | sed 1d | sort -un | tr '\n' ' '")] {
    set title sprintf("m = %s episodes", ep)
    e = ep + 0
    r1 = ref("tabular", "LSW", e); r2 = ref("tabular", "DP-LSW", e); r3 = ref("tabular", "DP-LSW (fmax=1)", e)
    plot for [i=4:6] dir."/lambda.csv" every ::1 \
           using 9:((strcol(1) eq "tabular" && strcol(2) eq name(i) && column(3) == e) ? column(4) : 1/0) \
           with linespoints lw 2 dt dash(i) pt 5 ps 0.7 lc rgb colour(i) title name(i), \
         (r1 eq "" ? 1/0 : r1 + 0) with lines lw 1.5 dt 1 lc rgb colour(1) title "LSW", \
         (r2 eq "" ? 1/0 : r2 + 0) with lines lw 1.5 dt 2 lc rgb colour(2) title "DP-LSW", \
         (r3 eq "" ? 1/0 : r3 + 0) with lines lw 1.5 dt 3 lc rgb colour(3) title "DP-LSW (fmax=1)", \
         zero with lines lw 2 dt 4 lc rgb "#666666" title "estimate V = 0"
  }
  unset multiplot
}
