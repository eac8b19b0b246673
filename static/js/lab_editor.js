// Lab code boxes: every <textarea data-editor="python"> becomes a CodeMirror editor when the
// bundle (/static/vendor/codemirror/codemirror.min.js, window.RankLabEditor) is loaded; the
// textarea keeps the editor's text, so the form posts it as before. Without the bundle the
// textarea stays a plain one. Either way Ctrl+Enter (Cmd+Enter on a Mac) clicks the form's
// [data-run] button.
(() => {
  // The CSP nonce for CodeMirror's <style> elements: the csp-nonce meta tag, else this script's
  // own nonce (readable only while it runs, hence read now).
  const scriptNonce = document.currentScript ? document.currentScript.nonce : "";

  function runButton(textarea) {
    return textarea.form ? textarea.form.querySelector("[data-run]") : null;
  }

  function run(textarea) {
    const button = runButton(textarea);
    if (button && !button.disabled) button.click();
  }

  // Plain textareas (no bundle, or before it attaches): Ctrl/Cmd+Enter runs.
  document.addEventListener("keydown", (event) => {
    const textarea = event.target;
    if (!(textarea instanceof HTMLTextAreaElement) || !textarea.matches('[data-editor="python"]')) return;
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || event.isComposing) return;
    if (!runButton(textarea)) return;
    event.preventDefault();
    run(textarea);
  });

  function attachAll() {
    const editor = window.RankLabEditor;
    if (!editor || typeof editor.attach !== "function") return;
    const meta = document.querySelector('meta[name="csp-nonce"]');
    const nonce = (meta && meta.content) || scriptNonce || undefined;
    for (const textarea of document.querySelectorAll('textarea[data-editor="python"]')) {
      editor.attach(textarea, { nonce, onRun: () => run(textarea) });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", attachAll);
  else attachAll();
})();
