// A confirmation is said once: after the page shows it, the address bar
// drops ?done= (and a bulk retry's counts) so that a reload or a shared
// address does not say it again.
(function () {
  var url = new URL(window.location.href);
  var names = ["done", "queued", "busy", "gone"];
  var changed = false;
  names.forEach(function (n) {
    if (url.searchParams.has(n)) {
      url.searchParams.delete(n);
      changed = true;
    }
  });
  if (changed) {
    window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
  }
})();
