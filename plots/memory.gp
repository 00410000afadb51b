# memory.gp: how each GPU's memory is divided over time under each policy,
# from an ema run: one panel per (policy, GPU), rows are policies and
# columns GPUs, so lending on one GPU lines up with borrowing on its peer
# in the same row.
#
# Each panel stacks the GPU's own memory from the bottom: weights, KV cache
# in use, staging buffers, memory lent to peers, free; these add up to the
# GPU's capacity. KV cache borrowed from peers lives on other GPUs, so it is
# stacked above the capacity, hatched.
#
# Usage: gnuplot -d -c memory.gp memory.dat OUT.pdf|OUT.png ["POLICY ..."] [SCENARIO] ["GPU:TENANT ..."]
# memory.dat is written by ema (plots/plot_data.c) from timeline.csv: per
# (policy, GPU) seven blocks, the six stacked areas (weights, KV in use,
# staging, lent, free, borrowed) and the capacity line, rows "time_s lower
# upper policy gpu" (GiB), each curve cut to what a panel can show: what
# gnuplot draws is a few thousand points per panel, not every CSV row
# once per curve.
# The optional third argument lists the policies (space-separated) in the
# order ema ran them; without it they are taken from the data.
# SCENARIO, the scenario as run, is the title's second line, and the
# GPU:TENANT map (ema passes it)
# names the tenant of each GPU in its panel's title. Every panel has the
# same time and memory axes, so that panels compare at a glance.

if (ARGC < 2) {
	print "usage: gnuplot -d -c memory.gp memory.dat OUT.pdf|OUT.png [\"POLICY ...\"] [SCENARIO] [\"GPU:TENANT ...\"]"
	exit status 2
}
in = ARG1
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""
style_dir = ARG0
while (strlen(style_dir) > 0 && style_dir[strlen(style_dir):strlen(style_dir)] ne "/") { style_dir = style_dir[1:strlen(style_dir) - 1] }
load style_dir . "style.gp"
scenario = ARGC >= 4 ? ARG4 : ""
gpumap = ARGC >= 5 ? ARG5 : ""
# the tenant at home on a GPU, from "0:t0 1:t1"
tenant_of(g, i) = i > words(gpumap) ? "" : \
	(word(gpumap, i)[1:strstrt(word(gpumap, i), ":") - 1] eq g ? \
	 word(gpumap, i)[strstrt(word(gpumap, i), ":") + 1:] : tenant_of(g, i + 1))

# A (policy, GPU) without rows is one row of NaN: skipped, not drawn.
set datafile missing NaN
set terminal unknown

add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
# The data's own order of policies and GPUs numbers its blocks: read from
# each block's first row (a throw-away table plot is gnuplot's only loop
# over data rows).
dpol = ""
gpus = ""
set table $scratch
plot in every ::0::0 using (dpol = add(dpol, strcol(4)), gpus = add(gpus, strcol(5)), 0):(0) \
	with table
unset table
policies = ARGC >= 3 ? ARG3 : ""
if (policies eq "") { policies = dpol }
np = words(policies)
ng = words(gpus)
if (np == 0 || ng == 0) {
	print sprintf("%s: no data rows (need rows \"time_s lower upper policy gpu\")", in)
	exit status 2
}
# First of the seven blocks of (policy p, GPU g); -1 for a policy the
# data does not have.
blk(p, g) = idx(dpol, word(policies, p), 1) > 0 ? \
	((idx(dpol, word(policies, p), 1) - 1) * ng + g - 1) * 7 : -1

# The title, wrapped to the canvas; each line past the first moves the
# panels down by style_line_cm and makes the canvas that much taller.
title = style_wrap("GPU memory over time (rows: policies, columns: GPUs)" . \
	(scenario ne "" ? "\nscenario " . scenario : ""), style_chars(2 + 11 * ng))
top = style_line_cm * (style_lines(title) - 1)
hcm = 3 + top + 6.5 * np
if (ext eq ".pdf") {
	set terminal pdfcairo noenhanced color size (2 + 11 * ng) cm, hcm cm font "Sans,9"
} else {
	if (ext eq ".png") {
		set terminal pngcairo noenhanced color size (80 + 520 * ng), (hcm * 46) font "Sans,9"
	} else {
		print sprintf("%s: output must end in .pdf or .png", out)
		exit status 2
	}
}
set output out

