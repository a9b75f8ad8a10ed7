// misstep review: math in trace text, rendered by the bundled KaTeX, bounded, and never at the
// cost of the page. Text is only ever put into the page as text nodes; KaTeX builds its own
// output (trust: false), so nothing in a trace runs.
//
// Which dollar signs are math (pandoc's rule, checked on ProcessBench's GSM8K, MATH,
// OlympiadBench and Omni-MATH traces, Mr-Ben and MR-GSM8K: tests/review/test_review_math.py):
// a "$" opens inline math only when a non-space follows it, and closes it only when a non-space
// precedes it and no digit follows. So "costs $10 and an additional $10" stays text ("$10 and
// an additional $" never closes: a space precedes the second "$"), "$10+$5=$15" too (each "$" is
// followed by a digit), while "$x^2$", "$\frac{1}{2}$" and "$3$-digit" are math. "\$" is a
// literal dollar, inside math and out; inline math never spans a blank line. "$$...$$",
// "\[...\]", "\(...\)" and \begin{align} (and the other math environments) are math as written.
//
// What is too much falls back to the text as written: a span longer than LIMITS.texLength, or
// nested deeper than LIMITS.depth (braces, \left...\right), or any error KaTeX throws (a parse
// error, a stack overflow), and every span after the page's time budget is spent. A degenerate
// output (a thousand nested \frac) shows as its text, and the label form stays usable.
"use strict";

