// Flashcard keys: Space flips the card (its <details> opens or closes), 1-4 grade it once it is
// flipped (the buttons sit on its back), U undoes the last grade.
// Without JavaScript the card is a <details> and the grades are buttons: everything works.
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest("input, textarea, select, [contenteditable]")) return;
  if (event.key === "u" || event.key === "U") {
    const undo = document.querySelector('[data-testid="undo"]');
    if (undo) {
      event.preventDefault();
      undo.click();
    }
    return;
  }
  const card = document.querySelector("[data-flashcard]");
  if (!card) return;
  const back = card.querySelector("details.card-back");
  if (event.key === " " || event.code === "Space") {
    event.preventDefault(); // no scroll, and no click on a focused button
    back.open = !back.open;
    // The answer in view (the grade bar is docked at the window's bottom): Anki shows the
    // back where the front was; here the page moves only when the answer starts below the fold.
    if (back.open) back.querySelector("summary").scrollIntoView({ block: "nearest" });
    return;
  }
  if (!back.open) return; // graded only once the answer was seen
  const button = card.querySelector(`button[data-grade="${event.key}"]`);
  if (button) {
    event.preventDefault();
    button.click();
  }
});

// When a card comes back, in the learner's words and time zone: "in 4 days (Tue 1 Dec, 10:00)".
// The server wrote the same in UTC; the <time>'s datetime attribute is the instant.
const relativeUnits = [
  ["year", 365 * 86400], ["month", 30 * 86400], ["day", 86400], ["hour", 3600], ["minute", 60],
];
function relativeWords(when, now) {
  const seconds = (when - now) / 1000;
  if (seconds < 30) return "now";
  const words = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  for (const [unit, size] of relativeUnits) {
    if (seconds >= size || unit === "minute") {
      // Minutes round up, as the grade buttons do (Hard's 5.5 minutes is "6 min" on both).
      const whole = unit === "minute" ? Math.ceil(seconds / size - 1e-9) : Math.round(seconds / size);
      return words.format(Math.max(1, whole), unit);
    }
  }
}
for (const element of document.querySelectorAll("time[data-relative]")) {
  const when = new Date(element.getAttribute("datetime"));
  if (Number.isNaN(when.getTime())) continue;
  const local = new Intl.DateTimeFormat(undefined, {
    weekday: "short", day: "numeric", month: "short", hour: "numeric", minute: "2-digit",
  }).format(when);
  element.textContent = `${relativeWords(when, Date.now())} (${local})`;
  element.title = when.toLocaleString();
}

// "All done for now": the page comes back by itself once the next card is within the
// learn-ahead limit (the server then shows it), as Anki's deck does; not for a card days away.
for (const element of document.querySelectorAll("time[data-reload-ahead]")) {
  const ahead = Number(element.dataset.reloadAhead) * 1000;
  const wait = new Date(element.getAttribute("datetime")) - ahead - Date.now();
  // At least a minute: a browser clock ahead of the server must not reload in a loop.
  if (wait < 86400 * 1000) setTimeout(() => location.reload(), Math.max(wait + 1000, 60 * 1000));
}
