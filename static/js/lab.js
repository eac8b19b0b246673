// A lab step: Run posts the code (the server keeps it as the draft), then follows the run's
// events (SSE; the browser resumes a dropped stream with Last-Event-ID) into one bounded pane
// per rank. When the run ends, the judged parts of the page (checks, hints and solution, the
// step's state) are fetched and swapped in place: no reload, so focus stays in the editor and
// what the ranks printed stays, Stop included. Reset asks first, in a <dialog>. Without
// JavaScript the form still posts and the page shows the last run when reloaded.
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
  const words = JSON.parse(form.dataset.words || "{}");
  const runWords = (status) => (words.run && words.run[status]) || status.replace(/_/g, " ");
  const rankWords = (status) => (words.rank && words.rank[status]) || status.replace(/_/g, " ");
  let source = null;
  let runId = null;
  let stopped = false;
  // idle on a fresh page and between runs; running while a run goes on; judging while the
  // page fetches the judged checks once it has ended.
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

  // The editor itself (CodeMirror's content), or the plain textarea without the bundle.
  const editorElement = () => form.querySelector(".cm-content") || code;

  const pane = (rank) => {
    let box = panes.querySelector(`[data-testid="rank-${rank}"]`);
    if (!box) {
      box = document.createElement("div");
      box.className = "rank";
      box.dataset.testid = `rank-${rank}`;
      box.innerHTML =
        '<header><strong></strong> <span class="pill" data-testid="rank-status"></span></header>' +
        '<pre class="out" tabindex="0"></pre><pre class="err" tabindex="0" hidden></pre>' +
        '<p class="cut" hidden></p><p class="stuck" hidden></p>';
      box.querySelector("strong").textContent = `rank ${rank}`;
      box.querySelector("[data-testid=rank-status]").textContent = rankWords("running");
      box.querySelector("pre.out").setAttribute("aria-label", `rank ${rank} output`);
      box.querySelector("pre.err").setAttribute("aria-label", `rank ${rank} errors`);
      box.querySelector("p.cut").dataset.testid = `cut-${rank}`;
      box.querySelector("p.stuck").dataset.testid = `stuck-${rank}`;
      const boxes = [...panes.children];
      const after = boxes.find((other) => Number(other.dataset.testid.slice(5)) > rank);
      panes.insertBefore(box, after || null);
    }
    return box;
  };

  // A pane follows its output while the reader is at its bottom, and leaves them be when they
  // have scrolled up to read.
  const append = (out, text) => {
    const atBottom = out.scrollHeight - out.scrollTop - out.clientHeight < 8;
    out.textContent += text;
    if (atBottom) out.scrollTop = out.scrollHeight;
  };

  // Swap in the parts of the step page that judging changes (checks, hints and solution, the
  // step's state), fetched fresh: the editor, the panes and the focus are left alone.
  const refresh = async () => {
    const response = await fetch(window.location.pathname, {
      credentials: "same-origin",
      headers: { Accept: "text/html" },
    });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    for (const part of document.querySelectorAll("[data-live]")) {
      const replacement = fresh.querySelector(`[data-live="${part.dataset.live}"]`);
      if (!replacement) continue;
      const node = document.importNode(replacement, true);
      part.replaceWith(node);
      // htmx only wires up what it swapped itself: the fresh part's "Show solution" among them.
      if (window.htmx) window.htmx.process(node);
    }
  };

  const finish = async (judged) => {
    if (source) source.close();
    source = null;
    stopButton.disabled = true;
    if (judged) {
      form.dataset.state = "judging"; // Run stays disabled until the judged page parts are in
      try {
        await refresh();
      } catch (error) {
        state.textContent = "The checks could not be shown: reload the page to see them.";
      }
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
      append(out, data.text);
      if (state.textContent !== "Running…") state.textContent = "Running…";
    });
    source.addEventListener("result", (event) => {
      const result = JSON.parse(event.data);
      for (const rank of result.ranks) {
        const box = pane(rank.rank);
        // The server's words say why a rank was killed (a peer failed, a limit): else ours.
        const said = result.rank_words && result.rank_words[rank.rank];
        box.querySelector("[data-testid=rank-status]").textContent = said || rankWords(rank.status);
        // The final result is authoritative (a cached run streams nothing before it).
        const out = box.querySelector("pre.out");
        if (rank.stdout && out.textContent !== rank.stdout) out.textContent = rank.stdout;
        const err = box.querySelector("pre.err");
        if (rank.stderr && err.textContent !== rank.stderr) err.textContent = rank.stderr;
        err.hidden = !err.textContent;
        const cut = box.querySelector("p.cut");
        cut.textContent = rank.truncated ? words.cut : "";
        cut.hidden = !rank.truncated;
        const stuck = box.querySelector("p.stuck");
        stuck.textContent = window.stuckAt ? window.stuckAt(rank.stuck) : "";
        stuck.hidden = !stuck.textContent;
      }
      const count = result.ranks.length;
      summary.textContent = `Last run: ${runWords(result.status)}, ${result.duration_ms} ms, ${count} rank${count === 1 ? "" : "s"}.`;
      state.textContent = "Judging the checks…";
    });
    source.addEventListener("unavailable", (event) => {
      state.textContent = JSON.parse(event.data).message;
    });
    source.addEventListener("queued", (event) => {
      state.textContent = JSON.parse(event.data).message;
    });
    source.addEventListener("stopped", (event) => {
      stopped = true;
      for (const status of panes.querySelectorAll("[data-testid=rank-status]")) {
        status.textContent = rankWords("stopped");
      }
      summary.textContent = `Last run: ${runWords("stopped")}.`;
      state.textContent = JSON.parse(event.data).message;
    });
    source.addEventListener("checks", () => {
      if (!stopped && state.textContent === "Judging the checks…") state.textContent = "";
    });
    source.addEventListener("end", () => finish(true));
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (form.dataset.state !== "idle") return; // one run at a time
    form.dataset.state = "running";
    clearTimeout(timer);
    // Run is disabled while the run goes on: a click on it must not strand the focus there.
    const refocus = document.activeElement === runButton;
    runButton.disabled = true;
    runButton.setAttribute("aria-busy", "true");
    if (refocus) editorElement().focus();
    stopped = false;
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
    editorElement().focus();
    await post(`/labs/runs/${runId}/stop`, new FormData());
  });

  // Reset replaces the learner's code: it asks first. Cancel (or Escape) changes nothing.
  const resetButton = document.querySelector("[data-reset]");
  const dialog = document.getElementById("reset-dialog");
  if (resetButton && dialog && typeof dialog.showModal === "function") {
    resetButton.addEventListener("click", () => dialog.showModal());
    dialog.querySelector("[data-cancel]").addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => resetButton.focus());
    dialog.querySelector("form").addEventListener("submit", () => clearTimeout(timer));
  }
})();
