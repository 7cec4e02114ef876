// A page that shows a secret once is the answer to a form (a new user, a
// new token, a reset password). Its address is the form's: a reload would
// post the form again and make another secret. The page swaps its history
// entry for the plain address it names (data-settle-url), so a reload or
// Back is a plain GET that shows no secret.
(function () {
  var el = document.querySelector("[data-settle-url]");
  if (el && window.history.replaceState) {
    window.history.replaceState(null, "", el.getAttribute("data-settle-url"));
  }
})();
