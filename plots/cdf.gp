# cdf.gp: cumulative distributions of the reclaim latency on each
# lender's GPU, a panel per lender and a line per policy (style.gp), from
# the reclaims.csv of the sweep's points at one load, pooled over seeds.
# A reclaim that freed its pages at once (0 ms) is drawn at the axis'
# left end. Drawn by `ema figures`.
#
# Usage: gnuplot -d -c cdf.gp SPEC.gp OUT.pdf|OUT.png
# SPEC.gp sets datafile (tenant,policy,latency_ms, beside SPEC), policies,
# tenants, figtitle (wrapped here to the width), xlab, floor (the left end
# of the log axis, ms).

if (ARGC < 2) {
	print "usage: gnuplot -d -c cdf.gp SPEC.gp OUT.pdf|OUT.png"
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
wcm = 4.5 + 9.0 * nt
title = style_wrap(figtitle, style_chars(wcm))
top = 1.5 + style_line_cm * style_lines(title)
hcm = 7.1 + top
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
set datafile missing NaN
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
array n[np * nt]
do for [k = 1:np * nt] { n[k] = 0 }
set terminal push
set terminal unknown
set table $scratch
plot in using (p = idx(policies, strcol("policy"), 1), t = idx(tenants, strcol("tenant"), 1), \
	p > 0 && t > 0 ? (n[(t - 1) * np + p] = n[(t - 1) * np + p] + 1) : 0, 0):(0) with table
unset table
set terminal pop
set output out
sel(t, p) = strcol("tenant") eq word(tenants, t) && strcol("policy") eq word(policies, p)
lat(t, p) = sel(t, p) ? (column("latency_ms") > floor ? column("latency_ms") : floor) : NaN
set multiplot layout 1, nt margins 1.6 / wcm, 1 - 4.0 / wcm, 1.3 / hcm, 1 - top / hcm \
	spacing 1.8 / wcm, 0 title title noenhanced
set logscale x 10
set format x "10^{%T}"
set yrange [0 : 1.02]
set grid lc rgb style_grid
set border 3
set xtics nomirror
set ytics nomirror
set xlabel xlab noenhanced
set ylabel "fraction of reclaims"
do for [t = 1:nt] {
	any = 0
	do for [p = 1:np] { any = any + n[(t - 1) * np + p] }
	set title word(tenants, t) . " (lender): reclaims of its GPU's pages" noenhanced
	unset label 1
	set autoscale x
	if (any == 0) {
		set xrange [floor : 1000]
		set label 1 "no reclaim" at graph 0.5, 0.5 center
	}
	if (t == nt) {
		set key outside right top vertical Left reverse title "policy"
	} else {
		set key off
	}
	plot for [p = 1:np] in using (lat(t, p)):(n[(t - 1) * np + p] > 0 ? 1.0 / n[(t - 1) * np + p] : NaN) \
		smooth cumulative with steps lw pwidth(word(policies, p), p) dt pdash(word(policies, p), p) \
		lc rgb pcolour(word(policies, p), p) title word(policies, p) noenhanced
}
unset multiplot
