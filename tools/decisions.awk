# decisions.awk: sums up ema's decision log (EMA_DECISION_LOG, written by
# policies/ema.c: a line per lender read in each borrower step that reads
# remote KV) per run, tenant and lender: the steps logged, the share of
# them by path and by the limit that bound the budget, the mean predicted
# and measured step and how far the two differ, and the mean bytes read
# and budget. It is how to see which of the planner's limits binds where,
# and whether its predictions hold (doc/model.md, "ema's planner"):
#     EMA_DECISION_LOG=d.csv ema run --set policies=static,ema --out o
#     awk -f tools/decisions.awk d.csv
# The log is appended to, and each process that opens it writes the header
# again: every header line starts a new run (1, 2, ...), so that one file
# of several runs is not summed across them. Prefills that write into
# borrowed pages log 0 bytes read; they count as steps like the others.
BEGIN {
	FS = ","
	npath = split("inplace staged compute none", paths, " ")
	nbind = split("tpot lender throughput no_path", binds, " ")
}
$1 == "time_s" {
	# a header: the columns by name, and a new run
	for (i = 1; i <= NF; i++)
		c[$i] = i
	run++
	next
}
run > 0 && NF >= 11 {
	k = run SUBSEP $c["tenant"] SUBSEP $c["lender"]
	if (!(k in steps))
		order[++n] = k
	steps[k]++
	path[k, $c["path"]]++
	bind[k, $c["binding"]]++
	pred[k] += $c["predicted_ms"]
	meas[k] += $c["measured_ms"]
	bytes[k] += $c["bytes"]
	budget[k] += $c["budget_bytes"]
}
END {
	printf "run tenant lender steps"
	for (j = 1; j <= npath; j++)
		printf " %s", paths[j]
	for (j = 1; j <= nbind; j++)
		printf " %s", binds[j]
	printf " predicted_ms measured_ms measured/predicted bytes_gb budget_gb\n"
	for (i = 1; i <= n; i++) {
		k = order[i]
		split(k, id, SUBSEP)
		s = steps[k]
		printf "%d %s %s %d", id[1], id[2], id[3], s
		for (j = 1; j <= npath; j++)
			printf " %.3f", path[k, paths[j]] / s
		for (j = 1; j <= nbind; j++)
			printf " %.3f", bind[k, binds[j]] / s
		# (the ratio in parentheses: a bare > in printf's list redirects)
		printf " %.3f %.3f %.3f %.3f %.3f\n", pred[k] / s, meas[k] / s,
		       (pred[k] > 0 ? meas[k] / pred[k] : 0), bytes[k] / s / 1e9, budget[k] / s / 1e9
	}
}
