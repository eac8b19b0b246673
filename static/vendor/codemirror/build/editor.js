// RankLab's CodeMirror 6 entry: bundled by build.sh (esbuild) into ../codemirror.min.js, an IIFE
// that sets window.RankLabEditor = { attach(textarea, options) }. See static/js/lab_editor.js.
//
// CSP: CodeMirror styles itself through style-mod, which writes <style> elements; with
// `style-src 'self' 'nonce-…'` they load only if they carry the response's nonce, which
// options.nonce gives to EditorView.cspNonce. Everything else is set through the CSSOM
// (element.style), which style-src does not restrict. No eval, no new Function.
import { basicSetup } from "codemirror";
import { python } from "@codemirror/lang-python";
import { EditorState, Prec } from "@codemirror/state";
import { EditorView, keymap } from "@codemirror/view";
import { indentWithTab } from "@codemirror/commands";
import { indentUnit } from "@codemirror/language";

const attached = new WeakMap();

// The textarea's accessible name: its aria-label, else the text of its <label for=id>.
function labelOf(textarea) {
  const own = textarea.getAttribute("aria-label");
  if (own) return own;
  const label = textarea.labels && textarea.labels[0];
  return label ? label.textContent.trim() : "";
}

function attach(textarea, options = {}) {
  if (attached.has(textarea)) return attached.get(textarea);
  const onRun = typeof options.onRun === "function" ? options.onRun : null;
  const rows = Number(textarea.getAttribute("rows")) || 10;
  const contentAttributes = {};
  const label = labelOf(textarea);
  if (label) contentAttributes["aria-label"] = label;
  const describedBy = textarea.getAttribute("aria-describedby");
  if (describedBy) contentAttributes["aria-describedby"] = describedBy;

  const extensions = [
    // Above basicSetup's defaultKeymap, where Mod-Enter inserts a blank line.
    Prec.highest(
      keymap.of([
        {
          key: "Mod-Enter",
          preventDefault: true,
          run: () => {
            if (!onRun) return false;
            onRun();
            return true;
          },
        },
      ]),
    ),
    basicSetup,
    python(),
    keymap.of([indentWithTab]),
    // Python's four spaces (CodeMirror's default unit is two), for Tab and automatic indentation.
    indentUnit.of("    "),
    EditorState.tabSize.of(4),
    EditorView.contentAttributes.of(contentAttributes),
    EditorView.theme({
      "&": { border: "1px solid var(--pico-form-element-border-color, #8891a4)", borderRadius: "0.25rem" },
      "&.cm-focused": { outline: "2px solid var(--pico-primary-focus, #0172ad)" },
      ".cm-scroller": { minHeight: `${rows * 1.4}em`, fontFamily: "var(--pico-font-family-monospace, monospace)" },
    }),
    EditorView.updateListener.of((update) => {
      if (!update.docChanged) return;
      textarea.value = update.state.doc.toString();
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }),
  ];
  if (options.nonce) extensions.push(EditorView.cspNonce.of(options.nonce));

  const view = new EditorView({
    state: EditorState.create({ doc: textarea.value, extensions }),
  });
  textarea.after(view.dom);
  // The textarea stays in the form (its value is what a plain post sends) but out of sight and
  // out of the tab order; `hidden` plus display through the CSSOM, which style-src allows.
  textarea.hidden = true;
  textarea.style.display = "none";
  // Clicking the textarea's <label> focuses the editor instead of the hidden textarea.
  for (const labelElement of textarea.labels || []) {
    labelElement.addEventListener("click", (event) => {
      event.preventDefault();
      view.focus();
    });
  }

  const editor = {
    view,
    getValue: () => view.state.doc.toString(),
    setValue(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: String(text) } });
    },
    focus: () => view.focus(),
  };
  attached.set(textarea, editor);
  return editor;
}

window.RankLabEditor = { attach };
