/* Display equations on a narrow screen (book/_ext/reader.py adds this file to every page). An equation wider
 * than the column is shrunk to fit, down to 70 % of its size; one still too wide at 70 % scrolls sideways, with
 * the edge shadows of posenc.css and a "scroll" mark under it, so that no reader misses its end (chapter 2's
 * equation 6 hid "= cos(p w_i)" behind the column's edge). Runs once MathJax has typeset the page, and again
 * when the window's width changes. */
(function () {
  const SMALLEST = 0.7;
  function fit() {
    document.querySelectorAll('div.math mjx-container[display="true"]').forEach((c) => {
      c.style.fontSize = "";
      c.classList.remove("posenc-scrolls");
      const wide = c.scrollWidth, room = c.clientWidth;
      if (!room || wide <= room + 1) return;
      const scale = Math.max(SMALLEST, Math.floor((100 * room) / wide) / 100);
      c.style.fontSize = `${Math.round(scale * 100)}%`;
      if (c.scrollWidth > c.clientWidth + 1) c.classList.add("posenc-scrolls");
    });
    document.documentElement.dataset.equationsFitted = "true";  // for whoever waits on it (the tests)
  }
  function whenTypeset() {
    const ready = window.MathJax && MathJax.startup && MathJax.startup.promise;
    if (ready) ready.then(fit);
    else setTimeout(whenTypeset, 100);
  }
  window.addEventListener("load", whenTypeset);
  let pending;
  window.addEventListener("resize", () => { clearTimeout(pending); pending = setTimeout(fit, 150); });
})();
