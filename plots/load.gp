# load.gp: metrics of a sweep against the load, one row of panels per
# tenant (borrowers first, then lenders: their curves never share a
# panel) and one column per metric, a line per policy (or per policy and
# value of a swept policy knob, "ema:tpot_budget=0.05") in its own colour
# and dashes (style.gp): the geometric mean over the seeds, with its 95%
# interval (on the log scale: it stays within the metric's range) where
# three seeds or more make one; below three, each seed is a dot, since
# t(0.975, 1) = 12.7 would stretch the interval over the axis. Drawn by
# `ema figures` from the tables it writes beside this script.
#
# Usage: gnuplot -d -c load.gp SPEC.gp OUT.pdf|OUT.png
# SPEC.gp (written by ema figures) sets: datafile (the table, beside SPEC:
# tenant,role,policy,metric,x,n,y,lo,hi; n the seeds, lo and hi NaN below
# three), seedsfile (the same columns, a row per seed of a value of fewer
# than three, or "" when there is none), hasci (1 when some value has an
# interval), policies, tenants, roles, metrics
# (space-separated words), coltitle (an array, one per metric), ylab, xlab,
# logy (0/1), ref (a reference line's y, or NaN), jitter (how far apart
# the policies' points at one load are drawn, in x units), figtitle (its
# lines: what, the scenario as run, what a value stands for; wrapped here
# to the width).

if (ARGC < 2) {
	print "usage: gnuplot -d -c load.gp SPEC.gp OUT.pdf|OUT.png"
	exit status 2
}
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""
style_dir = ARG0
while (strlen(style_dir) > 0 && style_dir[strlen(style_dir):strlen(style_dir)] ne "/") { style_dir = style_dir[1:strlen(style_dir) - 1] }
load style_dir . "style.gp"
spec_dir = ARG1
while (strlen(spec_dir) > 0 && spec_dir[strlen(spec_dir):strlen(spec_dir)] ne "/") { spec_dir = spec_dir[1:strlen(spec_dir) - 1] }
load ARG1
in = spec_dir . datafile

np = words(policies)
nt = words(tenants)
nm = words(metrics)
wcm = 4.5 + 8.5 * nm
title = style_wrap(figtitle, style_chars(wcm))
top = 1.2 + style_line_cm * style_lines(title)
hcm = top + 0.8 + 6.2 * nt
# the curves of intervals and seeds are drawn only where the table has some
hasseeds = seedsfile ne ""
seeds = spec_dir . (hasseeds ? seedsfile : datafile)
if (ext eq ".pdf") {
	set terminal pdfcairo enhanced color size wcm cm, hcm cm font style_font
} else {
	if (ext eq ".png") {
		set terminal pngcairo enhanced color size (wcm * 48), (hcm * 48) font style_font
	} else {
		print sprintf("%s: output must end in .pdf or .png", out)
		exit status 2
	}
}
set output out
set datafile separator comma
set datafile columnheaders
# NaN (no interval) is an undefined value, not a missing one: a curve of
# intervals where no value has one is then empty, not a warning

sel(t, p, m) = strcol("tenant") eq word(tenants, t) && strcol("policy") eq word(policies, p) && \
	strcol("metric") eq word(metrics, m)
X(p) = column("x") + (p - (np + 1) / 2.0) * jitter
# a column of the panel's rows only: the others' values, undefined in x
# alone, would still stretch every panel's y axis to the table's range
V(c, t, p, m) = sel(t, p, m) ? column(c) : NaN
set multiplot layout nt, nm margins 1.6 / wcm, 1 - 4.0 / wcm, 1.2 / hcm, 1 - top / hcm \
	spacing 1.8 / wcm, 1.5 / hcm title title noenhanced
set grid lc rgb style_grid
set border 3
set xtics nomirror
set ytics nomirror
set offsets graph 0.03, graph 0.03, 0, 0
if (logy) {
	set logscale y
	set format y "%g"
} else {
	set yrange [0 : *]
}
do for [t = 1:nt] {
	do for [m = 1:nm] {
		set title word(tenants, t) . " (" . word(roles, t) . "): " . coltitle[m] noenhanced
		set ylabel ylab noenhanced
		if (t == nt) { set xlabel xlab noenhanced } else { unset xlabel }
		unset arrow
		if (ref == ref) {
			set arrow 1 from graph 0, first ref to graph 1, first ref nohead dt 3 lc rgb "#555555"
		}
		if (t == 1 && m == nm) {
			set key outside right top vertical Left reverse title "policy" samplen 3
		} else {
			set key off
		}
		# each policy a little aside, so that intervals at one load do not hide
		# each other: the intervals (none below three seeds) under the
		# lines and their points, then the seeds of a value with fewer
		plot for [p = 1:(hasci ? np : 0)] in using (sel(t, p, m) ? X(p) : NaN):(V("y", t, p, m)):\
			(V("lo", t, p, m)):(V("hi", t, p, m)) \
			with yerrorbars pt 0 ps 0 lw 1.2 lc rgb pcolour(word(policies, p), p) notitle, \
		for [p = 1:np] in using (sel(t, p, m) ? X(p) : NaN):(V("y", t, p, m)) \
			with linespoints lw pwidth(word(policies, p), p) dt pdash(word(policies, p), p) \
			pt ppoint(word(policies, p), p) ps 0.8 lc rgb pcolour(word(policies, p), p) \
			title word(policies, p) noenhanced, \
		for [p = 1:(hasseeds ? np : 0)] seeds using (sel(t, p, m) ? X(p) : NaN):(V("y", t, p, m)) \
			with points pt 6 ps 0.6 lc rgb pcolour(word(policies, p), p) notitle
	}
}
unset multiplot
