# memory.gp: how each GPU's memory is divided over time under each policy,
# from an ema run's timeline.csv: one panel per (policy, GPU), rows are
# policies and columns GPUs, so lending on one GPU lines up with borrowing
# on its peer in the same row.
#
# Each panel stacks the GPU's own memory from the bottom: weights, KV cache
# in use, staging buffers, memory lent to peers, free; these add up to the
# GPU's capacity. KV cache borrowed from peers lives on other GPUs, so it is
# stacked above the capacity, hatched.
#
# Usage: gnuplot -d -c memory.gp timeline.csv OUT.pdf|OUT.png ["POLICY ..."]
# The optional third argument lists the policies (space-separated) in the
# order ema ran them; ema passes it so that every figure of a run gives a
# policy the same order. Without it the policies are read from the data.
# Columns are addressed by name: later versions of ema may append columns.

if (ARGC < 2) {
	print "usage: gnuplot -d -c memory.gp timeline.csv OUT.pdf|OUT.png [\"POLICY ...\"]"
	exit status 2
}
in = ARG1
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""

set datafile separator comma
set datafile columnheaders
# Rows of the GPUs are interleaved; a filtered-out row must be skipped
# rather than cut the area being drawn.
set datafile missing NaN
set terminal unknown

add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
policies = ""
do for [a = 3:ARGC] { policies = policies . (policies eq "" ? "" : " ") . ARGV[a] }
gpus = ""
# A throw-away table plot is gnuplot's only loop over data rows.
set table $scratch
if (policies eq "") {
	plot in using (policies = add(policies, strcol("policy")), 0):(0) with table
}
plot in using (gpus = add(gpus, strcol("gpu")), 0):(0) with table
unset table
np = words(policies)
ng = words(gpus)
if (np == 0 || ng == 0) {
	print sprintf("%s: no data rows (need columns policy, time_s, gpu, *_gib)", in)
	exit status 2
}

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

sel(p, g) = strcol("policy") eq word(policies, p) && strcol("gpu") eq word(gpus, g)
# Running sums of the stack, bottom to top.
s1 = 'column("weights_gib")'
s2 = s1 . ' + column("kv_used_gib")'
s3 = s2 . ' + column("staging_gib")'
s4 = s3 . ' + column("lent_gib")'
s5 = s4 . ' + column("free_gib")'
s6 = s5 . ' + column("borrowed_gib")'

# One y scale for every panel, so that panels can be compared at a glance.
stats in using (@s6) nooutput
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
		plot in using "time_s":(sel(p, g) ? 0 : NaN):(@s1) \
				with filledcurves lc rgb "#7f7f7f", \
			'' using "time_s":(sel(p, g) ? @s1 : NaN):(@s2) \
				with filledcurves lc rgb "#0072B2", \
			'' using "time_s":(sel(p, g) ? @s2 : NaN):(@s3) \
				with filledcurves lc rgb "#56B4E9", \
			'' using "time_s":(sel(p, g) ? @s3 : NaN):(@s4) \
				with filledcurves lc rgb "#E69F00", \
			'' using "time_s":(sel(p, g) ? @s4 : NaN):(@s5) \
				with filledcurves lc rgb "#e8f3e8", \
			'' using "time_s":(sel(p, g) ? @s5 : NaN):(@s6) \
				with filledcurves fs pattern 4 border lc rgb "#CC79A7" lc rgb "#CC79A7", \
			'' using "time_s":(sel(p, g) ? @s5 : NaN) \
				with lines lc rgb "#000000" dt 2 lw 1.2
	}
}
unset multiplot
