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
# Usage: gnuplot -d -c memory.gp memory.dat OUT.pdf|OUT.png ["POLICY ..."]
# memory.dat is written by ema beside this script from timeline.csv: one
# block per (policy, GPU), rows "time_s s1 s2 s3 s4 s5 s6 policy gpu" where
# s1..s6 are the tops of the stacked areas (weights, + KV in use, + staging,
# + lent, + free, + borrowed, GiB), cut to what a panel can show.
# The optional third argument lists the policies (space-separated) in the
# order ema ran them; ema passes it so that every figure of a run gives a
# policy the same order. Without it they are taken from the data.

if (ARGC < 2) {
	print "usage: gnuplot -d -c memory.gp memory.dat OUT.pdf|OUT.png [\"POLICY ...\"]"
	exit status 2
}
in = ARG1
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""

# A (policy, GPU) without rows is one row of NaN: skipped, not drawn.
set datafile missing NaN
set terminal unknown

add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
# The data's own order of policies and GPUs numbers its blocks.
dpol = ""
gpus = ""
set table $scratch
plot in using (dpol = add(dpol, strcol(8)), gpus = add(gpus, strcol(9)), 0):(0) with table
unset table
policies = ""
do for [a = 3:ARGC] { policies = policies . (policies eq "" ? "" : " ") . ARGV[a] }
if (policies eq "") { policies = dpol }
np = words(policies)
ng = words(gpus)
if (np == 0 || ng == 0) {
	print sprintf("%s: no data rows (need rows \"time_s s1 .. s6 policy gpu\")", in)
	exit status 2
}
# Block of (policy p, GPU g); -1 for a policy the data does not have.
blk(p, g) = idx(dpol, word(policies, p), 1) > 0 ? \
	(idx(dpol, word(policies, p), 1) - 1) * ng + g - 1 : -1

if (ext eq ".pdf") {
	set terminal pdfcairo noenhanced color size (2 + 11 * ng) cm, (3 + 6.5 * np) cm font "Sans,9"
} else {
	if (ext eq ".png") {
		set terminal pngcairo noenhanced color size (80 + 520 * ng), (120 + 300 * np) font "Sans,9"
	} else {
		print sprintf("%s: output must end in .pdf or .png", out)
		exit status 2
	}
}
set output out

# One y scale for every panel, so that panels can be compared at a glance.
stats in using 7 nooutput
ymax = STATS_max > 0 ? STATS_max * 1.05 : 1

# Panels are placed by hand, in units of the canvas size in cm, because a
# multiplot layout has no room for one key shared by all panels.
u = 1.0 / (3 + 6.5 * np)
v = 1.0 / (2 + 11 * ng)
set multiplot title "GPU memory over time (rows: policies, columns: GPUs)"

# The shared key: a panel of key entries only, in a strip under the title.
set lmargin at screen 0.02
set rmargin at screen 0.98
set tmargin at screen 1 - 0.9 * u
set bmargin at screen 1 - 1.9 * u
unset border
unset tics
set xrange [0 : 1]
set yrange [0 : 1]
set key center center horizontal reverse Left samplen 2 noenhanced
set style fill solid 0.9 noborder
# The curve below the visible range only gives gnuplot an axis to lay
# out; a plot of key entries alone fails an assertion in gnuplot 5.4.
plot -1 with lines notitle, \
	keyentry with filledcurves lc rgb "#7f7f7f" title "weights", \
	keyentry with filledcurves lc rgb "#0072B2" title "KV in use", \
	keyentry with filledcurves lc rgb "#56B4E9" title "staging", \
	keyentry with filledcurves lc rgb "#E69F00" title "lent to peers", \
	keyentry with filledcurves lc rgb "#e8f3e8" title "free", \
	keyentry with filledcurves fs pattern 4 border lc rgb "#CC79A7" lc rgb "#CC79A7" \
		title "borrowed from peers (remote)", \
	keyentry with lines lc rgb "#000000" dt 2 lw 1.2 title "own capacity"

set key off
set border 3
set xtics nomirror
set ytics nomirror
set autoscale x
set yrange [0 : ymax]
set grid ytics lc rgb "#e4e4e4" front

do for [p = 1:np] {
	do for [g = 1:ng] {
		rowtop = 1 - (2 + 6.5 * (p - 1)) * u
		set tmargin at screen rowtop - 0.9 * u
		set bmargin at screen rowtop - 5.5 * u
		set lmargin at screen (2 + 11 * (g - 1)) * v
		set rmargin at screen (2 + 11 * g - 1.5) * v
		set title sprintf("%s, GPU %s", word(policies, p), word(gpus, g)) noenhanced
		# Axis labels only on the outer panels, so that they do not run
		# into the titles of the panels below.
		if (p == np) { set xlabel "time (s)" } else { unset xlabel }
		if (g == 1) { set ylabel "memory (GiB)" } else { unset ylabel }
		k = blk(p, g)
		if (k < 0) { k = 0; z = NaN } else { z = 0 }
		plot in index k using 1:($2 * 0 + z):2 with filledcurves lc rgb "#7f7f7f", \
			'' index k using 1:($2 + z):3 with filledcurves lc rgb "#0072B2", \
			'' index k using 1:($3 + z):4 with filledcurves lc rgb "#56B4E9", \
			'' index k using 1:($4 + z):5 with filledcurves lc rgb "#E69F00", \
			'' index k using 1:($5 + z):6 with filledcurves lc rgb "#e8f3e8", \
			'' index k using 1:($6 + z):7 \
				with filledcurves fs pattern 4 border lc rgb "#CC79A7" lc rgb "#CC79A7", \
			'' index k using 1:($6 + z) with lines lc rgb "#000000" dt 2 lw 1.2
	}
}
unset multiplot
