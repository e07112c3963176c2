// Switchboard's only script besides htmx: CSP-safe (no inline code, no eval).
(function () {
  "use strict";

  function csrfToken() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.getAttribute("content") : "";
  }

  // Every htmx request carries the CSRF token.
  document.addEventListener("htmx:configRequest", function (e) {
    e.detail.headers["X-CSRF-Token"] = csrfToken();
  });

  // The live marker tells people (and tests) whether updates are flowing.
  function setLive(state) {
    document.body.setAttribute("data-sse", state);
    var el = document.querySelector('[data-testid="live-status"]');
    if (el) {
      el.textContent = state === "open" ? "live" : "reconnecting…";
      el.className = "live live-" + state;
    }
  }
  document.addEventListener("htmx:sseOpen", function () { setLive("open"); });
  document.addEventListener("htmx:sseError", function () { setLive("error"); });

  // Forms and buttons with data-confirm ask first.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { e.preventDefault(); }
  }, true);

  // Add a blank env or header row to the server form.
  document.addEventListener("click", function (e) {
    var btn = e.target.closest("[data-add-row]");
    if (!btn) { return; }
    e.preventDefault();
    var list = document.getElementById(btn.getAttribute("data-add-row"));
    var tmpl = list && list.querySelector("template");
    if (tmpl) { list.insertBefore(tmpl.content.cloneNode(true), tmpl); }
  });

  // Show the right fieldset for the chosen transport.
  function syncTransport() {
    var sel = document.querySelector('[name="transport"]');
    if (!sel) { return; }
    var remote = sel.value !== "stdio";
    document.querySelectorAll("[data-for-transport]").forEach(function (el) {
      el.hidden = (el.getAttribute("data-for-transport") === "remote") !== remote;
    });
  }
  document.addEventListener("change", function (e) {
    if (e.target.name === "transport") { syncTransport(); }
  });
  document.addEventListener("DOMContentLoaded", syncTransport);

  // Calls waiting for a person raise a browser notification while this
  // tab is in the background, once the person allowed notifications.
  var notified = {};
  function notifyState() {
    var btn = document.querySelector("[data-notify]");
    var state = document.querySelector("[data-notify-state]");
    if (!btn || !state) { return; }
    if (!("Notification" in window)) { state.textContent = "This browser cannot notify."; return; }
    btn.hidden = Notification.permission !== "default";
    state.textContent = Notification.permission === "granted" ? "Notifications are on for background tabs." :
      Notification.permission === "denied" ? "Notifications are blocked for this site in the browser." : "";
  }
  document.addEventListener("click", function (e) {
    if (!e.target.closest("[data-notify]") || !("Notification" in window)) { return; }
    Notification.requestPermission().then(notifyState);
  });
  document.addEventListener("DOMContentLoaded", notifyState);
  document.addEventListener("htmx:afterSettle", function (e) {
    if (!e.target || e.target.id !== "approvals") { return; }
    var cards = e.target.querySelectorAll("[data-approval]");
    var now = {};
    cards.forEach(function (card) {
      var id = card.getAttribute("data-approval");
      now[id] = true;
      if (notified[id] || !document.hidden || !("Notification" in window) || Notification.permission !== "granted") { return; }
      var n = new Notification("A call waits for your approval", { body: card.getAttribute("data-approval-title"), tag: id });
      n.onclick = function () { window.focus(); n.close(); };
    });
    notified = now;
  });

  // A Copy button copies the text of the element just before it.
  document.addEventListener("click", function (e) {
    var btn = e.target.closest("[data-copy]");
    var src = btn && btn.previousElementSibling;
    if (!src || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(src.textContent.trim()).then(function () {
      btn.textContent = "Copied";
      setTimeout(function () { btn.textContent = "Copy"; }, 1500);
    });
  });

  // Tick elapsed times of running jobs and "verified N ago" labels.
  function span(s) {
    if (s < 60) { return s + "s"; }
    if (s < 3600) { return Math.floor(s / 60) + " min"; }
    if (s < 86400) { return Math.floor(s / 3600) + " h"; }
    return Math.floor(s / 86400) + " d";
  }
  function ago(ms) {
    var s = Math.round(ms / 1000);
    return s < 0 ? "in " + span(-s) : span(s) + " ago";
  }
  setInterval(function () {
    var now = Date.now();
    document.querySelectorAll("[data-running-since]").forEach(function (el) {
      var t = parseInt(el.getAttribute("data-running-since"), 10);
      el.textContent = ((now - t) / 1000).toFixed(1) + " s";
    });
    document.querySelectorAll("[data-ago]").forEach(function (el) {
      el.textContent = ago(now - parseInt(el.getAttribute("data-ago"), 10));
    });
  }, 250);
})();
