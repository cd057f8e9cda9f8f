// The web face's only script (ours; no libraries). The timeline shows new events as they
// are captured: it polls /ui/api/events (the session cookie goes with it) and puts the
// events it has not shown yet at the top. Elements are built with textContent, never HTML.
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
    const time = el("time", null, event.created_at.slice(0, 19).replace("T", " "));
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
