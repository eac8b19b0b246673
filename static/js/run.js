// "Run it": open the app's SSE stream and show each rank's output side by side as it arrives.

// Where a rank that hung was stuck when the time limit killed it ("" when it did not hang).
window.stuckAt = (stuck) => {
  if (!stuck) return "";
  const where = stuck.line ? `line ${stuck.line}` : "an unknown line";
  const call = stuck.call ? `, waiting in ${stuck.call}` : "";
  return `Stuck at ${where}${call} when the time limit stopped it.`;
};
document.addEventListener("alpine:init", () => {
  window.Alpine.data("runIt", (url, nproc) => ({
    running: false,
    started: false,
    summary: "",
    ranks: [],
    start() {
      this.running = true;
      this.started = true;
      this.summary = "Running…";
      this.ranks = Array.from({ length: nproc }, (_, rank) => ({ rank, status: "running", stdout: "", stderr: "", stuck: "" }));
      const source = new EventSource(url);
      source.addEventListener("output", (message) => {
        const chunk = JSON.parse(message.data);
        const rank = this.ranks[chunk.rank];
        if (rank) rank[chunk.stream] += chunk.text;
      });
      source.addEventListener("result", (message) => {
        const result = JSON.parse(message.data);
        for (const observed of result.ranks) {
          const rank = this.ranks[observed.rank];
          if (!rank) continue;
          rank.status = observed.status;
          // The final result is authoritative (a cached run streams nothing before it).
          rank.stdout = observed.stdout;
          rank.stderr = observed.exception ? `${observed.exception.type}: ${observed.exception.message}` : observed.stderr;
          rank.stuck = window.stuckAt(observed.stuck);
        }
        const env = result.environment || {};
        const when = result.observed_at ? ` · observed ${result.observed_at}` : "";
        const cached = result.cached ? " (cached)" : "";
        this.summary = `${result.status} · ${result.duration_ms} ms · torch ${env.torch} · ${env.backend} on ${env.device}, ${env.nproc} rank(s)${when}${cached}`;
        this.finish(source);
      });
      source.addEventListener("unavailable", (message) => {
        this.summary = JSON.parse(message.data).message;
        this.finish(source);
      });
      source.onerror = () => {
        if (this.running) this.summary = "The run was interrupted; try again.";
        this.finish(source);
      };
    },
    finish(source) {
      source.close();
      this.running = false;
    },
  }));
});
