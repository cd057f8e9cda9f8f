// The web face's only script (ours; no libraries). The timeline shows new events as they
// are captured: it polls /ui/api/events (the session cookie goes with it) and puts the
// events it has not shown yet at the top. The audit page judges items from the keyboard.
// The graph and memory pages ask before a delete. Elements are built with textContent,
// never HTML.
"use strict";

(function () {
  const list = document.getElementById("events");
  if (!list || !list.dataset.poll) return;
  const live = document.getElementById("live");
  const EVERY_MS = 2000;

  function shown() {
    const ids = new Set();
    for (const item of list.querySelectorAll("li.event")) ids.add(Number(item.dataset.id));
    return ids;
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function link(className, href, text) {
    const a = el("a", className, text);
    a.href = href;
    return a;
  }

  function row(event) {
    const item = el("li", "event fresh");
    item.dataset.id = String(event.id);
    const meta = el("div", "meta");
    const time = el("time", null, event.created_at.slice(0, 19).replace("T", " ") + " UTC");
    time.dateTime = event.created_at;
    meta.append(time, " ");
    meta.append(link("chan", "/ui/timeline?" + new URLSearchParams({ channel: event.channel }), event.channel), " ");
    if (event.session_id) {
      meta.append(link("sess", "/ui/timeline?" + new URLSearchParams({ session_id: event.session_id }), event.session_id), " ");
    }
    meta.append(el("span", "who", event.author || event.role || ""), " ");
    if (event.event_type !== "message") meta.append(el("span", "type", event.event_type), " ");
    meta.append(link("around", "/ui/around?event=" + event.id, "around"));
    item.append(meta, el("div", "content", event.content));
    return item;
  }

  async function poll() {
    try {
      const response = await fetch(list.dataset.poll, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (response.status === 401) {
        window.location.assign("/ui");
        return;
      }
      if (!response.ok) throw new Error(String(response.status));
      const page = await response.json();
      const seen = shown();
      const fresh = page.events.filter((e) => !seen.has(e.id)).reverse();
      if (fresh.length) {
        const none = list.querySelector("li.none");
        if (none) none.remove();
        for (const event of fresh) list.prepend(row(event));
      }
      if (live) {
        live.hidden = false;
        live.classList.remove("stalled");
      }
    } catch (err) {
      if (live) live.classList.add("stalled");
    }
    window.setTimeout(poll, EVERY_MS);
  }

  window.setTimeout(poll, EVERY_MS);
})();


// The audit: j/k (or the arrows) move between the items on show (a big recall's closed
// layers are skipped; opening one makes its first item current), y/1 and n/0 judge the
// current one (POST /ui/api/audit/judgments with the session's CSRF token in
// X-CSRF-Token), then the next is current; precision beside the items is redrawn from
// the answer.
(function () {
  const audit = document.getElementById("audit");
  if (!audit) return;
  const items = Array.from(audit.querySelectorAll("li.judge-item"));
  let current = null;

  function pct(p) {
    return p === null || p === undefined ? "–" : Math.round(p * 100) + "%";
  }

  function focus(item) {
    if (!item) return;
    if (current) current.classList.remove("current");
    current = item;
    item.classList.add("current");
    item.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest" });
  }

  // The item on show after `from` (step 1) or before it (step -1); from the start when
  // `from` is null; null when there is none.
  function near(from, step) {
    let i = from === null ? (step > 0 ? -1 : items.length) : items.indexOf(from);
    for (i += step; i >= 0 && i < items.length; i += step) {
      if (!items[i].closest("details:not([open])")) return items[i];
    }
    return null;
  }

  // A layer's count of judged items, in its summary.
  function recount(item) {
    const fold = item.closest("details.fold");
    if (fold) {
      const judged = fold.querySelectorAll("li.yes, li.no").length;
      fold.querySelector(".judged").textContent = judged + " judged";
    }
  }

  function cell(row, text, className) {
    const td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = text;
    row.append(td);
    return td;
  }

  function meter(td, p) {
    if (p === null || p === undefined) return;
    const m = document.createElement("meter");
    m.min = 0;
    m.max = 1;
    m.value = p;
    td.append(" ", m);
  }

  function redraw(precision) {
    document.getElementById("p-all").textContent = pct(precision.precision);
    document.getElementById("p-counts").textContent =
      precision.judged + " judged items (" + precision.relevant + " relevant) in " +
      precision.recalls + " recalls";
    const layers = document.querySelector("#p-layers tbody");
    layers.replaceChildren();
    for (const l of precision.layers) {
      const row = document.createElement("tr");
      row.dataset.layer = l.layer;
      cell(row, l.layer);
      meter(cell(row, pct(l.precision), "p"), l.precision);
      cell(row, String(l.judged));
      cell(row, String(l.recalls));
      layers.append(row);
    }
    const weeks = document.querySelector("#p-weeks tbody");
    weeks.replaceChildren();
    for (const w of precision.weeks) {
      const row = document.createElement("tr");
      cell(row, w.week);
      meter(cell(row, pct(w.precision), "p"), w.precision);
      cell(row, String(w.judged));
      weeks.append(row);
    }
  }

  // POST a judgment (or its undo) for the item: the answer, or null when refused (a
  // sign-in that ended goes back to the sign-in page).
  async function send(path, item, fields) {
    const response = await fetch(path + "?k=" + audit.dataset.k, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRF-Token": audit.dataset.csrf,
      },
      body: JSON.stringify({
        log_id: Number(item.dataset.log),
        rank: Number(item.dataset.rank),
        ...fields,
      }),
    });
    if (response.status === 401) {
      window.location.assign("/ui");
      return null;
    }
    if (!response.ok) {
      item.classList.add("failed");
      return null;
    }
    item.classList.remove("yes", "no", "failed");
    return response.json();
  }

  async function judge(item, relevant) {
    const answer = await send("/ui/api/audit/judgments", item, { relevant: relevant });
    if (answer === null) return;
    item.classList.add(relevant ? "yes" : "no");
    item.querySelector(".verdict").textContent = relevant ? "relevant" : "not relevant";
    recount(item);
    redraw(answer.precision);
  }

  // The judgment taken back: the item unjudged again, precision redrawn.
  async function undo(item) {
    const answer = await send("/ui/api/audit/undo", item, {});
    if (answer === null) return;
    item.querySelector(".verdict").textContent = "";
    recount(item);
    redraw(answer.precision);
  }

  for (const item of items) {
    item.addEventListener("click", () => focus(item));
    item.querySelector("form.verdicts").addEventListener("submit", (event) => {
      event.preventDefault();
      const value = event.submitter ? event.submitter.value : "";
      focus(item);
      if (value === "undo") undo(item);
      else judge(item, value === "1").then(() => focus(near(item, 1)));
    });
  }

  for (const fold of audit.querySelectorAll("details.fold")) {
    fold.addEventListener("toggle", () => {
      if (fold.open) focus(fold.querySelector("li.judge-item"));
      else if (current && fold.contains(current)) {
        current.classList.remove("current");
        current = null;
      }
    });
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select") return;
    const key = event.key;
    if (key === "j" || key === "ArrowDown") focus(near(current, 1));
    else if (key === "k" || key === "ArrowUp") focus(near(current, -1));
    else if ((key === "y" || key === "1" || key === "n" || key === "0") && current) {
      const item = current;
      judge(item, key === "y" || key === "1").then(() => focus(near(item, 1)));
    } else if (key === "u" && current) undo(current);
    else return;
    event.preventDefault();
  });

  focus(near(null, 1));
})();

// A delete asks first: a form with data-confirm submits only when the person says yes.
(function () {
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
})();
