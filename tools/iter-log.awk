# iter-log.awk: sums up an EMA_ITER_LOG file (sim/sim_platform.c) per run
# (the k-th policy of an `ema run`) for one GPU between two run times: the
# decode iterations (count, mean batch, mean step, remote share of the KV
# read, mean GB/s leaving the GPU's HBM for other GPUs' reads) and the
# prefill iterations' share of the busy time. doc/model.md, "The targets
# of issue 11, simulated", made its figures with it (up to 0400328; ema's
# planner logs its own decisions: tools/decisions.awk):
#     EMA_LEAP=0 EMA_ITER_LOG=it.csv ema run --config S.json --out o --quiet --no-plots
#     awk -F, -v gpu=0 -v from=30 -v to=300 -f tools/iter-log.awk it.csv
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
$c["gpu"] == gpu && $c["time_s"] >= from && $c["time_s"] <= to {
	r = $c["run"]; runs[r] = 1
	if ($c["prefill_tokens"] > 0) { pt[r] += $c["total_ns"]; pn[r]++; next }
	dn[r]++; dt[r] += $c["total_ns"]; db[r] += $c["n_seqs"]
	rem[r] += $c["remote_bytes"]; kv[r] += $c["kv_local_bytes"] + $c["remote_bytes"]
	out[r] += $c["hbm_out_gbps"]
}
END {
	for (r = 1; r in runs; r++) {
		n = dn[r] > 0 ? dn[r] : 1
		share = kv[r] > 0 ? rem[r] / kv[r] : 0
		busy = pt[r] + dt[r] > 0 ? pt[r] + dt[r] : 1
		printf "run %d: %d decode steps, batch %.1f, step %.2f ms, remote share %.3f, HBM out %.1f GB/s; %d prefill iterations, %.1f%% of busy time\n",
		       r, dn[r], db[r] / n, dt[r] / n / 1e6, share, out[r] / n, pn[r], 100 * pt[r] / busy
	}
}
