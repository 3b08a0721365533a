# The generated graphs of bench/gpu_cache.sh and bench/chunks_auto.sh (sourced): bench_graph NAME
# sets G (the graph file in $C), P (its files' prefix), method (ht-partition's) and generates G
# with $B/ht-convert when it is missing (log: $OUT/gen_NAME.log). Returns 2 for an unknown name.
#   products: uniform random, N 2.45 M, E 123.7 M, range partitions
#   community: the stochastic-block-model graph of bench/run.sh, METIS
#   rmat: R-MAT scale 21, E 120 M, range
bench_graph() {
  local gen
  case $1 in
    products) G=$C/p.htg; P=p; gen=(--generate random --vertices 2449029 --edges 123718280); method=range ;;
    community) G=$C/c.htg; P=c; gen=(--generate community --vertices 2450000 --avg-degree 50); method=metis ;;
    rmat) G=$C/r.htg; P=r; gen=(--generate rmat --scale 21 --edges 120000000); method=range ;;
    *) echo "unknown graph '$1' (products, community, rmat)" >&2; return 2 ;;
  esac
  [[ -f $G ]] && return 0
  "$B/ht-convert" "${gen[@]}" --feature-dim 100 --classes 47 --train-fraction 0.25 --seed 1 -o "$G" \
    > "$OUT/gen_$1.log" 2>&1 || { echo "generate $1 failed" >&2; return 1; }
}