# Okabe-Ito hues, each layer its own and none faint: free memory is a
# light but saturated green, staging reddish purple (not a second blue).
c_weights = "#7F7F7F"
c_kv = "#0072B2"
c_staging = "#CC79A7"
c_lent = "#E69F00"
c_free = "#9AD9BE"
# One y scale and one time axis for every panel, so that panels can be
# compared at a glance (a policy that ends sooner shows it).
stats in using 3 nooutput
ymax = STATS_max > 0 ? STATS_max * 1.05 : 1
stats in using 1 nooutput
xmax = STATS_max > 0 ? STATS_max : 1

# Panels are placed by hand, in units of the canvas size in cm, because a
# multiplot layout has no room for one key shared by all panels.
u = 1.0 / hcm
v = 1.0 / (2 + 11 * ng)
set multiplot title title noenhanced

# The shared key: a panel of key entries only, in a strip under the title.
set lmargin at screen 0.02
set rmargin at screen 0.98
set tmargin at screen 1 - (0.9 + top) * u
set bmargin at screen 1 - (1.9 + top) * u
unset border
unset tics
set xrange [0 : 1]
set yrange [0 : 1]
set key center center horizontal reverse Left samplen 2 noenhanced
set style fill solid 0.9 noborder
# The curve below the visible range only gives gnuplot an axis to lay
# out; a plot of key entries alone fails an assertion in gnuplot 5.4.
plot -1 with lines notitle, \
	keyentry with filledcurves lc rgb c_weights title "weights", \
	keyentry with filledcurves lc rgb c_kv title "KV in use", \
	keyentry with filledcurves lc rgb c_staging title "staging", \
	keyentry with filledcurves lc rgb c_lent title "lent to peers", \
	keyentry with filledcurves lc rgb c_free title "free", \
	keyentry with filledcurves fs pattern 4 border lc rgb "#D55E00" lc rgb "#D55E00" \
		title "borrowed from peers (remote)", \
	keyentry with lines lc rgb "#000000" dt 2 lw 1.2 title "own capacity"

set key off
set border 3
set xtics nomirror
set ytics nomirror
set xrange [0 : xmax]
set yrange [0 : ymax]
set grid ytics lc rgb "#e4e4e4" front

do for [p = 1:np] {
	do for [g = 1:ng] {
		rowtop = 1 - (2 + top + 6.5 * (p - 1)) * u
		set tmargin at screen rowtop - 0.9 * u
		set bmargin at screen rowtop - 5.5 * u
		set lmargin at screen (2 + 11 * (g - 1)) * v
		set rmargin at screen (2 + 11 * g - 1.5) * v
		tn = tenant_of(word(gpus, g), 1)
		set title sprintf("%s, GPU %s%s", word(policies, p), word(gpus, g), \
			tn eq "" ? "" : ", tenant " . tn) noenhanced
		# Axis labels only on the outer panels, so that they do not run
		# into the titles of the panels below.
		if (p == np) { set xlabel "time (s)" } else { unset xlabel }
		if (g == 1) { set ylabel "memory (GiB)" } else { unset ylabel }
		# a policy the data lacks draws its panel empty (its block 0 as NaN)
		k = blk(p, g)
		if (k < 0) { k = 0; z = NaN } else { z = 0 }
		plot in index k using 1:($2 + z):3 with filledcurves lc rgb c_weights, \
			'' index k + 1 using 1:($2 + z):3 with filledcurves lc rgb c_kv, \
			'' index k + 2 using 1:($2 + z):3 with filledcurves lc rgb c_staging, \
			'' index k + 3 using 1:($2 + z):3 with filledcurves lc rgb c_lent, \
			'' index k + 4 using 1:($2 + z):3 with filledcurves lc rgb c_free, \
			'' index k + 5 using 1:($2 + z):3 \
				with filledcurves fs pattern 4 border lc rgb "#D55E00" lc rgb "#D55E00", \
			'' index k + 6 using 1:($3 + z) with lines lc rgb "#000000" dt 2 lw 1.2
	}
}
unset multiplot
