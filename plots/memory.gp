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
# Usage: gnuplot -d -c memory.gp timeline.csv OUT.pdf|OUT.png ["POLICY ..."] [SCENARIO] ["GPU:TENANT ..."]
# The optional third argument lists the policies (space-separated) in the
# order ema ran them; without it the policies are read from the data.
# SCENARIO is named in the title, and the GPU:TENANT map (ema passes it)
# names the tenant of each GPU in its panel's title. Every panel has the
# same time and memory axes, so that panels compare at a glance.
# Columns are addressed by name: later versions of ema may append columns.

if (ARGC < 2) {
	print "usage: gnuplot -d -c memory.gp timeline.csv OUT.pdf|OUT.png [\"POLICY ...\"] [SCENARIO] [\"GPU:TENANT ...\"]"
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

set datafile separator comma
set datafile columnheaders
# Rows of the GPUs are interleaved; a filtered-out row must be skipped
# rather than cut the area being drawn.
set datafile missing NaN
set terminal unknown

add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
policies = ""
if (ARGC >= 3) { policies = ARG3 }
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
# Okabe-Ito hues, each layer its own and none faint: free memory is a
# light but saturated green, staging reddish purple (not a second blue).
c_weights = "#7F7F7F"
c_kv = "#0072B2"
c_staging = "#CC79A7"
c_lent = "#E69F00"
c_free = "#9AD9BE"
# Running sums of the stack, bottom to top.
s1 = 'column("weights_gib")'
s2 = s1 . ' + column("kv_used_gib")'
s3 = s2 . ' + column("staging_gib")'
s4 = s3 . ' + column("lent_gib")'
s5 = s4 . ' + column("free_gib")'
s6 = s5 . ' + column("borrowed_gib")'

# One y scale and one time axis for every panel, so that panels can be
# compared at a glance (a policy that ends sooner shows it).
stats in using (@s6) nooutput
ymax = STATS_max > 0 ? STATS_max * 1.05 : 1
stats in using "time_s" nooutput
xmax = STATS_max > 0 ? STATS_max : 1

# Panels are placed by hand, in units of the canvas size in cm, because a
# multiplot layout has no room for one key shared by all panels.
u = 1.0 / (3 + 6.5 * np)
v = 1.0 / (2 + 11 * ng)
set multiplot title "GPU memory over time (rows: policies, columns: GPUs)" . \
	(scenario ne "" ? ", scenario " . scenario : "") noenhanced

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
		rowtop = 1 - (2 + 6.5 * (p - 1)) * u
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
		plot in using "time_s":(sel(p, g) ? 0 : NaN):(@s1) \
				with filledcurves lc rgb c_weights, \
			'' using "time_s":(sel(p, g) ? @s1 : NaN):(@s2) \
				with filledcurves lc rgb c_kv, \
			'' using "time_s":(sel(p, g) ? @s2 : NaN):(@s3) \
				with filledcurves lc rgb c_staging, \
			'' using "time_s":(sel(p, g) ? @s3 : NaN):(@s4) \
				with filledcurves lc rgb c_lent, \
			'' using "time_s":(sel(p, g) ? @s4 : NaN):(@s5) \
				with filledcurves lc rgb c_free, \
			'' using "time_s":(sel(p, g) ? @s5 : NaN):(@s6) \
				with filledcurves fs pattern 4 border lc rgb "#D55E00" lc rgb "#D55E00", \
			'' using "time_s":(sel(p, g) ? @s5 : NaN) \
				with lines lc rgb "#000000" dt 2 lw 1.2
	}
}
unset multiplot
