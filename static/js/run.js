// "Run it": open the app's SSE stream and show each rank's output side by side as it arrives.

// Where a rank that hung was stuck when the time limit killed it ("" when it did not hang).
window.stuckAt = (stuck) => {
  if (!stuck) return "";
  const where = stuck.line ? `line ${stuck.line}` : "an unknown line";
  const call = stuck.call ? `, waiting in ${stuck.call}` : "";
  return `Stuck at ${where}${call} when the time limit stopped it.`;
};
// A time as the pages' `when` filter writes it, in the browser's zone (the zone its tz cookie
// names): "Sun 29 Nov 2026, 10:29 UTC". The raw ISO string where the browser cannot format it.
window.shownWhen = (iso) => {
  const moment = new Date(iso);
  if (Number.isNaN(moment.getTime())) return iso;
  try {
    const parts = Object.fromEntries(new Intl.DateTimeFormat("en-GB", {
      weekday: "short", day: "2-digit", month: "short", year: "numeric",
      hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short",
    }).formatToParts(moment).map((part) => [part.type, part.value]));
    return `${parts.weekday} ${parts.day} ${parts.month} ${parts.year}, ${parts.hour}:${parts.minute} ${parts.timeZoneName}`;
  } catch (_) {
    return iso;
  }
};
// Read the run's server-sent events with fetch: EventSource cannot read a refusal's message
// (409: a run of yours is going already; 429: too many runs in a minute), which is shown.
window.readRunEvents = async (url, handlers, signal) => {
  const response = await fetch(url, { headers: { Accept: "text/event-stream, application/json;q=0.5" }, signal });
  if (!response.ok) {
    let message = "The run was refused; try again.";
    try { message = (await response.json()).detail || message; } catch (_) { /* not JSON */ }
    handlers.refused(message);
    return;
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length && handlers[name]) handlers[name](JSON.parse(data.join("\n")));
    }
  }
  handlers.ended();
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
      const stopping = new AbortController();
      const shown = (message) => { this.summary = message; this.finish(stopping); };
      window.readRunEvents(url, {
        queued: (waiting) => { this.summary = waiting.message; },
        output: (chunk) => {
          const rank = this.ranks[chunk.rank];
          if (rank) rank[chunk.stream] += chunk.text;
          this.summary = "Running…";
        },
        capped: (notice) => { this.summary = notice.message; },
        result: (result) => {
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
          const when = result.observed_at ? ` · observed ${window.shownWhen(result.observed_at)}` : "";
          const cached = result.cached ? " (cached)" : "";
          const recorded = result.recorded ? " (recorded: this snippet hangs, as its proof observed)" : "";
          shown(`${result.status} · ${result.duration_ms} ms · torch ${env.torch} · ${env.backend} on ${env.device}, ${env.nproc} rank${env.nproc === 1 ? "" : "s"}${when}${cached}${recorded}`);
        },
        unavailable: (notice) => shown(notice.message),
        refused: (message) => shown(message),
        ended: () => { if (this.running) shown("The run was interrupted; try again."); },
      }, stopping.signal).catch(() => { if (this.running) shown("The run was interrupted; try again."); });
    },
    finish(stopping) {
      this.running = false;
      stopping.abort();
    },
  }));
});
