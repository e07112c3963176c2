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
  // A form that shows state to a role that may not change it (see
  // app.css, data-needs) is read only: its fields are disabled, so that
  // neither a click nor a key changes them. Again after each swap.
  var rank = { viewer: 1, approver: 2, admin: 3 };
  function readOnlyForRole(root) {
    var role = rank[document.body.getAttribute("data-role")] || 3;
    (root || document).querySelectorAll(".shows-state[data-needs]").forEach(function (form) {
      if (role >= (rank[form.getAttribute("data-needs")] || 3)) return;
      form.querySelectorAll("select, input, textarea").forEach(function (el) { el.disabled = true; });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { readOnlyForRole(); });
  document.addEventListener("htmx:afterSettle", function (e) { readOnlyForRole(e.target); });

  // A request htmx made that was refused says why, where the person is
  // (a role too low for a change, a session that ended, a store out of
  // reach), instead of nothing happening.
  document.addEventListener("htmx:responseError", function (e) {
    var x = e.detail.xhr, msg = "";
    try { msg = JSON.parse(x.responseText).error || ""; } catch (_) {
      var page = new DOMParser().parseFromString(x.responseText || "", "text/html");
      var m = page.querySelector('[data-testid="error-message"], [data-testid="alert"]');
      msg = m ? m.textContent : "";
    }
    var box = document.querySelector('[data-testid="request-error"]');
    if (!box) { return; }
    box.textContent = msg || ("The request failed (" + x.status + ").");
    box.hidden = false;
    clearTimeout(box.__hide);
    box.__hide = setTimeout(function () { box.hidden = true; }, 8000);
  });
  document.addEventListener("htmx:sseOpen", function () { setLive("open"); });
  document.addEventListener("htmx:sseError", function () { setLive("error"); });

  // Forms and buttons with data-confirm ask first.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { e.preventDefault(); }
  }, true);

  // Add a blank env or header row to the server form, or remove one: a
  // removed row is not sent, so saving deletes its variable or header.
  // Focus moves to the new row's name, or after a removal to the Add
  // button of the list.
  document.addEventListener("click", function (e) {
    var btn = e.target.closest("[data-add-row]");
    var rm = e.target.closest("[data-remove-row]");
    if (rm) {
      e.preventDefault();
      var row = rm.closest(".row-pair"), rows = row && row.parentElement;
      if (!row) { return; }
      row.remove();
      var add = document.querySelector('[data-add-row="' + rows.id + '"]');
      if (add) { add.focus(); }
      return;
    }
    if (!btn) { return; }
    e.preventDefault();
    var list = document.getElementById(btn.getAttribute("data-add-row"));
    var tmpl = list && list.querySelector("template");
    if (!tmpl) { return; }
    list.insertBefore(tmpl.content.cloneNode(true), tmpl);
    var name = tmpl.previousElementSibling && tmpl.previousElementSibling.querySelector("input");
    if (name) { name.focus(); }
  });
  // A row's Remove button is labelled with the row's name as typed.
  document.addEventListener("input", function (e) {
    var row = /_key$/.test(e.target.name || "") && e.target.closest(".row-pair");
    var rm = row && row.querySelector("[data-remove-row]");
    if (rm) { rm.setAttribute("aria-label", "Remove " + (e.target.value.trim() || rm.getAttribute("data-remove-row"))); }
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

  // The tools table: search and filters (above the table, outside the
  // live-reloaded section), "select every tool shown", and what a live
  // reload must not lose: the filter, open details, checked boxes and a
  // fresh "saved".
  function toolRows() { return document.querySelectorAll('#tools [data-testid="tool-row"]'); }
  function filterTools() {
    var bar = document.querySelector("[data-tool-filters]");
    if (!bar) { return; }
    var f = {};
    bar.querySelectorAll("[data-filter]").forEach(function (el) { f[el.getAttribute("data-filter")] = el.value.trim().toLowerCase(); });
    var shown = 0, total = 0;
    toolRows().forEach(function (row) {
      total++;
      var state = row.querySelector('[data-testid="tool-state"]'), policy = row.querySelector('[data-testid="policy-select"]');
      var ok = (!f.state || (state && state.textContent.trim() === f.state)) &&
        (!f.policy || (policy && policy.value === f.policy)) &&
        (!f.hint || (" " + row.getAttribute("data-hints") + " ").indexOf(" " + f.hint + " ") >= 0);
      if (ok && f.q) {
        var text = "";
        row.querySelectorAll('[data-testid="tool-name"], [data-testid="tool-title"], [data-testid="tool-description"], [data-testid="agent-name"]').forEach(function (el) { text += el.textContent + "\n"; });
        ok = text.toLowerCase().indexOf(f.q) >= 0;
      }
      row.hidden = !ok;
      if (ok) { shown++; }
    });
    var count = bar.querySelector("[data-filter-count]");
    if (count) { count.textContent = shown === total ? total + " tools" : shown + " of " + total + " tools shown"; }
    var all = document.querySelector("[data-check-shown]");
    if (all) { all.checked = false; }
  }
  document.addEventListener("input", function (e) { if (e.target.closest("[data-tool-filters]")) { filterTools(); } });
  document.addEventListener("change", function (e) {
    if (e.target.closest("[data-tool-filters]")) { filterTools(); }
    if (e.target.matches("[data-check-shown]")) {
      toolRows().forEach(function (row) {
        var box = row.querySelector('[data-testid="tool-check"]');
        if (box && !row.hidden) { box.checked = e.target.checked; }
      });
    }
  });
  document.addEventListener("DOMContentLoaded", filterTools);

  var kept = null, savedAt = {};
  function rowState(row) { return { open: row.querySelector("details[open]") !== null, checked: !!(row.querySelector('[data-testid="tool-check"]') || {}).checked }; }
  document.addEventListener("htmx:beforeSwap", function (e) {
    var t = e.detail.target;
    if (!t || !(t.id === "tools" || t.matches('[data-testid="tool-row"]'))) { return; }
    kept = kept || {};
    // A state noted by an earlier swap not yet settled stands: the row it
    // replaced was the one the person saw.
    (t.id === "tools" ? toolRows() : [t]).forEach(function (row) {
      var name = row.getAttribute("data-tool-name");
      if (!kept[name]) { kept[name] = rowState(row); }
    });
  });
  // A policy saved in the last 2.5 s says so, even in a row a live
  // reload has just replaced.
  // Noted from the request itself: the live reload a save causes can
  // replace the form before its answer arrives, and htmx then drops that
  // answer (and its events) as the form is gone.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var elt = e.detail.elt, xhr = e.detail.xhr;
    if (elt.tagName !== "FORM" || !xhr) { return; }
    var tool = elt.querySelector('input[name="tool"][type="hidden"]');
    var key = tool ? tool.value : /\/policies$/.test(elt.getAttribute("hx-post") || "") ? "" : null;
    if (key === null) { return; }
    xhr.addEventListener("load", function () {
      if (xhr.status < 300) { savedAt[key] = Date.now(); setTimeout(markSaved, 0); }
    });
  });
  function markSaved() {
    var tools = document.getElementById("tools");
    if (!tools) { return; }
    if (savedAt[""] && Date.now() - savedAt[""] < 2500 && !tools.querySelector('[data-testid="policies-saved"]')) {
      var p = document.createElement("p");
      p.className = "saved"; p.setAttribute("role", "status"); p.setAttribute("data-testid", "policies-saved"); p.textContent = "saved";
      tools.insertBefore(p, tools.firstChild);
    }
    toolRows().forEach(function (row) {
      var at = savedAt[row.getAttribute("data-tool-name")], sel = row.querySelector('[data-testid="policy-select"]');
      if (at && Date.now() - at < 2500 && sel && !row.querySelector(".saved")) {
        var s = document.createElement("span");
        s.className = "saved"; s.setAttribute("role", "status"); s.setAttribute("data-testid", "policy-saved"); s.textContent = "saved";
        sel.insertAdjacentElement("afterend", s);
      }
    });
  }
  document.addEventListener("htmx:afterSettle", function (e) {
    if (!document.getElementById("tools")) { return; }
    if (kept) {
      var bulk = e.detail.target && e.detail.target.id === "tools" && e.detail.requestConfig && e.detail.requestConfig.verb === "post";
      toolRows().forEach(function (row) {
        var k = kept[row.getAttribute("data-tool-name")];
        if (k && k.open) { var d = row.querySelector("details"); if (d) { d.open = true; } }
        if (k && k.checked && !bulk) { var b = row.querySelector('[data-testid="tool-check"]'); if (b) { b.checked = true; } }
      });
      kept = null;
    }
    markSaved();
    filterTools();
  });

  // Responsive tables become a card per row on narrow screens; each cell
  // then names its column, from the table's header.
  function labelCells(root) {
    (root || document).querySelectorAll("table.responsive").forEach(function (table) {
      var heads = [].map.call(table.querySelectorAll("thead th"), function (th) { return th.textContent.trim(); });
      table.querySelectorAll("tbody tr").forEach(function (tr) {
        [].forEach.call(tr.children, function (td, i) {
          if (heads[i] && !td.hasAttribute("data-label") && !td.classList.contains("pick")) { td.setAttribute("data-label", heads[i]); }
        });
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { labelCells(); });
  document.addEventListener("htmx:afterSettle", function () { labelCells(); });

  // Try it: the rows of an array argument. A new row is the list's
  // template, its row mark replaced by a number no row has yet (the
  // server reads rows in page order, whatever their numbers).
  document.addEventListener("click", function (e) {
    var add = e.target.closest("[data-try-add]");
    var rm = e.target.closest("[data-try-remove]");
    if (rm) {
      var gone = rm.closest(".try-row");
      if (gone) { gone.remove(); }
      return;
    }
    if (!add) { return; }
    var list = document.getElementById(add.getAttribute("data-try-add"));
    var tmpl = list && list.querySelector(":scope > template");
    if (!tmpl) { return; }
    var n = parseInt(list.getAttribute("data-next-row"), 10) || 0;
    list.setAttribute("data-next-row", String(n + 1));
    var row = tmpl.content.cloneNode(true);
    row.querySelectorAll("*").forEach(function (el) {
      ["name", "id", "for", "value", "aria-describedby", "data-testid"].forEach(function (a) {
        var v = el.getAttribute(a);
        if (v && v.indexOf("__row__") >= 0) { el.setAttribute(a, v.split("__row__").join(String(n))); }
      });
    });
    var first = row.querySelector("input:not([type=hidden]), select, textarea");
    list.insertBefore(row, tmpl);
    if (first) { first.focus(); }
  });

  // Try it: Cancel asks Switchboard to stop the call, whose own request
  // then answers that it was cancelled (aborting the request instead would
  // leave htmx logging errors); a new call starts with a blank progress
  // line.
  document.addEventListener("click", function (e) {
    var btn = e.target.closest("[data-try-cancel]");
    var form = btn && btn.closest("form");
    var csrf = form && form.querySelector("input[name=_csrf]");
    if (!form || !csrf) { return; }
    fetch(btn.getAttribute("data-try-cancel"), {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "_csrf=" + encodeURIComponent(csrf.value),
    }).catch(function () {});
  });
  document.addEventListener("htmx:beforeRequest", function (e) {
    var live = e.target.classList && e.target.classList.contains("try-form") && e.target.querySelector(".try-live");
    if (live) { live.textContent = "Calling…"; }
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
