// After an answer, the page's news is its verdict: move focus there (not to the top of the
// page), so a keyboard or screen-reader user hears it and goes on from it to "Next".
const verdict = document.querySelector("[data-focus-on-load]");
if (verdict) verdict.focus({ preventScroll: false });
