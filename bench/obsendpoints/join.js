// Prints the seconds from opening the Observatory's WebSocket to its
// sessions:active answer.
const t0 = performance.now();
const ws = new WebSocket(process.argv[2]);
ws.onopen = () => ws.send(JSON.stringify(["observatory", "subscribe"]));
ws.onmessage = (e) => {
  const m = JSON.parse(e.data);
  if (m[1] === "sessions:active") {
    console.log(((performance.now() - t0) / 1000).toFixed(6));
    process.exit(0);
  }
};
