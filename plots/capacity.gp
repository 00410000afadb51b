# capacity.gp: the capacity under an SLO as bars per policy (style.gp's
# colours), the geometric mean over seeds with its 95% interval, a group
# of bars per combination of the other swept keys. Drawn by `ema figures`
# from a capacity search's capacity.csv.
#
# Usage: gnuplot -d -c capacity.gp SPEC.gp OUT.pdf|OUT.png
# SPEC.gp sets datafile (group,policy,y,lo,hi, beside SPEC), policies,
# groups (space-separated), ylab, figtitle.

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
wcm = 8.0 + 2.2 * np * ng
hcm = 9.5
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
set datafile missing NaN
idx(l, w, i) = i > words(l) ? 0 : (word(l, i) eq w ? i : idx(l, w, i + 1))
group = 0.8
bw = group / np
xpos(g, p) = idx(groups, g, 1) - group / 2 + (p - 0.5) * bw
mine(p) = strcol("policy") eq word(policies, p)
set title figtitle noenhanced
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
	for [p = 1:np] in using (mine(p) ? xpos(strcol("group"), p) : NaN):"y":"lo":"hi" \
		with yerrorbars lc rgb "#000000" pt 0 lw 1.2 notitle
