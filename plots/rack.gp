# rack.gp: ema against the pool as the share of hot tenants grows, one
# line per server (gb200nvl72, b200x8, l40sx8): left, ema / pooled (the
# whole server's steady_tok_s, mean over the seeds); right, pooled /
# static, what the pool itself gains. Drawn by tools/rack.sh --write from
# the table it writes (rack.csv: server,gpus,hot,hot_pct,seeds,
# ema_static,...,pooled_static,...,ema_pooled,...; a cell not run is
# empty and left out). Colours from the Okabe-Ito palette of style.gp.
#
# Usage: gnuplot -d -c rack.gp RACK.csv OUT.pdf|OUT.png

if (ARGC < 2) {
	print "usage: gnuplot -d -c rack.gp RACK.csv OUT.pdf|OUT.png"
	exit status 2
}
data = ARG1
out = ARG2
ext = strlen(out) >= 4 ? out[strlen(out) - 3:] : ""
style_dir = ARG0
while (strlen(style_dir) > 0 && style_dir[strlen(style_dir):strlen(style_dir)] ne "/") { style_dir = style_dir[1:strlen(style_dir) - 1] }
load style_dir . "style.gp"

wcm = 17
hcm = 7.5
if (ext eq ".pdf") {
	set terminal pdfcairo enhanced color size wcm cm, hcm cm font style_font
} else {
	set terminal pngcairo enhanced color size (wcm * 48), (hcm * 48) font style_font
}
set output out
set datafile separator ","

servers = "gb200nvl72 b200x8 l40sx8"
array title_of[3] = ["GB200 NVL72 (72 GPUs, NVLink 5)", "B200 x8 (NVLink 5)", "L40S x8 (PCIe 4)"]
array colour_of[3] = ["#0072B2", "#E69F00", "#CC79A7"]
array point_of[3] = [7, 5, 9]
# column NAME of the header, or NaN where empty
pick(s, name) = strcol(1) eq s ? (strlen(strcol(name)) > 0 ? column(name) : NaN) : NaN

set grid lc rgb style_grid
set key top right samplen 2.5 font ",8" opaque
set xrange [0:75]
set xtics 0, 12.5, 75 format "%.1f"
set xlabel "hot tenants, % of the server's GPUs"
set multiplot layout 1, 2 title "ema and the pool on three servers as hot tenants grow (llama-3-8b, 24 GiB a GPU, 80 s of arrivals)" font ",10"

set ylabel "ema / pooled (steady tok/s)"
set yrange [*:*]
set offsets 0, 0, graph 0.25, graph 0.05
plot for [i = 1:3] data using "hot_pct":(pick(word(servers, i), "ema_pooled")) \
	with linespoints lw 2.2 lc rgb colour_of[i] pt point_of[i] ps 1.1 title title_of[i], \
	1 with lines dt 2 lw 1 lc rgb "#000000" notitle

set ylabel "pooled / static (steady tok/s)"
plot for [i = 1:3] data using "hot_pct":(pick(word(servers, i), "pooled_static")) \
	with linespoints lw 2.2 dt 2 lc rgb colour_of[i] pt point_of[i] ps 1.1 title title_of[i], \
	1 with lines dt 2 lw 1 lc rgb "#000000" notitle
unset multiplot
