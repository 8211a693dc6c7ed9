// Meeting Delegate console: one page, three views (token, home = brief + meetings, meeting = watch,
// approve, summary), switched with history.pushState so the token typed once stays in this tab's
// memory. No framework, no build step: the DOM is built with `h()` and text is only ever set as text.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "dataset") Object.assign(el.dataset, value);
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (key in el && key !== "list") el[key] = value;
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const sleep = (ms, signal) =>
    new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
    });

  // --- the token: in this variable only, never in the URL or the browser's storage ----------------

  let token = null;
  let authRequired = true; // until the server says it has no tokens
  const briefs = new Map(); // meeting id -> the brief sent from this tab (to show background items by text)

  function authHeaders(extra = {}) {
    return token ? { ...extra, Authorization: `Bearer ${token}` } : { ...extra };
  }

  class HttpError extends Error {
    constructor(status, body) {
      super(typeof body?.detail === "string" ? body.detail : `The server answered ${status}.`);
      this.status = status;
      this.body = body;
    }
  }

  async function api(method, path, body) {
    const init = { method, headers: authHeaders(body === undefined ? {} : { "Content-Type": "application/json" }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await fetch(path, init);
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = { detail: text }; }
    if (res.status === 401 && authRequired) {
      askForToken("The server did not accept the token. Paste it again.");
    }
    if (!res.ok) throw new HttpError(res.status, data);
    return data;
  }

  function askForToken(message) {
    token = null;
    stopMeeting();
    updateSession();
    showView("token");
    const err = $("token-error");
    err.textContent = message || "";
    err.hidden = !message;
    $("token-input").focus();
  }

  function updateSession() {
    const box = $("session");
    box.hidden = false;
    if (!authRequired) {
      $("session-label").textContent = "This server has no tokens: open to anyone on its network";
      $("forget-token").hidden = true;
    } else if (token) {
      $("session-label").textContent = "Signed in with a token (kept in this tab only)";
      $("forget-token").hidden = false;
    } else {
      box.hidden = true;
    }
  }

  $("token-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const input = $("token-input");
    const candidate = input.value.trim();
    if (!candidate) return;
    const res = await fetch("/v1/meetings?limit=1", { headers: { Authorization: `Bearer ${candidate}` } });
    if (!res.ok) {
      $("token-error").textContent =
        res.status === 401 ? "This token is not one of the server's tokens."
        : res.status === 403 ? "This is a meeting bot's token: the console takes the principal's own token."
        : `The server answered ${res.status}.`;
      $("token-error").hidden = false;
      input.select();
      return;
    }
    token = candidate;
    input.value = "";
    $("token-error").hidden = true;
    updateSession();
    route();
  });

  $("m-bot-token").addEventListener("focus", (e) => e.target.select());

  $("forget-token").addEventListener("click", () => {
    briefs.clear(); // the briefs hold the principal's private items: they go with the token
    askForToken("");
  });

  // --- views and navigation --------------------------------------------------------------------

  function showView(name) {
    for (const v of ["token", "home", "meeting"]) $(`view-${v}`).hidden = v !== name;
  }

  function navigate(path) {
    history.pushState({}, "", path);
    route();
  }

  function route() {
    stopMeeting();
    if (authRequired && !token) {
      showView("token");
      $("token-input").focus();
      return;
    }
    const m = location.pathname.match(/^\/console\/([^/]+)\/?$/);
    if (m) openMeeting(decodeURIComponent(m[1]));
    else openHome();
  }

  document.addEventListener("click", (e) => {
    const a = e.target.closest("a[data-nav]");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    navigate(a.getAttribute("href"));
  });
  window.addEventListener("popstate", route);

  // --- home: the brief ---------------------------------------------------------------------------

  const form = $("brief-form");

  const PROVENANCE = ["source", "item_id", "date", "why_private"];

  function backgroundRow(item = { context: "", information: "", shareable: true }) {
    const shareable = h("input", { type: "checkbox", checked: item.shareable, class: "bg-shareable" });
    const row = h("div", { class: "bg-row" },
      h("div", { class: "bg-fields" },
        h("div", { class: "field" },
          h("label", {}, "When it matters"),
          h("input", { class: "bg-context", value: item.context, placeholder: "if asked about the database migration" })),
        h("div", { class: "field" },
          h("label", {}, "What to know"),
          h("textarea", { class: "bg-information", rows: 2, value: item.information, placeholder: "The migration finishes on Friday" })),
        item.source ? h("p", { class: "hint bg-provenance" },
          `From ${item.source} · ${item.item_id || "?"}${item.date ? ` · ${item.date.slice(0, 10)}` : ""}`) : null,
        item.why_private ? h("p", { class: "hint bg-why-private" }, `Private: ${item.why_private}`) : null),
      h("div", { class: "bg-side" },
        h("label", { class: "switch", title: "Off: the delegate may use it to reason, never say it" },
          shareable, h("span", { class: "track", "aria-hidden": "true" }), h("span", { class: "switch-label" }, "Shareable")),
        h("span", { class: "badge private" }, "Private"),
        h("button", { type: "button", class: "link danger", onclick: () => { row.remove(); reindex(); } }, "Remove")));
    shareable.addEventListener("change", () => row.classList.toggle("is-private", !shareable.checked));
    row.classList.toggle("is-private", !item.shareable);
    // Where a drafted item comes from travels with it into the meeting (and its audit).
    for (const key of PROVENANCE) if (item[key]) row.dataset[key] = item[key];
    return row;
  }

  function attendeeRow(label = "", name = "") {
    const row = h("div", { class: "att-row" },
      h("div", { class: "field" }, h("label", {}, "Speaker label"),
        h("input", { class: "att-label", value: label, placeholder: "PERSON1 or Bob", spellcheck: false, "aria-label": "Speaker label" })),
      h("div", { class: "field" }, h("label", {}, "Display name"),
        h("input", { class: "att-name", value: name, placeholder: "Bob Jones", "aria-label": "Display name" })),
      h("button", { type: "button", class: "link danger", onclick: () => { row.remove(); reindex(); } }, "Remove"));
    return row;
  }

  function reindex() {
    $("background-rows").querySelectorAll(".bg-row").forEach((row, i) => {
      row.dataset.loc = `principal.background.${i}`;
      row.querySelector(".bg-context").dataset.loc = `principal.background.${i}.context`;
      row.querySelector(".bg-information").dataset.loc = `principal.background.${i}.information`;
      row.querySelector(".bg-shareable").dataset.loc = `principal.background.${i}.shareable`;
    });
    $("attendee-rows").querySelectorAll(".att-row").forEach((row, i) => {
      row.querySelector(".att-label").dataset.loc = `attendees.${i}`;
    });
  }

  $("add-background").addEventListener("click", () => {
    const row = backgroundRow();
    $("background-rows").append(row);
    reindex();
    row.querySelector(".bg-context").focus();
  });
  $("add-attendee").addEventListener("click", () => {
    const row = attendeeRow();
    $("attendee-rows").append(row);
    reindex();
    row.querySelector(".att-label").focus();
  });
  $("background-rows").append(backgroundRow());
  $("attendee-rows").append(attendeeRow());
  $("background-rows").closest("fieldset").dataset.loc = "principal.background";
  $("attendee-rows").closest("fieldset").dataset.loc = "attendees";
  reindex();

  const lines = (text) => text.split("\n").map((s) => s.trim()).filter(Boolean);

  function collectBrief() {
    const background = [];
    for (const row of $("background-rows").querySelectorAll(".bg-row")) {
      const context = row.querySelector(".bg-context").value.trim();
      const information = row.querySelector(".bg-information").value.trim();
      if (!context && !information) continue;
      const item = { context, information, shareable: row.querySelector(".bg-shareable").checked };
      for (const key of PROVENANCE) if (row.dataset[key]) item[key] = row.dataset[key];
      background.push(item);
    }
    const attendees = [];
    const names = {};
    for (const row of $("attendee-rows").querySelectorAll(".att-row")) {
      const label = row.querySelector(".att-label").value.trim();
      const name = row.querySelector(".att-name").value.trim();
      if (!label && !name) continue;
      attendees.push(label);
      if (name && label) names[label] = name;
    }
    const principal = {
      name: $("f-name").value.trim(),
      aliases: $("f-aliases").value.split(",").map((s) => s.trim()).filter(Boolean),
      intents: lines($("f-intents").value),
      background,
    };
    const label = $("f-label").value.trim();
    if (label) principal.label = label;
    const spec = {
      principal, attendees, names,
      approval: form.querySelector("input[name=approval]:checked").value,
      speaking: form.querySelector("input[name=speaking]:checked").value,
    };
    const meetingId = $("f-meeting-id").value.trim();
    if (meetingId) spec.meeting_id = meetingId;
    const engine = $("f-engine").value;
    if (engine) spec.engine = engine;
    return spec;
  }

  function clearErrors(scope) {
    scope.querySelectorAll(".field-error.dynamic").forEach((el) => el.remove());
    scope.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
    scope.querySelectorAll(".invalid").forEach((el) => el.classList.remove("invalid"));
  }

  // The element a pydantic `loc` (as in the 422's "principal.background.1.context: ...") points at.
  function elementFor(loc) {
    const parts = loc.split(".");
    if (parts[0] === "names" && parts.length > 1) {
      const label = parts.slice(1).join(".");
      for (const row of $("attendee-rows").querySelectorAll(".att-row")) {
        if (row.querySelector(".att-label").value.trim() === label) return row.querySelector(".att-name");
      }
    }
    for (let n = parts.length; n > 0; n--) {
      const el = form.querySelector(`[data-loc="${CSS.escape(parts.slice(0, n).join("."))}"]`);
      if (el) return el;
    }
    return null;
  }

  function humanize(loc, message) {
    if (/at least 1 character/.test(message)) return "This cannot be empty.";
    if (loc === "meeting_id" && /pattern/.test(message)) {
      return "Use 1-128 letters, digits, _ . : or -, starting with a letter or digit.";
    }
    if (/Extra inputs are not permitted/.test(message)) return `This server does not know this setting (${message}).`;
    return message.charAt(0).toUpperCase() + message.slice(1);
  }

  function showFieldError(el, loc, message, first = true) {
    const box = el.closest(".field") || el.closest(".bg-row, .att-row") || el;
    const err = h("p", { class: "field-error dynamic", role: "alert", dataset: { errorFor: loc } }, message);
    box.classList.add("invalid");
    if (el.matches("input, textarea, select")) el.setAttribute("aria-invalid", "true");
    box.append(err);
    if (!first) return;
    el.scrollIntoView({ block: "center", behavior: "smooth" });
    if (el.focus) el.focus({ preventScroll: true });
  }

  function showBriefError(error) {
    const banner = $("brief-error");
    const detail = error instanceof HttpError ? error.message : `The server could not be reached (${error.message}).`;
    const code = error.body?.code;
    // A 422 lists every refused field; other refusals name at most one.
    let problems = (error.body?.fields || []).map((f) => [f.loc, f.message]);
    if (!problems.length) {
      const m = detail.match(/^([^:]+): ([\s\S]*)$/);
      if (m && /^(principal|attendees|names|meeting_id|engine|approval|speaking)\b/.test(m[1])) problems = [[m[1], m[2]]];
      else if (code === "bad_engine") problems = [["engine", detail]];
      else if (code === "conflict" || code === "bad_meeting_id") problems = [["meeting_id", detail]];
    }
    let shown = 0;
    for (const [loc, message] of problems) {
      const el = elementFor(loc);
      if (!el) continue;
      showFieldError(el, loc, humanize(loc, message), shown === 0);
      shown += 1;
    }
    banner.textContent = shown === 0 ? detail
      : shown === 1 ? "The server refused the brief: see the highlighted field."
      : `The server refused the brief: see the ${shown} highlighted fields.`;
    banner.hidden = false;
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearErrors(form);
    $("brief-error").hidden = true;
    const submit = $("brief-submit");
    const spec = collectBrief();
    for (const [i, row] of [...$("attendee-rows").querySelectorAll(".att-row")].entries()) {
      const label = row.querySelector(".att-label");
      if (!label.value.trim() && row.querySelector(".att-name").value.trim()) {
        showFieldError(label, `attendees.${i}`, "Give the speaker label this name is for.");
        return;
      }
    }
    submit.disabled = true;
    submit.textContent = "Starting…";
    try {
      const created = await api("POST", "/v1/meetings", spec);
      briefs.set(created.meeting_id, spec);
      navigate(`/console/${encodeURIComponent(created.meeting_id)}`);
    } catch (error) {
      if (!(error instanceof HttpError && error.status === 401)) showBriefError(error);
    } finally {
      submit.disabled = false;
      submit.textContent = "Start meeting";
    }
  });

  // --- home: the token's meetings ----------------------------------------------------------------

  let meetingsOffset = 0;

  async function loadMeetings(append = false) {
    const list = $("meetings-list");
    const offset = append ? meetingsOffset : 0;
    try {
      const page = await api("GET", `/v1/meetings?limit=20&offset=${offset}`);
      if (!append) list.replaceChildren();
      for (const m of page.meetings) {
        list.append(h("li", {},
          h("a", { href: `/console/${encodeURIComponent(m.meeting_id)}`, "data-nav": true }, m.meeting_id),
          h("span", { class: `pill small ${m.open ? "live" : "ended"}` }, m.open ? "open" : "ended")));
      }
      meetingsOffset = page.next_offset ?? 0;
      $("more-meetings").hidden = page.next_offset === null;
      $("meetings-empty").hidden = list.children.length > 0;
      $("meetings-error").hidden = true;
    } catch (error) {
      $("meetings-error").textContent = error.message;
      $("meetings-error").hidden = false;
    }
  }

  $("refresh-meetings").addEventListener("click", () => loadMeetings());
  $("more-meetings").addEventListener("click", () => loadMeetings(true));

  function openHome() {
    showView("home");
    document.title = "Meeting Delegate · Console";
    loadMeetings();
    loadSourceEvents();
  }

  // --- home: start from sources ------------------------------------------------------------------

  async function loadSourceEvents() {
    let events, info;
    try {
      [info, events] = await Promise.all([api("GET", "/v1/sources"), api("GET", "/v1/sources/events")]);
    } catch {
      $("sources-box").hidden = true; // the sources cannot be read
      return;
    }
    // Without DELEGATE_SOURCES_DIR the server offers the example workplace shipped with it, as its principal.
    $("sources-example").hidden = !info.example;
    if (info.example && !$("f-src-principal").value) $("f-src-principal").value = info.principal;
    const select = $("f-src-event");
    select.replaceChildren(...events.map((e) =>
      h("option", { value: e.id }, `${e.summary} · ${e.start.slice(0, 16).replace("T", " ")}${e.private ? " (private)" : ""}`)));
    $("sources-box").hidden = events.length === 0;
  }

  $("src-draft").addEventListener("click", async () => {
    const err = $("sources-error");
    err.hidden = true;
    let draft;
    try {
      draft = await api("POST", "/v1/briefs", { principal: $("f-src-principal").value.trim(), event_id: $("f-src-event").value });
    } catch (e) {
      err.textContent = e.message;
      err.hidden = false;
      return;
    }
    const p = draft.profile;
    $("f-name").value = p.name;
    $("f-aliases").value = (p.aliases || []).join(", ");
    $("background-rows").replaceChildren(...p.background.map((item) => backgroundRow(item)));
    $("attendee-rows").replaceChildren(...draft.attendees.map((a) => attendeeRow(a.name.split(" ")[0], a.name)));
    if (draft.event_id) $("f-meeting-id").value = draft.event_id.replace(/[^A-Za-z0-9_.:-]/g, "-").slice(0, 128);
    reindex();
    const hidden = p.background.filter((b) => !b.shareable).length;
    const corrected = Object.keys(draft.superseded).length;
    const status = $("sources-status");
    status.textContent = `Drafted ${p.background.length} items for "${draft.title}" (${hidden} private); ` +
      `${corrected} older items left out because a later one corrects them. Review them below.`;
    status.hidden = false;
  });

  // --- meeting: watch, approve, summary ----------------------------------------------------------

  const SCENARIO = {
    explicit_cue: "Asked directly",
    implicit_cue: "Expected to answer",
    chime_in: "Chime-in",
    none: "No cue",
  };
  const STATUS = {
    pending: "Awaiting you",
    approved: "Approved",
    edited: "Approved, edited",
    rejected: "Rejected",
    expired: "Expired",
    sent: "Said",
  };
  const EXPIRED_BECAUSE = {
    floor_moved: "Expired: the floor moved on to someone else before you decided.",
    principal_spoke: "Expired: you spoke yourself.",
    superseded: "Expired: a newer reply awaits you instead.",
    newer_utterance: "Expired: the meeting moved on before you decided.",
    timeout: "Expired: no answer in time.",
    taken_over: "Expired: another connection took the meeting over.",
    meeting_ended: "Expired: the meeting ended.",
  };
  const ACTION_STATUS = { proposed: "Proposed", approved: "Approved", rejected: "Rejected" };
  const ACTION_TYPE = {
    send_email: "Email",
    schedule_meeting: "Meeting",
    share_document: "Document",
    create_task: "Task",
    follow_up: "Follow-up",
    review: "Review",
    other: "Other",
  };

  let M = null; // the meeting on screen
  let ticker = null;

  function stopMeeting() {
    if (!M) return;
    M.abort.abort();
    M = null;
    clearInterval(ticker);
    ticker = null;
  }

  function openMeeting(id) {
    M = {
      id,
      info: null,
      brief: briefs.get(id) || null,
      utterances: new Map(),
      decisions: new Map(),
      pending: new Map(),
      resolved: new Map(),
      actions: new Map(),
      editing: new Map(), // utterance id -> draft text
      notes: new Map(), // utterance id or action id -> a message for that item
      ended: false,
      endReason: "",
      bot: null,
      abort: new AbortController(),
      rows: new Map(),
      shownAt: new Map(), // utterance id -> when its decision was first drawn (epoch ms; benchmark.console_latency reads it)
    };
    showView("meeting");
    $("view-meeting").classList.remove("ended");
    $("m-title").textContent = id;
    $("m-meta").textContent = "";
    $("m-error").hidden = true;
    $("m-summary").hidden = true;
    $("m-bot").hidden = true;
    $("m-bot-token").value = "";
    $("m-send").hidden = true;
    $("send-error").hidden = true;
    setBot(null);
    setAdmission(null);
    $("rows").replaceChildren();
    $("actions").replaceChildren();
    $("actions-empty").hidden = false;
    $("m-waiting").hidden = false;
    setConnection("connecting");
    updatePending();
    ticker = setInterval(tick, 250);
    const mine = M;
    loadInfo(mine).then(() => {
      if (!mine.ended) loadBotToken(mine);
      follow(mine);
    });
  }

  // The bot's credential for this meeting, to hand to the bot: it never gets the principal's token.
  async function loadBotToken(mine) {
    try {
      const issued = await api("POST", `/v1/meetings/${encodeURIComponent(mine.id)}/bot-token`);
      if (M !== mine) return;
      $("m-bot-token").value = issued.bot_token;
      $("m-bot").hidden = false;
    } catch {
      // An ended meeting has no bot to connect; the meeting view says what else went wrong.
    }
  }

  function meetingError(message) {
    $("m-error").textContent = message;
    $("m-error").hidden = !message;
  }

  const ADMISSION_TEXT = {
    joining: "Bot joining",
    waiting_room: "Waiting to be admitted",
    in_meeting: "In the meeting",
    removed: "Removed from the meeting",
    ended: "Meeting over",
  };

  function setAdmission(state) {
    const pill = $("m-admission");
    pill.hidden = !state;
    if (!state) return;
    pill.textContent = ADMISSION_TEXT[state] || state;
    pill.className = `pill admission-${state}`;
    pill.dataset.state = state;
  }

  // The bot this server hosts for the meeting ("Send a bot"): where it stands, and what can be asked of it.
  const BOT_TEXT = {
    requested: "Bot requested: the service is bringing it in",
    waiting_room: "The bot is waiting to be admitted",
    in_meeting: "The bot is in the meeting",
    removed: "The bot was removed from the meeting",
    ended: "The bot left the meeting",
    failed: "The bot could not join",
  };
  const BOT_ACTIVE = ["requested", "waiting_room", "in_meeting"];

  function setBot(bot) {
    if (M) M.bot = bot;
    const line = $("bot-state");
    line.hidden = !bot;
    const active = Boolean(bot && BOT_ACTIVE.includes(bot.state));
    $("send-bot").disabled = active;
    $("bot-leave").hidden = !active;
    if (!bot) return;
    const via = bot.via === "recall" ? "Recall.ai" : "Attendee";
    line.textContent = `${BOT_TEXT[bot.state] || bot.state} (${via})${bot.detail ? `: ${bot.detail}` : ""}`;
    line.className = `bot-state ${bot.state}`;
    line.dataset.state = bot.state;
  }

  // While the meeting runs, the control; once it ended, only where its bot got to (if it had one).
  function showSend() {
    $("send-bot-form").hidden = M.ended;
    $("send-hint").hidden = M.ended;
    $("m-send").hidden = M.ended && !M.bot;
  }

  function sendError(message) {
    $("send-error").textContent = message;
    $("send-error").hidden = !message;
  }

  $("send-bot-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!M) return;
    const mine = M;
    const link = $("f-meeting-link").value.trim();
    if (!/^https:\/\/\S+$/.test(link)) { sendError("Paste the meeting's link (https://…)."); return; }
    sendError("");
    $("send-bot").disabled = true;
    try {
      const bot = await api("POST", `/v1/meetings/${encodeURIComponent(mine.id)}/attend`, { meeting_url: link, via: $("f-via").value });
      if (M === mine && !(M.bot && M.bot.state !== "requested" && BOT_ACTIVE.includes(M.bot.state))) setBot(bot);
    } catch (error) {
      if (M !== mine) return;
      sendError(error.message);
      $("send-bot").disabled = false;
    }
  });

  $("bot-leave").addEventListener("click", async () => {
    if (!M) return;
    const mine = M;
    $("bot-leave").disabled = true;
    try {
      const bot = await api("DELETE", `/v1/meetings/${encodeURIComponent(mine.id)}/attend`);
      if (M === mine) { setBot(bot); showSend(); }
    } catch (error) {
      if (M === mine) sendError(error.message);
    } finally {
      $("bot-leave").disabled = false;
    }
  });

  function setConnection(state) {
    const pill = $("m-conn");
    const text = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…", ended: "Ended", off: "Not following" };
    pill.textContent = text[state];
    pill.className = `pill ${state}`;
  }

  async function loadInfo(mine) {
    try {
      const info = await api("GET", `/v1/meetings/${encodeURIComponent(mine.id)}`);
      if (M !== mine) return;
      mine.info = info;
      if (info.admission) setAdmission(info.admission);
      setBot(info.bot || null);
      renderMeta();
      if (info.ended) mine.ended = true;
      showSend();
    } catch (error) {
      if (M !== mine || error.status === 401) return;
      if (!(error instanceof HttpError)) return; // the server is out of reach: the stream keeps trying
      meetingError(error.status === 404 ? `No meeting "${mine.id}" for this token.` : error.message);
      setConnection("off");
      mine.abort.abort();
    }
  }

  function approvalSetting() {
    return M.info?.approval || M.brief?.approval || "none";
  }

  function renderMeta() {
    const info = M.info;
    const approval = approvalSetting();
    const bits = [];
    if (info?.principal) bits.push(`For ${info.principal}`);
    if (info?.engine) bits.push(`engine ${info.engine}`);
    if (approval) bits.push(`approval: ${approval}`);
    const speaking = M.info?.speaking || M.brief?.speaking;
    if (speaking) bits.push(`speaking: ${speaking}`);
    bits.push(`${M.utterances.size || info?.utterances || 0} utterances`);
    $("m-meta").textContent = bits.join(" · ");
  }

  // Server-sent events over fetch(): EventSource cannot send the Authorization header.
  async function follow(mine) {
    let backoff = 0;
    while (M === mine && !mine.abort.signal.aborted) {
      let received = 0;
      try {
        const res = await fetch(`/v1/meetings/${encodeURIComponent(mine.id)}/events`, {
          headers: authHeaders({ Accept: "text/event-stream" }),
          signal: mine.abort.signal,
          cache: "no-store",
        });
        if (res.status === 401) { askForToken("The server did not accept the token. Paste it again."); return; }
        if (!res.ok) {
          let detail = `The event stream answered ${res.status}.`;
          try { detail = (await res.json()).detail || detail; } catch { /* not JSON */ }
          if (res.status === 404 || res.status === 403) {
            meetingError(detail);
            setConnection("off");
            return;
          }
          throw new Error(detail);
        }
        setConnection(mine.ended ? "ended" : "live");
        meetingError("");
        backoff = 0;
        await readEvents(res.body, (event) => { received++; if (M === mine) apply(event); });
      } catch (error) {
        if (mine.abort.signal.aborted) return;
        console.warn("event stream", error);
      }
      if (M !== mine || mine.abort.signal.aborted) return;
      if (!mine.ended) await loadInfo(mine);
      if (mine.ended) { finish(); return; }
      setConnection("reconnecting");
      backoff = received ? 500 : Math.min(backoff ? backoff * 2 : 1000, 10000);
      await sleep(backoff, mine.abort.signal);
    }
  }

  async function readEvents(body, onEvent) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer = (buffer + value).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (!data) continue; // a comment (keep-alive) or an event without data
        let event;
        try { event = JSON.parse(data); } catch { console.warn("not JSON", data); continue; }
        onEvent(event);
      }
    }
  }

  function apply(event) {
    switch (event.type) {
      case "utterance": {
        const u = event.utterance;
        M.utterances.set(u.id, u);
        renderRow(u.id);
        renderMeta();
        break;
      }
      case "decision": {
        const d = event.decision;
        M.decisions.set(d.utterance_id, { ...d, approval: event.approval || "none" });
        renderRow(d.utterance_id);
        break;
      }
      case "speech_pending":
        if (!M.resolved.has(event.utterance_id)) {
          M.pending.set(event.utterance_id, { text: event.text, expiresAt: expiry(event.expires_at), seenAt: Date.now() });
        }
        renderRow(event.utterance_id);
        break;
      case "speech_resolved":
        M.resolved.set(event.utterance_id, { status: event.status, text: event.text, reason: event.reason });
        M.pending.delete(event.utterance_id);
        M.editing.delete(event.utterance_id);
        renderRow(event.utterance_id);
        break;
      case "action":
        M.actions.set(event.action.id, event.action);
        renderActions();
        break;
      case "live":
        setConnection("live");
        break;
      case "admission":
        setAdmission(event.state);
        if (M.bot && !["failed", "ended", "removed"].includes(M.bot.state)) {
          setBot({ ...M.bot, state: event.state === "joining" ? "requested" : event.state, detail: "" });
        }
        break;
      case "bot":
        setBot(event);
        break;
      case "meeting_ended":
        M.ended = true;
        M.endReason = event.reason || "";
        finish();
        break;
      default:
        break;
    }
    updatePending();
    if (M.ended) renderSummary();
  }

  function expiry(value) {
    if (value === null || value === undefined) return null;
    if (typeof value === "number") return value > 1e12 ? value : value * 1000;
    const t = Date.parse(value);
    return Number.isNaN(t) ? null : t;
  }

  function approvalOf(uid) {
    const resolved = M.resolved.get(uid);
    if (resolved) return resolved.status;
    const d = M.decisions.get(uid);
    if (d && !["none", "pending"].includes(d.approval)) return d.approval;
    if (M.pending.has(uid)) return M.ended ? "expired" : "pending";
    if (d?.approval === "pending") return M.ended ? "expired" : "pending";
    return d && d.speak && d.speak.trim() ? "sent" : "none";
  }

  function displayName(label) {
    return M.brief?.names?.[label] || label;
  }

  function isPrincipal(label) {
    const p = M.brief?.principal;
    if (p) return label === (p.label || p.name);
    return label === M.info?.principal;
  }

  function clock(seconds) {
    if (typeof seconds !== "number") return null;
    const s = Math.floor(seconds);
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
  }

  function renderRow(uid) {
    const u = M.utterances.get(uid);
    const d = M.decisions.get(uid);
    const status = approvalOf(uid);
    const focused = document.activeElement;
    const hadFocus = focused && focused.classList?.contains("edit-text") && focused.closest(".trow")?.dataset.utteranceId === String(uid);
    const selection = hadFocus ? [focused.selectionStart, focused.selectionEnd] : null;

    const row = h("li", { class: `trow status-${status}`, id: `row-${uid}`, dataset: { utteranceId: uid, status } },
      h("div", { class: `utt${u && isPrincipal(u.speaker) ? " principal" : ""}` },
        h("div", { class: "utt-meta" },
          h("span", { class: "speaker" }, u ? displayName(u.speaker) : "…"),
          h("span", { class: "when" }, [`#${uid}`, clock(u?.start)].filter(Boolean).join(" · "))),
        h("p", { class: "utt-text" }, u ? u.text : "(utterance not received)")),
      decisionCard(uid, d, status));

    if (d && !M.shownAt.has(uid)) M.shownAt.set(uid, Date.now());
    if (M.shownAt.has(uid)) row.dataset.shownAt = M.shownAt.get(uid);
    const old = M.rows.get(uid);
    if (old) old.replaceWith(row);
    else {
      const list = $("rows");
      const after = [...M.rows.keys()].filter((k) => k > uid).sort((a, b) => a - b)[0];
      const stickToBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
      if (after === undefined) list.append(row);
      else list.insertBefore(row, M.rows.get(after));
      if (stickToBottom && after === undefined) row.scrollIntoView({ block: "end" });
    }
    M.rows.set(uid, row);
    $("m-waiting").hidden = true;
    if (hadFocus) {
      const area = row.querySelector(".edit-text");
      area.focus();
      area.setSelectionRange(...selection);
    }
  }

  function decisionCard(uid, d, status) {
    if (!d) return h("div", { class: "dec deciding" }, h("span", { class: "hint" }, "Deciding…"));
    const spoke = Boolean(d.speak && d.speak.trim());
    const resolved = M.resolved.get(uid);
    const pending = M.pending.get(uid);
    const text = resolved?.text || pending?.text || d.speak;
    const card = h("div", { class: `dec ${spoke ? "speaks" : "silent"}` },
      h("div", { class: "dec-head" },
        h("span", { class: `badge ${spoke ? "speak" : "quiet"}` }, spoke ? (status === "sent" ? "Speaks" : "Would speak") : "Stays silent"),
        h("span", { class: "badge scenario" }, SCENARIO[d.scenario] || d.scenario),
        h("span", { class: "confidence", title: "The engine's confidence" }, `${Math.round((d.confidence || 0) * 100)}%`),
        spoke && status !== "none" ? h("span", { class: `badge status ${status}` }, STATUS[status] || status) : null));
    if (spoke) {
      const editor = M.editing.get(uid);
      if (editor !== undefined && status === "pending") card.append(editBox(uid, editor));
      else {
        card.append(h("blockquote", { class: "say" }, text));
        if (status === "edited" && d.speak && d.speak !== text) card.append(h("p", { class: "was" }, "Proposed: ", h("s", {}, d.speak)));
      }
    }
    card.append(h("p", { class: "reason" }, h("span", { class: "why-label" }, "Why: "), d.reason));
    const used = usedBackground(d);
    if (used) card.append(used);
    const intents = (d.used_intents || []).map((i) => M.brief?.principal?.intents?.[i]).filter(Boolean);
    if (intents.length) card.append(h("p", { class: "intents" }, "Raises: ", intents.join("; ")));
    if (status === "pending" && M.editing.get(uid) === undefined) {
      if (pending?.expiresAt) {
        card.append(countdown(pending));
      }
      card.append(h("div", { class: "decide" },
        h("button", { type: "button", class: "approve", onclick: () => resolveSpeech(uid, "approve") }, "Approve"),
        h("button", { type: "button", class: "edit", onclick: () => { M.editing.set(uid, text); renderRow(uid); M.rows.get(uid).querySelector(".edit-text").focus(); } }, "Edit"),
        h("button", { type: "button", class: "reject", onclick: () => resolveSpeech(uid, "reject") }, "Reject")));
    }
    if (status === "expired" && resolved?.reason) {
      card.append(h("p", { class: "why" }, EXPIRED_BECAUSE[resolved.reason] || `Expired (${resolved.reason}).`));
    }
    const note = M.notes.get(uid);
    if (note && !card.querySelector(".editor")) card.append(h("p", { class: "note", role: "alert" }, note));
    return card;
  }

  function editBox(uid, draft) {
    const area = h("textarea", { class: "edit-text", rows: 3, value: draft, oninput: (e) => M.editing.set(uid, e.target.value) });
    const pending = M.pending.get(uid);
    return h("div", { class: "editor" },
      area,
      pending?.expiresAt ? countdown(pending) : null,
      h("div", { class: "decide" },
        h("button", { type: "button", class: "approve", onclick: () => resolveSpeech(uid, "approve", M.editing.get(uid)) }, "Approve edited text"),
        h("button", { type: "button", class: "reject", onclick: () => resolveSpeech(uid, "reject") }, "Reject"),
        h("button", { type: "button", class: "link", onclick: () => { M.editing.delete(uid); M.notes.delete(uid); renderRow(uid); } }, "Cancel edit")),
      M.notes.has(uid) ? h("p", { class: "note", role: "alert" }, M.notes.get(uid)) : null);
  }

  function usedBackground(d) {
    const indices = d.used_background || [];
    const looked = d.used_sources || [];
    if (!indices.length && !looked.length) return null;
    const items = M.brief?.principal?.background || M.info?.background || null;
    return h("div", { class: "used" },
      h("span", { class: "used-title" }, "From the brief"),
      h("ul", {}, [...looked.map((id) => h("li", { class: "looked-up" }, `Looked up in the sources: ${id}`)), ...indices.map((i) => {
        const item = items?.[i];
        if (!item) return h("li", {}, `Background item ${i + 1}`);
        if (item.information == null) {
          return h("li", { class: "private" }, h("span", { class: "badge private" }, "Private"),
            `Background item ${i + 1} (its words stay with the principal)`);
        }
        return h("li", { class: item.shareable === false ? "private" : "" },
          item.shareable === false ? h("span", { class: "badge private" }, "Private") : null,
          item.source ? h("span", { class: "prov" }, `${item.source} · ${item.item_id || "?"}: `) : null,
          h("span", { class: "ctx" }, item.context), " → ", item.information);
      })]));
  }

  async function resolveSpeech(uid, verdict, text) {
    const mine = M;
    const body = text === undefined ? { verdict } : { verdict, text };
    mine.notes.delete(uid);
    mine.rows.get(uid)?.querySelectorAll(".decide button").forEach((b) => { b.disabled = true; });
    try {
      const done = await api("POST", `/v1/meetings/${encodeURIComponent(mine.id)}/speech/${uid}`, body);
      mine.resolved.set(uid, { status: done.status, text: done.text });
      mine.pending.delete(uid);
      mine.editing.delete(uid);
    } catch (error) {
      if (error.status === 409) mine.notes.set(uid, `Too late: ${error.message}`);
      else if (error.status !== 401) mine.notes.set(uid, error.message);
    }
    if (M !== mine) return;
    renderRow(uid);
    updatePending();
  }

  function renderActions() {
    const list = $("actions");
    list.replaceChildren(...[...M.actions.values()].map(actionItem));
    $("actions-empty").hidden = M.actions.size > 0;
  }

  function actionItem(a) {
    const open = a.status === "proposed" && !M.ended;
    const held = open && approvalSetting() === "all";
    const meta = [
      a.assignees?.length ? `For ${a.assignees.map(displayName).join(", ")}` : null,
      a.due ? `due ${a.due}${a.due_date ? ` (${a.due_date})` : ""}` : null,
    ].filter(Boolean).join(" · ");
    return h("li", { class: `action status-${a.status}${held ? " held" : ""}`, dataset: { actionId: a.id, status: a.status } },
      h("div", { class: "action-head" },
        h("span", { class: "badge type" }, ACTION_TYPE[a.action_type] || a.action_type),
        a.for_principal ? h("span", { class: "badge mine" }, "Yours") : null,
        h("span", { class: `badge status ${held ? "pending" : a.status}` }, held ? "Held for you" : ACTION_STATUS[a.status] || a.status)),
      h("p", { class: "action-text" }, a.description),
      meta ? h("p", { class: "action-meta" }, meta) : null,
      a.offer ? h("p", { class: "offer" }, `Delegate offers: ${a.offer}`) : null,
      a.supporting_excerpt ? h("blockquote", { class: "excerpt" }, a.supporting_excerpt) : null,
      open ? h("div", { class: "decide" },
        h("button", { type: "button", class: "approve", onclick: () => resolveAction(a.id, "approve") }, "Approve"),
        h("button", { type: "button", class: "reject", onclick: () => resolveAction(a.id, "reject") }, "Reject")) : null,
      M.notes.has(a.id) ? h("p", { class: "note", role: "alert" }, M.notes.get(a.id)) : null);
  }

  async function resolveAction(actionId, verdict) {
    const mine = M;
    mine.notes.delete(actionId);
    try {
      const action = await api("POST", `/v1/meetings/${encodeURIComponent(mine.id)}/actions/${encodeURIComponent(actionId)}`, { verdict });
      mine.actions.set(action.id, action);
    } catch (error) {
      if (error.status !== 401) mine.notes.set(actionId, error.message);
    }
    if (M !== mine) return;
    renderActions();
    updatePending();
    if (M.ended) renderSummary();
  }

  function updatePending() {
    let n = 0;
    if (M) {
      const uids = new Set([...M.decisions.keys(), ...M.pending.keys()]);
      n = [...uids].filter((uid) => approvalOf(uid) === "pending").length;
      if (approvalSetting() === "all" && !M.ended) n += [...M.actions.values()].filter((a) => a.status === "proposed").length;
    }
    const pill = $("m-pending-count");
    pill.hidden = n === 0;
    pill.textContent = `${n} awaiting you`;
    document.title = `${n ? `(${n}) ` : ""}${M ? M.id : "Console"} · Meeting Delegate`;
  }

  // The bar is full when the page learnt of the speech and empty at its expiry (by this machine's clock).
  function countdown(pending) {
    const el = h("div", { class: "countdown", dataset: { expires: pending.expiresAt, seen: pending.seenAt } },
      h("div", { class: "bar" }, h("span", {})), h("span", { class: "left" }));
    paintCountdown(el);
    return el;
  }

  function paintCountdown(el) {
    const expires = Number(el.dataset.expires);
    const total = Math.max(1000, expires - Number(el.dataset.seen));
    const left = expires - Date.now();
    el.querySelector(".bar span").style.width = `${Math.max(0, Math.min(100, (left / total) * 100))}%`;
    el.classList.toggle("urgent", left < 10000);
    el.querySelector(".left").textContent = left > 0 ? `${Math.ceil(left / 1000)} s left` : "expiring…";
  }

  function tick() {
    document.querySelectorAll(".countdown[data-expires]").forEach(paintCountdown);
  }

  function finish() {
    setConnection("ended");
    showSend();
    $("view-meeting").classList.add("ended");
    M.editing.clear();
    for (const uid of M.rows.keys()) renderRow(uid);
    renderActions();
    renderSummary();
    updatePending();
  }

  function renderSummary() {
    const box = $("m-summary");
    box.hidden = false;
    const decisions = [...M.decisions.values()];
    const spoken = decisions.filter((d) => d.speak && d.speak.trim());
    const count = (status) => spoken.filter((d) => approvalOf(d.utterance_id) === status).length;
    const actions = [...M.actions.values()];
    const stat = (n, label, cls = "") => h("div", { class: `stat ${cls}` }, h("strong", {}, String(n)), h("span", {}, label));
    const stats = [
      stat(M.utterances.size || M.info?.utterances || 0, "utterances"),
      stat(decisions.length, "decisions"),
      stat(spoken.length, "would speak"),
      stat(count("approved"), "approved", "approved"),
      stat(count("edited"), "edited", "edited"),
      stat(count("rejected"), "rejected", "rejected"),
      stat(count("expired"), "expired", "expired"),
      count("sent") ? stat(count("sent"), "said without approval") : null,
      stat(actions.length, "action items"),
    ];
    $("summary-stats").replaceChildren(...stats.filter(Boolean));
    $("summary-speech").replaceChildren(...(spoken.length ? spoken.map((d) => {
      const status = approvalOf(d.utterance_id);
      const text = M.resolved.get(d.utterance_id)?.text || d.speak;
      return h("li", {}, h("span", { class: `badge status ${status}` }, STATUS[status] || status),
        h("a", { href: `#row-${d.utterance_id}`, class: "said-text", onclick: (e) => { e.preventDefault(); M.rows.get(d.utterance_id)?.scrollIntoView({ block: "center", behavior: "smooth" }); } }, text));
    }) : [h("li", { class: "hint" }, "It stayed silent throughout.")]));
    $("summary-actions").replaceChildren(...(actions.length ? actions.map((a) =>
      h("li", {}, h("span", { class: `badge status ${a.status}` }, ACTION_STATUS[a.status] || a.status), h("span", {}, a.description)))
      : [h("li", { class: "hint" }, "No action items.")]));
    $("summary-ended").textContent = M.endReason ? `The meeting ended: ${M.endReason}.` : "The meeting has ended.";
  }

  $("download-audit").addEventListener("click", async () => {
    if (!M) return;
    const id = M.id;
    try {
      const res = await fetch(`/v1/meetings/${encodeURIComponent(id)}/audit`, { headers: authHeaders() });
      if (!res.ok) {
        let detail = `The server answered ${res.status}.`;
        try { detail = (await res.json()).detail || detail; } catch { /* not JSON */ }
        throw new Error(detail);
      }
      const blob = new Blob([await res.arrayBuffer()], { type: "application/x-ndjson" });
      const url = URL.createObjectURL(blob);
      const a = h("a", { href: url, download: `${id}-audit.jsonl` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (error) {
      meetingError(`Could not download the audit log: ${error.message}`);
    }
  });

  // --- start -------------------------------------------------------------------------------------

  async function start() {
    try {
      const res = await fetch("/v1/meetings?limit=1");
      authRequired = res.status === 401;
    } catch {
      authRequired = true;
    }
    updateSession();
    route();
  }

  start();
})();
