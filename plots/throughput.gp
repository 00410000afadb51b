# throughput.gp: grouped bars of each tenant's output throughput under each
# policy, from an ema run's summary.csv, so that policies can be compared
# tenant by tenant.
#
# Usage: gnuplot -d -c throughput.gp summary.csv OUT.pdf|OUT.png ["POLICY ..."]
# The optional third argument lists the policies (space-separated) in the
# order ema ran them; ema passes it so that every figure of a run gives a
# policy the same colour. Without it the policies are read from the data.
# Columns are addressed by name: later versions of ema may append columns.

if (ARGC < 2) {
	print "usage: gnuplot -d -c throughput.gp summary.csv OUT.pdf|OUT.png [\"POLICY ...\"]"
	exit status 2
}
in = ARG1
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""

set datafile separator comma
set datafile columnheaders
set datafile missing NaN
set terminal unknown

# Distinct values of a column in order of first appearance, collected by a
# throw-away table plot because gnuplot has no other loop over data rows.
add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
policies = ""
do for [a = 3:ARGC] { policies = policies . (policies eq "" ? "" : " ") . ARGV[a] }
tenants = ""
set table $scratch
if (policies eq "") {
	plot in using (policies = add(policies, strcol("policy")), 0):(0) with table
}
plot in using (tenants = add(tenants, strcol("tenant")), 0):(0) with table
unset table
np = words(policies)
nt = words(tenants)
if (np == 0 || nt == 0) {
	print sprintf("%s: no data rows (need columns policy, tenant, throughput_tok_s)", in)
	exit status 2
}

# Okabe-Ito colours: distinguishable with common colour-vision deficiencies.
array palette[8] = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"]
colour(i) = palette[(i - 1) % 8 + 1]

if (ext eq ".pdf") {
	set terminal pdfcairo noenhanced color size (14 + 2.5 * nt) cm, 10 cm font "Sans,10"
} else {
	if (ext eq ".png") {
		set terminal pngcairo noenhanced color size (580 + 100 * nt), 400 font "Sans,10"
	} else {
		print sprintf("%s: output must end in .pdf or .png", out)
		exit status 2
	}
}
set output out

# Bars of one tenant sit side by side around the tenant's integer x.
group = 0.8
bw = group / np
xpos(t, p) = idx(tenants, t, 1) - group / 2 + (p - 0.5) * bw
mine(p) = strcol("policy") eq word(policies, p)

set title "Output throughput per tenant"
set ylabel "throughput (tokens/s)"
set xlabel "tenant"
set xrange [0.4 : nt + 0.6]
set yrange [0 : *]
set offsets 0, 0, graph 0.12, 0
set xtics scale 0 nomirror
set xtics ()
do for [t = 1:nt] { set xtics add (word(tenants, t) t) }
set ytics nomirror
set grid ytics lc rgb "#dddddd"
set border 3
set style fill solid 0.85 border lc rgb "#333333"
set boxwidth bw * 0.95 absolute
set key outside right top vertical Left reverse title "policy"
set format y "%.0f"

plot for [p = 1:np] in using (mine(p) ? xpos(strcol("tenant"), p) : NaN):"throughput_tok_s" \
		with boxes lc rgb colour(p) title word(policies, p), \
	for [p = 1:np] in using (mine(p) ? xpos(strcol("tenant"), p) : NaN):"throughput_tok_s":(sprintf("%.0f", column("throughput_tok_s"))) \
		with labels offset 0, 0.7 font ",8" notitle
