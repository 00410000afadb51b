# paths.gp: which remote path wins where (`ema paths`). Left: the step a
# borrower with a full GPU takes reading r GB held on one lender, by each
# path, over its local-only step T0 (solid: the lender idle; dashed: busy,
# running steps of its own, which slows remote attention only), the
# TPOT budget's line, the path ema's planner chooses drawn thick, and, when
# given, the simulator's measured steps as points. Right: the lender's
# slowdown by path against its budget.
#
# Usage: gnuplot -d -c paths.gp SPEC.gp OUT.pdf|OUT.png
# SPEC.gp sets datafile (paths.csv: lender,remote_gb,remote_share,path,
# step_ms,step_vs_t0,lender_slowdown,within_tpot_budget,
# within_lender_budget,chosen, beside SPEC), pointsfile (path,remote_gb,
# measured_vs_t0, or ""), figtitle, tpot_line (1 + the TPOT budget) and
# lender_line (the lender budget).

if (ARGC < 2) {
	print "usage: gnuplot -d -c paths.gp SPEC.gp OUT.pdf|OUT.png"
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
haspoints = pointsfile ne ""
pts = spec_dir . (haspoints ? pointsfile : datafile)
wcm = 24.0
title = style_wrap(figtitle, style_chars(wcm - 2.0))
hcm = 10.0 + style_line_cm * style_lines(title)
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
# the three paths in Okabe-Ito colours
paths = "inplace staged compute"
pcol(i) = word("#0072B2 #E69F00 #009E73", i)
is(i, l) = strcol("path") eq word(paths, i) && strcol("lender") eq l
set multiplot layout 1, 2 title title noenhanced
set grid lc rgb style_grid
set border 3
set xtics nomirror
set ytics nomirror
set xlabel "remote KV held on one lender (GB)"
set ylabel "borrower step / local-only step T0"
set yrange [0.95 : *]
set key top left Left reverse
plot for [i = 1:3] in using (is(i, "idle") ? column("remote_gb") : NaN):"step_vs_t0" \
		with lines lc rgb pcol(i) lw 1.5 dt 1 title word(paths, i) . " (idle lender)", \
	for [i = 1:3] in using (is(i, "busy") ? column("remote_gb") : NaN):"step_vs_t0" \
		with lines lc rgb pcol(i) lw 1.5 dt 2 title word(paths, i) . " (busy lender)", \
	for [i = 1:3] in using (is(i, "idle") && column("chosen") == 1 ? column("remote_gb") : NaN):"step_vs_t0" \
		with lines lc rgb pcol(i) lw 5 notitle, \
	for [i = 1:(haspoints ? 3 : 0)] pts using (strcol("path") eq word(paths, i) ? column("remote_gb") : NaN):"measured_vs_t0" \
		with points pt 7 ps 0.25 lc rgb pcol(i) notitle, \
	tpot_line with lines lc rgb "#CC0000" dt 3 lw 1.2 title "TPOT budget"
set ylabel "lender slowdown (share of its step)"
set yrange [0 : *]
plot for [i = 1:3] in using (is(i, "idle") ? column("remote_gb") : NaN):"lender_slowdown" \
		with lines lc rgb pcol(i) lw 1.5 title word(paths, i), \
	lender_line with lines lc rgb "#CC0000" dt 3 lw 1.2 title "lender budget"
unset multiplot
