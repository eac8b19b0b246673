// The countdown only displays the server's deadline; the server decides what is late.
// serverNow corrects for a wrong clock on the learner's machine.
document.addEventListener("alpine:init", () => {
  window.Alpine.data("countdown", (deadlineMs, serverNowMs, expireFormId) => ({
    offset: serverNowMs - Date.now(),
    remaining: deadlineMs - serverNowMs,
    label: "",
    fired: false,
    start() {
      this.tick();
      this.timer = setInterval(() => this.tick(), 250);
    },
    tick() {
      this.remaining = Math.max(0, deadlineMs - (Date.now() + this.offset));
      const total = Math.ceil(this.remaining / 1000);
      this.label = `${Math.floor(total / 60)}:${String(total % 60).padStart(2, "0")}`;
      if (this.remaining <= 0 && !this.fired) {
        this.fired = true;
        clearInterval(this.timer);
        const form = document.getElementById(expireFormId);
        // A moment's wait lets the server's clock pass the deadline too.
        if (form) setTimeout(() => form.submit(), 400);
      }
    },
  }));
});
