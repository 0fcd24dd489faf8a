// Typeset the formulas that pymdownx.arithmatex (generic mode) leaves in each page:
// <span class="arithmatex">\( … \)</span> inline, <div class="arithmatex">\[ … \]</div> displayed.
// KaTeX ships with the site (assets/vendor/katex), so this works offline.
// `document$` is the theme's page-load stream (Material for MkDocs and Zensical both provide it).
document$.subscribe(function () {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    if (element.querySelector(".katex")) {
      return; // already typeset
    }
    var display = element.tagName === "DIV";
    var tex = element.textContent.trim()
      .replace(/^\\[(\[]/, "")
      .replace(/\\[)\]]$/, "");
    try {
      katex.render(tex, element, { displayMode: display, throwOnError: true });
    } catch (error) {
      // Leave the source visible and say why; the docs-browser check fails on this.
      element.classList.add("katex-error");
      element.setAttribute("title", String(error));
      console.error("KaTeX could not typeset", JSON.stringify(tex), "-", error.message);
    }
  });
});
