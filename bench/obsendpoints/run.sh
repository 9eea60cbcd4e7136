#!/usr/bin/env bash
# Times the Observatory's endpoints on a large ledger, each on a freshly
# started server (first request) and again (second), and the WebSocket
# join (subscribe → sessions:active). Figures: BENCHMARKS.md, "Observatory:
# the page, its endpoints, fan-out".
#
#   go run ./bench/ledgergen -dir /tmp/big -sessions 100000 -thoughts 1 -branch-every 0
#   go build -o /tmp/thoughtbox ./cmd/thoughtbox
#   bash bench/obsendpoints/run.sh /tmp/thoughtbox /tmp/big
#
# Needs curl, and Node 20 or later for the WebSocket join.
set -euo pipefail
bin=$1 data=$2 port=${PORT:-17291}
here=$(cd "$(dirname "$0")" && pwd)
paths=("/ui/landing" "/ui/sessions?limit=50" "/ui/sessions?limit=50&offset=50000"
	"/ui/sessions?limit=50&status=active" "/ui/sessions?limit=50&author=nobody"
	"/ui/sessions?limit=50&tag=batch-89" "/ui/sessions?limit=50&search=latency"
	"/api/sessions?limit=50" "/api/sessions?limit=50&offset=99950" "join")
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
echo "first   again   request"
for p in "${paths[@]}"; do
	THOUGHTBOX_DATA_DIR=$data HOME=$home "$bin" observatory --port "$port" --live-window 1h --http-api >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
	for i in 1 2; do
		if [ "$p" = join ]; then
			t[$i]=$(node --experimental-websocket "$here/join.js" "ws://127.0.0.1:$port/ws" 2>/dev/null)
		else
			t[$i]=$(curl -s -o /dev/null -w "%{time_total}" "http://127.0.0.1:$port$p")
		fi
	done
	printf '%-7s %-7s %s\n' "${t[1]}" "${t[2]}" "$p"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
done
