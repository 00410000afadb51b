# latency_cdf.gp: cumulative distributions of time to first token and time
# per output token under each policy, one row of panels per tenant, from
# an ema run's requests.csv: the tails, not the means, are where memory
# pressure shows, and a borrower's and a lender's tails must not be mixed.
#
# Usage: gnuplot -d -c latency_cdf.gp requests.csv OUT.pdf|OUT.png ["POLICY ..."] [SCENARIO] ["GPU:TENANT ..."]
# The policies (space-separated) in the order ema ran them; without them
# they are read from the data. A policy's colour and dashes are its own
# (style.gp, beside this script). SCENARIO is named in the title; the
# GPU:TENANT map (ema passes it) names each tenant's GPU.
# Columns are addressed by name: later versions of ema may append columns.

if (ARGC < 2) {
	print "usage: gnuplot -d -c latency_cdf.gp requests.csv OUT.pdf|OUT.png [\"POLICY ...\"] [SCENARIO] [\"GPU:TENANT ...\"]"
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

set datafile separator comma
set datafile columnheaders
# NaN from a filter must skip the row, not cut a curve or a smoothing run.
set datafile missing NaN
set terminal unknown

add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
policies = ARGC >= 3 ? ARG3 : ""
tenants = ""
# A throw-away table plot is gnuplot's only loop over data rows.
set table $scratch
if (policies eq "") {
	plot in using (policies = add(policies, strcol("policy")), 0):(0) with table
}
plot in using (tenants = add(tenants, strcol("tenant")), 0):(0) with table
unset table
np = words(policies)
nt = words(tenants)
if (np == 0 || nt == 0) {
	print sprintf("%s: no data rows (need columns policy, tenant, ttft_ms, tpot_ms)", in)
	exit status 2
}
# the GPU of a tenant, from "0:t0 1:t1"
gpu_of(t, i) = i > words(gpumap) ? "" : \
	(word(gpumap, i)[strstrt(word(gpumap, i), ":") + 1:] eq t ? \
	 word(gpumap, i)[1:strstrt(word(gpumap, i), ":") - 1] : gpu_of(t, i + 1))
tname(t) = gpu_of(t, 1) eq "" ? t : t . " (GPU " . gpu_of(t, 1) . ")"

mine(p, t) = strcol("policy") eq word(policies, p) && strcol("tenant") eq word(tenants, t)
# Empty fields (unfinished requests) and non-positive values (no second
# token) cannot sit on a log axis; they become NaN and are left out.
val(p, t, c) = mine(p, t) ? (column(c) > 0 ? column(c) : NaN) : NaN

# TTFT is divided by all of the tenant's requests under the policy, so a
# policy that leaves requests unfinished tops out below 1 instead of
# looking fast; TPOT by the requests that have one (finished, 2+ tokens).
# Counted in one table pass rather than with `stats`, which fails outright
# when a policy finished no request.
ok(c) = column(c) > 0 ? 1 : 0
array nall[np * nt]
array nttft[np * nt]
array ntpot[np * nt]
do for [k = 1:np * nt] { nall[k] = 0; nttft[k] = 0; ntpot[k] = 0 }
set table $scratch
plot in using (p = idx(policies, strcol("policy"), 1), t = idx(tenants, strcol("tenant"), 1), \
	p > 0 && t > 0 ? (k = (t - 1) * np + p, nall[k] = nall[k] + 1, \
		nttft[k] = nttft[k] + ok("ttft_ms"), ntpot[k] = ntpot[k] + ok("tpot_ms")) : 0, 0):(0) \
	with table
unset table
cell(p, t) = (t - 1) * np + p

if (ext eq ".pdf") {
	set terminal pdfcairo enhanced color size 24 cm, (3 + 7 * nt) cm font style_font
} else {
	if (ext eq ".png") {
		set terminal pngcairo enhanced color size 1200, (90 + 330 * nt) font style_font
	} else {
		print sprintf("%s: output must end in .pdf or .png", out)
		exit status 2
	}
}
set output out

# in cm of the canvas (3 + 7 * nt): 2 for the title, 1.8 between rows for
# an axis label and the next row's panel titles, 1.3 under the last row
hcm = 3.0 + 7 * nt
set multiplot layout nt, 2 margins 0.08, 0.84, 1.3 / hcm, (1 - 2.0 / hcm) spacing 0.08, 1.8 / hcm \
	title "Request latency CDFs per tenant" . (scenario ne "" ? ", scenario " . scenario : "") noenhanced
set logscale x 10
set format x "10^{%T}"
set mxtics 10
set yrange [0 : 1.02]
set ytics 0, 0.2, 1 nomirror
set xtics nomirror
set grid xtics ytics mxtics lc rgb style_grid, lc rgb "#f2f2f2"
set border 3

do for [t = 1:nt] {
	anyttft = 0
	anytpot = 0
	do for [p = 1:np] { anyttft = anyttft + nttft[cell(p, t)]; anytpot = anytpot + ntpot[cell(p, t)] }
	set key off
	set title tname(word(tenants, t)) . ": time to first token" noenhanced
	set xlabel "TTFT (ms, log scale)"
	set ylabel "fraction of requests (unfinished never arrive)"
	unset label 1
	set autoscale x
	# With no point to autoscale on gnuplot would fail; an empty panel says why.
	if (anyttft == 0) {
		set xrange [1 : 1000]
		set label 1 "no request got a first token" at graph 0.5, 0.5 center
	}
	plot for [p = 1:np] in using (val(p, t, "ttft_ms")):(nall[cell(p, t)] > 0 ? 1.0 / nall[cell(p, t)] : NaN) \
		smooth cumulative with steps lw pwidth(word(policies, p), p) dt pdash(word(policies, p), p) \
		lc rgb pcolour(word(policies, p), p) title word(policies, p) noenhanced
	set title tname(word(tenants, t)) . ": time per output token" noenhanced
	set xlabel "TPOT (ms, log scale)"
	set ylabel "fraction of requests with 2+ tokens"
	unset label 1
	set autoscale x
	if (anytpot == 0) {
		set xrange [1 : 1000]
		set label 1 "no request has a TPOT" at graph 0.5, 0.5 center
	}
	if (t == 1) {
		set key outside right top vertical Left reverse title "policy"
	}
	plot for [p = 1:np] in using (val(p, t, "tpot_ms")):(ntpot[cell(p, t)] > 0 ? 1.0 / ntpot[cell(p, t)] : NaN) \
		smooth cumulative with steps lw pwidth(word(policies, p), p) dt pdash(word(policies, p), p) \
		lc rgb pcolour(word(policies, p), p) title word(policies, p) noenhanced
}
unset multiplot
