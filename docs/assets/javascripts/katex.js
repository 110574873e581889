// Render the \( ... \) and \[ ... \] that pymdownx.arithmatex (generic mode) leaves in the page, with the vendored
// KaTeX (docs/assets/README.md). material's document$ fires on every page load, instant navigation included.
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "\\[", right: "\\]", display: true },
      { left: "\\(", right: "\\)", display: false },
    ],
    throwOnError: false,
  })
})
