# latency_cdf.gp: cumulative distributions of time to first token and time
# per output token under each policy, from an ema run; the tails, not the
# means, are where memory pressure shows.
#
# Usage: gnuplot -d -c latency_cdf.gp latency_cdf.dat OUT.pdf|OUT.png ["POLICY ..."]
# latency_cdf.dat is written by ema beside this script from requests.csv:
# two blocks per policy (TTFT, then TPOT), rows "value_ms fraction policy",
# the CDF's points cut to what the figure can show. TTFT fractions count all
# of the policy's requests, so a policy that leaves requests unfinished tops
# out below 1 instead of looking fast; TPOT fractions count the requests
# that have one (finished, two tokens or more).
# The optional third argument lists the policies (space-separated) in the
# order ema ran them; ema passes it so that every figure of a run gives a
# policy the same colour. Without it they are taken from the data.

if (ARGC < 2) {
	print "usage: gnuplot -d -c latency_cdf.gp latency_cdf.dat OUT.pdf|OUT.png [\"POLICY ...\"]"
	exit status 2
}
in = ARG1
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""

# An empty curve is a row of NaN: skipped, not drawn.
set datafile missing NaN
set terminal unknown

add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
# The data's own policy order numbers its blocks; points counted per
# metric (column -2 is the block number), because a plot of nothing but
# NaN fails where a panel should say why it is empty.
dpol = ""
anyttft = 0
anytpot = 0
set table $scratch
plot in using (dpol = add(dpol, strcol(3)), \
	int(column(-2)) % 2 == 0 ? (anyttft = anyttft + (column(1) > 0)) : \
				   (anytpot = anytpot + (column(1) > 0)), 0):(0) with table
unset table
policies = ""
do for [a = 3:ARGC] { policies = policies . (policies eq "" ? "" : " ") . ARGV[a] }
if (policies eq "") { policies = dpol }
np = words(policies)
if (np == 0) {
	print sprintf("%s: no data rows (need rows \"value_ms fraction policy\")", in)
	exit status 2
}
# Block of policy p's TTFT curve (its TPOT curve is the next); a policy
# missing from the data points to no block and draws nothing.
blk(p) = idx(dpol, word(policies, p), 1) > 0 ? 2 * (idx(dpol, word(policies, p), 1) - 1) : -1

array palette[8] = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"]
colour(i) = palette[(i - 1) % 8 + 1]
array dashes[4] = [1, 2, 4, 5]
dash(i) = dashes[((i - 1) / 8) % 4 + 1]

if (ext eq ".pdf") {
	set terminal pdfcairo enhanced color size 24 cm, 10 cm font "Sans,10"
} else {
	if (ext eq ".png") {
		set terminal pngcairo enhanced color size 1200, 500 font "Sans,10"
	} else {
		print sprintf("%s: output must end in .pdf or .png", out)
		exit status 2
	}
}
set output out

set multiplot layout 1, 2 margins 0.07, 0.86, 0.13, 0.88 spacing 0.08, 0 \
	title "Request latency CDFs"
set logscale x 10
set format x "10^{%T}"
set mxtics 10
set yrange [0 : 1.02]
set ytics 0, 0.2, 1 nomirror
set xtics nomirror
set grid xtics ytics mxtics lc rgb "#e4e4e4", lc rgb "#f2f2f2"
set border 3
set key off

set title "time to first token"
set xlabel "TTFT (ms, log scale)"
set ylabel "fraction of requests (unfinished never arrive)"
# With no point to autoscale on gnuplot would fail; an empty panel says why.
if (anyttft == 0) {
	set xrange [1 : 1000]
	set label 1 "no request got a first token" at graph 0.5, 0.5 center
}
plot for [p = 1:np] in index (blk(p) >= 0 ? blk(p) : 0) using 1:(blk(p) >= 0 ? $2 : NaN) \
	with steps lw 2 dt dash(p) lc rgb colour(p) title word(policies, p) noenhanced

set title "time per output token"
set xlabel "TPOT (ms, log scale)"
set ylabel "fraction of requests with 2+ tokens"
unset label 1
set autoscale x
if (anytpot == 0) {
	set xrange [1 : 1000]
	set label 1 "no request has a TPOT" at graph 0.5, 0.5 center
}
set key outside right top vertical Left reverse title "policy"
plot for [p = 1:np] in index (blk(p) >= 0 ? blk(p) + 1 : 1) using 1:(blk(p) >= 0 ? $2 : NaN) \
	with steps lw 2 dt dash(p) lc rgb colour(p) title word(policies, p) noenhanced

unset multiplot
