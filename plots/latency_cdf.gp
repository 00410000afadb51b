# latency_cdf.gp: cumulative distributions of time to first token and time
# per output token under each policy, one row of panels per tenant, from
# an ema run: the tails, not the means, are where memory pressure shows,
# and a borrower's and a lender's tails must not be mixed.
#
# Usage: gnuplot -d -c latency_cdf.gp latency_cdf.dat OUT.pdf|OUT.png ["POLICY ..."] [SCENARIO] ["GPU:TENANT ..."]
# latency_cdf.dat is written by ema (plots/plot_data.c) from requests.csv:
# two blocks per (tenant, policy), TTFT then TPOT, rows "value_ms fraction
# policy tenant", the CDF's points cut to what a panel can show. TTFT
# fractions count all of the tenant's requests under the policy, so a
# policy that leaves requests unfinished tops out below 1 instead of
# looking fast; TPOT fractions count the requests that have one
# (finished, two tokens or more).
# The policies (space-separated) in the order ema ran them; without them
# they are taken from the data. A policy's colour and dashes are its own
# (style.gp, beside this script). SCENARIO, the scenario as run, is the
# title's second line; the
# GPU:TENANT map (ema passes it) names each tenant's GPU.

if (ARGC < 2) {
	print "usage: gnuplot -d -c latency_cdf.gp latency_cdf.dat OUT.pdf|OUT.png [\"POLICY ...\"] [SCENARIO] [\"GPU:TENANT ...\"]"
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

# An empty curve is one row of NaN: skipped, not drawn.
set datafile missing NaN
set terminal unknown

add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
# The data's own order of tenants and policies numbers its blocks, read
# from each block's first row (a throw-away table plot is gnuplot's only
# loop over data rows); so is which curves have a point (column -2 is the
# block number), because a panel of nothing but NaN fails where it should
# say why it is empty.
dpol = ""
tenants = ""
set table $scratch
plot in every ::0::0 using (dpol = add(dpol, strcol(3)), tenants = add(tenants, strcol(4)), 0):(0) \
	with table
unset table
policies = ARGC >= 3 ? ARG3 : ""
if (policies eq "") { policies = dpol }
np = words(policies)
nt = words(tenants)
ndp = words(dpol)
if (np == 0 || nt == 0) {
	print sprintf("%s: no data rows (need rows \"value_ms fraction policy tenant\")", in)
	exit status 2
}
array anyttft[nt]
array anytpot[nt]
do for [t = 1:nt] { anyttft[t] = 0; anytpot[t] = 0 }
set table $scratch
plot in every ::0::0 using (b = int(column(-2)), t = b / (2 * ndp) + 1, \
	column(1) > 0 ? (b % 2 == 0 ? (anyttft[t] = 1) : (anytpot[t] = 1)) : 0, 0):(0) with table
unset table
# the GPU of a tenant, from "0:t0 1:t1"
gpu_of(t, i) = i > words(gpumap) ? "" : \
	(word(gpumap, i)[strstrt(word(gpumap, i), ":") + 1:] eq t ? \
	 word(gpumap, i)[1:strstrt(word(gpumap, i), ":") - 1] : gpu_of(t, i + 1))
tname(t) = gpu_of(t, 1) eq "" ? t : t . " (GPU " . gpu_of(t, 1) . ")"
# Block of tenant t's TTFT curve under policy p (its TPOT curve is the
# next); -1 for a policy the data does not have.
blk(p, t) = idx(dpol, word(policies, p), 1) > 0 ? \
	((t - 1) * ndp + idx(dpol, word(policies, p), 1) - 1) * 2 : -1

# The title, wrapped to the canvas (24 cm), and the canvas's height in cm:
# 2 for the title's first line and style_line_cm for each other, 7 a row
# of panels (2.2 of it between rows, for an axis label and the next row's
# panel titles), 1.3 under the last row.
title = style_wrap("Request latency CDFs per tenant" . \
	(scenario ne "" ? "\nscenario " . scenario : ""), style_chars(24))
top = 2.0 + style_line_cm * (style_lines(title) - 1)
hcm = top + 1.0 + 7 * nt
if (ext eq ".pdf") {
	set terminal pdfcairo enhanced color size 24 cm, hcm cm font style_font
} else {
	if (ext eq ".png") {
		set terminal pngcairo enhanced color size 1200, (hcm * 46) font style_font
	} else {
		print sprintf("%s: output must end in .pdf or .png", out)
		exit status 2
	}
}
set output out

set multiplot layout nt, 2 margins 0.08, 0.84, 1.3 / hcm, (1 - top / hcm) spacing 0.08, 2.2 / hcm \
	title title noenhanced
set logscale x 10
set format x "10^{%T}"
set mxtics 10
set yrange [0 : 1.02]
set ytics 0, 0.2, 1 nomirror
set xtics nomirror
set grid xtics ytics mxtics lc rgb style_grid, lc rgb "#f2f2f2"
set border 3

do for [t = 1:nt] {
	set key off
	set title tname(word(tenants, t)) . ": time to first token" noenhanced
	set xlabel "TTFT (ms, log scale)"
	set ylabel "fraction of requests (unfinished never arrive)"
	unset label 1
	set autoscale x
	# With no point to autoscale on gnuplot would fail; an empty panel says why.
	if (anyttft[t] == 0) {
		set xrange [1 : 1000]
		set label 1 "no request got a first token" at graph 0.5, 0.5 center
	}
	plot for [p = 1:np] in index (blk(p, t) >= 0 ? blk(p, t) : 0) using 1:(blk(p, t) >= 0 ? $2 : NaN) \
		with steps lw pwidth(word(policies, p), p) dt pdash(word(policies, p), p) \
		lc rgb pcolour(word(policies, p), p) title word(policies, p) noenhanced
	set title tname(word(tenants, t)) . ": time per output token" noenhanced
	set xlabel "TPOT (ms, log scale)"
	set ylabel "fraction of requests with 2+ tokens"
	unset label 1
	set autoscale x
	if (anytpot[t] == 0) {
		set xrange [1 : 1000]
		set label 1 "no request has a TPOT" at graph 0.5, 0.5 center
	}
	if (t == 1) {
		set key outside right top vertical Left reverse title "policy"
	}
	plot for [p = 1:np] in index (blk(p, t) >= 0 ? blk(p, t) + 1 : 1) using 1:(blk(p, t) >= 0 ? $2 : NaN) \
		with steps lw pwidth(word(policies, p), p) dt pdash(word(policies, p), p) \
		lc rgb pcolour(word(policies, p), p) title word(policies, p) noenhanced
}
unset multiplot
