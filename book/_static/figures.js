/* Figures on a narrow screen (book/_ext/reader.py adds this file to every page). A chapter's figure is drawn
 * about 700-1000 px wide; shrunk to a phone's column its tick labels and legend are 4-6 px high. Each picture
 * shown below 60 % of its drawn width becomes a link to the picture itself, where the phone shows it at full
 * size and the reader can zoom, with a "tap to enlarge" line under it. Explorers are left alone (posenc.css
 * shows their pictures larger and lets them scroll). */
(function () {
  const SMALL = 0.6;
  function enlargeable() {
    document.querySelectorAll("article .cell_output img, article figure img").forEach((img) => {
      if (img.closest(".posenc-explorer") || !img.naturalWidth) return;
      const link = img.closest("a.posenc-enlarge");
      const small = img.clientWidth && img.clientWidth < SMALL * img.naturalWidth;
      if (small && !link) {
        const a = document.createElement("a");
        a.className = "posenc-enlarge";
        a.href = img.currentSrc || img.src;
        a.target = "_blank";
        a.rel = "noopener";
        a.setAttribute("aria-label", "Open the figure at full size");
        img.replaceWith(a);
        a.appendChild(img);
      }
    });
    document.documentElement.dataset.figuresChecked = "true";  // for whoever waits on it (the tests)
  }
  window.addEventListener("load", enlargeable);
  let pending;
  window.addEventListener("resize", () => { clearTimeout(pending); pending = setTimeout(enlargeable, 150); });
})();
