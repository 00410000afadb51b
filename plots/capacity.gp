# capacity.gp: the capacity under an SLO as bars per policy (style.gp's
# colours), the geometric mean over seeds with its 95% interval, a group
# of bars per combination of the other swept keys. Drawn by `ema figures`
# from a capacity search's capacity.csv.
#
# Below three seeds there is no interval (t(0.975, 1) = 12.7 would fill the
# axis): each seed's capacity is a dot on its bar.
#
# Usage: gnuplot -d -c capacity.gp SPEC.gp OUT.pdf|OUT.png
# SPEC.gp sets datafile (group,policy,n,y,lo,hi, beside SPEC; n the seeds,
# lo and hi NaN below three), seedsfile (group,policy,y, a row per seed of
# a search over fewer than three, or ""), hasci (1 when some bar has an
# interval), policies, groups
# (space-separated), ylab, figtitle (wrapped here to the width).

if (ARGC < 2) {
	print "usage: gnuplot -d -c capacity.gp SPEC.gp OUT.pdf|OUT.png"
	exit status 2
}
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""
style_dir = ARG0
while (strlen(style_dir) > 0 && style_dir[strlen(style_dir):strlen(style_dir)] ne "/") { style_dir = style_dir[1:strlen(style_dir) - 1] }
load style_dir . "style.gp"
spec_dir = ARG1
while (strlen(spec_dir) > 0 && spec_dir[strlen(spec_dir):strlen(spec_dir)] ne "/") { spec_dir = spec_dir[1:strlen(spec_dir) - 1] }
load ARG1
in = spec_dir . datafile
np = words(policies)
ng = words(groups)
# at least 13 cm: room for the title's lines beside the key
wcm = 8.0 + 2.2 * np * ng < 13.0 ? 13.0 : 8.0 + 2.2 * np * ng
# a title on the plot is centred on it: the key's column is not its own
title = style_wrap(figtitle, style_chars(wcm - 4.0))
hcm = 8.6 + style_line_cm * style_lines(title)
hasseeds = seedsfile ne ""
seeds = spec_dir . (hasseeds ? seedsfile : datafile)
if (ext eq ".pdf") {
	set terminal pdfcairo enhanced color size wcm cm, hcm cm font style_font
} else {
	if (ext eq ".png") {
		set terminal pngcairo enhanced color size (wcm * 48), (hcm * 48) font style_font
	} else {
		print sprintf("%s: output must end in .pdf or .png", out)
		exit status 2
	}
}
set output out
set datafile separator comma
set datafile columnheaders
# NaN (no interval) is an undefined value, not a missing one: a curve of
# intervals where no value has one is then empty, not a warning
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
group = 0.8
bw = group / np
xpos(g, p) = idx(groups, g, 1) - group / 2 + (p - 0.5) * bw
mine(p) = strcol("policy") eq word(policies, p)
set title title noenhanced
set ylabel ylab noenhanced
set xrange [0.4 : ng + 0.6]
set yrange [0 : *]
set offsets 0, 0, graph 0.10, 0
set xtics scale 0 nomirror
set xtics ()
do for [g = 1:ng] { set xtics add (word(groups, g) g) }
set ytics nomirror
set grid ytics lc rgb style_grid
set border 3
set style fill solid 0.85 border lc rgb "#333333"
set boxwidth bw * 0.9 absolute
set key outside right top vertical Left reverse title "policy"
plot for [p = 1:np] in using (mine(p) ? xpos(strcol("group"), p) : NaN):"y" \
		with boxes lc rgb pcolour(word(policies, p), p) title word(policies, p) noenhanced, \
	for [p = 1:(hasci ? np : 0)] in using (mine(p) ? xpos(strcol("group"), p) : NaN):"y":"lo":"hi" \
		with yerrorbars lc rgb "#000000" pt 0 lw 1.2 notitle, \
	for [p = 1:(hasseeds ? np : 0)] seeds using (mine(p) ? xpos(strcol("group"), p) : NaN):"y" \
		with points pt 7 ps 0.7 lc rgb "#000000" notitle
