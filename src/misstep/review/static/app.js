// misstep review: every value from the server is put into the page as text (textContent,
// never innerHTML), so trace text, names and ids are data and never run.
"use strict";

(function () {
  const page = document.body.dataset.page;
  const errorBox = document.getElementById("error");
  const FILTERS = ["checkpoint", "dataset", "outcome", "error_type", "status",
    "min_confidence", "max_confidence", "majority_failure", "problem_id", "q", "sort", "todo"];

  // The access token arrives in the URL's fragment (never sent to a server) and goes with
  // every API call as a header; no cookie holds it. It is kept in this tab's sessionStorage and
  // in localStorage, both per origin (scheme, host and port: no other site, and no other
  // review server, reads it). The URL's token comes first, then the tab's own copy, so two
  // tabs opened from two URLs of one server keep their own tokens. localStorage keeps every
  // token this browser was given for this server, each with whose it is ("alice
  // (annotator)"): a tab the person opens from the app (a middle-click or "open in new tab"
  // starts with an empty sessionStorage) takes the one there is, and when there are several
  // (two people's URLs opened in one browser) asks whose it is instead of picking one.
  const TOKENS = "misstep.tokens";
  function knownTokens() {
    try {
      const found = JSON.parse(localStorage.getItem(TOKENS) || "{}");
      return found && typeof found === "object" ? found : {};
    } catch (e) { return {}; }
  }
  function rememberToken(token, who) {
    const known = knownTokens();
    if (known[token] === who) return;
    known[token] = who;
    localStorage.setItem(TOKENS, JSON.stringify(known));
  }
  function forgetToken(token) {
    const known = knownTokens();
    if (!(token in known)) return;
    delete known[token];
    localStorage.setItem(TOKENS, JSON.stringify(known));
  }
  function takeToken() {
    localStorage.removeItem("misstep.token"); // the single slot of earlier versions
    const hash = new URLSearchParams(window.location.hash.slice(1));
    if (hash.get("token")) {
      sessionStorage.setItem("misstep.token", hash.get("token"));
      if (!(hash.get("token") in knownTokens())) rememberToken(hash.get("token"), "");
      history.replaceState(null, "", window.location.pathname + window.location.search);
      return true;
    }
    const known = Object.keys(knownTokens());
    if (!sessionStorage.getItem("misstep.token") && known.length === 1) {
      sessionStorage.setItem("misstep.token", known[0]);
    }
    return false;
  }
  takeToken();
  function currentToken() {
    return sessionStorage.getItem("misstep.token") || "";
  }
  // The printed URL pasted over this page changes only the fragment: no new page loads.
  window.addEventListener("hashchange", () => { if (takeToken()) window.location.reload(); });

  function authHeaders(extra) {
    return { Authorization: "Bearer " + currentToken(), ...(extra || {}) };
  }

  // The tokens this browser holds that the server still knows (one of an earlier server on
  // the same port is forgotten), each with whose it is.
  async function liveTokens() {
    const live = [];
    for (const token of Object.keys(knownTokens())) {
      const response = await fetch("/api/summary", { credentials: "omit", headers: { Authorization: "Bearer " + token } });
      const body = await response.json();
      if (response.ok) {
        rememberToken(token, body.you.who);
        live.push([token, body.you.who]);
      } else if (response.status === 403 && /access token/.test(body.error || "")) forgetToken(token);
    }
    return live;
  }

  // Several tokens of this server in this browser and none for this tab: ask whose this tab
  // is (never pick one silently: it would label as someone else).
  function chooseToken(live) {
    const box = el("div", { id: "choose-token", role: "dialog" },
      el("p", {}, "This browser holds several URLs of this review server. Whose is this tab? " +
        "(Or open your own URL again.)"));
    live.forEach(([token, who], i) => {
      const button = el("button", { type: "button", "data-who": who || "" }, who || "URL " + (i + 1) + " (unnamed)");
      button.addEventListener("click", () => { sessionStorage.setItem("misstep.token", token); window.location.reload(); });
      box.append(" ", button);
    });
    document.querySelector("main").replaceChildren(box);
    const name = document.getElementById("annotator");
    if (name) name.closest("label").hidden = true;
  }

  // Who this token is, from the server (never from the page): a token bound to a person fills
  // and locks the name box and says so in the header; a shared one leaves the box to the
  // person.
  function identify(summary) {
    const you = summary.you || {};
    rememberToken(currentToken(), you.who || "");
    const input = document.getElementById("annotator");
    const who = document.getElementById("who");
    if (you.name) {
      input.value = you.name;
      input.readOnly = true;
      input.closest("label").hidden = true;
    }
    if (who) who.textContent = you.name ? "you: " + you.who : you.role === "adjudicator" ? "adjudicator URL" : "";
  }
  const PAGE_SIZE = 50;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = String(v);
      else node.setAttribute(k, String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  // Errors show where the person is looking: next to the save button on a trace page, and
  // in a banner on a line of its own in the (sticky) header, so it is always in view and
  // covers nothing, the name box it may ask for least of all.
  function showError(message) {
    errorBox.textContent = message || "";
    const near = document.getElementById("save-error");
    if (near) near.textContent = message || "";
    let banner = document.getElementById("banner");
    if (!banner) {
      banner = el("div", { id: "banner", role: "alert" });
      document.querySelector("header").append(banner);
    }
    banner.textContent = message || "";
    banner.hidden = !message;
  }

  // The name box. Without `onChange` a new name reloads the page (lists); with it the page
  // handles the change itself, keeping what the person was writing.
  function annotatorInput(onChange) {
    const input = document.getElementById("annotator");
    input.value = localStorage.getItem("misstep.annotator") || input.value || "";
    input.addEventListener("change", () => {
      localStorage.setItem("misstep.annotator", input.value.trim());
      if (onChange) onChange();
      else window.location.reload();
    });
    return input;
  }

  // The name comes first: until it is given, the name box is highlighted and says why.
  function askName() {
    const input = document.getElementById("annotator");
    const missing = !annotator();
    input.classList.toggle("needed", missing);
    input.placeholder = missing ? "your name first" : "";
    if (missing) input.focus();
    return !missing;
  }

  function annotator() {
    return (document.getElementById("annotator").value || "").trim();
  }

  async function answered(response) {
    const body = await response.json();
    if (!response.ok) {
      // A token the server does not know (an earlier server's, on the same port): forgotten.
      if (response.status === 403 && /access token/.test(body.error || "")) {
        forgetToken(currentToken());
        sessionStorage.removeItem("misstep.token");
      }
      throw new Error(body.error || response.statusText);
    }
    return body;
  }

  async function getJSON(url) {
    return answered(await fetch(url, { credentials: "omit", headers: authHeaders() }));
  }

  async function postJSON(url, payload) {
    return answered(await fetch(url, { method: "POST", credentials: "omit",
      headers: authHeaders({ "Content-Type": "application/json" }), body: JSON.stringify(payload) }));
  }

  // Math in trace text: math.js (misstepMath) finds the math (dollar amounts stay text) and
  // renders it with the bundled KaTeX, within a time budget per page; anything it cannot
  // render, and everything when it is missing, stays the text as written.
  function mathBudget() {
    return window.misstepMath ? window.misstepMath.budget() : null;
  }

  function textMath(node, text, spent, options) {
    const opts = { ...(options || {}), budget: spent || undefined };
    try {
      if (window.misstepMath) { window.misstepMath.renderInto(node, text, opts); return; }
    } catch (e) { /* the text as written, below */ }
    node.textContent = text;
  }

  function answerMath(node, text, spent) {
    try {
      if (window.misstepMath) { window.misstepMath.renderAnswer(node, text, spent || undefined); return; }
    } catch (e) { /* the text as written, below */ }
    node.textContent = text;
  }

  // A table cell (or any element) holding an answer: "-" for none, math rendered.
  function answerCell(tag, value, spent) {
    const node = el(tag, {});
    if (value === null || value === undefined) node.textContent = "-";
    else answerMath(node, String(value), spent);
    return node;
  }

  function pct(x) {
    return x === null || x === undefined ? "-" : (100 * x).toFixed(0) + "%";
  }

  function interval(ci) {
    return ci ? "[" + (100 * ci[0]).toFixed(0) + ", " + (100 * ci[1]).toFixed(0) + "]" : "";
  }

  function query(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v !== null && v !== undefined && v !== "") q.set(k, v);
    }
    return q.toString();
  }

  function currentFilters() {
    const here = new URLSearchParams(window.location.search);
    const out = {};
    for (const name of FILTERS) if (here.get(name)) out[name] = here.get(name);
    return out;
  }

  function traceHref(id, context) {
    return "/traces/" + encodeURIComponent(id) + "?" + query(context);
  }

  // --- the list page ------------------------------------------------------------------------

  async function indexPage() {
    annotatorInput();
    const queueMode = window.location.pathname === "/queue";
    const summary = await getJSON("/api/summary");
    identify(summary);
    if (!annotator() && summary.annotator) document.getElementById("annotator").value = summary.annotator;
    document.getElementById("counts").textContent =
      summary.n_traces.toLocaleString() + " traces, " + summary.n_labels.toLocaleString() +
      " judge labels, " + summary.n_human.toLocaleString() + (summary.n_human === 1 ? " trace" : " traces") + " labelled by people (" +
      summary.n_human_labels.toLocaleString() + (summary.n_human_labels === 1 ? " label by " : " labels by ") + summary.n_annotators.toLocaleString() +
      (summary.n_annotators === 1 ? " person)" : " people)") +
      (summary.blind ? " (blind: the judge's labels are hidden)" : "");
    const distributions = getJSON("/api/distributions").then((d) => renderDistributions(summary, d));
    const form = document.getElementById("filters");
    if (summary.blind) for (const n of form.querySelectorAll(".judge-only")) n.hidden = true;
    document.getElementById("adjudicate-link").hidden = !summary.adjudicate;
    form.elements.todo.addEventListener("change", () => form.requestSubmit());
    fillSelect(form.elements.checkpoint, summary.checkpoints);
    fillSelect(form.elements.dataset, summary.datasets);
    fillSelect(form.elements.outcome, summary.outcomes);
    fillSelect(form.elements.error_type, [...summary.taxonomy.map((c) => c.key), "none"]);
    fillSelect(form.elements.status, summary.statuses);
    fillSelect(form.elements.sort, summary.sorts.flatMap((k) => [k, "-" + k]));
    form.elements.sort.options[0].textContent = "checkpoint order";
    const filters = currentFilters();
    for (const [k, v] of Object.entries(filters)) {
      if (k === "todo") form.elements.todo.checked = v === "1";
      else form.elements[k].value = v;
    }
    const state = { offset: Number(new URLSearchParams(window.location.search).get("offset") || 0), selected: 0, items: [], total: 0 };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const params = {};
      for (const name of FILTERS) {
        params[name] = name === "todo" ? (form.elements.todo.checked ? "1" : "") : form.elements[name].value.trim();
      }
      window.location.search = query(params);
    });
    const progress = document.getElementById("progress");
    if (queueMode) {
      for (const n of form.querySelectorAll("label:not(.queue-too), button")) n.hidden = true;
      document.getElementById("list-title").textContent =
        "Queue: " + summary.queue_total + " traces (" + summary.queue_source + ")";
    }
    async function load() {
      showError("");
      let body;
      if (queueMode) {
        body = await getJSON("/api/queue?" + query({ annotator: annotator(), todo: filters.todo }));
        progress.textContent = annotator() ? annotator() + ": " + body.done + " / " + body.total + " done" : "give your name to see your progress";
        progress.dataset.done = body.done;
        body.total = body.items.length;
        body.items = body.items.slice(state.offset, state.offset + PAGE_SIZE);
      } else {
        body = await getJSON("/api/traces?" + query({ ...filters, offset: state.offset, limit: PAGE_SIZE, annotator: annotator() }));
      }
      state.items = body.items;
      state.total = body.total;
      state.selected = Math.min(state.selected, Math.max(0, body.items.length - 1));
      renderList(state, queueMode, filters, summary.blind);
    }
    document.getElementById("prev").addEventListener("click", () => move(-PAGE_SIZE));
    document.getElementById("next").addEventListener("click", () => move(PAGE_SIZE));
    function move(delta) {
      const next = state.offset + delta;
      if (next < 0 || next >= state.total) return;
      state.offset = next;
      state.selected = delta > 0 ? 0 : PAGE_SIZE - 1;
      load().catch((e) => showError(e.message));
    }
    document.addEventListener("keydown", (event) => {
      if (event.target.closest("input, select, textarea")) return;
      if (event.key === "j") select(state.selected + 1);
      else if (event.key === "k") select(state.selected - 1);
      else if (event.key === "n") move(PAGE_SIZE);
      else if (event.key === "p") move(-PAGE_SIZE);
      else if (event.key === "Enter" && state.items.length) {
        window.location.href = rowHref(state, state.selected, queueMode, filters);
      }
    });
    function select(i) {
      if (i < 0) { if (state.offset > 0) move(-PAGE_SIZE); return; }
      if (i >= state.items.length) { move(PAGE_SIZE); return; }
      state.selected = i;
      renderList(state, queueMode, filters, summary.blind);
    }
    await load();
    await distributions;
  }

  function rowHref(state, i, queueMode, filters) {
    const pos = state.offset + i;
    const context = queueMode ? { queue: 1, todo: filters.todo, pos: pos } : { ...filters, pos: pos };
    return traceHref(state.items[i].trace_id, context);
  }

  function fillSelect(select, values) {
    select.append(el("option", { value: "" }, "any"));
    for (const v of values) select.append(el("option", { value: v }, v));
  }

  function renderDistributions(summary, dists) {
    const table = document.getElementById("dist");
    table.replaceChildren();
    summary = { ...summary, distributions: dists.distributions };
    if (summary.blind || !summary.distributions.length) {
      document.getElementById("dist-section").hidden = true;
      return;
    }
    const keys = summary.taxonomy.map((c) => c.key);
    for (const d of summary.distributions) {
      for (const k of Object.keys(d.error_dist || {})) if (!keys.includes(k)) keys.push(k);
    }
    document.getElementById("dist-note").textContent =
      "Shares of wrong traces with an ok label (percent), 95% intervals in brackets; \"shares by\" says " +
      "whether people's labels corrected them for the judge's confusion, as misstep summary does " +
      "(estimator and human labels used), or they are the judge's own.";
    table.append(el("tr", {}, el("th", {}, "checkpoint"), el("th", {}, "wrong"), el("th", {}, "labelled"),
      el("th", {}, "shares by"), ...keys.map((k) => el("th", {}, k))));
    for (const d of summary.distributions) {
      const shares = d.error_dist_corrected || d.error_dist || {};
      const cis = d.error_dist_corrected ? d.error_dist_ci || {} : d.error_dist_raw_ci || {};
      const row = el("tr", {}, el("td", {}, d.checkpoint), el("td", { class: "num" }, d.n_wrong), el("td", { class: "num" }, pct(d.labelled_share)),
        el("td", { title: d.note || "" }, d.made_by));
      for (const k of keys) {
        const link = el("a", { href: "/?" + query({ checkpoint: d.checkpoint, error_type: k, outcome: "wrong" }) }, pct(shares[k]));
        row.append(el("td", { class: "num" }, link, " ", el("span", { class: "ci" }, interval(cis[k]))));
      }
      table.append(row);
    }
  }

  function renderList(state, queueMode, filters, blind) {
    const spent = mathBudget();
    const table = document.getElementById("list");
    table.replaceChildren();
    const head = ["#", "trace", "checkpoint", "dataset", "problem", "answer", "outcome", "maj. fail"];
    if (!blind) head.push("judge type", "conf.");
    head.push("your label");
    if (queueMode && !blind) head.push("stratum");
    table.append(el("tr", {}, ...head.map((h) => el("th", {}, h))));
    state.items.forEach((item, i) => {
      const cells = [];
      cells.push(el("td", { class: "num" }, state.offset + i + 1));
      cells.push(el("td", {}, el("a", { href: rowHref(state, i, queueMode, filters) }, item.trace_id)));
      {
        cells.push(el("td", {}, item.checkpoint), el("td", {}, item.dataset), el("td", {}, item.problem_id),
          answerCell("td", item.answer, spent), el("td", {}, item.outcome),
          el("td", {}, item.majority_failure ? "yes" : ""));
        if (!blind) {
          const j = item.judge || {};
          cells.push(el("td", {}, j.error_type || (j.status === "ok" ? "-" : j.status)),
            el("td", { class: "num" }, j.confidence === null || j.confidence === undefined ? "" : j.confidence.toFixed(2)));
        }
      }
      const h = item.human;
      cells.push(el("td", {}, h ? (h.error_type || h.verdict) : ""));
      if (queueMode && !blind) cells.push(el("td", {}, item.stratum));
      const row = el("tr", { class: i === state.selected ? "selected" : null }, ...cells);
      row.addEventListener("click", (event) => {
        if (event.target.tagName !== "A") { state.selected = i; renderList(state, queueMode, filters, blind); }
      });
      table.append(row);
    });
    const end = Math.min(state.offset + state.items.length, state.total);
    document.getElementById("range").textContent =
      (state.total ? state.offset + 1 : 0) + "-" + end + " of " + state.total.toLocaleString();
    const selected = table.querySelector("tr.selected");
    if (selected) selected.scrollIntoView({ block: "nearest" });
  }

  // --- the trace page -----------------------------------------------------------------------

  async function tracePage() {
    const id = decodeURIComponent(window.location.pathname.slice("/traces/".length));
    const params = new URLSearchParams(window.location.search);
    const queueMode = params.get("queue") === "1";
    const todo = params.get("todo") === "1";
    const pos = params.has("pos") ? Number(params.get("pos")) : null;
    const filters = currentFilters();
    // A name typed here keeps the label being written (the page does not reload): the trace
    // is read again for that person, and the form keeps what was chosen.
    annotatorInput(() => changeName().catch((e) => showError(e.message)));
    const summary = await getJSON("/api/summary");
    identify(summary);
    if (!annotator() && summary.annotator) document.getElementById("annotator").value = summary.annotator;
    document.getElementById("adjudicate-link").hidden = !summary.adjudicate;
    document.getElementById("back").setAttribute("href", queueMode ? "/queue?" + query({ todo: params.get("todo") }) : "/?" + query(filters));
    const keys = summary.taxonomy;
    let detail = await getJSON(detailUrl(annotator()));
    let touched = false; // the person has changed the form since it was filled
    // The form and the navigation first: whatever the trace's text does to the renderer, the
    // page can still label and move on.
    document.getElementById("prev").addEventListener("click", () => go(-1).catch((e) => showError(e.message)));
    document.getElementById("next").addEventListener("click", () => go(1).catch((e) => showError(e.message)));
    document.getElementById("position").textContent = pos === null ? "" : (queueMode ? "queue " : "") + "#" + (pos + 1);
    buildForm();
    askName();
    render();

    function detailUrl(who) {
      return "/api/traces/" + encodeURIComponent(id) + "?" + query({ annotator: who });
    }

    async function changeName() {
      showError("");
      askName();
      detail = await getJSON(detailUrl(annotator()));
      if (!touched) fillForm();
      render();
      document.getElementById("saved").textContent = annotator() ? "labelling as " + annotator() + (touched ? ": your choice is kept, save when ready" : "") : "";
    }

    function render() {
      document.title = detail.item.trace_id + " - misstep review";
      document.getElementById("trace-id").textContent = detail.item.trace_id;
      const spent = mathBudget();
      try {
        renderTrace(spent);
      } catch (e) {
        // Never expected (the math renderer falls back on its own): the text as written.
        showError("the trace could not be shown in full: " + e.message);
      }
      const note = document.getElementById("math-note");
      note.textContent = spent && spent.fallbacks ? spent.fallbacks + " piece(s) of math shown as written: " + spent.reasons.join("; ") : "";
      const mine = document.getElementById("mine");
      mine.textContent = detail.human ? "Your current label: " + (detail.human.error_type || detail.human.verdict) +
        (detail.human.first_error_step !== null && detail.human.first_error_step !== undefined ? ", step " + detail.human.first_error_step : "") +
        (detail.human.blind ? " (given blind)" : "") : "";
    }

    function renderTrace(spent) {
      const facts = document.getElementById("facts");
      facts.replaceChildren();
      const pairs = [["checkpoint", detail.item.checkpoint], ["dataset", detail.item.dataset],
        ["problem", detail.item.problem_id], ["sample", detail.item.sample_idx],
        ["outcome", detail.item.outcome], ["gold answer", detail.gold_answer, true],
        ["trace's answer", detail.item.answer, true], ["finish reason", detail.finish_reason]];
      for (const [k, v, isAnswer] of pairs) {
        const dd = el("dd", {});
        if (v === null || v === undefined) dd.textContent = "-";
        else if (isAnswer) answerMath(dd, v, spent);
        else dd.textContent = String(v);
        facts.append(el("dt", {}, k), dd);
      }
      textMath(document.getElementById("problem"), detail.problem || "(no problem statement in the input)", spent);
      renderSteps(spent);
      renderJudge(spent);
      renderAnswers(spent);
    }

    function renderSteps(spent) {
      const list = document.getElementById("steps");
      list.replaceChildren();
      const judge = detail.judge_label;
      const blamed = judge ? judge.first_error_step : null;
      const span = judge ? judge.evidence_span : null;
      detail.steps.forEach((text, i) => {
        const body = el("div", { class: "text" });
        // The quote is marked in the text's own characters, math rendered around and in it.
        const mark = span && span.step === i ? [span.start, span.end] : null;
        textMath(body, text, spent, { mark: mark, markTitle: "the judge's evidence quote" });
        const item = el("li", { class: i === blamed ? "step blamed" : "step", "data-step": i },
          el("span", { class: "stepno" }, "[" + i + "]"), body);
        item.addEventListener("click", () => { document.getElementById("step").value = i; touched = true; });
        list.append(item);
      });
    }

    function renderJudge(spent) {
      const box = document.getElementById("judge");
      box.replaceChildren();
      const j = detail.judge_label;
      if (detail.judge_hidden) {
        box.append(el("p", { class: "hint" }, "Hidden until you have labelled this trace and ask to see it (--blind); showing it is recorded, and your later labels of this trace count as not blind."));
        if (detail.can_reveal) {
          const button = el("button", { type: "button", id: "reveal" }, "show the judge's label");
          button.addEventListener("click", () => reveal().catch((e) => showError(e.message)));
          box.append(button);
        }
        return;
      }
      if (!j) { box.append(el("p", { class: "hint" }, "No judge label for this trace.")); return; }
      const dl = el("dl");
      const rows = [["type", j.error_type || "-"], ["status", j.status], ["first wrong step", j.first_error_step === null ? "-" : j.first_error_step],
        ["confidence", j.confidence === null ? "-" : j.confidence], ["explanation", j.explanation || "-", "text"],
        ["evidence", j.evidence || "-", "quote"], ["evidence found in the trace", j.evidence_verified ? "yes" : "no"], ["judge id", j.judge]];
      for (const [k, v, math] of rows) {
        const dd = el("dd", {});
        // The explanation is text with math in it; the quote may be cut from inside math.
        if (math === "text") textMath(dd, String(v), spent);
        else if (math === "quote") answerMath(dd, String(v), spent);
        else dd.textContent = String(v);
        dl.append(el("dt", {}, k), dd);
      }
      box.append(dl);
    }

    function renderAnswers(spent) {
      const maj = document.getElementById("majority");
      maj.replaceChildren("Majority answer: ", answerCell("span", detail.majority_answer, spent),
        (detail.majority_correct ? " (correct)" : " (wrong)") + (detail.majority_tied ? ", tied" : ""));
      const answers = document.getElementById("answers");
      answers.replaceChildren(el("tr", {}, el("th", {}, "answer"), el("th", {}, "samples"), el("th", {}, "correct")));
      for (const a of detail.answer_distribution) {
        answers.append(el("tr", {}, answerCell("td", a.answer, spent), el("td", { class: "num" }, a.count), el("td", {}, a.correct ? "yes" : "no")));
      }
      const others = document.getElementById("others");
      others.replaceChildren(el("tr", {}, el("th", {}, "checkpoint"), el("th", {}, "majority answer"), el("th", {}, "correct"), el("th", {}, "pass@1"), el("th", {}, "n")));
      for (const o of detail.other_checkpoints) {
        const here = o.checkpoint === detail.item.checkpoint;
        others.append(el("tr", { class: here ? "selected" : null }, el("td", {}, o.checkpoint), answerCell("td", o.majority_answer, spent),
          el("td", {}, o.majority_correct ? "yes" : "no"), el("td", { class: "num" }, pct(o["pass@1"])), el("td", { class: "num" }, o.n)));
      }
      const chips = document.getElementById("siblings");
      chips.replaceChildren();
      for (const s of detail.siblings) {
        chips.append(el("a", { href: traceHref(s.trace_id, {}), class: s.trace_id === detail.item.trace_id ? "chip here " + s.outcome : "chip " + s.outcome, title: s.trace_id + " (" + s.outcome + ")" },
          s.sample_idx === null ? "?" : s.sample_idx), " ");
      }
    }

    function buildForm() {
      const box = document.getElementById("choices");
      const shortcuts = {};
      const options = keys.map((c, i) => ({ value: c.key, label: c.name, key: String((i + 1) % 10), title: c.definition }));
      options.push({ value: "no_error", label: "no error", key: "n" }, { value: "cant_tell", label: "can't tell", key: "c" });
      for (const o of options) {
        shortcuts[o.key] = o.value;
        const input = el("input", { type: "radio", name: "choice", value: o.value, id: "choice-" + o.value });
        box.append(el("label", { class: "choice", title: o.title || "", for: "choice-" + o.value }, input, " ", el("kbd", {}, o.key), " ", o.label));
      }
      fillForm();
      const form = document.getElementById("label-form");
      form.addEventListener("input", () => { touched = true; });
      form.addEventListener("change", () => { touched = true; });
      form.addEventListener("submit", (event) => { event.preventDefault(); save().catch((e) => showError(e.message)); });
      document.addEventListener("keydown", (event) => {
        if (event.target.closest("input[type=number], input[type=text], textarea, #annotator")) {
          if (event.key === "Enter" && event.target.id === "step") { event.preventDefault(); save().catch((e) => showError(e.message)); }
          return;
        }
        if (shortcuts[event.key]) {
          box.querySelector('input[value="' + CSS.escape(shortcuts[event.key]) + '"]').checked = true;
          touched = true;
        } else if (event.key === "j" || event.key === "ArrowRight") go(1).catch((e) => showError(e.message));
        else if (event.key === "k" || event.key === "ArrowLeft") go(-1).catch((e) => showError(e.message));
        else if (event.key === "s" || event.key === "Enter") { event.preventDefault(); save().catch((e) => showError(e.message)); }
        else if (event.key === "Escape") window.location.href = document.getElementById("back").getAttribute("href");
      });
    }

    // The form shows the person's current label of the trace (empty without one).
    function fillForm() {
      const h = detail.human;
      for (const input of document.querySelectorAll('input[name="choice"]')) input.checked = false;
      document.getElementById("step").value = "";
      document.getElementById("note").value = "";
      if (!h) return;
      const input = document.querySelector('input[name="choice"][value="' + CSS.escape(h.error_type || h.verdict) + '"]');
      if (input) input.checked = true;
      if (h.first_error_step !== null && h.first_error_step !== undefined) document.getElementById("step").value = h.first_error_step;
      document.getElementById("note").value = h.note || "";
    }

    async function reveal() {
      detail = await postJSON("/api/reveal", { trace_id: detail.item.trace_id, annotator: annotator() || null });
      render();
    }

    async function save() {
      showError("");
      if (!askName()) throw new Error("give your name first (the box at the top): labels are stored per person");
      const checked = document.querySelector('input[name="choice"]:checked');
      if (!checked) throw new Error("choose an error type, no error or can't tell first");
      const stepText = document.getElementById("step").value.trim();
      const body = { trace_id: detail.item.trace_id, error_type: checked.value,
        first_error_step: stepText === "" || checked.value === "no_error" || checked.value === "cant_tell" ? null : Number(stepText),
        annotator: annotator() || null, note: document.getElementById("note").value.trim() || null };
      await postJSON("/api/labels", body);
      touched = false;
      document.getElementById("saved").textContent = "saved";
      // Save moves on: the next trace of the queue or of the list (with "not yet labelled by
      // me", the next one left).
      const next = await afterSave();
      if (next === null) {
        detail = await getJSON(detailUrl(body.annotator || ""));
        render();
        document.getElementById("saved").textContent = pos === null ? "saved" : queueMode ? "saved: the queue is done" : "saved: last trace of the list";
        return;
      }
      window.location.href = traceHref(next.id, context(next.pos));
    }

    function context(at) {
      return queueMode ? { queue: 1, todo: params.get("todo"), pos: at } : { ...filters, pos: at };
    }

    // The trace after this one once it is labelled. Without "not yet labelled by me" the list
    // keeps its order: the next sits at pos + 1. With it, the trace just labelled has left the
    // list and the next one now sits at pos (the trace itself is skipped should it still be
    // there).
    async function afterSave() {
      if (pos === null) return null;
      const at = todo ? pos : pos + 1;
      const ids = await idsFrom(at, 2);
      const found = ids.findIndex((t) => t !== detail.item.trace_id);
      if (found >= 0) return { id: ids[found], pos: at + found };
      // Labelled the last one of the list: with the filter, what is left may sit before pos.
      if (todo && at > 0) {
        const first = await idsFrom(0, 1);
        if (first.length && first[0] !== detail.item.trace_id) return { id: first[0], pos: 0 };
      }
      return null;
    }

    // Up to `n` trace ids of the queue or the list from position `at`, for this person (their
    // name is what "not yet labelled by me" filters on).
    async function idsFrom(at, n) {
      if (at < 0) return [];
      if (queueMode) {
        const q = await getJSON("/api/queue?" + query({ annotator: annotator(), todo: todo ? "1" : "" }));
        return q.items.slice(at, at + n).map((i) => i.trace_id);
      }
      const body = await getJSON("/api/traces?" + query({ ...filters, offset: at, limit: n, annotator: annotator() }));
      return body.items.map((i) => i.trace_id);
    }

    async function go(delta) {
      if (pos === null) return;
      const ids = await idsFrom(pos + delta, 1);
      if (!ids.length) return;
      window.location.href = traceHref(ids[0], context(pos + delta));
    }
  }

  // --- the adjudication page ----------------------------------------------------------------

  async function adjudicatePage() {
    // A new name keeps the decisions being written (no reload): they are sent with the name
    // in the box when decided.
    annotatorInput(() => { showError(""); if (askName()) load().catch((e) => showError(e.message)); });
    const summary = await getJSON("/api/summary");
    identify(summary);
    if (!annotator() && summary.annotator) document.getElementById("annotator").value = summary.annotator;
    askName();
    const choices = [...summary.taxonomy.map((c) => c.key), "no_error", "cant_tell"];
    const box = document.getElementById("disagreements");
    async function load() {
      // The adjudicator's name goes along: in blind mode what the list shows of the judge is
      // recorded as revealed to them.
      const body = await getJSON("/api/disagreements?" + query({ annotator: annotator() }));
      document.getElementById("progress").textContent =
        body.done + " / " + body.total + " decided" + (summary.hide_names ? " (names hidden)" : "");
      box.replaceChildren();
      if (!body.items.length) box.append(el("p", { class: "hint" }, "No disagreements: nothing to adjudicate."));
      body.items.forEach((item, n) => box.append(card(item, n)));
    }
    function card(item, n) {
      const section = el("section", { class: "case", "data-trace": item.trace_id });
      section.append(el("h2", {}, el("a", { href: traceHref(item.trace_id, {}) }, item.trace_id)),
        el("p", { class: "hint" }, item.checkpoint + " / " + item.dataset + " / " + item.problem_id + ", answer " + (item.answer === null ? "-" : item.answer) + " (" + item.outcome + ")"));
      const table = el("table", { class: "side" }, el("tr", {}, el("th", {}, "who"), el("th", {}, "answer"), el("th", {}, "first wrong step"), el("th", {}, "note")));
      for (const l of item.labels) {
        table.append(el("tr", {}, el("td", {}, l.annotator), el("td", {}, l.error_type || l.verdict),
          el("td", { class: "num" }, l.first_error_step === null || l.first_error_step === undefined ? "-" : l.first_error_step), el("td", {}, l.note || "")));
      }
      if (item.judge) table.append(el("tr", { class: "judge" }, el("td", {}, "judge"), el("td", {}, item.judge.error_type || item.judge.status), el("td", {}, ""), el("td", {}, "")));
      section.append(table);
      const select = el("select", { name: "decision", id: "decision-" + n });
      select.append(el("option", { value: "" }, "choose"));
      for (const c of choices) select.append(el("option", { value: c }, c));
      const step = el("input", { type: "number", min: "0", size: "4", name: "step" });
      const note = el("input", { type: "text", size: "30", name: "note", maxlength: "4000" });
      const button = el("button", { type: "submit" }, "decide");
      const status = el("span", { class: "status", role: "status" });
      const done = item.adjudicated;
      if (done) {
        select.value = done.error_type || done.verdict;
        if (done.first_error_step !== null && done.first_error_step !== undefined) step.value = done.first_error_step;
        note.value = done.note || "";
        status.textContent = "decided: " + (done.error_type || done.verdict) + " by " + done.annotator;
      }
      const form = el("form", { class: "decide" }, el("label", {}, "decision ", select), " ", el("label", {}, "first wrong step ", step), " ",
        el("label", {}, "note ", note), " ", button, " ", status);
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        decide().catch((e) => { status.textContent = e.message; status.className = "status bad"; showError(e.message); });
      });
      async function decide() {
        showError("");
        if (!askName()) throw new Error("give your name first (the box at the top): decisions are stored per adjudicator");
        if (!select.value) throw new Error("choose a decision first");
        const plain = select.value === "no_error" || select.value === "cant_tell";
        await postJSON("/api/adjudications", { trace_id: item.trace_id, error_type: select.value,
          first_error_step: plain || step.value.trim() === "" ? null : Number(step.value),
          note: note.value.trim() || null, annotator: annotator() || null });
        await load();
      }
      section.append(form);
      return section;
    }
    // Blind with the judge: the list records what it shows as revealed to its reader, so it
    // waits for a name.
    if (annotator() || !(summary.blind && summary.with_judge)) await load();
    else box.replaceChildren(el("p", { class: "hint", id: "name-first" }, "Give your name first (the box at the top): " +
      "in --blind mode, the judge's answers this list shows are recorded as revealed to you, and your own later labels of those traces count as not blind."));
  }

  const run = { trace: tracePage, adjudicate: adjudicatePage, index: indexPage }[page];
  async function start() {
    if (!currentToken() && Object.keys(knownTokens()).length > 1) {
      const live = await liveTokens();
      if (live.length > 1) { chooseToken(live); return "choose"; }
      if (live.length === 1) sessionStorage.setItem("misstep.token", live[0][0]);
    }
    await run();
    return "1";
  }
  start().then((state) => { document.body.dataset.ready = state; }).catch((e) => { showError(e.message); document.body.dataset.ready = "error"; });
})();
