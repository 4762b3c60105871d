# Sourced by the bench scripts, which print ratios (`ratio`) and medians. bench/run.sh
# and bench/ab.sh measure each point in ROUNDS rounds (default 3, `alternate`),
# the two sides taking turns on who goes first, so that a burst of noise on
# a shared machine (another VM, a compaction) falls on one round of one
# side, not on the whole comparison.
ROUNDS="${ROUNDS:-3}"

# alternate SIDE_A SIDE_B: runs the two commands (each prints a tps) ROUNDS
# times and prints four fields: SIDE_A's median tps, SIDE_B's, the ratio of
# the medians (B / A), and the lowest to highest ratio of a single round
# ("0.91-1.07"), which shows how far one round can be trusted.
alternate() {
  local a b r
  local -a as=() bs=() ratios=()
  for r in $(seq "$ROUNDS"); do
    if (( r % 2 )); then a=$("$1"); b=$("$2"); else b=$("$2"); a=$("$1"); fi
    as+=("${a:-0}")
    bs+=("${b:-0}")
    ratios+=("$(ratio "${b:-0}" "${a:-0}")")
  done
  local spread
  spread="$(printf '%s\n' "${ratios[@]}" | sort -g | sed -n '1p;$p' | paste -sd-)"
  a=$(median "${as[@]}")
  b=$(median "${bs[@]}")
  echo "$a $b $(ratio "$b" "$a") $spread"
}

median() {
  printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"
}

ratio() { # a b -> a / b, two decimals
  awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'
}
