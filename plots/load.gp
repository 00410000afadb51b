# load.gp: metrics of a sweep against the load, one row of panels per
# tenant (borrowers first, then lenders: their curves never share a
# panel) and one column per metric, a line per policy in its own colour
# and dashes (style.gp), the geometric mean over the seeds with its 95%
# interval (on the log scale: it stays within the metric's range). Drawn
# by `ema figures` from the table it writes beside this script.
#
# Usage: gnuplot -d -c load.gp SPEC.gp OUT.pdf|OUT.png
# SPEC.gp (written by ema figures) sets: datafile (the table, beside SPEC:
# tenant,role,policy,metric,x,y,lo,hi), policies, tenants, roles, metrics
# (space-separated words), coltitle (an array, one per metric), ylab, xlab,
# logy (0/1), ref (a reference line's y, or NaN), jitter (how far apart
# the policies' points at one load are drawn, in x units), figtitle.

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
hcm = 2.6 + 6.2 * nt
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

sel(t, p, m) = strcol("tenant") eq word(tenants, t) && strcol("policy") eq word(policies, p) && \
	strcol("metric") eq word(metrics, m)
set multiplot layout nt, nm margins 1.6 / wcm, 1 - 4.0 / wcm, 1.2 / hcm, 1 - 1.8 / hcm \
	spacing 1.8 / wcm, 1.5 / hcm title figtitle noenhanced
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
		# each other
		plot for [p = 1:np] in using (sel(t, p, m) ? column("x") + (p - (np + 1) / 2.0) * jitter : NaN):"y":"lo":"hi" \
			with yerrorlines lw pwidth(word(policies, p), p) dt pdash(word(policies, p), p) \
			pt ppoint(word(policies, p), p) ps 0.8 lc rgb pcolour(word(policies, p), p) \
			title word(policies, p) noenhanced
	}
}
unset multiplot
