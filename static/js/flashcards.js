// Flashcard keys: Space flips the card (its <details> opens or closes), 1-4 grade it.
// Without JavaScript the card is a <details> and the grades are buttons: everything works.
document.addEventListener("keydown", (event) => {
  const card = document.querySelector("[data-flashcard]");
  if (!card || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest("input, textarea, select, [contenteditable]")) return;
  if (event.key === " " || event.code === "Space") {
    event.preventDefault(); // no scroll, and no click on a focused button
    const back = card.querySelector("details.card-back");
    back.open = !back.open;
    return;
  }
  const button = card.querySelector(`button[data-grade="${event.key}"]`);
  if (button) {
    event.preventDefault();
    button.click();
  }
});
