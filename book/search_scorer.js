/* The book's search ranking and snippets (Sphinx's html_search_scorer: this file is loaded before
 * searchtools.js, which uses this Scorer instead of its own).
 *
 * Ranking: Sphinx's defaults, except that a glossary definition (an index entry, scored 100 by default)
 * ranks just below a page whose title holds the word (15): searching "ALiBi" lists the ALiBi chapter
 * first, then the glossary's definition, then the pages that mention it.
 * Snippets: the text around the hit without the page's buttons, navigation, download menu and "Contents"
 * sidebar (a snippet began "...nb ALiBi: ... Contents", the end of ".ipynb"), and with each formula shown as
 * "…" instead of its TeX source.
 * One line per page: a glossary term's hit and the glossary page's own hit are one result (the first kept).
 */
var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    return docname.endsWith("glossary") ? Math.min(score, 14) : score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};

document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search === "undefined") return;
  const htmlToText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    doc.querySelectorAll("nav, button, .prev-next-area, .headerlink, .toggle-details__summary, script, style, " +
                         ".bd-header-article, .header-article-items, .dropdown-menu, .bd-sidebar-secondary, " +
                         ".bd-sidebar-primary, .bd-footer, .bd-footer-article, .bd-footer-content, .onlyprint")
      .forEach((el) => el.remove());
    doc.querySelectorAll(".math").forEach((el) => el.replaceWith(doc.createTextNode("…")));
    return htmlToText(doc.documentElement.outerHTML, anchor);
  };

  const results = document.getElementById("search-results");
  if (!results) return;
  const page = (a) => a.href.split("#")[0];
  new MutationObserver(() => {
    const seen = new Set();
    results.querySelectorAll("li").forEach((li) => {
      const a = li.querySelector("a");
      if (!a) return;
      if (seen.has(page(a))) li.remove();
      else seen.add(page(a));
    });
  }).observe(results, { childList: true, subtree: true });
});
