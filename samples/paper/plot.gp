# plot.gp: the figures of run.sh.
#   gnuplot -e "dir='out'; zero=0.706; mid=0.246; runs=20; sweep=1" plot.gp
#   rmse.png:   RMSE vs batch size; rows LSW / LSL, columns tabular / pairs
#   lambda.png: RMSE vs lambda (tabular), one panel per batch size
set datafile separator ","
set terminal pngcairo size 1500,800 font "sans,11"
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key outside bottom center horizontal maxrows 3 font ",10" width 1 spacing 1.1
set bmargin 9
set ylabel sprintf("RMSE over the 40 states (mean of %d runs; bars: std. error)", runs)

# Style per method.  LSW blue, LSL red; the exact estimates solid and thick,
# the output perturbation (the paper's) dashed, with fmax = 1 lighter and
# dotted; the statistics perturbation (fmax = 1) in green / orange, solid,
# with triangles.
methods = "LSW DP-LSW DP-LSW_(fmax=1) DP-LSW_stats_(fmax=1) LSL DP-LSL DP-LSL_(fmax=1) DP-LSL_stats_(fmax=1)"
colour(i) = word("#1f4e9c #1f4e9c #4f93ff #138a36 #b22222 #b22222 #ff7f50 #e08a00", i)
dash(i) = (i == 2 || i == 6) ? 2 : ((i == 3 || i == 7) ? 3 : 1)
width(i) = (i == 1 || i == 5) ? 2 : ((i == 4 || i == 8) ? 3 : ((i == 3 || i == 7) ? 2.2 : 1.5))
point(i) = (i == 4 || i == 8) ? 9 : (i <= 4 ? 7 : 5)
name(i) = system("echo '" . word(methods, i) . "' | tr _ ' '")
label(i) = name(i) . (i == 2 || i == 3 || i == 6 || i == 7 ? " output" : "")
pick(f, m, col) = (strcol(1) eq f && strcol(2) eq m) ? column(col) : 1/0
lo(f, m) = (strcol(1) eq f && strcol(2) eq m) ? \
  (column(4) - column(7) > column(4) / 10 ? column(4) - column(7) : column(4) / 10) : 1/0
hi(f, m) = (strcol(1) eq f && strcol(2) eq m) ? column(4) + column(7) : 1/0

set output dir."/rmse.png"
set terminal pngcairo size 1500,1150 font "sans,11"
set multiplot layout 2,2 title "Chain N = 40, p = 0.5, {/Symbol g} = 0.99; DP: {/Symbol e} = 0.1, {/Symbol d} = 0.1; LSL: {/Symbol l} = 100 sqrt(m)\n\"output\": the paper's perturbation (noise on {/Symbol q}); \"stats\": noise on the per-state statistics (ALGORITHMS.md 9)"
set xlabel "episodes in the batch (m)" offset 0,0.3
set yrange [1e-5:1e3]
set key inside bottom left vertical maxrows 6 opaque box lc rgb "#bbbbbb" width 1 spacing 1.05
set bmargin 3.5
# Rows: LSW's family (methods 1-4), LSL's (5-8); columns: feature forms.
do for [fam = 0:1] {
  do for [f in "tabular aggregate2"] {
    set title sprintf("%s, %s", fam == 0 ? "LSW / DP-LSW" : "LSL / DP-LSL", \
      f eq "tabular" ? "tabular features (d = 40)" : "adjacent pairs aggregated (d = 20)")
    # (the exact estimate again at the end, untitled, so that it is drawn on
    # top of the private curves that come close to it)
    plot for [i=4*fam+1:4*fam+4] dir."/rmse.csv" every ::1 \
           using 3:(pick(f, name(i), 4)):(lo(f, name(i))):(hi(f, name(i))) \
           with yerrorlines lw width(i) dt dash(i) pt point(i) ps 0.8 \
           lc rgb colour(i) title label(i), \
         zero with lines lw 2 dt 4 lc rgb "#555555" title "estimate V = 0", \
         mid with lines lw 2 dt (12,6) lc rgb "#999999" title "estimate V = 1/2", \
         dir."/rmse.csv" every ::1 using 3:(pick(f, name(4*fam+1), 4)) \
           with linespoints lw 1.5 dt 1 pt point(4*fam+1) ps 0.8 lc rgb colour(4*fam+1) notitle
  }
}
unset multiplot
set terminal pngcairo size 1500,800 font "sans,11"
set key outside bottom center horizontal maxrows 3 font ",10" width 1 spacing 1.1 noopaque nobox
set bmargin 9

if (sweep) {
  set output dir."/lambda.png"
  set multiplot layout 1,2 title "Tabular: RMSE vs the regularisation {/Symbol l} of LSL / DP-LSL (horizontal: LSW, DP-LSW at the same m)"
  set xlabel "{/Symbol l}"
  set ylabel sprintf("RMSE over the 40 states (mean of %d runs)", runs)
  set yrange [1e-4:1e3]
  ref(f, m, ep) = system(sprintf("awk -F, '$1==\"%s\" && $2==\"%s\" && $3==%d {print $4}' %s/rmse.csv", f, m, ep, dir))
  do for [ep in system("cut -d, -f3 ".dir."/lambda.csv | sed 1d | sort -un | tr '\n' ' '")] {
    set title sprintf("m = %s episodes", ep)
    e = ep + 0
    r1 = ref("tabular", name(1), e); r2 = ref("tabular", name(2), e)
    r3 = ref("tabular", name(3), e); r4 = ref("tabular", name(4), e)
    plot for [i=5:8] dir."/lambda.csv" every ::1 \
           using 9:((strcol(1) eq "tabular" && strcol(2) eq name(i) && column(3) == e) ? column(4) : 1/0) \
           with linespoints lw width(i) dt dash(i) pt point(i) ps 0.8 lc rgb colour(i) title label(i), \
         (r1 eq "" ? 1/0 : r1 + 0) with lines lw 1.5 dt 1 lc rgb colour(1) title label(1), \
         (r2 eq "" ? 1/0 : r2 + 0) with lines lw 1.5 dt 2 lc rgb colour(2) title label(2), \
         (r3 eq "" ? 1/0 : r3 + 0) with lines lw 1.5 dt 3 lc rgb colour(3) title label(3), \
         (r4 eq "" ? 1/0 : r4 + 0) with lines lw 1.5 dt 1 lc rgb colour(4) title label(4), \
         zero with lines lw 2 dt 4 lc rgb "#555555" title "estimate V = 0", \
         mid with lines lw 2 dt (12,6) lc rgb "#999999" title "estimate V = 1/2"
  }
  unset multiplot
}
