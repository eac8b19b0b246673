// A lab step: Run posts the code, then follows the run's events (SSE; the browser resumes a
// dropped stream with Last-Event-ID) into one pane per rank; Stop kills the run; the code is
// saved as a draft while you type. Without JavaScript the form still posts and the page shows
// the last run when reloaded.
(() => {
  const form = document.querySelector("form.lab-run");
  if (!form) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const code = form.querySelector("textarea[name=code]");
  const runButton = form.querySelector("[data-run]");
  const stopButton = form.querySelector("[data-stop]");
  const state = form.querySelector("[data-testid=run-state]");
  const panes = document.querySelector("[data-testid=rank-panes]");
  const summary = document.querySelector("[data-testid=run-summary]");
  const checks = document.querySelector("[data-testid=checks]");
  let source = null;
  let runId = null;
  // idle on a fresh page; running while a run goes on; reloading once it has ended (the page
  // reloads to show the judged checks, the step's state and the way on).
  form.dataset.state = "idle";

  const post = (url, body) =>
    fetch(url, {
      method: "POST",
      headers: { "X-CSRF-Token": csrf, Accept: "application/json" },
      body,
      credentials: "same-origin",
    });

  // Drafts: saved a moment after typing stops (and kept across reloads and restarts).
  let timer = null;
  const saveDraft = () => {
    const body = new FormData();
    body.set("code", code.value);
    post(form.dataset.draftUrl, body);
  };
  code.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(saveDraft, 600);
  });

  const pane = (rank) => {
    let box = panes.querySelector(`[data-testid="rank-${rank}"]`);
    if (!box) {
      box = document.createElement("div");
      box.className = "rank";
      box.dataset.testid = `rank-${rank}`;
      box.innerHTML =
        '<header><strong></strong> <span class="pill" data-testid="rank-status">running</span></header>' +
        '<pre class="out" tabindex="0"></pre><pre class="err" tabindex="0" hidden></pre>' +
        '<p class="stuck" hidden></p>';
      box.querySelector("strong").textContent = `rank ${rank}`;
      const boxes = [...panes.children];
      const after = boxes.find((other) => Number(other.dataset.testid.slice(5)) > rank);
      panes.insertBefore(box, after || null);
    }
    return box;
  };

  const showChecks = (list) => {
    checks.replaceChildren(
      ...list.map((check) => {
        const item = document.createElement("li");
        item.className = check.passed ? "passed" : "failed";
        item.dataset.testid = "check";
        item.dataset.passed = check.passed ? "yes" : "no";
        const title = document.createElement("strong");
        title.textContent = `${check.passed ? "✓" : "✗"} ${check.says}`;
        item.append(title);
        for (const problem of check.problems) {
          const detail = document.createElement("small");
          detail.textContent = problem;
          item.append(document.createElement("br"), detail);
        }
        return item;
      }),
    );
  };

  const finish = (reload) => {
    if (source) source.close();
    source = null;
    stopButton.disabled = true;
    if (reload) {
      form.dataset.state = "reloading"; // Run stays disabled until the page is back
      window.location.reload();
      return;
    }
    form.dataset.state = "idle";
    runButton.disabled = false;
    runButton.removeAttribute("aria-busy");
  };

  const follow = (url) => {
    source = new EventSource(url);
    source.addEventListener("output", (event) => {
      const data = JSON.parse(event.data);
      const box = pane(data.rank);
      const out = box.querySelector(data.stream === "stderr" ? "pre.err" : "pre.out");
      out.hidden = false;
      out.textContent += data.text;
    });
    source.addEventListener("result", (event) => {
      const result = JSON.parse(event.data);
      for (const rank of result.ranks) {
        pane(rank.rank).querySelector("[data-testid=rank-status]").textContent = rank.status;
        const stuck = pane(rank.rank).querySelector("p.stuck");
        if (stuck) {
          stuck.textContent = window.stuckAt ? window.stuckAt(rank.stuck) : "";
          stuck.hidden = !stuck.textContent;
        }
      }
      summary.textContent = `Run ${result.status}, ${result.duration_ms} ms.`;
      state.textContent = "";
    });
    source.addEventListener("unavailable", (event) => {
      state.textContent = JSON.parse(event.data).message;
    });
    source.addEventListener("queued", (event) => {
      state.textContent = JSON.parse(event.data).message;
    });
    source.addEventListener("output", () => {
      if (state.textContent !== "Running…") state.textContent = "Running…";
    });
    source.addEventListener("stopped", (event) => {
      state.textContent = JSON.parse(event.data).message;
    });
    source.addEventListener("checks", (event) => showChecks(JSON.parse(event.data).checks));
    source.addEventListener("end", () => finish(true));
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (form.dataset.state !== "idle") return; // one run at a time
    form.dataset.state = "running";
    clearTimeout(timer);
    runButton.disabled = true;
    runButton.setAttribute("aria-busy", "true");
    state.textContent = "Starting…";
    panes.replaceChildren();
    summary.textContent = "";
    const response = await post(form.action, new FormData(form));
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      state.textContent = answer.detail || `The run was refused (${response.status}).`;
      finish(false);
      return;
    }
    runId = answer.run_id;
    state.textContent = "Running…";
    stopButton.disabled = false;
    follow(answer.events);
  });

  stopButton.addEventListener("click", async () => {
    if (runId === null) return;
    stopButton.disabled = true;
    state.textContent = "Stopping…";
    await post(`/labs/runs/${runId}/stop`, new FormData());
  });
})();
