// Draws every <canvas data-chart-source="ID"> from the JSON in <script type="application/json" id="ID">.
// The numbers live in the page (and in the table beside each chart), so nothing is fetched and
// no inline script is needed.
document.addEventListener("DOMContentLoaded", () => {
  if (!window.Chart) return; // the tables carry the same numbers
  const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  for (const canvas of document.querySelectorAll("canvas[data-chart-source]")) {
    const source = document.getElementById(canvas.dataset.chartSource);
    if (!source) continue;
    const spec = JSON.parse(source.textContent);
    const options = { maintainAspectRatio: false, scales: { y: { beginAtZero: true } } };
    if (still) options.animation = false;
    new window.Chart(canvas, {
      type: spec.type,
      data: { labels: spec.labels, datasets: spec.datasets },
      options,
    });
    canvas.dataset.chartReady = "true"; // lets tests (and people) see the chart was drawn
  }
});