(function (root) {
  const LIMITS = { texLength: 4000, depth: 30, budgetMs: 1500 };
  const ENVS = new Set(["equation", "equation*", "align", "align*", "aligned", "gather", "gather*",
    "gathered", "alignat", "alignat*", "multline", "multline*", "split", "cases", "array",
    "matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "smallmatrix", "CD"]);
  const SPACE = /\s/;
  const DIGIT = /[0-9]/;

  // The end (index of its first character) of `close` after `from`, skipping escaped
  // characters, stopping at a blank line when `inline`; -1 with the index where the search
  // stopped (so that later openers before it are not searched again: linear time overall).
  function findClose(text, from, close, inline) {
    let j = from;
    while (j < text.length) {
      const c = text[j];
      if (text.startsWith(close, j)) return { at: j, stop: j };
      if (c === "\\") { j += 2; continue; }
      if (inline && c === "\n" && /^\n[ \t]*\n/.test(text.slice(j, j + 64))) return { at: -1, stop: j };
      j += 1;
    }
    return { at: -1, stop: text.length };
  }

  // Two plain words in a row (command names left out): prose, not math.
  const PROSE = /(^|[^\\A-Za-z])[A-Za-z]{2,} +[A-Za-z]{2,}(?![A-Za-z]*\{)/;

  // The closing "$" of inline math opened at `open`: the next "$" that is not escaped (inside
  // math an unescaped "$" cannot occur, so a "$" that cannot close means the opener was none),
  // within the paragraph and before any \( or \[. It closes when no digit follows it and a
  // non-space precedes it; or, after a space ("$P(x) $", as Omni-MATH writes), when the opener
  // is followed by a non-space that is no digit (so never "$10 and $20") and what lies between
  // does not read as prose. An opener followed by a space and preceded by a digit ("1000$ to
  // use") is a price.
  function inlineClose(text, open) {
    const after = text[open + 1] || "";
    if (SPACE.test(after) && DIGIT.test(text[open - 1] || "")) return { at: -1, stop: open + 1 };
    let j = open + 1;
    while (j < text.length) {
      const c = text[j];
      if (c === "\\") {
        if (text[j + 1] === "(" || text[j + 1] === "[") return { at: -1, stop: j };
        j += 2;
        continue;
      }
      if (c === "$") {
        const inner = text.slice(open + 1, j);
        let ok = inner.trim() !== "" && !DIGIT.test(text[j + 1] || "");
        if (ok && SPACE.test(text[j - 1])) {
          ok = !SPACE.test(after) && !DIGIT.test(after) && !PROSE.test(inner);
        }
        return ok ? { at: j, stop: j } : { at: -1, stop: j };
      }
      if (c === "\n" && /^\n[ \t]*\n/.test(text.slice(j, j + 64))) return { at: -1, stop: j };
      j += 1;
    }
    return { at: -1, stop: text.length };
  }

  // The end of the brace group that opens at `from` ("{"), or -1 (unbalanced, a blank line,
  // or further than LIMITS.texLength).
  function braceEnd(text, from) {
    let d = 0;
    const last = Math.min(text.length, from + LIMITS.texLength);
    for (let j = from; j < last; j++) {
      const c = text[j];
      if (c === "\\") { j += 1; continue; }
      if (c === "{") d += 1;
      else if (c === "}" && --d === 0) return j;
      else if (c === "\n" && /^\n[ \t]*\n/.test(text.slice(j, j + 64))) return -1;
    }
    return -1;
  }

  // The text cut into pieces: {start, end, math: false} and {start, end, math: true, tex,
  // display}, in order, covering the text exactly (start/end index into `text`).
  function split(text) {
    const out = [];
    let plain = 0;
    let i = 0;
    const failed = {}; // delimiter -> index up to which a search for its closer has failed
    function emit(start, end, tex, display) {
      if (start > plain) out.push({ start: plain, end: start, math: false });
      out.push({ start: start, end: end, math: true, tex: tex, display: display });
      plain = end;
      i = end;
    }
    function search(kind, find) {
      if (i < (failed[kind] || -1)) return null;
      const found = find();
      if (found.at < 0) failed[kind] = found.stop;
      return found.at < 0 ? null : found.at;
    }
    while (i < text.length) {
      const c = text[i];
      if (c === "\\") {
        const next = text[i + 1];
        if (next === "(" || next === "[") {
          const display = next === "[";
          const at = search(next, () => findClose(text, i + 2, display ? "\\]" : "\\)", !display));
          if (at !== null && at > i + 2) { emit(i, at + 2, text.slice(i + 2, at), display); continue; }
        } else if (next === "b" && text.startsWith("\\boxed{", i)) {
          // A bare \boxed{...} (models write the final answer so, outside any math).
          const end = braceEnd(text, i + 6);
          if (end > 0) {
            const inner = text.slice(i + 7, end);
            // A boxed sentence ("\boxed{4 blue boxes}") keeps its spaces: boxed as text.
            const tex = PROSE.test(inner) && !/[\\$^_{}]/.test(inner) ? "\\boxed{\\text{" + inner + "}}" : text.slice(i, end + 1);
            emit(i, end + 1, tex, false);
            continue;
          }
        } else if (next === "b" && text.startsWith("\\begin{", i)) {
          const m = /^\\begin\{([A-Za-z]+\*?)\}/.exec(text.slice(i, i + 40));
          if (m && ENVS.has(m[1])) {
            const endTag = "\\end{" + m[1] + "}";
            const at = search("env:" + m[1], () => findClose(text, i + m[0].length, endTag, false));
            if (at !== null) { emit(i, at + endTag.length, text.slice(i, at + endTag.length), true); continue; }
          }
        }
        i += 2; // an escaped character ("\$" among them) is text
        continue;
      }
      if (c === "$") {
        if (text[i + 1] === "$") {
          const at = search("$$", () => findClose(text, i + 2, "$$", false));
          if (at !== null && text.slice(i + 2, at).trim()) { emit(i, at + 2, text.slice(i + 2, at), true); continue; }
          i += 2;
          continue;
        }
        const at = search("$", () => inlineClose(text, i));
        if (at !== null) { emit(i, at + 1, text.slice(i + 1, at), false); continue; }
      }
      i += 1;
    }
    if (plain < text.length) out.push({ start: plain, end: text.length, math: false });
    return out;
  }

  // Nesting depth of braces and \left...\right (escaped braces not counted).
  function depth(tex) {
    let d = 0;
    let most = 0;
    for (let j = 0; j < tex.length; j++) {
      const c = tex[j];
      if (c === "\\") {
        if (tex.startsWith("left", j + 1) && !/[A-Za-z]/.test(tex[j + 5] || "")) d += 1;
        else if (tex.startsWith("right", j + 1) && !/[A-Za-z]/.test(tex[j + 6] || "")) d -= 1;
        j += 1;
      } else if (c === "{") d += 1;
      else if (c === "}") d -= 1;
      if (d > most) most = d;
    }
    return most;
  }

  function budget(ms) {
    return { deadline: now() + (ms === undefined ? LIMITS.budgetMs : ms), rendered: 0, fallbacks: 0, reasons: [] };
  }

  function now() {
    return typeof performance !== "undefined" ? performance.now() : Date.now();
  }

  // KaTeX's options: errors thrown (to fall back), nothing trusted (no \href, no \html...),
  // macro expansion bounded, and AoPS's \equal{} and \plus{} (Omni-MATH writes them) known.
  function texOptions(display) {
    return { displayMode: display, throwOnError: true, trust: false, strict: "ignore",
      maxExpand: 1000, maxSize: 20, output: "htmlAndMathml",
      macros: { "\\equal": "=", "\\plus": "+", "\\minus": "-" } };
  }

  // A "$" inside \(...\), \[...\] or a bare \boxed{} is a dollar ("\(\frac{$100}{5}\)").
  function prepare(tex) {
    return tex.replace(/(^|[^\\])((?:\\\\)*)\$/g, "$1$2\\$");
  }

  // One math piece as a rendered element, or null (then the caller shows its text as written)
  // with the reason kept in the budget.
  function renderTex(tex, display, spent) {
    const katex = root.katex;
    let reason = null;
    if (!katex || typeof katex.render !== "function") reason = "KaTeX is not loaded";
    else if (now() > spent.deadline) reason = "the page's time for math is spent";
    else if (depth(tex) > LIMITS.depth) reason = "nested deeper than " + LIMITS.depth;
    else if (tex.length > LIMITS.texLength) reason = "longer than " + LIMITS.texLength + " characters";
    if (reason === null) {
      const node = root.document.createElement("span");
      try {
        katex.render(prepare(tex), node, texOptions(display));
        spent.rendered += 1;
        return node;
      } catch (e) {
        reason = e && e.name === "ParseError" ? "KaTeX cannot read it" : "KaTeX failed (" + ((e && e.name) || "error") + ")";
      }
    }
    spent.fallbacks += 1;
    if (spent.reasons.indexOf(reason) < 0) spent.reasons.push(reason);
    return null;
  }

  // Put `text` into `node` (its children replaced): plain pieces as text nodes, math rendered,
  // and the characters [mark[0], mark[1]) wrapped in <mark> elements (a math piece that the
  // range touches is marked whole, so the quote's math renders too).
  function renderInto(node, text, options) {
    const opts = options || {};
    const spent = opts.budget || budget();
    const mark = opts.mark || null;
    const doc = root.document;
    const pieces = split(String(text));
    node.replaceChildren();
    function marked(child) {
      const m = doc.createElement("mark");
      if (opts.markTitle) m.title = opts.markTitle;
      m.append(child);
      return m;
    }
    for (const p of pieces) {
      if (p.math) {
        const raw = text.slice(p.start, p.end);
        let child = renderTex(p.tex, p.display, spent);
        if (child === null) {
          child = doc.createElement("span");
          child.className = "tex-raw";
          child.title = "math shown as written: " + spent.reasons[spent.reasons.length - 1];
          child.textContent = raw;
        }
        const touched = mark && p.start < mark[1] && p.end > mark[0];
        node.append(touched ? marked(child) : child);
        continue;
      }
      if (!mark || p.end <= mark[0] || p.start >= mark[1]) {
        node.append(text.slice(p.start, p.end));
        continue;
      }
      const a = Math.max(p.start, mark[0]);
      const b = Math.min(p.end, mark[1]);
      if (a > p.start) node.append(text.slice(p.start, a));
      node.append(marked(doc.createTextNode(text.slice(a, b))));
      if (b < p.end) node.append(text.slice(b, p.end));
    }
    return spent;
  }

  const TEXLIKE = /\\[A-Za-z]|[\^_{}]/;

  // An answer (gold, extracted, majority) or a quote: written with delimiters, rendered as
  // text is; bare LaTeX ("\frac{1}{2}", "x^2", a quote cut from inside math) rendered whole as
  // inline math unless it reads as prose; anything else stays text.
  function renderAnswer(node, text, spent) {
    const s = String(text);
    const b = spent || budget();
    if (split(s).some((p) => p.math)) return renderInto(node, s, { budget: b });
    node.replaceChildren();
    const child = TEXLIKE.test(s) && !PROSE.test(s) ? renderTex(s, false, b) : null;
    if (child === null) node.append(s);
    else node.append(child);
    return b;
  }

  const api = { LIMITS: LIMITS, split: split, depth: depth, budget: budget, prepare: prepare,
    texOptions: texOptions, renderInto: renderInto, renderAnswer: renderAnswer };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.misstepMath = api;
})(typeof self !== "undefined" ? self : this);
