# sweep.gp: one metric of an `ema sweep` against the swept key, one line
# per (policy, tenant), from the sweep's sweep.csv: load curves and knob
# sweeps for a paper.
#
# Usage: gnuplot -d -c sweep.gp sweep.csv OUT.pdf|OUT.png KEY METRIC "LABEL" [ci]
# KEY and METRIC are column names of sweep.csv (KEY numeric); LABEL is the
# y axis label. Columns are addressed by name. With "ci" the input is
# sweep_stats.csv and each point is METRIC_mean with error bars from
# METRIC_ci95_low to METRIC_ci95_high (the 95% interval over seeds).

if (ARGC < 5) {
	print "usage: gnuplot -d -c sweep.gp sweep.csv OUT.pdf|OUT.png KEY METRIC LABEL"
	exit status 2
}
in = ARG1
out = ARG2
key = ARG3
metric = ARG4
ylab = ARG5
ci = ARGC >= 6 && ARG6 eq "ci"
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""

set datafile separator comma
set datafile columnheaders
set datafile missing NaN
set terminal unknown

# The (policy, tenant) series, in order of first appearance, collected by
# a throw-away table plot (gnuplot has no other loop over data rows).
add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
series = ""
set table $dummy
plot in using (series = add(series, strcol("policy") . "/" . strcol("tenant")), 0):(0) with table
unset table

if (ext eq "pdf") {
	set terminal pdfcairo size 6in,4in font "Helvetica,10"
} else {
	set terminal pngcairo size 900,600 font "Helvetica,11"
}
set output out
set key outside right top box
set grid
# room beside the first and last points, so their error bars show
set offsets graph 0.04, graph 0.04, 0, 0
set xlabel key noenhanced
set ylabel ylab noenhanced
pol(s) = s[1:strstrt(s, "/") - 1]
ten(s) = s[strstrt(s, "/") + 1:]
if (ci) {
	set title metric . " against " . key . " (mean over seeds, 95% interval)" noenhanced
	plot for [i = 1:words(series)] in \
		using ((strcol("policy") eq pol(word(series, i)) && strcol("tenant") eq ten(word(series, i))) ? column(key) : NaN):(column(metric . "_mean")):(column(metric . "_ci95_low")):(column(metric . "_ci95_high")) \
		with yerrorlines pt (6 + i) lw 2 title word(series, i) noenhanced
} else {
	set title metric . " against " . key noenhanced
	plot for [i = 1:words(series)] in \
		using ((strcol("policy") eq pol(word(series, i)) && strcol("tenant") eq ten(word(series, i))) ? column(key) : NaN):(column(metric)) \
		with linespoints pt (6 + i) lw 2 title word(series, i) noenhanced
}
