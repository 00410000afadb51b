# throughput.gp: grouped bars of each tenant's output throughput under each
# policy, from an ema run's summary.csv, so that policies can be compared
# tenant by tenant.
#
# Usage: gnuplot -d -c throughput.gp summary.csv OUT.pdf|OUT.png ["POLICY ..."] [SCENARIO]
# The optional third argument lists the policies (space-separated) in the
# order ema ran them; without it the policies are read from the data. A
# policy's colour is its own (style.gp, beside this script), the same in
# every figure. SCENARIO, the scenario as run (ema writes its name, what
# --set changed and the seed), is the title's second line.
# Columns are addressed by name: later versions of ema may append columns.

if (ARGC < 2) {
	print "usage: gnuplot -d -c throughput.gp summary.csv OUT.pdf|OUT.png [\"POLICY ...\"] [SCENARIO]"
	exit status 2
}
in = ARG1
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""
style_dir = ARG0
while (strlen(style_dir) > 0 && style_dir[strlen(style_dir):strlen(style_dir)] ne "/") { style_dir = style_dir[1:strlen(style_dir) - 1] }
load style_dir . "style.gp"
scenario = ARGC >= 4 ? ARG4 : ""

set datafile separator comma
set datafile columnheaders
set datafile missing NaN
set terminal unknown

# Distinct values of a column in order of first appearance, collected by a
# throw-away table plot because gnuplot has no other loop over data rows.
add(l, w) = (strstrt(" " . l . " ", " " . w . " ") > 0) ? l : (l eq "" ? w : l . " " . w)
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
policies = ""
if (ARGC >= 3) { policies = ARG3 }
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

# the title wrapped to the plot's width (the key takes the rest)
set title style_wrap("Output throughput per tenant" . \
	(scenario ne "" ? "\nscenario " . scenario : ""), style_chars(0.8 * (14 + 2.5 * nt)))
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
		with boxes lc rgb pcolour(word(policies, p), p) title word(policies, p), \
	for [p = 1:np] in using (mine(p) ? xpos(strcol("tenant"), p) : NaN):"throughput_tok_s":(sprintf("%.0f", column("throughput_tok_s"))) \
		with labels offset 0, 0.7 font ",8" notitle
