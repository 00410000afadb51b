# latency_cdf.gp: cumulative distributions of time to first token and time
# per output token under each policy, from an ema run's requests.csv; the
# tails, not the means, are where memory pressure shows.
#
# Usage: gnuplot -d -c latency_cdf.gp requests.csv OUT.pdf|OUT.png ["POLICY ..."]
# The optional third argument lists the policies (space-separated) in the
# order ema ran them; ema passes it so that every figure of a run gives a
# policy the same colour. Without it the policies are read from the data.
# Columns are addressed by name: later versions of ema may append columns.

if (ARGC < 2) {
	print "usage: gnuplot -d -c latency_cdf.gp requests.csv OUT.pdf|OUT.png [\"POLICY ...\"]"
	exit status 2
}
in = ARG1
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""

set datafile separator comma
set datafile columnheaders
# NaN from a filter must skip the row, not cut a curve or a smoothing run.
set datafile missing NaN
set terminal unknown

add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
policies = ""
do for [a = 3:ARGC] { policies = policies . (policies eq "" ? "" : " ") . ARGV[a] }
if (policies eq "") {
	# A throw-away table plot is gnuplot's only loop over data rows.
	set table $scratch
	plot in using (policies = add(policies, strcol("policy")), 0):(0) with table
	unset table
}
np = words(policies)
if (np == 0) {
	print sprintf("%s: no data rows (need columns policy, ttft_ms, tpot_ms)", in)
	exit status 2
}

mine(p) = strcol("policy") eq word(policies, p)
# Empty fields (unfinished requests) and non-positive values (no second
# token) cannot sit on a log axis; they become NaN and are left out.
val(p, c) = mine(p) ? (column(c) > 0 ? column(c) : NaN) : NaN

# TTFT is divided by all of the policy's requests, so a policy that leaves
# requests unfinished tops out below 1 instead of looking fast; TPOT is
# divided by the requests that have one (finished, two tokens or more).
# Counted in one table pass rather than with `stats`, which fails outright
# when a policy finished no request.
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
ok(c) = column(c) > 0 ? 1 : 0
array nall[np]
array nttft[np]
array ntpot[np]
do for [p = 1:np] { nall[p] = 0; nttft[p] = 0; ntpot[p] = 0 }
set table $scratch
plot in using (k = idx(policies, strcol("policy"), 1), \
	k > 0 ? (nall[k] = nall[k] + 1, nttft[k] = nttft[k] + ok("ttft_ms"), \
		 ntpot[k] = ntpot[k] + ok("tpot_ms")) : 0, 0):(0) with table
unset table
anyttft = 0
anytpot = 0
do for [p = 1:np] { anyttft = anyttft + nttft[p]; anytpot = anytpot + ntpot[p] }

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
plot for [p = 1:np] in using (val(p, "ttft_ms")):(nall[p] > 0 ? 1.0 / nall[p] : NaN) \
	smooth cumulative with steps lw 2 dt dash(p) lc rgb colour(p) title word(policies, p) noenhanced

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
plot for [p = 1:np] in using (val(p, "tpot_ms")):(ntpot[p] > 0 ? 1.0 / ntpot[p] : NaN) \
	smooth cumulative with steps lw 2 dt dash(p) lc rgb colour(p) title word(policies, p) noenhanced

unset multiplot
