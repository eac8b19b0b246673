// The countdown only displays the server's deadline; the server decides what is late.
// serverNow corrects for a wrong clock on the learner's machine.
let answering = false; // an answer on its way wins over the page's own time-out report
document.addEventListener("submit", (event) => {
  if (event.target.matches("[data-testid=answer-form]")) answering = true;
});
document.addEventListener("alpine:init", () => {
  window.Alpine.data("countdown", (deadlineMs, serverNowMs, expireFormId, graceMs) => ({
    offset: serverNowMs - Date.now(),
    remaining: deadlineMs - serverNowMs,
    label: "",
    announcement: "", // read by screen readers (an aria-live region), at a few moments only
    announced: new Set(),
    fired: false,
    start() {
      this.tick();
      this.timer = setInterval(() => this.tick(), 250);
    },
    tick() {
      this.remaining = Math.max(0, deadlineMs - (Date.now() + this.offset));
      const total = Math.ceil(this.remaining / 1000);
      this.label = `${Math.floor(total / 60)}:${String(total % 60).padStart(2, "0")}`;
      // A live region that changed every second would drown the question for a screen
      // reader: say how much time is left as it passes a minute, thirty and ten seconds.
      if ([60, 30, 10, 0].includes(total) && !this.announced.has(total)) {
        this.announced.add(total);
        this.announcement = total === 0 ? "Time is up." : `${total} seconds left.`;
      }
      if (this.remaining <= 0 && !this.fired) {
        this.fired = true;
        clearInterval(this.timer);
        const form = document.getElementById(expireFormId);
        // Report the time-out only once the server's grace is over too: an answer clicked at
        // 0:00 is still on its way and still counts.
        if (form) setTimeout(() => { if (!answering) form.submit(); }, (graceMs || 0) + 400);
      }
    },
  }));
});
