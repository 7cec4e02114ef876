// Live pages: an element with data-live asks the server for itself again
// every few seconds (its hx-get and hx-trigger say where and how often). This
// file holds those polls while the tab is hidden and asks at once when it
// shows again; keeps what the person typed, ticked or opened across a swap
// of the page's live region (#live); and marks for a moment each value
// (data-key, data-val) that differs from the one the page showed before,
// or is new. A poll that fails leaves a note that the page is not up to
// date, until one is answered again.
(function () {
  "use strict";

  function hidden() {
    return document.visibilityState !== "visible";
  }

  function isLive(elt) {
    return elt && elt.hasAttribute && elt.hasAttribute("data-live");
  }

  // A person selecting text to copy it would lose the selection to a swap.
  function selecting(elt) {
    var sel = window.getSelection && window.getSelection();
    return sel && !sel.isCollapsed && sel.anchorNode && elt.contains(sel.anchorNode);
  }

  document.addEventListener("htmx:beforeRequest", function (e) {
    if (isLive(e.detail.elt) && (hidden() || selecting(e.detail.elt))) {
      e.preventDefault();
    }
  });

  document.addEventListener("visibilitychange", function () {
    if (hidden()) {
      return;
    }
    document.querySelectorAll("[data-live]").forEach(function (el) {
      htmx.trigger(el, "live");
    });
  });

  // The region says which version of itself it holds; the server answers
  // 204, and nothing is swapped, when that is still the current one.
  document.addEventListener("htmx:configRequest", function (e) {
    if (e.detail.elt.id === "live") {
      e.detail.headers["X-Live-Version"] = e.detail.elt.getAttribute("data-version") || "";
    }
  });

  // A poll the server does not answer (restarting, its database down)
  // swaps nothing, and the page would go on saying when it was counted as
  // if it kept up: until a poll is answered again, a note above the live
  // region says since when it is not up to date.
  document.addEventListener("htmx:afterRequest", function (e) {
    var region = e.detail.elt;
    if (!region || region.id !== "live") {
      return;
    }
    var note = document.getElementById("live-stale");
    if (e.detail.successful === true) {
      if (note) {
        note.remove();
      }
      return;
    }
    if (note) {
      return;
    }
    note = document.createElement("p");
    note.id = "live-stale";
    note.className = "alert alert-warn";
    note.setAttribute("role", "status");
    note.setAttribute("data-testid", "live-stale");
    note.textContent = "Not up to date: the server did not answer at " + new Date().toISOString().substring(11, 19) +
      " UTC. What this page shows may have changed since; it keeps asking.";
    region.parentNode.insertBefore(note, region);
  });

  var before = null;

  document.addEventListener("htmx:beforeSwap", function (e) {
    var region = e.detail.target;
    if (region.id !== "live" || !e.detail.shouldSwap) {
      return;
    }
    var version = e.detail.xhr.getResponseHeader("X-Live-Version");
    if (version) {
      region.setAttribute("data-version", version);
    }
    before = { values: {}, inputs: [], open: [], focus: null };
    region.querySelectorAll("[data-key]").forEach(function (el) {
      before.values[el.getAttribute("data-key")] = el.getAttribute("data-val");
    });
    region.querySelectorAll("input[id], select[id], textarea[id]").forEach(function (el) {
      if (el.type === "checkbox" || el.type === "radio") {
        if (el.checked !== el.defaultChecked) {
          before.inputs.push({ id: el.id, checked: el.checked });
        }
      } else if (el.type !== "hidden" && el.value !== el.defaultValue) {
        before.inputs.push({ id: el.id, value: el.value });
      }
    });
    region.querySelectorAll("details[id][open]").forEach(function (el) {
      before.open.push(el.id);
    });
    if (document.activeElement && document.activeElement.id && region.contains(document.activeElement)) {
      before.focus = document.activeElement.id;
    }
  });

  document.addEventListener("htmx:afterSwap", function (e) {
    var region = e.detail.target;
    if (region.id !== "live" || !before) {
      return;
    }
    var was = before;
    before = null;
    was.inputs.forEach(function (s) {
      var el = document.getElementById(s.id);
      if (!el || !region.contains(el)) {
        return;
      }
      if ("checked" in s) {
        el.checked = s.checked;
      } else {
        el.value = s.value;
      }
    });
    was.open.forEach(function (id) {
      var el = document.getElementById(id);
      if (el && region.contains(el)) {
        el.open = true;
      }
    });
    if (was.focus) {
      var f = document.getElementById(was.focus);
      if (f && region.contains(f)) {
        f.focus({ preventScroll: true });
      }
    }
    region.querySelectorAll("[data-key]").forEach(function (el) {
      var key = el.getAttribute("data-key");
      if (was.values[key] !== el.getAttribute("data-val")) {
        el.classList.add("live-changed");
        window.setTimeout(function () {
          el.classList.remove("live-changed");
        }, 4000);
      }
    });
  });
})();
